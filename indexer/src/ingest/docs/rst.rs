//! reStructuredText syntax: titles (with or without an overline, levels
//! by order of first appearance) and the blocks that must stay whole (code
//! directives and `::` literal blocks).

use super::{Analysis, Heading, Lines};
use codegloss_core::text::indent_width;

const RST_ADORNMENT: &str = "=-~^\"'`#*+<>:._";

/// A section adornment line: one punctuation character repeated from column
/// 1. Returns the character and the length.
fn rst_adornment(line: &str) -> Option<(char, usize)> {
    let t = line.trim_end();
    let c = t.chars().next()?;
    if !RST_ADORNMENT.contains(c) || !t.chars().all(|x| x == c) {
        return None;
    }
    Some((c, t.chars().count()))
}

/// Explicit markup whose indented body is code and must stay whole.
fn rst_code_directive(line: &str) -> bool {
    let t = line.trim_start();
    let Some(rest) = t.strip_prefix("..") else {
        return false;
    };
    let rest = rest.trim_start();
    let Some((name, _)) = rest.split_once("::") else {
        return false;
    };
    matches!(
        name.trim(),
        "code-block"
            | "code"
            | "sourcecode"
            | "literalinclude"
            | "parsed-literal"
            | "math"
            | "doctest"
            | "testcode"
            | "testoutput"
            | "highlight"
            | "prompt"
            | "ipython"
    )
}

/// The last line of the indented block after line `from` (lines that are
/// blank or indented deeper than `base`), trailing blank lines excluded.
fn rst_indented_end(lines: &Lines<'_>, from: usize, base: usize) -> Option<usize> {
    let mut last = None;
    let mut j = from + 1;
    while j < lines.len() {
        let line = lines.get(j);
        if line.trim().is_empty() {
            j += 1;
            continue;
        }
        if indent_width(line) <= base {
            break;
        }
        last = Some(j);
        j += 1;
    }
    last
}

pub(super) fn analyse_rst(lines: &Lines<'_>) -> Analysis {
    let n = lines.len();
    let mut atomic = vec![false; n];

    // Pass 1: code directives and `::` literal blocks.
    let mut i = 0;
    while i < n {
        let line = lines.get(i);
        let base = indent_width(line);
        if rst_code_directive(line) {
            let end = rst_indented_end(lines, i, base).unwrap_or(i);
            atomic[i..=end].fill(true);
            i = end + 1;
            continue;
        }
        let is_markup = line.trim_start().starts_with("..");
        if !is_markup && line.trim_end().ends_with("::") && lines.is_blank(i + 1) && i + 1 < n {
            if let Some(end) = rst_indented_end(lines, i, base) {
                // The blank lines between the `::` paragraph and its block
                // belong to the block, so that the two stay together.
                atomic[i + 1..=end].fill(true);
                i = end + 1;
                continue;
            }
        }
        i += 1;
    }

    // Pass 2: titles, outside the blocks.
    let mut styles: Vec<(char, bool)> = Vec::new();
    let mut level_of = |style: (char, bool)| -> u8 {
        let pos = match styles.iter().position(|&s| s == style) {
            Some(p) => p,
            None => {
                styles.push(style);
                styles.len() - 1
            }
        };
        u8::try_from(pos + 1).unwrap_or(u8::MAX)
    };
    let mut headings = Vec::new();
    let mut after_break = true; // start of file, blank line or title end
    let mut i = 0;
    while i < n {
        if atomic[i] {
            after_break = false;
            i += 1;
            continue;
        }
        if lines.is_blank(i) {
            after_break = true;
            i += 1;
            continue;
        }
        if after_break {
            if let Some((last, style, title)) = rst_title(lines, &atomic, i) {
                headings.push(Heading {
                    first: i,
                    last,
                    level: level_of(style),
                    title: title.to_string(),
                });
                i = last + 1;
                after_break = true;
                continue;
            }
        }
        after_break = false;
        i += 1;
    }
    Analysis { headings, atomic }
}

/// The title that starts at line `i` (after a break), outside the blocks:
/// its last line, its style (adornment character, overlined) and its text.
/// An overline and underline must match and be as long as the title; an
/// underline alone must be as long and the title must start in column 1.
fn rst_title<'a>(
    lines: &Lines<'a>,
    atomic: &[bool],
    i: usize,
) -> Option<(usize, (char, bool), &'a str)> {
    let n = lines.len();
    if let Some((c, over)) = rst_adornment(lines.get(i)) {
        // Overline, title, underline.
        if i + 2 < n && !atomic[i + 1] && !atomic[i + 2] && !lines.is_blank(i + 1) {
            let title = lines.get(i + 1).trim();
            let tlen = title.chars().count();
            let (c2, under) = rst_adornment(lines.get(i + 2))?;
            return (c2 == c && over >= tlen && under >= tlen).then_some((i + 2, (c, true), title));
        }
        return None;
    }
    if i + 1 < n && !atomic[i + 1] && indent_width(lines.get(i)) == 0 {
        // Title, underline.
        let title = lines.get(i).trim();
        let (c, under) = rst_adornment(lines.get(i + 1))?;
        return (under >= title.chars().count()).then_some((i + 1, (c, false), title));
    }
    None
}
