//! Chunks: the retrievable records of the index.
//!
//! One chunk per entity, carrying the metadata of the paper's Listing 1
//! (path, file_name, base_name, source_type, entity_type, chunk_type,
//! symbol_name, parent_symbol, class_name, return_type, parameters,
//! leading_comment, code) plus line range and module. Function and class
//! bodies over the token budget are split on statement (or member)
//! boundaries at line ends, every later part repeating the signature as a
//! header; the chunk's [`CodeFrame`] says which lines of its code those
//! are, so that the rest is exactly the file's lines. A line is cut only
//! when it alone is over the budget, and then with a warning. Long
//! documentation sections arrive already split by [`crate::ingest::docs`] and are
//! named `title_1`, `title_2`, ...

use std::collections::HashMap;

use codegloss_core::text::{base_name, estimate_tokens, file_name};
use codegloss_core::{Chunk, CodeFrame, Entity, EntityKind, FileId, IndexData, Scope, Span};

use crate::config::ChunkConfig;
use crate::error::Warning;
use crate::ingest::cpp::RawEntity;
use crate::ingest::docs::DocSection;

/// Line (1-based) of a byte offset.
fn line_at(text: &str, byte: usize) -> u32 {
    text.as_bytes()[..byte.min(text.len())]
        .iter()
        .filter(|&&c| c == b'\n')
        .count() as u32
        + 1
}

/// The chunks of an index, and the warnings that building them gave.
#[derive(Debug, Default)]
pub struct Chunked {
    /// Every chunk, ids in order.
    pub chunks: Vec<Chunk>,
    /// Problems met, with the file they belong to, in chunk order.
    pub warnings: Vec<(FileId, Warning)>,
}

/// Build every chunk. `texts[i]` is the text of file `i`; `docs` the split
/// section of each documentation entity by id; `raw` the parser output of
/// code entities by id.
pub fn build_chunks(
    data: &IndexData,
    texts: &[&str],
    docs: &HashMap<u32, &DocSection>,
    raw: &HashMap<u32, RawEntity>,
    cfg: &ChunkConfig,
) -> Chunked {
    let mut chunks = Vec::new();
    let mut warnings = Vec::new();
    for e in &data.entities {
        let template = template_chunk(data, e);
        match e.kind {
            EntityKind::DocSection => {
                let Some(section) = docs.get(&e.id) else {
                    continue;
                };
                let n = section.parts.len().max(1);
                for (i, part) in section.parts.iter().enumerate() {
                    let mut c = template.clone();
                    c.part = (i + 1) as u16;
                    c.parts = n as u16;
                    if n > 1 {
                        c.symbol_name = format!("{}_{}", e.name, i + 1);
                    }
                    c.code = part.text.clone();
                    c.start_line = part.span.start_line;
                    c.end_line = part.span.end_line;
                    chunks.push(c);
                }
            }
            EntityKind::File | EntityKind::Module | EntityKind::CallChain => chunks.push(template),
            EntityKind::Namespace => {
                let mut c = template;
                c.code = e.signature.clone();
                chunks.push(c);
            }
            _ => {
                let (Some(fid), Some(span)) = (e.file, e.span) else {
                    chunks.push(template);
                    continue;
                };
                let text = texts[fid as usize];
                let code = text
                    .get(span.start_byte as usize..span.end_byte as usize)
                    .unwrap_or("");
                let pieces = raw.get(&e.id).map(|r| (r.body_start, r.pieces.as_slice()));
                let split = match pieces {
                    Some((Some(body_start), pieces))
                        if estimate_tokens(code) > cfg.max_tokens && pieces.len() > 1 =>
                    {
                        split_body(text, span, body_start as usize, pieces, cfg.max_tokens)
                    }
                    _ => Split::default(),
                };
                if split.parts.len() > 1 {
                    let n = split.parts.len();
                    let path = &data.files[fid as usize].path;
                    for cut in &split.cut_lines {
                        warnings.push((
                            fid,
                            Warning {
                                path: path.clone(),
                                line: Some(cut.line),
                                message: format!(
                                    "line {} is longer than the chunk budget (about {} tokens; a part of {} holds {}): it is cut between parts {} and {} of {}",
                                    cut.line,
                                    cut.tokens,
                                    e.qualified_name,
                                    cut.budget,
                                    cut.part,
                                    cut.part + 1,
                                    n
                                ),
                            },
                        ));
                    }
                    for (i, part) in split.parts.into_iter().enumerate() {
                        let mut c = template.clone();
                        c.part = (i + 1) as u16;
                        c.parts = n as u16;
                        c.chunk_type = format!("{}_part", e.kind.as_str());
                        c.code = part.code;
                        c.frame = part.frame;
                        c.start_line = part.start_line;
                        c.end_line = part.end_line;
                        chunks.push(c);
                    }
                } else {
                    let mut c = template;
                    c.code = code.to_string();
                    chunks.push(c);
                }
            }
        }
    }
    add_text_outside_entities(&mut chunks, data, texts);
    for (i, c) in chunks.iter_mut().enumerate() {
        c.id = i as u32;
    }
    Chunked { chunks, warnings }
}

/// Most bytes of a file's text outside its entities that its file chunk
/// carries (the rest of a huge generated file is not worth shipping).
const OUTSIDE_TEXT_BYTES: usize = 16 * 1024;

/// Give each file chunk the file's lines that no entity chunk holds (its
/// head comment, includes, macros, global variables), each at its own line
/// and every line an entity chunk holds left empty, so that a file's unit
/// is its whole text. The file chunk's code is for the answer context
/// only: keyword and vector search leave it out (it would repeat a file's
/// includes in every file's vector and term counts), so retrieval is
/// unchanged.
fn add_text_outside_entities(chunks: &mut [Chunk], data: &IndexData, texts: &[&str]) {
    let mut covered: HashMap<&str, Vec<(u32, u32)>> = HashMap::new();
    for c in chunks.iter() {
        if !c.entity_type.is_summary() && c.start_line > 0 {
            covered
                .entry(c.path.as_str())
                .or_default()
                .push((c.start_line, c.end_line));
        }
    }
    let mut outside: Vec<(usize, String)> = Vec::new();
    for (i, c) in chunks.iter().enumerate() {
        if c.entity_type != EntityKind::File || c.start_line == 0 {
            continue;
        }
        let Some(fid) = data.entities[c.entity as usize].file else {
            continue;
        };
        let ranges = covered.get(c.path.as_str()).map_or(&[][..], Vec::as_slice);
        let code = text_outside(
            texts[fid as usize],
            c.start_line,
            ranges,
            OUTSIDE_TEXT_BYTES,
        );
        outside.push((i, code));
    }
    for (i, code) in outside {
        chunks[i].code = code;
    }
}

/// The lines of `text` from line `start` on that lie in none of `ranges`
/// (inclusive 1-based line ranges), each at its own line, the others
/// empty; ends after the last such line that is not blank, or where the
/// kept bytes would pass `cap`.
fn text_outside(text: &str, start: u32, ranges: &[(u32, u32)], cap: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut held = vec![false; lines.len() + 1];
    for &(a, b) in ranges {
        let (a, b) = (a.max(1) as usize, (b as usize).min(lines.len()));
        if a <= b {
            held[a..=b].fill(true);
        }
    }
    let mut out = String::new();
    let mut kept = 0usize;
    let mut end = 0usize;
    let first = start.max(1) as usize;
    for (k, line) in lines.iter().enumerate().skip(first - 1) {
        if k + 1 > first {
            out.push('\n');
        }
        if held[k + 1] {
            continue;
        }
        kept += line.len();
        if kept > cap {
            break;
        }
        out.push_str(line);
        if !line.trim().is_empty() {
            end = out.len();
        }
    }
    out.truncate(end);
    out
}

fn template_chunk(data: &IndexData, e: &Entity) -> Chunk {
    let file = e.file.map(|f| &data.files[f as usize]);
    let (path, fname) = match file {
        Some(f) => (f.path.clone(), file_name(&f.path).to_string()),
        None => (e.qualified_name.clone(), String::new()),
    };
    let chunk_type = match (e.kind, file) {
        (EntityKind::DocSection, Some(f)) => format!("{}_section", f.language.as_str()),
        (k, _) => k.as_str().to_string(),
    };
    let span = e.span.unwrap_or_default();
    Chunk {
        id: 0,
        entity: e.id,
        part: 1,
        parts: 1,
        base_name: base_name(if fname.is_empty() { &e.name } else { &fname }).to_string(),
        file_name: fname,
        path,
        source_type: file.map(|f| f.source_type),
        scope: file.map_or_else(|| module_scope(data, e), |f| f.scope),
        language: file.map(|f| f.language),
        entity_type: e.kind,
        chunk_type,
        symbol_name: e.name.clone(),
        parent_symbol: e.parent_symbol.clone(),
        class_name: e.class_name.clone(),
        return_type: e.return_type.clone(),
        parameters: e
            .params
            .iter()
            .map(|p| {
                let mut s = if p.name.is_empty() {
                    p.ty.clone()
                } else {
                    format!("{} {}", p.ty, p.name)
                };
                if let Some(d) = &p.default {
                    s.push_str(" = ");
                    s.push_str(d);
                }
                s
            })
            .collect::<Vec<_>>()
            .join(", "),
        leading_comment: e.doc_comment.clone(),
        code: String::new(),
        frame: CodeFrame::default(),
        start_line: span.start_line,
        end_line: span.end_line,
        module: e.module.clone(),
        section_path: e.section_path.clone(),
    }
}

/// A module's scope: the scope its files share, else source.
fn module_scope(data: &IndexData, e: &Entity) -> Scope {
    let prefix = format!("{}/", e.qualified_name);
    let mut scopes = data
        .files
        .iter()
        .filter(|f| e.qualified_name == "." || f.path.starts_with(&prefix))
        .map(|f| f.scope);
    match scopes.next() {
        Some(first) if scopes.all(|s| s == first) => first,
        _ => Scope::Source,
    }
}

/// One part of a split body.
#[derive(Debug, PartialEq, Eq)]
struct Part {
    /// Prelude (parts after the first), the file's text, trailer.
    code: String,
    /// Which lines of `code` are prelude and trailer.
    frame: CodeFrame,
    /// First line of the file's text in `code`.
    start_line: u32,
    /// Last line of the file's text in `code`.
    end_line: u32,
}

/// A line over the budget, cut between two parts.
#[derive(Debug, PartialEq, Eq)]
struct CutLine {
    /// 1-based line.
    line: u32,
    /// Estimated tokens of the whole line.
    tokens: usize,
    /// Tokens a part's body holds.
    budget: usize,
    /// The part that the cut ends (1-based).
    part: usize,
}

/// A split body: its parts, and the lines cut between two of them.
#[derive(Debug, Default)]
struct Split {
    parts: Vec<Part>,
    cut_lines: Vec<CutLine>,
}

/// Byte offset of the first line break at or after `from` (the text
/// length when none).
fn line_end(text: &str, from: usize) -> usize {
    text[from..].find('\n').map_or(text.len(), |k| from + k)
}

/// Split a body into parts of at most `max_tokens` (a single oversized
/// statement stays whole) on statement (or member) boundaries at line
/// ends; a line is cut between statements only when it alone is over the
/// budget (reported in [`Split::cut_lines`]).
///
/// The first part is the file's text from the start of the entity; every
/// later part starts with the head (signature and opening brace) and a
/// `// [part i/n]` marker as its prelude, then the file's text from its
/// first non-blank line. Every part but the last ends with a `// [continues
/// in part j/n]` trailer. Between prelude and trailer, a part's code is
/// exactly the file's lines `start_line..=end_line` (the last part ends
/// where the entity does); only blank lines between parts belong to none.
fn split_body(
    text: &str,
    span: Span,
    body_start: usize,
    pieces: &[Span],
    max_tokens: usize,
) -> Split {
    let start = span.start_byte as usize;
    let end = (span.end_byte as usize).min(text.len());
    let Some(head) = text.get(start..=body_start) else {
        return Split::default();
    };
    let head = head.trim_end();
    let budget = max_tokens
        .saturating_sub(estimate_tokens(head) + 8)
        .max(max_tokens / 4)
        .max(16);
    // Pieces inside the body, in order, without overlaps.
    let mut inside: Vec<(usize, usize)> = Vec::new();
    for p in pieces {
        let (ps, pe) = (p.start_byte as usize, p.end_byte as usize);
        let after = inside.last().map_or(body_start + 1, |&(_, e)| e);
        if ps >= after
            && pe <= end
            && ps < pe
            && text.is_char_boundary(ps)
            && text.is_char_boundary(pe)
        {
            inside.push((ps, pe));
        }
    }
    // Units: pieces joined where a cut would fall inside a line that is
    // not over the budget. Between two units a cut is allowed: at a line
    // end, or inside an over-long line (`Some(tokens)` of that line).
    let mut units: Vec<(usize, usize, Option<usize>)> = Vec::new(); // (start, end, cut before)
    for (ps, pe) in inside {
        let Some(last) = units.last_mut() else {
            units.push((ps, pe, None));
            continue;
        };
        if text[last.1..ps].contains('\n') {
            units.push((ps, pe, None));
            continue;
        }
        let ls = text[..last.1].rfind('\n').map_or(0, |k| k + 1);
        let tokens = estimate_tokens(&text[ls..line_end(text, last.1)]);
        if tokens > budget {
            units.push((ps, pe, Some(tokens)));
        } else {
            last.1 = pe;
        }
    }
    if units.len() < 2 {
        return Split::default();
    }
    // Group units greedily: (first unit, last unit) per group.
    // A group's text runs from the end of the previous group (so comments
    // between statements count) to its last unit.
    let mut groups: Vec<(usize, usize)> = Vec::new();
    let mut first = 0;
    let mut from = body_start + 1;
    for (k, &(_, ue, _)) in units.iter().enumerate() {
        if k > first && estimate_tokens(text.get(from..ue).unwrap_or("")) > budget {
            groups.push((first, k - 1));
            first = k;
            from = units[k - 1].1;
        }
    }
    groups.push((first, units.len() - 1));
    let n = groups.len();
    let mut split = Split::default();
    // Where each part's text starts, in bytes: the entity's start for the
    // first; else its first non-blank line, or, after a cut inside a line,
    // the next non-blank character.
    let mut from = start;
    for (i, &(_, last)) in groups.iter().enumerate() {
        let (to, next) = if i + 1 == n {
            (end, end)
        } else {
            let (ue, (ns, _, cut)) = (units[last].1, units[last + 1]);
            match cut {
                Some(tokens) => {
                    split.cut_lines.push(CutLine {
                        line: line_at(text, ue),
                        tokens,
                        budget,
                        part: i + 1,
                    });
                    let gap = &text[ue..ns];
                    (
                        ue,
                        ue + gap.len() - gap.trim_start_matches([' ', '\t']).len(),
                    )
                }
                None => {
                    let eol = line_end(text, ue);
                    let gap = &text[eol..ns];
                    let first_char = eol + gap.len() - gap.trim_start().len();
                    let ls = text[..first_char].rfind('\n').map_or(0, |k| k + 1);
                    (eol, ls)
                }
            }
        };
        let body = text.get(from..to).unwrap_or("").trim_end();
        let start_line = line_at(text, from);
        let end_line = start_line + body.lines().count().max(1) as u32 - 1;
        let mut code = String::new();
        let mut frame = CodeFrame::default();
        if i > 0 {
            code.push_str(&format!("{head}\n    // [part {}/{n}]\n", i + 1));
            frame.prelude_lines = head.lines().count() as u32 + 1;
            frame.prelude_from = span.start_line;
        }
        code.push_str(body);
        if i + 1 < n {
            code.push_str(&format!("\n    // [continues in part {}/{n}]", i + 2));
            frame.trailer_lines = 1;
        }
        split.parts.push(Part {
            code,
            frame,
            start_line,
            end_line,
        });
        from = next;
    }
    split
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_chunk_holds_the_lines_outside_its_entities_at_their_places() {
        let text = "// head\n#include <a>\n\nint f() {\n  return 1;\n}\nint g = 0;\n\n";
        // f is lines 4-6.
        let code = text_outside(text, 1, &[(4, 6)], 1024);
        assert_eq!(code, "// head\n#include <a>\n\n\n\n\nint g = 0;");
        // Line numbers hold: line 7 is the seventh line of the code.
        assert_eq!(code.lines().nth(6), Some("int g = 0;"));
        // Every line held by an entity: nothing.
        assert_eq!(text_outside(text, 1, &[(1, 9)], 1024), "");
        // The byte cap ends the text at a line.
        assert_eq!(text_outside(text, 1, &[(4, 6)], 10), "// head");
    }

    fn parse(src: &str) -> RawEntity {
        let p = crate::ingest::cpp::parse_cpp(src, &crate::config::ParseConfig::default()).unwrap();
        p.entities.into_iter().next().unwrap()
    }

    fn split(src: &str, max_tokens: usize) -> Split {
        let e = parse(src);
        split_body(
            src,
            e.span,
            e.body_start.unwrap() as usize,
            &e.pieces,
            max_tokens,
        )
    }

    /// The file's text of a part: its code without prelude and trailer.
    fn own_lines(p: &Part) -> Vec<&str> {
        let lines: Vec<&str> = p.code.lines().collect();
        lines[p.frame.prelude_lines as usize..lines.len() - p.frame.trailer_lines as usize].to_vec()
    }

    #[test]
    fn split_keeps_header_and_all_statements() {
        let mut body = String::from("void f(int n) {\n");
        for i in 0..60 {
            body.push_str(&format!(
                "    x{i} = compute_something_long({i}, n) + other_value_{i};\n"
            ));
        }
        body.push_str("}\n");
        let parts = split(&body, 200).parts;
        assert!(parts.len() > 2, "{}", parts.len());
        for p in &parts {
            assert!(p.code.starts_with("void f(int n) {"));
        }
        for i in 0..60 {
            let needle = format!("x{i} = ");
            assert_eq!(
                parts.iter().filter(|p| p.code.contains(&needle)).count(),
                1,
                "{needle}"
            );
        }
        assert_eq!(parts[0].start_line, 1);
        assert_eq!(parts.last().unwrap().end_line, 62);
        for w in parts.windows(2) {
            assert!(w[0].end_line < w[1].start_line);
        }
    }

    #[test]
    fn the_lines_between_prelude_and_trailer_are_the_files_lines() {
        let mut src = String::from(
            "// header\n\ntemplate <typename T>\nvoid g(T& view,\n       int n) {\n\n",
        );
        for i in 0..40 {
            src.push_str(&format!(
                "    y{i} = view(n, {i}) * factor_{i};  // note {i}\n"
            ));
            if i % 7 == 3 {
                src.push_str("\n    // about the next one\n\n");
            }
        }
        src.push_str("}\n");
        let file: Vec<&str> = src.lines().collect();
        let s = split(&src, 150);
        assert!(s.parts.len() > 2, "{}", s.parts.len());
        assert!(s.cut_lines.is_empty());
        for (i, p) in s.parts.iter().enumerate() {
            let own = own_lines(p);
            assert_eq!(
                own.len() as u32,
                p.end_line - p.start_line + 1,
                "part {}:\n{}",
                i + 1,
                p.code
            );
            for (k, line) in own.iter().enumerate() {
                let at = file[(p.start_line as usize) + k - 1];
                // The first part starts where the entity does.
                assert!(
                    at.ends_with(line),
                    "part {} line {k}: {line:?} vs {at:?}",
                    i + 1
                );
                if i > 0 || k > 0 {
                    assert_eq!(*line, at, "part {}", i + 1);
                }
            }
            if i == 0 {
                assert_eq!(p.frame.prelude_lines, 0);
                assert_eq!(p.start_line, 3);
            } else {
                assert_eq!(p.frame.prelude_lines, 4, "{}", p.code);
                assert_eq!(p.frame.prelude_from, 3);
                assert!(p.code.contains(&format!("// [part {}/", i + 1)));
                // A part never starts with a blank line, and a comment
                // after a statement stays on its line.
                assert!(!own[0].trim().is_empty());
                assert!(!own[0].trim_start().starts_with("// note"));
            }
            assert_eq!(p.frame.trailer_lines, u32::from(i + 1 < s.parts.len()));
        }
    }

    #[test]
    fn only_an_over_long_line_is_cut_and_the_cut_is_reported() {
        // Statements on one short line stay together.
        let mut src = String::from("void h() {\n");
        for i in 0..30 {
            src.push_str(&format!("    a{i} = 1; b{i} = 2;\n"));
        }
        src.push_str("}\n");
        let s = split(&src, 120);
        assert!(s.parts.len() > 1 && s.cut_lines.is_empty());
        for p in &s.parts {
            for line in own_lines(p).iter().skip(1) {
                assert!(src.lines().any(|l| l == *line), "{line:?}");
            }
        }
        // One line holding more than a part: cut between statements.
        let long: Vec<String> = (0..80).map(|i| format!("c{i} = value_{i};")).collect();
        let src = format!(
            "void k() {{\n    int x = 0;\n    {}\n    return;\n}}\n",
            long.join(" ")
        );
        let s = split(&src, 120);
        assert!(s.parts.len() > 2, "{}", s.parts.len());
        assert!(!s.cut_lines.is_empty());
        assert!(s
            .cut_lines
            .iter()
            .all(|c| c.line == 3 && c.tokens > c.budget));
        assert_eq!(s.cut_lines[0].part, 1);
        // Every part still numbers its text from the file's line.
        for p in &s.parts {
            let own = own_lines(p);
            assert_eq!(own.len() as u32, p.end_line - p.start_line + 1);
        }
    }
}
