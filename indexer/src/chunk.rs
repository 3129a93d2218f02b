//! Chunks: the retrievable records of the index.
//!
//! One chunk per entity, carrying the metadata of the paper's Listing 1
//! (path, file_name, base_name, source_type, entity_type, chunk_type,
//! symbol_name, parent_symbol, class_name, return_type, parameters,
//! leading_comment, code) plus line range and module. Function and class
//! bodies over the token budget are split on statement (or member)
//! boundaries, every part repeating the signature as a header. Long
//! documentation sections arrive already split by [`crate::docs`] and are
//! named `title_1`, `title_2`, ...

use std::collections::HashMap;

use codegloss_core::text::estimate_tokens;
use codegloss_core::{Chunk, Entity, EntityKind, IndexData, Scope, Span};

use crate::build::file_name;
use crate::config::ChunkConfig;
use crate::cpp::RawEntity;
use crate::docs::DocSection;

fn base_name(name: &str) -> String {
    match name.rfind('.') {
        Some(k) if k > 0 => name[..k].to_string(),
        _ => name.to_string(),
    }
}

/// Line (1-based) of a byte offset.
fn line_at(text: &str, byte: usize) -> u32 {
    text.as_bytes()[..byte.min(text.len())]
        .iter()
        .filter(|&&c| c == b'\n')
        .count() as u32
        + 1
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
) -> Vec<Chunk> {
    let mut chunks = Vec::new();
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
                    _ => Vec::new(),
                };
                if split.len() > 1 {
                    let n = split.len();
                    for (i, (code, start, end)) in split.into_iter().enumerate() {
                        let mut c = template.clone();
                        c.part = (i + 1) as u16;
                        c.parts = n as u16;
                        c.chunk_type = format!("{}_part", e.kind.as_str());
                        c.code = code;
                        c.start_line = start;
                        c.end_line = end;
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
    for (i, c) in chunks.iter_mut().enumerate() {
        c.id = i as u32;
    }
    chunks
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
        base_name: base_name(if fname.is_empty() { &e.name } else { &fname }),
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

/// Split a body into parts of at most `max_tokens` (a single oversized
/// statement stays whole). Each part starts with the head (signature and
/// opening brace). Returns (code, first line, last line) per part.
fn split_body(
    text: &str,
    span: Span,
    body_start: usize,
    pieces: &[Span],
    max_tokens: usize,
) -> Vec<(String, u32, u32)> {
    let start = span.start_byte as usize;
    let end = span.end_byte as usize;
    let Some(head) = text.get(start..=body_start) else {
        return Vec::new();
    };
    let head = head.trim_end();
    let budget = max_tokens
        .saturating_sub(estimate_tokens(head) + 8)
        .max(max_tokens / 4)
        .max(16);
    // Group pieces greedily; a group's text runs from the end of the
    // previous group (so comments between statements stay) to its last piece.
    let mut groups: Vec<(usize, usize)> = Vec::new(); // (from byte, to byte)
    let mut from = body_start + 1;
    let mut cur_end: Option<usize> = None;
    for p in pieces {
        let (ps, pe) = (p.start_byte as usize, p.end_byte as usize);
        if ps < from || pe > end {
            continue;
        }
        if let Some(ce) = cur_end {
            let tokens = estimate_tokens(text.get(from..pe).unwrap_or(""));
            if tokens > budget {
                groups.push((from, ce));
                from = ce;
            }
        }
        cur_end = Some(pe);
    }
    match cur_end {
        Some(_) => groups.push((from, end)),
        None => return Vec::new(),
    }
    let n = groups.len();
    groups
        .into_iter()
        .enumerate()
        .map(|(i, (a, b))| {
            // Skip the line break that ends the previous piece.
            let a =
                a + text[a..b].len() - text[a..b].trim_start_matches([' ', '\t', '\r', '\n']).len();
            let a = line_start(text, a);
            let body = text.get(a..b).unwrap_or("").trim_end();
            let mut code = format!("{head}\n    // [part {}/{n}]\n{body}", i + 1);
            if i + 1 < n {
                code.push_str(&format!("\n    // [continues in part {}/{n}]", i + 2));
            }
            let first = if i == 0 {
                span.start_line
            } else {
                line_at(text, a)
            };
            let last = if i + 1 == n {
                span.end_line
            } else {
                line_at(text, b.saturating_sub(1))
            };
            (code, first, last)
        })
        .collect()
}

/// Byte offset of the start of the line holding `byte`, when only
/// whitespace precedes it on that line (keeps indentation).
fn line_start(text: &str, byte: usize) -> usize {
    let ls = text[..byte].rfind('\n').map_or(0, |k| k + 1);
    if text[ls..byte].trim().is_empty() {
        ls
    } else {
        byte
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_header_and_all_statements() {
        let mut body = String::from("void f(int n) {\n");
        for i in 0..60 {
            body.push_str(&format!(
                "    x{i} = compute_something_long({i}, n) + other_value_{i};\n"
            ));
        }
        body.push_str("}\n");
        let p = crate::cpp::parse_cpp(&body, &crate::config::ParseConfig::default()).unwrap();
        let e = &p.entities[0];
        let parts = split_body(
            &body,
            e.span,
            e.body_start.unwrap() as usize,
            &e.pieces,
            200,
        );
        assert!(parts.len() > 2, "{}", parts.len());
        for (code, _, _) in &parts {
            assert!(code.starts_with("void f(int n) {"));
        }
        for i in 0..60 {
            let needle = format!("x{i} = ");
            assert_eq!(
                parts.iter().filter(|(c, _, _)| c.contains(&needle)).count(),
                1,
                "{needle}"
            );
        }
        assert_eq!(parts[0].1, 1);
        assert_eq!(parts.last().unwrap().2, 62);
        for w in parts.windows(2) {
            assert!(w[0].2 < w[1].1);
        }
    }
}
