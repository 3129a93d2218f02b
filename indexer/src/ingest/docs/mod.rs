//! Documentation files (Markdown, reStructuredText, plain text, CMake) cut
//! into sections and budget-sized parts.
//!
//! Documentation is retrieved section by section, so a question about
//! "building with CUDA" lands on `INSTALLATION.md > Kokkos > CUDA` rather
//! than on a whole file. This module finds the headings (never inside code
//! blocks), builds the section tree, and splits long sections into parts on
//! paragraph boundaries. Every section and part carries the exact byte and
//! line span it came from, so that the text shown to a reader can always be
//! traced back to the file.
//!
//! The syntax passes live in [`markdown`] and [`rst`]: each finds the
//! headings and the blocks that must stay whole, as an [`Analysis`] over the
//! file's [`Lines`]; [`sections`] builds the section tree from it and cuts
//! the parts.

mod markdown;
mod rst;
mod sections;

use codegloss_core::{Language, Span};

/// One budget-sized piece of a section: a contiguous run of whole lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocPart {
    /// The text of the part, exactly `text[span.start_byte..span.end_byte]`.
    pub text: String,
    /// Where the part lies in the file. It never starts or ends with a
    /// blank line and ends before the line terminator of its last line.
    pub span: Span,
}

/// A section of a documentation file: the text under one heading, up to the
/// next heading of any level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocSection {
    /// The heading text; the file name for the preamble before the first
    /// heading and for files without headings.
    pub title: String,
    /// The file name, the titles of the enclosing headings and this title,
    /// joined with `" > "` (`INSTALLATION.md > Kokkos > CUDA`). The preamble's
    /// path is the file name alone.
    pub section_path: String,
    /// Heading depth: 0 for the file-level preamble, 1 for `#`, 2 for `##`,
    /// ...; in reStructuredText, the rank of the title style by first
    /// appearance.
    pub level: u8,
    /// Index, in the returned `Vec`, of the enclosing section (`None` for the
    /// preamble and for top-level headings).
    pub parent: Option<usize>,
    /// From the heading to the end of the section's last non-blank line
    /// (blank lines before the next heading are left out). It runs from the
    /// start of the first part to the end of the last part; between parts
    /// there are only blank lines.
    pub span: Span,
    /// One part normally; several when the section is over the token budget.
    pub parts: Vec<DocPart>,
}

/// Split a documentation file into sections.
///
/// `language` chooses the heading syntax: Markdown (ATX and setext) and
/// reStructuredText titles; every other language (plain text, CMake) gives a
/// single level-0 section titled `file_name`. Sections over `max_tokens`
/// (estimated with [`estimate_tokens`](codegloss_core::text::estimate_tokens)) are split into parts on blank lines,
/// never inside a fenced code block or literal block; a single block over
/// four times the budget is split on line boundaries.
///
/// Never panics; an empty or blank file gives no sections.
pub fn split_doc(
    file_name: &str,
    language: Language,
    text: &str,
    max_tokens: usize,
) -> Vec<DocSection> {
    let lines = Lines::new(text);
    let analysis = match language {
        Language::Markdown => markdown::analyse_markdown(&lines),
        Language::Rst => rst::analyse_rst(&lines),
        Language::Text | Language::Cmake | Language::Cpp => Analysis::plain(lines.len()),
    };
    sections::build_sections(file_name, &lines, &analysis, max_tokens)
}

// ---------------------------------------------------------------------------
// Lines
// ---------------------------------------------------------------------------

/// One line of the file, as byte offsets.
#[derive(Debug, Clone, Copy)]
struct Line {
    /// First byte of the line.
    start: usize,
    /// End of the content: before `\n` or `\r\n`.
    end: usize,
    /// Characters in the file before `start`.
    chars_before_start: usize,
    /// Characters in the file before `end`.
    chars_before_end: usize,
}

/// The lines of a file with their offsets.
struct Lines<'a> {
    text: &'a str,
    lines: Vec<Line>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        let mut lines = Vec::new();
        let mut start = 0usize;
        let mut chars = 0usize;
        let bytes = text.as_bytes();
        while start < text.len() {
            let (end, next) = match text[start..].find('\n') {
                Some(rel) => {
                    let nl = start + rel;
                    let end = if nl > start && bytes[nl - 1] == b'\r' {
                        nl - 1
                    } else {
                        nl
                    };
                    (end, nl + 1)
                }
                None => {
                    let end = if text.ends_with('\r') {
                        text.len() - 1
                    } else {
                        text.len()
                    };
                    (end, text.len())
                }
            };
            let content_chars = text[start..end].chars().count();
            lines.push(Line {
                start,
                end,
                chars_before_start: chars,
                chars_before_end: chars + content_chars,
            });
            // Line terminators are ASCII: one char per byte.
            chars += content_chars + (next - end);
            start = next;
        }
        Lines { text, lines }
    }

    fn len(&self) -> usize {
        self.lines.len()
    }

    /// The content of line `i`, without its terminator.
    fn get(&self, i: usize) -> &'a str {
        match self.lines.get(i) {
            Some(l) => &self.text[l.start..l.end],
            None => "",
        }
    }

    fn is_blank(&self, i: usize) -> bool {
        self.get(i).trim().is_empty()
    }

    /// Estimated tokens of the text from the start of line `a` to the end of
    /// the content of line `b` (equal to `estimate_tokens` of that slice).
    fn tokens(&self, a: usize, b: usize) -> usize {
        match (self.lines.get(a), self.lines.get(b)) {
            (Some(la), Some(lb)) => lb
                .chars_before_end
                .saturating_sub(la.chars_before_start)
                .div_ceil(3),
            _ => 0,
        }
    }

    /// The span from the start of line `a` to the end of the content of
    /// line `b` (0-based line indices, `a <= b`).
    fn span(&self, a: usize, b: usize) -> Span {
        let start = self.lines.get(a).map_or(0, |l| l.start);
        let end = self.lines.get(b).map_or(start, |l| l.end).max(start);
        Span {
            start_byte: to_u32(start),
            end_byte: to_u32(end),
            start_line: to_u32(a.saturating_add(1)),
            end_line: to_u32(b.saturating_add(1)),
        }
    }

    fn slice(&self, a: usize, b: usize) -> String {
        let start = self.lines.get(a).map_or(0, |l| l.start);
        let end = self.lines.get(b).map_or(start, |l| l.end).max(start);
        self.text.get(start..end).unwrap_or_default().to_string()
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

// ---------------------------------------------------------------------------
// Analysis: headings and blocks that must stay whole
// ---------------------------------------------------------------------------

/// A heading: lines `first..=last` (more than one for setext headings and
/// reStructuredText titles).
#[derive(Debug, Clone)]
struct Heading {
    first: usize,
    last: usize,
    level: u8,
    title: String,
}

/// What the syntax pass found.
struct Analysis {
    /// Headings in line order.
    headings: Vec<Heading>,
    /// Lines inside a block that must not be split (fenced code, literal
    /// blocks, front matter, HTML comments).
    atomic: Vec<bool>,
}

impl Analysis {
    fn plain(n: usize) -> Self {
        Analysis {
            headings: Vec::new(),
            atomic: vec![false; n],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codegloss_core::text::estimate_tokens;

    /// [`split_doc`], with the span invariants checked.
    fn split(
        file_name: &str,
        language: Language,
        text: &str,
        max_tokens: usize,
    ) -> Vec<DocSection> {
        let s = split_doc(file_name, language, text, max_tokens);
        check_spans(text, &s);
        s
    }

    fn check_spans(text: &str, sections: &[DocSection]) {
        for s in sections {
            assert!(!s.parts.is_empty(), "{s:?}");
            let st = &text[s.span.start_byte as usize..s.span.end_byte as usize];
            let mut joined_from = s.span.start_byte as usize;
            for p in &s.parts {
                let slice = &text[p.span.start_byte as usize..p.span.end_byte as usize];
                assert_eq!(slice, p.text);
                assert!(!p.text.is_empty());
                assert!(!p.text.lines().next().unwrap_or("x").trim().is_empty());
                assert!(!p.text.lines().last().unwrap_or("x").trim().is_empty());
                assert_eq!(estimate_tokens(&p.text), {
                    let lines = Lines::new(text);
                    lines.tokens(p.span.start_line as usize - 1, p.span.end_line as usize - 1)
                });
                // Lines agree with bytes.
                let before = &text[..p.span.start_byte as usize];
                assert_eq!(before.matches('\n').count() + 1, p.span.start_line as usize);
                assert_eq!(
                    before.matches('\n').count() + p.text.matches('\n').count() + 1,
                    p.span.end_line as usize
                );
                // Only blank text between parts.
                assert!(text[joined_from..p.span.start_byte as usize]
                    .trim()
                    .is_empty());
                joined_from = p.span.end_byte as usize;
            }
            assert_eq!(joined_from, s.span.end_byte as usize);
            assert!(st.starts_with(&s.parts[0].text));
            if s.parts.len() == 1 {
                assert_eq!(s.span, s.parts[0].span);
            }
            if let Some(p) = s.parent {
                assert!(sections[p].level < s.level);
            }
        }
    }

    fn titles(sections: &[DocSection]) -> Vec<(u8, &str, &str, Option<usize>)> {
        sections
            .iter()
            .map(|s| (s.level, s.title.as_str(), s.section_path.as_str(), s.parent))
            .collect()
    }

    #[test]
    fn atx_nesting_and_section_path() {
        let text = "Intro text.\n\n# Install\n\nGeneral.\n\n## Kokkos ##\n\nK.\n\n### CUDA\nUse nvcc.\n\n## MPI\n\n# Usage\n";
        let s = split("INSTALLATION.md", Language::Markdown, text, 400);
        assert_eq!(
            titles(&s),
            vec![
                (0, "INSTALLATION.md", "INSTALLATION.md", None),
                (1, "Install", "INSTALLATION.md > Install", None),
                (2, "Kokkos", "INSTALLATION.md > Install > Kokkos", Some(1)),
                (
                    3,
                    "CUDA",
                    "INSTALLATION.md > Install > Kokkos > CUDA",
                    Some(2)
                ),
                (2, "MPI", "INSTALLATION.md > Install > MPI", Some(1)),
                (1, "Usage", "INSTALLATION.md > Usage", None),
            ]
        );
        assert_eq!(s[0].parts[0].text, "Intro text.");
        assert_eq!(s[1].parts[0].text, "# Install\n\nGeneral.");
        assert_eq!(s[1].span.start_line, 3);
        assert_eq!(s[1].span.end_line, 5);
        assert_eq!(s[3].parts[0].text, "### CUDA\nUse nvcc.");
        // Empty sections keep their heading line.
        assert_eq!(s[4].parts[0].text, "## MPI");
        assert_eq!(s[5].parts[0].text, "# Usage");
        // `#hashtag` and `#include` are not headings; 4 spaces is code.
        let s = split_doc(
            "a.md",
            Language::Markdown,
            "#include <x>\n    # code\n#tag\n",
            400,
        );
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].level, 0);
    }

    #[test]
    fn setext_headings_and_thematic_breaks() {
        let text = "Title\n=====\n\nSome text.\n\nSub part\nsecond line\n--------\n\nBody.\n\n---\n\nAfter break.\n";
        let s = split("README.md", Language::Markdown, text, 400);
        assert_eq!(
            titles(&s),
            vec![
                (1, "Title", "README.md > Title", None),
                (
                    2,
                    "Sub part second line",
                    "README.md > Title > Sub part second line",
                    Some(0)
                ),
            ]
        );
        assert_eq!(s[1].span.start_line, 6);
        assert!(s[1].parts[0].text.ends_with("After break."));
        // A list item or block quote followed by --- is not a heading.
        let s = split_doc(
            "a.md",
            Language::Markdown,
            "- item\n---\n> quote\n---\n",
            400,
        );
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].level, 0);
    }

    #[test]
    fn fenced_code_is_never_a_heading_nor_split() {
        let text = "# Build\n\n```bash\n# not a heading\n\ncmake ..\n\n# still not\n```\n\n~~~~\n```\n# inside tilde fence\n~~~~\n\n## Next\n";
        let s = split("b.md", Language::Markdown, text, 400);
        assert_eq!(titles(&s).len(), 2);
        assert_eq!(s[1].title, "Next");
        // A tiny budget: the fence stays whole (it is under 4x the budget).
        let text = "# T\n\npara one\n\n```\na\n\nb\n\nc\n```\n\npara two\n";
        let s = split("c.md", Language::Markdown, text, 3);
        let texts: Vec<&str> = s[0].parts.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(
            texts,
            vec!["# T\n\npara one", "```\na\n\nb\n\nc\n```", "para two"]
        );
        // Front matter is not a setext heading.
        let text = "---\ntitle: x\n---\n\n# Real\n";
        let s = split("d.md", Language::Markdown, text, 400);
        assert_eq!(titles(&s)[1], (1, "Real", "d.md > Real", None));
    }

    #[test]
    fn rst_titles_with_overlines_and_levels_by_appearance() {
        let text = "\
Preamble line.

=========
 Manual
=========

Intro.

Install
-------

Steps::

    Not a title
    -----------

    make

Options
~~~~~~~

.. code-block:: cpp

   int x;

   // Fake
   ========

Usage
-----
";
        let s = split("manual.rst", Language::Rst, text, 400);
        assert_eq!(
            titles(&s),
            vec![
                (0, "manual.rst", "manual.rst", None),
                (1, "Manual", "manual.rst > Manual", None),
                (2, "Install", "manual.rst > Manual > Install", Some(1)),
                (
                    3,
                    "Options",
                    "manual.rst > Manual > Install > Options",
                    Some(2)
                ),
                (2, "Usage", "manual.rst > Manual > Usage", Some(1)),
            ]
        );
        assert!(s[1].parts[0].text.starts_with("=========\n Manual"));
        assert!(s[2].parts[0].text.contains("    make"));
        // Transitions are not titles; an underline shorter than the title is
        // not a title.
        let text = "Para.\n\n----------\n\nLonger title\n----\n";
        let s = split_doc("t.rst", Language::Rst, text, 400);
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn rst_literal_block_is_kept_whole() {
        let text =
            "Title\n=====\n\nExample::\n\n    line 1\n\n    line 2\n\n    line 3\n\nAfter.\n";
        // The block (15 tokens) is over the budget of 4 but within 4x:
        // it stays whole; the heading cannot join it (20 tokens > 16).
        let s = split("x.rst", Language::Rst, text, 4);
        let texts: Vec<&str> = s[0].parts.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(
            texts,
            vec![
                "Title\n=====",
                "Example::\n\n    line 1\n\n    line 2\n\n    line 3",
                "After."
            ]
        );
        // With a budget of 5 (4x = 20) the heading goes with the block.
        let s = split("x.rst", Language::Rst, text, 5);
        let texts: Vec<&str> = s[0].parts.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(
            texts,
            vec![
                "Title\n=====\n\nExample::\n\n    line 1\n\n    line 2\n\n    line 3",
                "After."
            ]
        );
    }

    #[test]
    fn budget_splitting_on_paragraphs() {
        let para = |k: usize| format!("paragraph {k} {}", "word ".repeat(20));
        let body: Vec<String> = (0..10).map(para).collect();
        let text = format!("# Long\n\n{}\n\n# Short\n\nx\n", body.join("\n\n"));
        let s = split("l.md", Language::Markdown, &text, 80);
        assert_eq!(s.len(), 2);
        // Two paragraphs (38 tokens each) fit in 80 tokens.
        assert_eq!(s[0].parts.len(), 5, "{:?}", s[0].parts);
        assert!(s[0].parts.iter().all(|p| estimate_tokens(&p.text) <= 80));
        assert!(s[0].parts[0].text.starts_with("# Long\n\nparagraph 0"));
        assert!(s[0].parts.last().is_some_and(
            |p| p.text.starts_with("paragraph 8") && p.text.contains("\n\nparagraph 9")
        ));
        assert_eq!(s[1].parts.len(), 1);

        // One enormous paragraph over 4x the budget is split on lines.
        let big: String = (0..100).map(|k| format!("line {k}\n")).collect();
        let s = split("big.txt", Language::Text, &big, 10);
        assert!(s[0].parts.len() > 10);
        assert!(s[0].parts.iter().all(|p| estimate_tokens(&p.text) <= 10));
        // A paragraph between 1x and 4x the budget stays whole.
        let mid = "a b c d e f g h\ni j k l m n o p\n";
        let s = split_doc("mid.txt", Language::Text, mid, 5);
        assert_eq!(s[0].parts.len(), 1);
    }

    #[test]
    fn plain_text_and_cmake_are_one_section() {
        let text = "# Not a heading in text\n\nSecond para.\r\n";
        let s = split("NOTES.txt", Language::Text, text, 400);
        assert_eq!(titles(&s), vec![(0, "NOTES.txt", "NOTES.txt", None)]);
        assert_eq!(
            s[0].parts[0].text,
            "# Not a heading in text\n\nSecond para."
        );
        let s = split_doc(
            "CMakeLists.txt",
            Language::Cmake,
            "# comment\nproject(x)\n",
            400,
        );
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].title, "CMakeLists.txt");
        assert!(split_doc("e.txt", Language::Text, " \n\n\t\n", 400).is_empty());
    }

    #[test]
    fn crlf_and_missing_final_newline() {
        let text = "# A\r\n\r\nbody a\r\n\r\n# B\r\nbody b";
        let s = split("w.md", Language::Markdown, text, 400);
        assert_eq!(s[0].parts[0].text, "# A\r\n\r\nbody a");
        assert_eq!(s[1].parts[0].text, "# B\r\nbody b");
        assert_eq!(s[1].span.end_line, 6);
        let text = "Title\r\n=====\r\ntext";
        let s = split("w.rst", Language::Rst, text, 400);
        assert_eq!(s[0].title, "Title");
    }

    #[test]
    fn odd_inputs_never_panic() {
        let odd = [
            "",
            "\n",
            "\r",
            "\r\n\r\n",
            "#",
            "# ",
            "#\n##\n###\n",
            "# a\n# b\n# c",
            "```",
            "```\n# inside unterminated fence\n",
            "~~~\n\n\n",
            "<!--\n# hidden\n",
            "---",
            "---\n---\n",
            "===\n===\n",
            "-\n-\n",
            "Ünïcödé\n=======\n\n日本語のタイトル\n--------\n本文\n",
            "日本語\n==\n",
            "a\n=\nb\n-\n",
            "::\n\n    x",
            ".. code-block::",
            "..",
            "x::\n\n",
            "====\ntitle\n",
            "====\ntitle\n----\n",
            "\u{feff}# bom heading\n",
            "#\t tab\t#\t#\n",
            "  \n\t\n",
        ];
        for text in odd {
            for lang in [
                Language::Markdown,
                Language::Rst,
                Language::Text,
                Language::Cmake,
            ] {
                for budget in [0, 1, 3, 400] {
                    split("f", lang, text, budget);
                }
            }
        }
        // Pathological inputs stay fast (no quadratic rescans).
        let many = format!("- item\n{}", "===\n".repeat(200_000));
        let s = split_doc("p.md", Language::Markdown, &many, 400);
        assert_eq!(s.len(), 1);
        // Generated inputs from a small alphabet of troublesome pieces.
        let pieces = [
            "# h\n",
            "text\n",
            "\n",
            "```\n",
            "~~~~\n",
            "===\n",
            "---\n",
            "    ind\n",
            "x::\n",
            ".. code-block:: c\n",
            "\r\n",
            "é",
            "## ##\n",
            "<!--\n",
            "-->\n",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..300 {
            let mut text = String::new();
            for _ in 0..12 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                text.push_str(pieces[(seed % pieces.len() as u64) as usize]);
            }
            for lang in [Language::Markdown, Language::Rst] {
                for budget in [0, 2, 400] {
                    split("g", lang, &text, budget);
                }
            }
        }
    }
}
