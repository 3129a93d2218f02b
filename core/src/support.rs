//! Evidence support for an answer's sentences: citations that hold even
//! when the model forgets them, and flags where nothing holds.
//!
//! A small local model often states a fact from the context without its
//! `[n]`, and now and then names something the context never shows. Both
//! are visible to code: a sentence restates a block when they share the
//! block's identifiers (or the code it quotes); an identifier that appears
//! nowhere in the context came from the model, not from the evidence. So
//! every uncited sentence is matched to the block it restates and gets that
//! citation, or it is marked unsupported, and unknown identifiers are
//! listed. The CLI and the widget show both; the answer a reader sees
//! carries each inferred source as `[n]` ([`with_inferred_citations`]),
//! and the model's own text is kept beside it. Pure and deterministic,
//! like the rest of `core`.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::answer::{bullet_sentences, numbers_in, Context};

/// Support of one sentence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SentenceSupport {
    /// The sentence.
    pub text: String,
    /// Valid `[n]` the sentence carries.
    pub cited: Vec<u32>,
    /// For an uncited sentence: the block it restates.
    pub inferred: Option<u32>,
    /// Neither cited nor matched to any block (and not a statement about
    /// what the context lacks).
    pub unsupported: bool,
}

/// Support of a whole answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SupportReport {
    /// Per sentence, in order.
    pub sentences: Vec<SentenceSupport>,
    /// Sentences that got an inferred citation.
    pub inferred: usize,
    /// Sentences marked unsupported.
    pub unsupported: usize,
    /// `unsupported / sentences` (0 for an empty answer).
    pub unsupported_share: f64,
    /// Identifiers the answer names that appear nowhere in the context (nor
    /// in the question), in order of first use.
    pub unknown_identifiers: Vec<String>,
}

/// Phrases of a sentence that reports missing evidence: such a sentence
/// needs no citation.
const ABSENCE: &[&str] = &[
    "not in the context",
    "not shown",
    "does not show",
    "does not say",
    "does not mention",
    "does not contain",
    "doesn't show",
    "doesn't say",
    "no information",
    "not provided",
    "not mentioned",
    "is missing",
    "cannot be determined",
    "not enough information",
    "no such",
];

/// Common words that make no evidence on their own.
const STOP: &[&str] = &[
    "about",
    "above",
    "after",
    "again",
    "along",
    "also",
    "because",
    "before",
    "being",
    "below",
    "between",
    "both",
    "cannot",
    "could",
    "does",
    "doing",
    "during",
    "each",
    "either",
    "every",
    "from",
    "have",
    "having",
    "here",
    "into",
    "itself",
    "just",
    "like",
    "made",
    "make",
    "many",
    "more",
    "most",
    "much",
    "must",
    "only",
    "other",
    "over",
    "same",
    "should",
    "since",
    "some",
    "such",
    "than",
    "that",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "under",
    "until",
    "used",
    "uses",
    "using",
    "very",
    "what",
    "when",
    "where",
    "which",
    "while",
    "will",
    "with",
    "within",
    "without",
    "would",
    "your",
    "function",
    "functions",
    "class",
    "classes",
    "file",
    "files",
    "method",
    "methods",
    "member",
    "members",
    "context",
    "provides",
    "provided",
    "defined",
    "declared",
    "called",
    "calls",
];

/// Words that look like code: `a::b`, `snake_case`, `camelCase`,
/// `PascalCase` with an inner capital, `f()`, `File.h`, and whatever is in
/// backticks.
pub fn identifiers(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let push = |s: &str, out: &mut Vec<String>| {
        let s =
            s.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':' || c == '~'));
        let s = s.trim_end_matches(':');
        if s.chars().count() >= 3 && !out.iter().any(|x| x == s) {
            out.push(s.to_string());
        }
    };
    let mut rest = text;
    while let Some(a) = rest.find('`') {
        let Some(b) = rest[a + 1..].find('`') else {
            break;
        };
        let inner = &rest[a + 1..a + 1 + b];
        for w in inner.split(|c: char| !(c.is_alphanumeric() || "_:.~".contains(c))) {
            if looks_like_code(w) || inner.split_whitespace().count() == 1 {
                push(w.trim_end_matches('.'), &mut out);
            }
        }
        rest = &rest[a + 2 + b..];
    }
    for w in text.split(|c: char| !(c.is_alphanumeric() || "_:.~()".contains(c))) {
        let w = w.trim_end_matches(['.', ':']);
        if looks_like_code(w) {
            push(w.trim_end_matches("()"), &mut out);
        }
    }
    out
}

fn looks_like_code(w: &str) -> bool {
    let w = w.trim_end_matches("()");
    if w.len() < 3
        || !w
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
    {
        return false;
    }
    let chars: Vec<char> = w.chars().collect();
    let inner_capital = chars
        .windows(2)
        .any(|p| p[0].is_lowercase() && p[1].is_uppercase());
    let file_like = w.rsplit_once('.').is_some_and(|(a, ext)| {
        !a.is_empty() && (1..=4).contains(&ext.len()) && ext.chars().all(|c| c.is_ascii_lowercase())
    });
    w.contains("::")
        || (w.contains('_') && w.chars().any(char::is_alphabetic))
        || inner_capital
        || file_like
}

fn content_words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| {
            w.len() >= 5 && !STOP.contains(&w.as_str()) && !w.chars().all(|c| c.is_ascii_digit())
        })
        .collect()
}

/// The text of each numbered block of a context (`[n] ...` up to the next
/// block), by number.
fn blocks(context: &Context) -> BTreeMap<u32, String> {
    let numbers: BTreeSet<u32> = context.chunks.iter().map(|c| c.n).collect();
    let mut out: BTreeMap<u32, String> = BTreeMap::new();
    let mut current: Option<u32> = None;
    let mut next = numbers.iter().copied();
    let mut expected = next.next();
    for line in context.text.lines() {
        // A fact-sheet line (`- [n] ...`, before the excerpts) is
        // evidence of excerpt n too.
        if current.is_none() {
            if let Some(n) = line
                .strip_prefix("- [")
                .and_then(|r| r.split_once(']'))
                .and_then(|(n, _)| n.parse::<u32>().ok())
                .filter(|n| numbers.contains(n))
            {
                let b = out.entry(n).or_default();
                b.push_str(line);
                b.push('\n');
                continue;
            }
        }
        if let Some(n) = expected {
            if line.starts_with(&format!("[{n}] ")) {
                current = Some(n);
                expected = next.next();
            }
        }
        if let Some(n) = current {
            let b = out.entry(n).or_default();
            b.push_str(line);
            b.push('\n');
        }
    }
    out
}

/// Match every sentence of `answer` to its evidence in `context`.
pub fn check_support(answer: &str, question: &str, context: &Context) -> SupportReport {
    let blocks = blocks(context);
    let valid: BTreeSet<u32> = context.chunks.iter().map(|c| c.n).collect();
    let mut sentences_out = Vec::new();
    for (s, lead) in bullet_sentences(answer) {
        // A sentence cites what it names, and what its bullet opens with.
        let mut cited: Vec<u32> = numbers_in(&s)
            .into_iter()
            .filter(|n| valid.contains(n))
            .collect();
        for n in lead {
            if valid.contains(&n) && !cited.contains(&n) {
                cited.push(n);
            }
        }
        let mut inferred = None;
        let lower = s.to_lowercase();
        let absence = ABSENCE.iter().any(|p| lower.contains(p));
        if cited.is_empty() && !absence {
            inferred = best_block(&s, &blocks);
        }
        let unsupported = cited.is_empty() && inferred.is_none() && !absence;
        sentences_out.push(SentenceSupport {
            text: s,
            cited,
            inferred,
            unsupported,
        });
    }
    let known = format!("{}\n{}", context.text, question);
    let mut unknown: Vec<String> = Vec::new();
    for id in identifiers(answer) {
        let bare = id.trim_start_matches("::");
        let last = bare.rsplit("::").next().unwrap_or(bare);
        if !known.contains(bare) && !known.contains(last) && !unknown.contains(&id) {
            unknown.push(id);
        }
    }
    let n = sentences_out.len();
    let inferred = sentences_out
        .iter()
        .filter(|s| s.inferred.is_some())
        .count();
    let unsupported = sentences_out.iter().filter(|s| s.unsupported).count();
    SupportReport {
        sentences: sentences_out,
        inferred,
        unsupported,
        unsupported_share: if n == 0 {
            0.0
        } else {
            unsupported as f64 / n as f64
        },
        unknown_identifiers: unknown,
    }
}

/// The answer as shown to a reader: every sentence that got an inferred
/// source carries it, as ` [n]` at its end, so that every supported
/// statement cites. The model's own text is otherwise unchanged; the
/// unsupported sentences are reported beside it ([`SupportReport`]).
pub fn with_inferred_citations(answer: &str, report: &SupportReport) -> String {
    let mut out = answer.to_string();
    let mut from = 0;
    for s in &report.sentences {
        let Some(n) = s.inferred else {
            if let Some(at) = out[from..].find(s.text.trim_end()) {
                from += at + s.text.trim_end().len();
            }
            continue;
        };
        let text = s.text.trim_end();
        if let Some(at) = out[from..].find(text) {
            let end = from + at + text.len();
            let mark = format!(" [{n}]");
            out.insert_str(end, &mark);
            from = end + mark.len();
        }
    }
    out
}

/// The block a sentence restates: the most of its identifiers (each
/// weighted by how few blocks hold it), else at least three of its content
/// words; ties go to the earlier block. None when nothing is shared.
fn best_block(sentence: &str, blocks: &BTreeMap<u32, String>) -> Option<u32> {
    let ids = identifiers(sentence);
    let mut best: Option<(f64, u32)> = None;
    if !ids.is_empty() {
        let mut scores: BTreeMap<u32, f64> = BTreeMap::new();
        for id in &ids {
            let last = id.rsplit("::").next().unwrap_or(id);
            let holders: Vec<u32> = blocks
                .iter()
                .filter(|(_, t)| t.contains(id.as_str()) || t.contains(last))
                .map(|(n, _)| *n)
                .collect();
            for n in &holders {
                *scores.entry(*n).or_default() += 1.0 / holders.len() as f64;
            }
        }
        for (n, s) in scores {
            if best.is_none_or(|b| s > b.0) {
                best = Some((s, n));
            }
        }
        if best.is_some() {
            return best.map(|b| b.1);
        }
    }
    let words = content_words(sentence);
    for (n, t) in blocks {
        let have = content_words(t);
        let shared = words.intersection(&have).count();
        if shared >= 3 && best.is_none_or(|b| shared as f64 > b.0) {
            best = Some((shared as f64, *n));
        }
    }
    best.map(|b| b.1)
}

#[cfg(test)]
mod inferred_tests {
    use super::*;

    #[test]
    fn inferred_sources_are_written_into_the_answer() {
        let report = SupportReport {
            sentences: vec![
                SentenceSupport {
                    text: "- `a` calls `b`.".into(),
                    cited: vec![],
                    inferred: Some(2),
                    unsupported: false,
                },
                SentenceSupport {
                    text: "- It is fast.".into(),
                    cited: vec![],
                    inferred: None,
                    unsupported: true,
                },
                SentenceSupport {
                    text: "- `c` is `d`.".into(),
                    cited: vec![],
                    inferred: Some(1),
                    unsupported: false,
                },
            ],
            inferred: 2,
            unsupported: 1,
            unsupported_share: 1.0 / 3.0,
            unknown_identifiers: vec![],
        };
        assert_eq!(
            with_inferred_citations("- `a` calls `b`.\n- It is fast.\n- `c` is `d`.\n", &report),
            "- `a` calls `b`. [2]\n- It is fast.\n- `c` is `d`. [1]\n"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::ContextChunk;

    fn ctx() -> Context {
        let chunk = |n: u32, path: &str| ContextChunk {
            n,
            chunk: n,
            path: path.into(),
            start_line: 1,
            end_line: 9,
            symbol: String::new(),
            role: "primary".into(),
        };
        Context {
            text: "[1] ns::Mesh (class, symbol) primary\nlocation: src/Mesh.h:1-9\n```cpp\nclass Mesh { double spacing_; void setSpacing(double h); };\n```\n\n[2] ns::Solver::solve (method, symbol) primary\nlocation: src/Solver.cpp:1-9\n```cpp\nvoid Solver::solve() { fft.transform(rho); // spectral Poisson solution of the charge density\n}\n```\n".into(),
            chunks: vec![chunk(1, "src/Mesh.h"), chunk(2, "src/Solver.cpp")],
            tokens: 0,
            dropped_for_budget: 0,
            prompt: String::new(),
            prompt_tokens: 0,
            lead: String::new(),
        }
    }

    #[test]
    fn identifiers_are_code_shaped_words() {
        assert_eq!(
            identifiers(
                "The `Mesh` class stores spacing_ and calls setSpacing() in Mesh.h via ns::Solver."
            ),
            vec!["Mesh", "spacing_", "setSpacing", "Mesh.h", "ns::Solver"]
        );
        assert!(identifiers("A plain sentence with Words.").is_empty());
    }

    #[test]
    fn uncited_sentences_get_the_block_they_restate() {
        let r = check_support(
            "- `Mesh` keeps the grid spacing in spacing_.\n- Solver::solve transforms rho [2].\n- The solver computes the spectral Poisson solution of the charge density.\n- It also writes checkpoints to disk.\n- The context does not say how boundaries are handled.",
            "what does the mesh store?",
            &ctx(),
        );
        let s = &r.sentences;
        assert_eq!(s.len(), 5);
        assert_eq!((s[0].inferred, s[0].unsupported), (Some(1), false));
        assert_eq!((s[1].cited.clone(), s[1].inferred), (vec![2], None));
        assert_eq!(s[2].inferred, Some(2), "content words: {:?}", s[2]);
        assert!(s[3].unsupported);
        assert!(!s[4].unsupported && s[4].inferred.is_none());
        assert_eq!((r.inferred, r.unsupported), (2, 1));
        assert!((r.unsupported_share - 0.2).abs() < 1e-9);
    }

    #[test]
    fn identifiers_the_context_never_shows_are_flagged() {
        let r = check_support(
            "Mesh calls setSpacing() and then MeshRefiner::refine() [1].",
            "q",
            &ctx(),
        );
        assert_eq!(r.unknown_identifiers, vec!["MeshRefiner::refine"]);
        assert!(check_support("", "q", &ctx()).sentences.is_empty());
    }
}
