//! Markdown syntax: ATX and setext headings, and the blocks that must stay
//! whole (fenced code, front matter, HTML comments), never mistaking a line
//! inside them for a heading.

use super::{Analysis, Heading, Lines};
use codegloss_core::text::indent_width;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MdKind {
    Blank,
    /// Paragraph text (candidate setext heading content).
    Text,
    /// An ATX heading or a line of a setext heading.
    Heading,
    /// Fences, code, front matter, comments, thematic breaks.
    Other,
}

/// An opening code fence: its character and length.
fn md_fence_open(line: &str) -> Option<(char, usize)> {
    let t = line.trim_start();
    let c = t.chars().next()?;
    if c != '`' && c != '~' {
        return None;
    }
    let len = t.chars().take_while(|&x| x == c).count();
    if len < 3 {
        return None;
    }
    // A backtick fence's info string may not contain backticks
    // (that would be inline code).
    if c == '`' && t[len..].contains('`') {
        return None;
    }
    Some((c, len))
}

fn md_fence_closes(line: &str, c: char, len: usize) -> bool {
    let t = line.trim();
    !t.is_empty() && t.chars().all(|x| x == c) && t.chars().count() >= len
}

/// An ATX heading: level and title.
fn md_atx(line: &str) -> Option<(u8, String)> {
    if indent_width(line) > 3 {
        return None;
    }
    let t = line.trim_start();
    let hashes = t.chars().take_while(|&c| c == '#').count();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    let rest = &t[hashes..];
    if !(rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t')) {
        return None;
    }
    let mut title = rest.trim();
    // Optional closing sequence: #s preceded by a space (or the whole text).
    let without = title.trim_end_matches('#');
    if without.len() != title.len() && (without.is_empty() || without.ends_with([' ', '\t'])) {
        title = without.trim_end();
    }
    Some((u8::try_from(hashes).unwrap_or(6), title.to_string()))
}

/// A setext underline: `===` gives 1, `---` gives 2.
fn md_setext_underline(line: &str) -> Option<u8> {
    if indent_width(line) > 3 {
        return None;
    }
    let t = line.trim();
    let c = t.chars().next()?;
    let n = t.chars().count();
    if !t.chars().all(|x| x == c) {
        return None;
    }
    match c {
        '=' => Some(1),
        '-' if n >= 2 => Some(2),
        _ => None,
    }
}

fn md_thematic_break(line: &str) -> bool {
    if indent_width(line) > 3 {
        return false;
    }
    let t: Vec<char> = line.chars().filter(|c| !c.is_whitespace()).collect();
    match t.first() {
        Some(&c) if c == '-' || c == '*' || c == '_' => t.len() >= 3 && t.iter().all(|&x| x == c),
        _ => false,
    }
}

/// Lines that start a block that cannot be the content of a setext heading
/// (list items, block quotes, indented code).
fn md_starts_other_block(line: &str) -> bool {
    if indent_width(line) >= 4 {
        return true;
    }
    let t = line.trim_start();
    if t.starts_with('>') {
        return true;
    }
    let bullet = t.starts_with("- ") || t.starts_with("* ") || t.starts_with("+ ");
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    let ordered = (1..=9).contains(&digits)
        && (t[digits..].starts_with(". ") || t[digits..].starts_with(") "));
    bullet || ordered
}

pub(super) fn analyse_markdown(lines: &Lines<'_>) -> Analysis {
    let n = lines.len();
    let mut atomic = vec![false; n];
    let mut kinds = vec![MdKind::Text; n];
    let mut atx: Vec<Option<(u8, String)>> = vec![None; n];

    let mut i = 0;
    // YAML front matter: `---` on the first line up to `---` or `...`.
    if lines.get(0).trim_end() == "---" {
        if let Some(end) = (1..n).find(|&j| matches!(lines.get(j).trim_end(), "---" | "...")) {
            atomic[..=end].fill(true);
            kinds[..=end].fill(MdKind::Other);
            i = end + 1;
        }
    }

    let mut fence: Option<(char, usize)> = None;
    let mut in_comment = false;
    while i < n {
        let line = lines.get(i);
        if let Some((c, len)) = fence {
            atomic[i] = true;
            kinds[i] = MdKind::Other;
            if md_fence_closes(line, c, len) {
                fence = None;
            }
        } else if in_comment {
            atomic[i] = true;
            kinds[i] = MdKind::Other;
            if line.contains("-->") {
                in_comment = false;
            }
        } else if line.trim().is_empty() {
            kinds[i] = MdKind::Blank;
        } else if let Some(open) = md_fence_open(line) {
            atomic[i] = true;
            kinds[i] = MdKind::Other;
            fence = Some(open);
        } else if line.trim_start().starts_with("<!--") {
            kinds[i] = MdKind::Other;
            let after = line.trim_start().get(4..).unwrap_or_default();
            if !after.contains("-->") {
                atomic[i] = true;
                in_comment = true;
            }
        } else if let Some(h) = md_atx(line) {
            kinds[i] = MdKind::Heading;
            atx[i] = Some(h);
        } else if md_setext_underline(line).is_none() && md_thematic_break(line) {
            kinds[i] = MdKind::Other;
        }
        i += 1;
    }

    let mut headings = Vec::new();
    for (i, h) in atx.into_iter().enumerate() {
        if let Some((level, title)) = h {
            headings.push(Heading {
                first: i,
                last: i,
                level,
                title,
            });
        }
    }

    // Setext headings: an underline after paragraph text. A `---` after a
    // blank line (or after anything but paragraph text) is a thematic break.
    // `run` is the first line of the paragraph text ending just before `i`
    // (kept as we go, so that the pass stays linear).
    let mut run: Option<usize> = None;
    for i in 0..n {
        if kinds[i] != MdKind::Text {
            run = None;
            continue;
        }
        let line = lines.get(i);
        if let Some(level) = md_setext_underline(line) {
            if let Some(p) = run.filter(|&p| !md_starts_other_block(lines.get(p))) {
                let title = (p..i)
                    .map(|j| lines.get(j).trim())
                    .collect::<Vec<_>>()
                    .join(" ");
                kinds[p..=i].fill(MdKind::Heading);
                headings.push(Heading {
                    first: p,
                    last: i,
                    level,
                    title,
                });
                run = None;
                continue;
            }
            if md_thematic_break(line) {
                kinds[i] = MdKind::Other;
                run = None;
                continue;
            }
        }
        run = run.or(Some(i));
    }
    headings.sort_by_key(|h| h.first);
    Analysis { headings, atomic }
}
