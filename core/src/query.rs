//! Reading a question: file names, code fragments, chunk-type hints and
//! intent, found with plain rules over the question text.
//!
//! These signals feed the query embedding prompt (paper Listing 9) and,
//! later, the retrieval router. The rules are generic English and generic
//! code shape (paths with extensions, `::`, `()`, camelCase); nothing here
//! knows any particular codebase.

/// File extensions recognised in questions (the paper's Listing 8 regex,
/// generalised to every extension the indexer reads by default).
pub const FILE_EXTENSIONS: &[&str] = &[
    "cpp", "cc", "cxx", "c", "hpp", "hh", "hxx", "h", "inl", "cu", "cuh", "md", "markdown", "rst",
    "txt", "cmake", "py", "json", "toml", "yaml", "yml",
];

const TRIM: &[char] = &[
    '"', '\'', '`', '(', ')', '[', ']', '{', '}', ',', ';', ':', '?', '!', '<', '>', '*',
];

fn words(question: &str) -> impl Iterator<Item = &str> {
    question
        .split_whitespace()
        .map(|w| w.trim_matches(TRIM).trim_end_matches('.'))
        .filter(|w| !w.is_empty())
}

/// Whether a word looks like a file name or path with a known extension.
pub fn is_file_name(word: &str) -> bool {
    let Some((stem, ext)) = word.rsplit_once('.') else {
        return false;
    };
    let base = stem.rsplit('/').next().unwrap_or(stem);
    !base.is_empty()
        && stem
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
        && FILE_EXTENSIONS.iter().any(|e| e.eq_ignore_ascii_case(ext))
}

/// File names and paths mentioned in a question, in order, without
/// repeats (`BareField.h`, `src/Ippl.cpp`).
pub fn detect_file_names(question: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in words(question) {
        if is_file_name(w) && !out.iter().any(|o| o == w) {
            out.push(w.to_string());
        }
    }
    out
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether a word is shaped like code rather than prose: a qualified name
/// (`a::b`, `p->x`), a call (`f()`), or an identifier with inner capitals
/// or underscores (`fillHalo`, `BareField`, `halo_cells`).
pub fn looks_like_code(word: &str) -> bool {
    if word.contains("::") || word.contains("->") || word.ends_with("()") {
        return true;
    }
    if !is_identifier(word) {
        return false;
    }
    let inner_upper = word.chars().skip(1).any(|c| c.is_ascii_uppercase());
    let has_lower = word.chars().any(|c| c.is_ascii_lowercase());
    let snake = word.trim_matches('_').contains('_');
    (inner_upper && has_lower) || snake
}

/// Code fragments in a question: backtick spans first, then code-shaped
/// words (file names excluded), in order, without repeats.
pub fn detect_code(question: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |s: &str| {
        let s = s.trim();
        if !s.is_empty() && !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    };
    let mut rest = question;
    while let Some(a) = rest.find('`') {
        let Some(b) = rest[a + 1..].find('`') else {
            break;
        };
        push(&rest[a + 1..a + 1 + b]);
        rest = &rest[a + 2 + b..];
    }
    for raw in question.split_whitespace() {
        if raw.contains('`') {
            continue;
        }
        let w = raw
            .trim_matches(TRIM)
            .trim_end_matches('.')
            .trim_end_matches("'s");
        let w = if raw.trim_end_matches(TRIM).ends_with("()") || raw.contains("()") {
            raw.trim_matches(|c: char| TRIM.contains(&c) && c != '(' && c != ')')
                .trim_end_matches(['.', '?', ',', ';', ':', '!'])
        } else {
            w
        };
        if !is_file_name(w) && looks_like_code(w) {
            push(w);
        }
    }
    out
}

/// The intents of the paper's Table 4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Intent {
    /// How to call or use an API.
    ApiUsage,
    /// Where something is defined or lives.
    LocationLookup,
    /// How data moves between structures or stages.
    DataFlow,
    /// How two things differ.
    Comparison,
    /// What a symbol is or does.
    SymbolExplanation,
    /// What a file is for.
    FilePurpose,
    /// What a module or directory holds.
    ModuleOverview,
    /// How a multi-step process runs.
    WorkflowExplanation,
    /// None of the above.
    Default,
}

impl Intent {
    /// All intents.
    pub const ALL: [Intent; 9] = [
        Intent::ApiUsage,
        Intent::LocationLookup,
        Intent::DataFlow,
        Intent::Comparison,
        Intent::SymbolExplanation,
        Intent::FilePurpose,
        Intent::ModuleOverview,
        Intent::WorkflowExplanation,
        Intent::Default,
    ];

    /// Stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::ApiUsage => "api_usage",
            Intent::LocationLookup => "location_lookup",
            Intent::DataFlow => "data_flow",
            Intent::Comparison => "comparison",
            Intent::SymbolExplanation => "symbol_explanation",
            Intent::FilePurpose => "file_purpose",
            Intent::ModuleOverview => "module_overview",
            Intent::WorkflowExplanation => "workflow_explanation",
            Intent::Default => "default",
        }
    }
}

fn has_any(hay: &str, needles: &[&str]) -> bool {
    needles.iter().any(|n| hay.contains(n))
}

/// The intent of a question, by ordered generic rules: comparison first
/// (it changes the candidate pool the most), then location, data flow,
/// API usage, file, module, workflow and symbol questions.
pub fn infer_intent(question: &str) -> Intent {
    let q = format!(" {} ", question.to_lowercase());
    let files = detect_file_names(question);
    let code = detect_code(question);
    if has_any(
        &q,
        &[
            " difference",
            " differ ",
            " differs ",
            " compare",
            " comparison",
            " vs ",
            " vs. ",
            " versus ",
            " distinguish",
            " contrast",
        ],
    ) {
        return Intent::Comparison;
    }
    if q.trim_start().starts_with("where ")
        || has_any(
            &q,
            &[
                " which file",
                " in which ",
                " where is ",
                " where are ",
                " located",
                " locate ",
                " defined",
                " declared",
                " find the definition",
                " which header",
            ],
        )
    {
        return Intent::LocationLookup;
    }
    if has_any(
        &q,
        &[
            " data flow",
            " flows ",
            " flow of ",
            " transferred",
            " transfer ",
            " passed to ",
            " passed from ",
            " propagat",
            " moved from ",
            " copied from ",
            " copied to ",
            " communicat",
            " exchanged",
            " from the ",
            " into the ",
        ],
    ) && has_any(&q, &[" from ", " to ", " into ", " between ", " flow"])
        && !has_any(&q, &[" how do i ", " how to use "])
    {
        return Intent::DataFlow;
    }
    if has_any(
        &q,
        &[
            " how do i ",
            " how to ",
            " how should ",
            " usage",
            " example of ",
            " how is it used",
            " how are they used",
            " call it",
            " use the ",
            " which arguments",
            " what arguments",
        ],
    ) {
        return Intent::ApiUsage;
    }
    if !files.is_empty()
        && has_any(
            &q,
            &[
                " purpose",
                " role",
                " contain",
                " what is in ",
                " responsible",
                " what does ",
                " used for",
                " provide",
            ],
        )
    {
        return Intent::FilePurpose;
    }
    if has_any(
        &q,
        &[
            " module",
            " directory",
            " folder",
            " subsystem",
            // "Which component does X?" asks for one thing, not an overview.
            " components",
            " overview",
            " architecture",
            " organized",
            " organised",
            " layout of ",
        ],
    ) {
        return Intent::ModuleOverview;
    }
    if has_any(
        &q,
        &[
            " workflow",
            " steps",
            " step by step",
            " pipeline",
            " sequence",
            " lifecycle",
            " life cycle",
            " what happens when",
            " happens during",
            " order of ",
        ],
    ) {
        return Intent::WorkflowExplanation;
    }
    if !code.is_empty()
        || has_any(
            &q,
            &[
                " what does ",
                " what is ",
                " what are ",
                " explain",
                " purpose of ",
                " responsible for",
            ],
        )
    {
        return Intent::SymbolExplanation;
    }
    Intent::Default
}

/// Entity levels or chunk types a question asks for by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ChunkTypeHint {
    /// Functions and methods.
    Function,
    /// Classes and structs.
    Class,
    /// Namespaces.
    Namespace,
    /// Whole files.
    File,
    /// Modules (folders).
    Module,
    /// Call chains.
    CallChain,
    /// Documentation sections.
    DocSection,
}

impl ChunkTypeHint {
    /// The chunk types the hint stands for, as in the index's `chunk_type`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChunkTypeHint::Function => "function, method",
            ChunkTypeHint::Class => "class, struct",
            ChunkTypeHint::Namespace => "namespace",
            ChunkTypeHint::File => "file",
            ChunkTypeHint::Module => "module",
            ChunkTypeHint::CallChain => "call_chain",
            ChunkTypeHint::DocSection => "doc_section",
        }
    }

    /// Hints named in a question, in a fixed order.
    pub fn detect(question: &str) -> Vec<ChunkTypeHint> {
        let q = format!(" {} ", question.to_lowercase());
        let table: [(ChunkTypeHint, &[&str]); 7] = [
            (
                ChunkTypeHint::Function,
                &[
                    " function",
                    " method",
                    " routine",
                    " member function",
                    " constructor",
                ],
            ),
            (ChunkTypeHint::Class, &[" class", " struct "]),
            (ChunkTypeHint::Namespace, &[" namespace"]),
            (
                ChunkTypeHint::File,
                &[" file ", " file?", " files ", " header "],
            ),
            (
                ChunkTypeHint::Module,
                &[" module", " directory", " folder", " subsystem"],
            ),
            (
                ChunkTypeHint::CallChain,
                &[" call chain", " calls ", " called by", " caller", " callee"],
            ),
            (
                ChunkTypeHint::DocSection,
                &[
                    " documentation",
                    " docs ",
                    " readme",
                    " manual",
                    " guide",
                    " tutorial",
                ],
            ),
        ];
        table
            .into_iter()
            .filter(|(_, words)| has_any(&q, words))
            .map(|(h, _)| h)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_with_paths_and_punctuation() {
        assert_eq!(
            detect_file_names("Compare src/Field/BareField.hpp and (Ippl.cpp)? Also README.md."),
            vec!["src/Field/BareField.hpp", "Ippl.cpp", "README.md"]
        );
        assert!(detect_file_names("Call ippl::initialize. e.g. then").is_empty());
        assert!(detect_file_names("version 1.2 of it").is_empty());
    }

    #[test]
    fn code_fragments() {
        assert_eq!(
            detect_code(
                "What does `fillHalo` do in BareField.h, and Kokkos::parallel_for or apply()?"
            ),
            vec!["fillHalo", "Kokkos::parallel_for", "apply()"]
        );
        assert_eq!(
            detect_code("how are halo_cells set on BareField's ranks"),
            vec!["halo_cells", "BareField"]
        );
        assert!(detect_code("How does the solver work").is_empty());
    }

    #[test]
    fn intents() {
        assert_eq!(
            infer_intent("What is the difference between A and B?"),
            Intent::Comparison
        );
        assert_eq!(
            infer_intent("Where is the FFT solver defined?"),
            Intent::LocationLookup
        );
        assert_eq!(
            infer_intent("How is charge transferred from particles to the grid?"),
            Intent::DataFlow
        );
        assert_eq!(
            infer_intent("How do I initialize the library?"),
            Intent::ApiUsage
        );
        assert_eq!(
            infer_intent("What is the purpose of Ippl.cpp?"),
            Intent::FilePurpose
        );
        assert_eq!(
            infer_intent("Give an overview of the Field module"),
            Intent::ModuleOverview
        );
        assert_eq!(
            infer_intent("What happens when a time step runs?"),
            Intent::WorkflowExplanation
        );
        assert_eq!(
            infer_intent("What does fillHalo do?"),
            Intent::SymbolExplanation
        );
        assert_eq!(infer_intent("halo"), Intent::Default);
    }

    #[test]
    fn chunk_type_hints() {
        assert_eq!(
            ChunkTypeHint::detect("Which function in this file calls the solver?"),
            vec![
                ChunkTypeHint::Function,
                ChunkTypeHint::File,
                ChunkTypeHint::CallChain
            ]
        );
        assert!(ChunkTypeHint::detect("how does it work").is_empty());
    }
}
