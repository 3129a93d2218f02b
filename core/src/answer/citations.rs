//! The citations of an answer: the `[n]` numbers it carries, mapped back
//! to the `path:start-end` of the context chunk each names, and how much
//! of the answer (sentence by sentence) is cited.

use serde::{Deserialize, Serialize};

use super::Context;

/// One citation found in an answer.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Citation {
    /// The number cited.
    pub n: u32,
    /// `path:start-end`, when the number names a context chunk.
    pub location: Option<String>,
}

/// The citations of an answer.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct CitationReport {
    /// Distinct citations in order of first use.
    pub citations: Vec<Citation>,
    /// Numbers that name no context chunk.
    pub invalid: Vec<u32>,
    /// Sentences in the answer.
    pub sentences: usize,
    /// Sentences with at least one valid citation.
    pub cited_sentences: usize,
    /// `cited_sentences / sentences` (0 for an empty answer).
    pub cited_share: f64,
}

/// Citation numbers in a text: `[3]`, `[1, 2]`, `[1][4]`.
pub(crate) fn numbers_in(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(a) = rest.find('[') {
        let Some(b) = rest[a..].find(']') else {
            break;
        };
        let inner = &rest[a + 1..a + b];
        let nums: Vec<Option<u32>> = inner
            .split(',')
            .map(|p| p.trim().parse::<u32>().ok())
            .collect();
        if !nums.is_empty() && nums.iter().all(Option::is_some) {
            out.extend(nums.into_iter().flatten());
        }
        rest = &rest[a + b + 1..];
    }
    out
}

/// The citations a line opens with, after its bullet marker (`- [2][5]
/// ...`, `* [1] ...`, `3. [4] ...`): the answer prompts ask every bullet to
/// start with the excerpts it comes from, so they cite every sentence of
/// the bullet.
fn leading_citations(line: &str) -> Vec<u32> {
    let t = line.trim_start();
    let t = t
        .strip_prefix("- ")
        .or_else(|| t.strip_prefix("* "))
        .or_else(|| {
            let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(0);
            (digits > 0)
                .then(|| t[digits..].strip_prefix(". "))
                .flatten()
        })
        .unwrap_or(t)
        .trim_start();
    if !t.starts_with('[') {
        return Vec::new();
    }
    // The run of `[n]` groups before the text.
    let end = t
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_digit() || matches!(c, '[' | ']' | ',' | ' ')))
        .map_or(t.len(), |(i, _)| i);
    numbers_in(&t[..end])
}

/// Whether a line opens a list item (`- `, `* `, `3. `).
fn is_item(line: &str) -> bool {
    let t = line.trim_start();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(0);
    t.starts_with("- ") || t.starts_with("* ") || (digits > 0 && t[digits..].starts_with(". "))
}

/// Sentences of an answer, each with the citations its bullet opens with
/// (empty outside such a bullet): split at `.`, `!`, `?` followed by
/// whitespace, and at line breaks; code fences and blank pieces are
/// skipped.
///
/// A cited bullet's citations also hold for what belongs to its item, as a
/// reader of the list sees it: its indented sub-items, the lines that
/// continue it without a marker of their own, and the items of a list it
/// introduces (a line ending in `:`, such as "It takes three parameters:").
/// An item that opens at the same level with no citation ends it.
pub(crate) fn bullet_sentences(answer: &str) -> Vec<(String, Vec<u32>)> {
    let mut out = Vec::new();
    let mut in_fence = false;
    // The citations of the item being continued, and whether its last
    // line introduced a list.
    let mut item: Vec<u32> = Vec::new();
    let mut intro = false;
    let mut after_blank = false;
    for line in answer.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        if line.trim().is_empty() {
            after_blank = true;
            continue;
        }
        let own = leading_citations(line);
        let indented = line.starts_with([' ', '\t']);
        let in_list = intro && own.is_empty() && is_item(line);
        let lead = if !own.is_empty() {
            item = own.clone();
            own
        } else if !item.is_empty() && (indented || in_list || (!is_item(line) && !after_blank)) {
            item.clone()
        } else {
            item.clear();
            Vec::new()
        };
        intro = !lead.is_empty() && (line.trim_end().ends_with(':') || in_list);
        after_blank = false;
        let mut cur = String::new();
        let chars: Vec<char> = line.chars().collect();
        for (i, &ch) in chars.iter().enumerate() {
            cur.push(ch);
            let end =
                matches!(ch, '.' | '!' | '?') && chars.get(i + 1).is_none_or(|c| c.is_whitespace());
            // A citation right after the full stop belongs to this sentence.
            if end
                && !chars[i + 1..]
                    .iter()
                    .collect::<String>()
                    .trim_start()
                    .starts_with('[')
            {
                if cur.trim().chars().any(char::is_alphanumeric) {
                    out.push((cur.trim().to_string(), lead.clone()));
                }
                cur.clear();
            }
        }
        if cur.trim().chars().any(char::is_alphanumeric) {
            out.push((cur.trim().to_string(), lead.clone()));
        }
    }
    out
}

/// Map the `[n]` citations of an answer to context locations and measure
/// how much of the answer is cited.
pub fn check_citations(answer: &str, context: &Context) -> CitationReport {
    let valid = |n: u32| context.chunks.iter().find(|c| c.n == n);
    let mut citations: Vec<Citation> = Vec::new();
    let mut invalid: Vec<u32> = Vec::new();
    for n in numbers_in(answer) {
        match valid(n) {
            Some(c) => {
                if !citations.iter().any(|x| x.n == n) {
                    citations.push(Citation {
                        n,
                        location: Some(c.location()),
                    });
                }
            }
            None => {
                if !invalid.contains(&n) {
                    invalid.push(n);
                }
            }
        }
    }
    let sents = bullet_sentences(answer);
    let cited = sents
        .iter()
        .filter(|(s, lead)| {
            numbers_in(s)
                .into_iter()
                .chain(lead.iter().copied())
                .any(|n| valid(n).is_some())
        })
        .count();
    CitationReport {
        citations,
        invalid,
        sentences: sents.len(),
        cited_sentences: cited,
        cited_share: if sents.is_empty() {
            0.0
        } else {
            cited as f64 / sents.len() as f64
        },
    }
}

#[cfg(test)]
mod bullet_tests {
    use super::*;

    #[test]
    fn a_bullets_leading_citation_cites_each_of_its_sentences() {
        let s = bullet_sentences("- [2][5] `a` calls `b`. It is fast.\n  - nested, no citation.\n3. [1] One.\n- Plain [4] text.");
        assert_eq!(s[0], ("- [2][5] `a` calls `b`.".to_string(), vec![2, 5]));
        assert_eq!(s[1], ("It is fast.".to_string(), vec![2, 5]));
        // A sub-item belongs to its item.
        assert_eq!(s[2].1, vec![2, 5]);
        assert_eq!(s[3].1, vec![1]);
        // An uncited item at the same level does not.
        assert_eq!(s[4].1, Vec::<u32>::new());
    }

    #[test]
    fn an_items_citations_hold_for_its_continuation_and_the_list_it_introduces() {
        let s = bullet_sentences(
            "- [3] `step` runs one step.\nIt takes two parameters:\n- `int it`: the step.\n- `double dt`: the time step.\n\nSomething else.\n- Uncited.",
        );
        let leads: Vec<Vec<u32>> = s.iter().map(|(_, l)| l.clone()).collect();
        assert_eq!(
            leads,
            vec![vec![3], vec![3], vec![3], vec![3], vec![], vec![]],
            "{s:?}"
        );
        // Without the introducing colon, an uncited item stands alone.
        let s = bullet_sentences("- [1] One.\n- Two.");
        assert_eq!(s[1].1, Vec::<u32>::new());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::ContextChunk;

    fn ctx() -> Context {
        Context {
            text: String::new(),
            chunks: vec![
                ContextChunk {
                    n: 1,
                    chunk: 0,
                    path: "src/A.h".into(),
                    start_line: 3,
                    end_line: 9,
                    symbol: "A".into(),
                    role: "primary".into(),
                },
                ContextChunk {
                    n: 2,
                    chunk: 1,
                    path: "src".into(),
                    start_line: 0,
                    end_line: 0,
                    symbol: "src".into(),
                    role: "structural_expansion".into(),
                },
            ],
            tokens: 0,
            dropped_for_budget: 0,
            prompt: String::new(),
            prompt_tokens: 0,
            lead: String::new(),
        }
    }

    #[test]
    fn citations_map_to_locations_and_flag_unknown_numbers() {
        let r = check_citations(
            "A holds the field [1]. It lives in src [2][7]. Nothing else is known.\n- uses B [1, 2]",
            &ctx(),
        );
        assert_eq!(
            r.citations,
            vec![
                Citation {
                    n: 1,
                    location: Some("src/A.h:3-9".into())
                },
                Citation {
                    n: 2,
                    location: Some("src".into())
                }
            ]
        );
        assert_eq!(r.invalid, vec![7]);
        assert_eq!(r.sentences, 4);
        assert_eq!(r.cited_sentences, 3);
        assert!((r.cited_share - 0.75).abs() < 1e-9);
        let none = check_citations("", &ctx());
        assert_eq!((none.sentences, none.cited_share), (0, 0.0));
        assert_eq!(numbers_in("array[i] and [x] but [3]"), vec![3]);
    }
}
