//! Query signals (paper section 3.3.2): exact file names (full and base),
//! exact symbols, API-bearing terms, data-flow direction and terms,
//! comparison subjects, module names, and test/build intent.
//!
//! Nothing here names a particular codebase. Symbols, files and modules are
//! matched against the index's own tables; data-flow terms are the question
//! words that also occur in the index's callable names (its own verbs).

use serde::Serialize;

use super::corpus::Corpus;
use crate::lexical::{identifier_parts, stem, tokenize};
use crate::query::{detect_code, detect_file_names, is_file_name, looks_like_code};

/// Words that mark a question about tests.
const TEST_WORDS: &[&str] = &[
    "test",
    "tests",
    "tested",
    "testing",
    "unit test",
    "unit tests",
    "unittest",
    "gtest",
    "integration test",
    "regression test",
];
/// Words that mark a question about the build.
const BUILD_WORDS: &[&str] = &[
    "cmake",
    "cmakelists",
    "build",
    "builds",
    "compile",
    "compiled",
    "compiler",
    "configure",
    "configured",
    "install",
    "installed",
    "installation",
    "dependency",
    "dependencies",
    "depend",
    "depends",
    "third-party",
    "third party",
    "link",
    "linking",
    "c++ standard",
    "requirements",
];

/// A file named in the question.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct FileMention {
    /// As written.
    pub written: String,
    /// Files it names exactly (full name or path suffix).
    pub exact: Vec<u32>,
    /// Files with the same base name but another extension.
    pub siblings: Vec<u32>,
}

/// Everything read off a question.
#[derive(Serialize, Clone, Debug, Default, PartialEq)]
pub struct QuerySignals {
    /// Keyword tokens of the question.
    pub tokens: Vec<String>,
    /// Files named with an extension.
    pub exact_filenames: Vec<FileMention>,
    /// Files whose base name is a word of the question (`BareField`).
    pub subject_files: Vec<u32>,
    /// Symbol names of the index mentioned in the question.
    pub exact_symbols: Vec<String>,
    /// Qualified names as written (`ippl::initialize`, `Foo::bar`).
    pub qualified_symbols: Vec<String>,
    /// API-bearing terms: qualified names and calls (`Kokkos::initialize`, `apply()`).
    pub api_terms: Vec<String>,
    /// `(from, to)` when the question asks how something moves from A to B.
    pub data_flow_direction: Option<(String, String)>,
    /// Question words that are also parts of the index's callable names.
    pub data_flow_terms: Vec<String>,
    /// The two (or more) sides of a comparison.
    pub comparison_subjects: Vec<String>,
    /// Module entities named in the question.
    pub modules: Vec<u32>,
    /// The question is about tests.
    pub test_intent: bool,
    /// The question is about the build.
    pub build_intent: bool,
    /// Asks for headers / declarations.
    pub asks_header: bool,
    /// Asks for documentation.
    pub asks_docs: bool,
}

fn contains_word(lower: &str, word: &str) -> bool {
    let padded = format!(" {} ", lower.replace(|c: char| !c.is_alphanumeric(), " "));
    padded.contains(&format!(" {word} "))
}

/// Plain words of a question, with `::` paths kept whole.
fn raw_words(question: &str) -> Vec<String> {
    question
        .split(|c: char| {
            !(c.is_alphanumeric()
                || c == '_'
                || c == ':'
                || c == '.'
                || c == '/'
                || c == '-'
                || c == '>')
        })
        .map(|w| {
            w.trim_matches(|c: char| c == '.' || c == ':' || c == '-' || c == '>' || c == '/')
                .to_string()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// Acronyms of the index that the question spells out: the initials of 3
/// to 5 consecutive words ("cloud-in-cell" → `cic`, "fast Fourier
/// transform" → `fft`) that the index's names are written with, and that
/// the index itself spells out: some chunk holds the acronym together with
/// every content word of the phrase (a comment "Cloud-in-Cell" beside
/// `CIC`). Initials that merely coincide with a name are not taken.
fn spelled_out_acronyms(question: &str, corpus: &Corpus) -> Vec<String> {
    let words: Vec<&str> = question
        .split(|c: char| c.is_whitespace() || c == '-' || c == '/')
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| !w.is_empty())
        .collect();
    let mut out = Vec::new();
    for n in 3..=5 {
        for w in words.windows(n) {
            if !w.iter().all(|x| x.chars().all(char::is_alphabetic)) {
                continue;
            }
            let a: String = w
                .iter()
                .filter_map(|x| x.chars().next())
                .flat_map(char::to_lowercase)
                .collect();
            if out.contains(&a) || !corpus.is_acronym(&a) {
                continue;
            }
            let content: Vec<String> = w.iter().flat_map(|x| tokenize(x)).collect();
            if content.len() < 2 {
                continue;
            }
            let spelled = corpus
                .lexical
                .chunks_with(&a)
                .into_iter()
                .any(|c| content.iter().all(|t| corpus.lexical.chunk_has_term(t, c)));
            if spelled {
                out.push(a);
            }
        }
    }
    out
}

/// Whether a plain word may name entity `e`: a free entity, or a member
/// whose class the question's words also name (`generate` of a sampler
/// asked about as "transform sampling"), so that an ordinary verb ("attach",
/// "source") does not bring in an unrelated class's method of that name.
fn owner_named(corpus: &Corpus, e: u32, question_tokens: &[String]) -> bool {
    corpus.named(e).class_name.as_ref().is_none_or(|k| {
        let base = k.rsplit("::").next().unwrap_or(k);
        name_parts(base)
            .iter()
            .any(|p| p.len() >= 3 && question_tokens.contains(p))
    })
}

/// Sentence-initial capitals are not evidence of a name.
fn is_name_shaped(word: &str, position: usize) -> bool {
    looks_like_code(word)
        || (position > 0
            && word.chars().next().is_some_and(|c| c.is_uppercase())
            && word.len() >= 3)
        || (word.len() >= 2
            && word
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()))
}

impl QuerySignals {
    /// Add the index's acronyms that the question spells out to the
    /// keyword tokens (`RetrievalSettings::expand_acronyms`).
    pub fn expand_acronyms(&mut self, question: &str, corpus: &Corpus) {
        for a in spelled_out_acronyms(question, corpus) {
            if !self.tokens.contains(&a) {
                self.tokens.push(a);
            }
        }
    }

    /// Read a question against the corpus.
    pub fn extract(question: &str, corpus: &Corpus) -> Self {
        let lower = question.to_lowercase();
        let mut s = QuerySignals {
            tokens: tokenize(question),
            ..QuerySignals::default()
        };
        s.test_intent = TEST_WORDS.iter().any(|w| contains_word(&lower, w));
        s.build_intent =
            BUILD_WORDS.iter().any(|w| contains_word(&lower, w)) || lower.contains("cmakelists");
        s.asks_header = ["header", "declaration", "declared", "interface"]
            .iter()
            .any(|w| lower.contains(w));
        s.asks_docs = [
            "documentation",
            "docs",
            "readme",
            "manual",
            "guide",
            "tutorial",
        ]
        .iter()
        .any(|w| contains_word(&lower, w));

        // Files named with an extension.
        for written in detect_file_names(question) {
            let name = written
                .rsplit('/')
                .next()
                .unwrap_or(&written)
                .to_lowercase();
            let mut exact: Vec<u32> = corpus.by_file_name.get(&name).cloned().unwrap_or_default();
            if written.contains('/') {
                let suffix = written.trim_start_matches("./").to_string();
                let narrowed: Vec<u32> = exact
                    .iter()
                    .copied()
                    .filter(|&f| corpus.data.files[f as usize].path.ends_with(&suffix))
                    .collect();
                if !narrowed.is_empty() {
                    exact = narrowed;
                }
            }
            let base = match name.rfind('.') {
                Some(k) if k > 0 => name[..k].to_string(),
                _ => name.clone(),
            };
            let siblings: Vec<u32> = corpus
                .by_base_name
                .get(&base)
                .map(|v| v.iter().copied().filter(|f| !exact.contains(f)).collect())
                .unwrap_or_default();
            if !exact.is_empty() || !siblings.is_empty() {
                s.exact_filenames.push(FileMention {
                    written,
                    exact,
                    siblings,
                });
            }
        }

        let words = raw_words(question);
        let code = detect_code(question);
        for (i, w) in words.iter().enumerate() {
            if is_file_name(w) {
                continue;
            }
            let bare = w.trim_end_matches("()").trim_end_matches("'s");
            let qualified = bare.contains("::")
                || bare.contains("->")
                || (bare.contains('.') && looks_like_code(bare));
            if qualified && !s.qualified_symbols.contains(&bare.to_string()) {
                s.qualified_symbols.push(bare.to_string());
            }
            let last = bare
                .rsplit("::")
                .next()
                .unwrap_or(bare)
                .rsplit("->")
                .next()
                .unwrap_or(bare);
            let name_shaped = is_name_shaped(bare, i) || code.iter().any(|c| c.contains(last));
            // Symbols: code-shaped words match names exactly; plain words only
            // when the name is rare in the index (a handful of entities).
            let hit = if name_shaped {
                corpus.symbols(last).is_some()
                    || corpus
                        .symbols_lower(&last.to_lowercase())
                        .is_some_and(|v| v.len() <= 8 && last.len() >= 4)
            } else {
                last.len() >= 6
                    && corpus.symbols(last).is_some_and(|v| {
                        v.len() <= 3 && v.iter().any(|&e| owner_named(corpus, e, &s.tokens))
                    })
                    && corpus.lexical.doc_freq(&last.to_lowercase()) <= 40
            };
            let common = corpus.is_namespace(last)
                || corpus.lexical.doc_freq(&last.to_lowercase()) * 3 > corpus.data.chunks.len();
            if hit && !common && !s.exact_symbols.iter().any(|x| x == last) {
                s.exact_symbols.push(last.to_string());
            }
            // Subject files: a name-shaped word equal to a file base name,
            // unless the word is everywhere in the index (a project or
            // namespace name is no subject).
            let common = corpus.is_namespace(last)
                || corpus.lexical.doc_freq(&last.to_lowercase()) * 3 > corpus.data.chunks.len();
            if !common && (name_shaped || last.len() >= 5) {
                if let Some(files) = corpus.by_base_name.get(&last.to_lowercase()) {
                    if name_shaped || files.len() <= 2 {
                        for &f in files {
                            if !s.subject_files.contains(&f) {
                                s.subject_files.push(f);
                            }
                        }
                    }
                }
            }
            // Modules: a word equal to a module (folder) name, when the
            // question is about modules.
            if let Some(mods) = corpus.by_module.get(&last.to_lowercase()) {
                if lower.contains("module")
                    || lower.contains("directory")
                    || lower.contains("folder")
                    || lower.contains("subsystem")
                    || lower.contains("overview")
                {
                    for &m in mods {
                        if !s.modules.contains(&m) {
                            s.modules.push(m);
                        }
                    }
                }
            }
        }
        for c in &code {
            if c.contains("::") || c.ends_with("()") || c.contains("->") {
                s.api_terms.push(c.trim_end_matches("()").to_string());
            }
        }
        for q in &s.qualified_symbols {
            if !s.api_terms.contains(q) {
                s.api_terms.push(q.clone());
            }
        }

        // Data flow: "from A to B" / "A-to-B" / "A into B".
        let lw: Vec<String> = lower
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect();
        for (i, w) in lw.iter().enumerate() {
            if w == "from" {
                if let (Some(a), Some(pos)) = (
                    lw.get(i + 1),
                    lw[i + 1..]
                        .iter()
                        .position(|x| x == "to" || x == "into" || x == "onto"),
                ) {
                    if let Some(b) = lw.get(i + 1 + pos + 1).or_else(|| lw.get(i + 1 + pos + 2)) {
                        let a = if a == "the" {
                            lw.get(i + 2).unwrap_or(a)
                        } else {
                            a
                        };
                        let b = if b == "the" {
                            lw.get(i + 1 + pos + 2).unwrap_or(b)
                        } else {
                            b
                        };
                        s.data_flow_direction = Some((stem(a), stem(b)));
                        break;
                    }
                }
            }
            if let Some((a, b)) = w.split_once("-to-") {
                s.data_flow_direction = Some((stem(a), stem(b)));
                break;
            }
        }
        for t in &s.tokens {
            if corpus.is_callable_stem(t) && !s.data_flow_terms.contains(t) {
                s.data_flow_terms.push(t.clone());
            }
        }

        // Comparison subjects: code-shaped or capitalised names, symbols,
        // and named files; else the words around "and"/"vs".
        let mut subjects: Vec<String> = Vec::new();
        for m in &s.exact_filenames {
            subjects.push(m.written.clone());
        }
        for sym in &s.exact_symbols {
            if !subjects.iter().any(|x| x.contains(sym.as_str())) {
                subjects.push(sym.clone());
            }
        }
        if subjects.len() < 2 {
            for sep in [" vs. ", " vs ", " versus ", " and "] {
                if let Some((a, b)) = lower.split_once(sep) {
                    let left = a
                        .split_whitespace()
                        .last()
                        .unwrap_or("")
                        .trim_matches(|c: char| !c.is_alphanumeric());
                    let right = b
                        .split_whitespace()
                        .next()
                        .unwrap_or("")
                        .trim_matches(|c: char| !c.is_alphanumeric());
                    if left.len() >= 3 && right.len() >= 3 {
                        subjects = vec![left.to_string(), right.to_string()];
                        break;
                    }
                }
            }
        }
        s.comparison_subjects = subjects;
        s
    }

    /// Whether any exact file or symbol anchor was found.
    pub fn has_anchor(&self) -> bool {
        !self.exact_filenames.is_empty() || !self.exact_symbols.is_empty()
    }
}

/// Stemmed identifier parts of a name, for overlap scores.
pub fn name_parts(name: &str) -> Vec<String> {
    identifier_parts(name)
        .into_iter()
        .filter(|p| p.len() >= 2)
        .map(|p| stem(&p))
        .collect()
}
