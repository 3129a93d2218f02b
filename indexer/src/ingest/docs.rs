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

use codegloss_core::text::estimate_tokens;
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
/// (estimated with [`estimate_tokens`]) are split into parts on blank lines,
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
        Language::Markdown => analyse_markdown(&lines),
        Language::Rst => analyse_rst(&lines),
        Language::Text | Language::Cmake | Language::Cpp => Analysis::plain(lines.len()),
    };
    build_sections(file_name, &lines, &analysis, max_tokens)
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

fn indent_of(line: &str) -> usize {
    let mut width = 0;
    for c in line.chars() {
        match c {
            ' ' => width += 1,
            '\t' => width += 4 - width % 4,
            _ => break,
        }
    }
    width
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

// ----- Markdown -------------------------------------------------------------

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
    if indent_of(line) > 3 {
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
    if indent_of(line) > 3 {
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
    if indent_of(line) > 3 {
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
    if indent_of(line) >= 4 {
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

fn analyse_markdown(lines: &Lines<'_>) -> Analysis {
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

// ----- reStructuredText ------------------------------------------------------

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
        if indent_of(line) <= base {
            break;
        }
        last = Some(j);
        j += 1;
    }
    last
}

fn analyse_rst(lines: &Lines<'_>) -> Analysis {
    let n = lines.len();
    let mut atomic = vec![false; n];

    // Pass 1: code directives and `::` literal blocks.
    let mut i = 0;
    while i < n {
        let line = lines.get(i);
        let base = indent_of(line);
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
            // Overline, title, underline.
            if let Some((c, over)) = rst_adornment(lines.get(i)) {
                if i + 2 < n && !atomic[i + 1] && !atomic[i + 2] && !lines.is_blank(i + 1) {
                    let title = lines.get(i + 1).trim();
                    let tlen = title.chars().count();
                    if let Some((c2, under)) = rst_adornment(lines.get(i + 2)) {
                        if c2 == c && over >= tlen && under >= tlen {
                            headings.push(Heading {
                                first: i,
                                last: i + 2,
                                level: level_of((c, true)),
                                title: title.to_string(),
                            });
                            i += 3;
                            after_break = true;
                            continue;
                        }
                    }
                }
            } else if i + 1 < n && !atomic[i + 1] && indent_of(lines.get(i)) == 0 {
                // Title, underline.
                let title = lines.get(i).trim();
                let tlen = title.chars().count();
                if let Some((c, under)) = rst_adornment(lines.get(i + 1)) {
                    if under >= tlen {
                        headings.push(Heading {
                            first: i,
                            last: i + 1,
                            level: level_of((c, false)),
                            title: title.to_string(),
                        });
                        i += 2;
                        after_break = true;
                        continue;
                    }
                }
            }
        }
        after_break = false;
        i += 1;
    }
    Analysis { headings, atomic }
}

// ---------------------------------------------------------------------------
// Sections and parts
// ---------------------------------------------------------------------------

fn build_sections(
    file_name: &str,
    lines: &Lines<'_>,
    analysis: &Analysis,
    max_tokens: usize,
) -> Vec<DocSection> {
    let n = lines.len();
    let mut sections = Vec::new();
    let first_heading = analysis.headings.first().map_or(n, |h| h.first);

    if (0..first_heading).any(|i| !lines.is_blank(i)) {
        let parts = split_parts(lines, &analysis.atomic, 0, first_heading, None, max_tokens);
        if let Some(section) = make_section(
            lines,
            file_name.to_string(),
            file_name.to_string(),
            0,
            None,
            parts,
        ) {
            sections.push(section);
        }
    }

    // Enclosing headings: (level, section index, title).
    let mut stack: Vec<(u8, usize, String)> = Vec::new();
    for (k, h) in analysis.headings.iter().enumerate() {
        let end = analysis.headings.get(k + 1).map_or(n, |next| next.first);
        while stack.last().is_some_and(|(level, _, _)| *level >= h.level) {
            stack.pop();
        }
        let parent = stack.last().map(|(_, index, _)| *index);
        let mut path = vec![file_name];
        path.extend(stack.iter().map(|(_, _, title)| title.as_str()));
        path.push(&h.title);
        let section_path = path.join(" > ");

        let parts = split_parts(
            lines,
            &analysis.atomic,
            h.first,
            end,
            Some(h.last),
            max_tokens,
        );
        if let Some(section) =
            make_section(lines, h.title.clone(), section_path, h.level, parent, parts)
        {
            stack.push((h.level, sections.len(), h.title.clone()));
            sections.push(section);
        }
    }
    sections
}

fn make_section(
    lines: &Lines<'_>,
    title: String,
    section_path: String,
    level: u8,
    parent: Option<usize>,
    parts: Vec<(usize, usize)>,
) -> Option<DocSection> {
    let first = parts.first()?.0;
    let last = parts.last()?.1;
    Some(DocSection {
        title,
        section_path,
        level,
        parent,
        span: lines.span(first, last),
        parts: parts
            .into_iter()
            .map(|(a, b)| {
                let text = lines.slice(a, b);
                // The budget arithmetic works on prefix character counts;
                // it must agree with the shared estimate.
                debug_assert_eq!(estimate_tokens(&text), lines.tokens(a, b));
                DocPart {
                    text,
                    span: lines.span(a, b),
                }
            })
            .collect(),
    })
}

/// Trim blank lines off both ends of `a..=b`.
fn trim_blank(lines: &Lines<'_>, mut a: usize, mut b: usize) -> Option<(usize, usize)> {
    while a <= b && lines.is_blank(a) {
        a += 1;
    }
    while b > a && lines.is_blank(b) {
        b -= 1;
    }
    (a <= b && !lines.is_blank(a)).then_some((a, b))
}

/// Split lines `start..end` into parts (inclusive line ranges).
///
/// Units are runs of lines between blank lines; blank lines inside atomic
/// blocks do not separate. Units are packed greedily up to the budget. A
/// heading (ending at `heading_last`) is not left alone in a part when the
/// unit after it, with the heading, stays within four times the budget.
fn split_parts(
    lines: &Lines<'_>,
    atomic: &[bool],
    start: usize,
    end: usize,
    heading_last: Option<usize>,
    max_tokens: usize,
) -> Vec<(usize, usize)> {
    let mut units = Vec::new();
    let mut current: Option<(usize, usize)> = None;
    for i in start..end {
        if lines.is_blank(i) && !atomic.get(i).copied().unwrap_or(false) {
            if let Some(u) = current.take() {
                units.push(u);
            }
            continue;
        }
        current = Some(match current {
            Some((a, _)) => (a, i),
            None => (i, i),
        });
    }
    if let Some(u) = current {
        units.push(u);
    }

    let hard_limit = max_tokens.saturating_mul(4);
    let mut parts = Vec::new();
    let mut cur: Option<(usize, usize)> = None;
    for (a, b) in units {
        let Some((a, b)) = trim_blank(lines, a, b) else {
            continue;
        };
        if let Some((ca, cb)) = cur.take() {
            let joined = lines.tokens(ca, b);
            if joined <= max_tokens {
                cur = Some((ca, b));
                continue;
            }
            if heading_last == Some(cb) && joined <= hard_limit {
                parts.push((ca, b));
                continue;
            }
            parts.push((ca, cb));
        }
        let tokens = lines.tokens(a, b);
        if tokens <= max_tokens {
            cur = Some((a, b));
        } else if tokens > hard_limit {
            split_lines(lines, a, b, max_tokens, &mut parts);
        } else {
            parts.push((a, b));
        }
    }
    if let Some(c) = cur {
        parts.push(c);
    }
    parts
}

/// Split `a..=b` on line boundaries into pieces of at most `max_tokens`
/// (a single longer line is a piece of its own).
fn split_lines(
    lines: &Lines<'_>,
    a: usize,
    b: usize,
    max_tokens: usize,
    parts: &mut Vec<(usize, usize)>,
) {
    let mut s = a;
    for j in a..=b {
        if j > s && lines.tokens(s, j) > max_tokens {
            if let Some(piece) = trim_blank(lines, s, j - 1) {
                parts.push(piece);
            }
            s = j;
        }
    }
    if let Some(piece) = trim_blank(lines, s, b) {
        parts.push(piece);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let s = split_doc("INSTALLATION.md", Language::Markdown, text, 400);
        check_spans(text, &s);
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
        let s = split_doc("README.md", Language::Markdown, text, 400);
        check_spans(text, &s);
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
        let s = split_doc("b.md", Language::Markdown, text, 400);
        check_spans(text, &s);
        assert_eq!(titles(&s).len(), 2);
        assert_eq!(s[1].title, "Next");
        // A tiny budget: the fence stays whole (it is under 4x the budget).
        let text = "# T\n\npara one\n\n```\na\n\nb\n\nc\n```\n\npara two\n";
        let s = split_doc("c.md", Language::Markdown, text, 3);
        check_spans(text, &s);
        let texts: Vec<&str> = s[0].parts.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(
            texts,
            vec!["# T\n\npara one", "```\na\n\nb\n\nc\n```", "para two"]
        );
        // Front matter is not a setext heading.
        let text = "---\ntitle: x\n---\n\n# Real\n";
        let s = split_doc("d.md", Language::Markdown, text, 400);
        check_spans(text, &s);
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
        let s = split_doc("manual.rst", Language::Rst, text, 400);
        check_spans(text, &s);
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
        let s = split_doc("x.rst", Language::Rst, text, 4);
        check_spans(text, &s);
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
        let s = split_doc("x.rst", Language::Rst, text, 5);
        check_spans(text, &s);
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
        let s = split_doc("l.md", Language::Markdown, &text, 80);
        check_spans(&text, &s);
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
        let s = split_doc("big.txt", Language::Text, &big, 10);
        check_spans(&big, &s);
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
        let s = split_doc("NOTES.txt", Language::Text, text, 400);
        check_spans(text, &s);
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
        let s = split_doc("w.md", Language::Markdown, text, 400);
        check_spans(text, &s);
        assert_eq!(s[0].parts[0].text, "# A\r\n\r\nbody a");
        assert_eq!(s[1].parts[0].text, "# B\r\nbody b");
        assert_eq!(s[1].span.end_line, 6);
        let text = "Title\r\n=====\r\ntext";
        let s = split_doc("w.rst", Language::Rst, text, 400);
        check_spans(text, &s);
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
                    let s = split_doc("f", lang, text, budget);
                    check_spans(text, &s);
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
                    let s = split_doc("g", lang, &text, budget);
                    check_spans(&text, &s);
                }
            }
        }
    }
}
