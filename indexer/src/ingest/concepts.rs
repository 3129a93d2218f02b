//! Concept text: what the repository's own words say an entity means.
//!
//! Names and structure answer a question that names the code ("what does
//! `HaloCells.h` do?"); a newcomer asks in concepts ("how are ghost cells
//! exchanged?"). The words that bridge the two are already in the
//! repository: a file's header comment, doc comments, comments inside
//! bodies, the documentation sentences that mention a symbol, the words
//! inside identifiers and, for a class, its methods' names. This module
//! gathers them per entity, at no model cost, into `Entity::concepts`,
//! which is embedded before the gloss. It is not indexed for keyword
//! search: there its common words drew matches away from the named code.
//!
//! Nothing here knows a codebase: every rule is about C++ comments,
//! identifiers and documentation in general. Each source is a lever of
//! `[concepts]` in `codegloss.toml`, so that its effect can be measured.

use std::collections::{BTreeMap, BTreeSet};

use codegloss_core::lexical::identifier_parts;
use codegloss_core::{EntityKind, IndexData};
use serde::{Deserialize, Serialize};

use crate::ingest::cpp::clean_comment;

/// Which sources feed the concept text (`[concepts]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConceptsConfig {
    /// Gather concept text at all.
    pub enabled: bool,
    /// A file's leading comment block (licence lines left out), for the
    /// file and its top-level classes.
    pub file_header: bool,
    /// The whole doc comment (the gloss keeps only its first paragraph).
    pub doc_comment: bool,
    /// Comments inside a function or class body.
    pub body_comments: bool,
    /// The words inside the entity's own name (`FieldLayout` → `field layout`).
    pub identifier_words: bool,
    /// For a class: the words of its member functions' names; for a file:
    /// the words of its classes' and functions' names.
    pub member_words: bool,
    /// Sentences of the documentation that mention the entity by name.
    pub doc_mentions: bool,
    /// At most this many characters of concept text per entity.
    pub max_chars: usize,
}

impl Default for ConceptsConfig {
    fn default() -> Self {
        ConceptsConfig {
            enabled: true,
            file_header: true,
            doc_comment: true,
            body_comments: true,
            // The two word levers repeat what the embedded header already
            // names (symbol, parent, file): on the IPPL benchmark they cost
            // the named questions all_gold@10 0.75 -> 0.73 for +0.02 hit@5
            // on the reworded ones, so they are off by default.
            identifier_words: false,
            member_words: false,
            doc_mentions: true,
            max_chars: 700,
        }
    }
}

/// Characters kept from each source (the whole text is cut at `max_chars`).
const HEADER_CHARS: usize = 320;
const DOC_CHARS: usize = 400;
const BODY_CHARS: usize = 240;
const MENTION_CHARS: usize = 240;
const WORDS_MAX: usize = 40;
/// A name mentioned in more documentation sections than this is too
/// common to say anything about one entity.
const MENTION_SECTIONS_MAX: usize = 4;
/// Names shorter than this are not looked up in the documentation.
const MENTION_NAME_MIN: usize = 5;

/// Words that mark licence and bookkeeping lines of a header comment.
const BOILERPLATE: &[&str] = &[
    "copyright",
    "license",
    "licence",
    "licensed",
    "warranty",
    "redistribut",
    "all rights reserved",
    "spdx",
    "@file",
    "@author",
    "@date",
    "@copyright",
    "\\file",
    "\\author",
    "gnu ",
    "you should have received",
    "without even the implied",
    "free software",
    "http://",
    "https://",
];

fn is_boilerplate(line: &str) -> bool {
    let l = line.to_lowercase();
    BOILERPLATE.iter().any(|w| l.contains(w)) || l.chars().filter(|c| c.is_alphabetic()).count() < 3
}

/// Collapse whitespace and cut at a word boundary below `max` characters.
fn squeeze(text: &str, max: usize) -> String {
    let mut out = String::new();
    for w in text.split_whitespace() {
        if out.chars().count() + w.chars().count() + 1 > max {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

/// The leading comment block of a file, before its first line of code, with
/// licence and bookkeeping lines left out.
pub fn file_header(text: &str) -> String {
    let mut block = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        let t = line.trim();
        if in_block {
            block.push(t);
            if t.contains("*/") {
                in_block = false;
            }
            continue;
        }
        if t.is_empty() {
            continue;
        }
        if t.starts_with("//") {
            block.push(t);
        } else if t.starts_with("/*") {
            block.push(t);
            in_block = !t.contains("*/");
        } else {
            break;
        }
    }
    let cleaned = clean_comment(&block.join("\n"));
    let kept: Vec<&str> = cleaned
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !is_boilerplate(l))
        .collect();
    squeeze(&kept.join(" "), HEADER_CHARS)
}

/// Comments inside a span of code (line and block comments), in order.
pub fn body_comments(code: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    let mut in_string: Option<u8> = None;
    while i < bytes.len() {
        let b = bytes[i];
        if let Some(q) = in_string {
            if b == b'\\' {
                i += 2;
                continue;
            }
            if b == q || b == b'\n' {
                in_string = None;
            }
            i += 1;
            continue;
        }
        match b {
            b'"' | b'\'' => in_string = Some(b),
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                let end = code[i..].find('\n').map_or(code.len(), |k| i + k);
                out.push(clean_comment(&code[i..end]));
                i = end;
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let end = code[i + 2..]
                    .find("*/")
                    .map_or(code.len(), |k| i + 2 + k + 2);
                out.push(clean_comment(&code[i..end]));
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    let mut seen = BTreeSet::new();
    let kept: Vec<String> = out
        .into_iter()
        .flat_map(|c| c.lines().map(str::to_string).collect::<Vec<_>>())
        .map(|l| l.trim().to_string())
        .filter(|l| !is_boilerplate(l) && !looks_like_code(l))
        .filter(|l| seen.insert(l.clone()))
        .collect();
    squeeze(&kept.join(" "), BODY_CHARS)
}

/// Commented-out code says nothing about meaning.
fn looks_like_code(line: &str) -> bool {
    let t = line.trim_end();
    t.ends_with(';') || t.ends_with('{') || t.ends_with('}') || t.contains("::") && !t.contains(' ')
}

/// The words of identifiers, lower case, each once, in first-seen order.
fn words<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for name in names {
        let base = name.split('<').next().unwrap_or(name);
        for seg in base.split("::") {
            for p in identifier_parts(seg.trim_start_matches('~')) {
                if p.len() < 2 || p.bytes().all(|b| b.is_ascii_digit()) {
                    continue;
                }
                if seen.insert(p.clone()) {
                    out.push(p);
                }
            }
        }
        if out.len() >= WORDS_MAX {
            break;
        }
    }
    out.truncate(WORDS_MAX);
    out.join(" ")
}

/// The sentence of `text` around byte `at`.
fn sentence_around(text: &str, at: usize) -> &str {
    let is_end = |c: char| c == '.' || c == '\n' || c == '!' || c == '?';
    let start = text[..at].rfind(is_end).map_or(0, |k| k + 1);
    let end = text[at..].find(is_end).map_or(text.len(), |k| at + k + 1);
    text[start..end].trim()
}

/// The identifier-like words of a text (dots kept, for file names) with
/// their byte offsets.
fn words_at(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '.';
    let mut rest = text.char_indices().peekable();
    std::iter::from_fn(move || {
        while rest.peek().is_some_and(|&(_, c)| !is_word(c)) {
            rest.next();
        }
        let (start, _) = *rest.peek()?;
        let mut end = start;
        while let Some(&(i, c)) = rest.peek() {
            if !is_word(c) {
                break;
            }
            end = i + c.len_utf8();
            rest.next();
        }
        Some((start, &text[start..end]))
    })
}

/// Per entity: sentences of the documentation that name it. Only names
/// that are distinctive (long enough, an identifier rather than a word, and
/// mentioned in few sections) count.
fn doc_mentions(data: &IndexData, texts: &[&str]) -> BTreeMap<u32, Vec<String>> {
    let mut by_name: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for e in &data.entities {
        let name = match e.kind {
            k if k.is_record() && e.is_definition => e.name.split('<').next().unwrap_or(""),
            EntityKind::File => e.name.rsplit('/').next().unwrap_or(""),
            EntityKind::Function if e.is_definition => e.name.as_str(),
            _ => continue,
        };
        let distinctive = name.len() >= MENTION_NAME_MIN
            && (identifier_parts(name).len() > 1 || name.contains('.'));
        if distinctive {
            by_name.entry(name.to_string()).or_default().push(e.id);
        }
    }
    let mut hits: BTreeMap<u32, Vec<(u32, String)>> = BTreeMap::new();
    let mut sections_of: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
    for sec in data
        .entities
        .iter()
        .filter(|e| e.kind == EntityKind::DocSection)
    {
        let (Some(f), Some(span)) = (sec.file, sec.span) else {
            continue;
        };
        let Some(text) = texts
            .get(f as usize)
            .and_then(|t| t.get(span.start_byte as usize..span.end_byte as usize))
        else {
            continue;
        };
        for (at, word) in words_at(text) {
            let word = word.trim_end_matches('.');
            let Some((name, ids)) = by_name.get_key_value(word) else {
                continue;
            };
            sections_of.entry(name).or_default().insert(sec.id);
            let s = squeeze(sentence_around(text, at), MENTION_CHARS);
            for &id in ids {
                if data.entities[id as usize].file == Some(f) {
                    continue;
                }
                let list = hits.entry(id).or_default();
                if !list.iter().any(|(_, x)| *x == s) {
                    list.push((sec.id, s.clone()));
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    for (name, ids) in &by_name {
        let n = sections_of.get(name.as_str()).map_or(0, BTreeSet::len);
        if n == 0 || n > MENTION_SECTIONS_MAX {
            continue;
        }
        for id in ids {
            if let Some(list) = hits.get(id) {
                out.insert(*id, list.iter().take(2).map(|(_, s)| s.clone()).collect());
            }
        }
    }
    out
}

/// Fill `concepts` of every entity. `texts[i]` is the text of file `i`.
pub fn fill_concepts(data: &mut IndexData, texts: &[&str], cfg: &ConceptsConfig) {
    if !cfg.enabled {
        return;
    }
    let headers: Vec<String> = if cfg.file_header {
        texts.iter().map(|t| file_header(t)).collect()
    } else {
        vec![String::new(); texts.len()]
    };
    let mentions = if cfg.doc_mentions {
        doc_mentions(data, texts)
    } else {
        BTreeMap::new()
    };
    let mut members: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for e in &data.entities {
        if let Some(p) = e.parent {
            members.entry(p).or_default().push(e.id);
        }
    }
    let mut top_of_file: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for e in &data.entities {
        if let Some(f) = e.file {
            if (e.kind.is_record() || e.kind == EntityKind::Function) && e.is_definition {
                top_of_file.entry(f).or_default().push(e.id);
            }
        }
    }
    let out: Vec<String> = data
        .entities
        .iter()
        .map(|e| {
            let mut parts: Vec<String> = Vec::new();
            let code = match (e.file, e.span) {
                (Some(f), Some(s)) if e.kind != EntityKind::File => texts
                    .get(f as usize)
                    .and_then(|t| t.get(s.start_byte as usize..s.end_byte as usize))
                    .unwrap_or(""),
                _ => "",
            };
            match e.kind {
                EntityKind::File => {
                    if let Some(f) = e.file {
                        parts.push(headers[f as usize].clone());
                        let tops = top_of_file.get(&f).map_or(&[][..], Vec::as_slice);
                        if cfg.doc_comment {
                            for id in tops.iter().take(3) {
                                if let Some(d) = &data.entities[*id as usize].doc_comment {
                                    parts.push(squeeze(first_sentence(d), DOC_CHARS / 2));
                                }
                            }
                        }
                        if cfg.member_words {
                            parts.push(words(
                                tops.iter()
                                    .map(|id| data.entities[*id as usize].name.as_str()),
                            ));
                        }
                    }
                }
                EntityKind::Module | EntityKind::CallChain | EntityKind::DocSection => {}
                EntityKind::Namespace => {}
                _ => {
                    if cfg.identifier_words {
                        parts.push(words([e.name.as_str()]));
                    }
                    if cfg.doc_comment {
                        if let Some(d) = &e.doc_comment {
                            parts.push(squeeze(d, DOC_CHARS));
                        }
                    }
                    if e.kind.is_record() && e.is_definition {
                        if let Some(f) = e.file {
                            // A class that is its file's first definition
                            // inherits the file's header comment.
                            let first = top_of_file.get(&f).and_then(|t| t.first());
                            if first == Some(&e.id) {
                                parts.push(headers[f as usize].clone());
                            }
                        }
                        if cfg.member_words {
                            let m = members.get(&e.id).map_or(&[][..], Vec::as_slice);
                            parts.push(words(
                                m.iter()
                                    .map(|id| &data.entities[*id as usize])
                                    .filter(|x| x.kind.is_callable())
                                    .map(|x| x.name.as_str()),
                            ));
                        }
                    }
                    if cfg.body_comments && (e.kind.is_callable() || e.kind.is_record()) {
                        let doc = e.doc_comment.as_deref().unwrap_or("");
                        let body = body_comments(code);
                        if !body.is_empty() && !doc.contains(&body) {
                            parts.push(body);
                        }
                    }
                }
            }
            if let Some(m) = mentions.get(&e.id) {
                parts.extend(m.iter().cloned());
            }
            let joined = parts
                .into_iter()
                .filter(|p| !p.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
            squeeze(&joined, cfg.max_chars)
        })
        .collect();
    for (e, text) in data.entities.iter_mut().zip(out) {
        e.concepts = text;
    }
}

fn first_sentence(text: &str) -> &str {
    let t = text.trim();
    match t.find(". ").or_else(|| t.find(".\n")) {
        Some(k) => &t[..=k],
        None => t.lines().next().unwrap_or(t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_comment_without_licence() {
        let text = "//\n// Class Cells\n//   The guard / ghost cells of a grid.\n//\n// Copyright (c) 2020, Someone\n// All rights reserved.\n#ifndef X\n// later\n";
        assert_eq!(
            file_header(text),
            "Class Cells The guard / ghost cells of a grid."
        );
        let block =
            "/*\n * Solves the heat equation.\n * SPDX-License-Identifier: MIT\n */\nint x;";
        assert_eq!(file_header(block), "Solves the heat equation.");
        assert_eq!(file_header("#include <a>\n// not a header\n"), "");
    }

    #[test]
    fn body_comments_skip_strings_and_code() {
        let code = "void f() {\n  // exchange the halo\n  auto s = \"// not a comment\";\n  /* pack the buffer */\n  // x = y;\n}\n";
        assert_eq!(body_comments(code), "exchange the halo pack the buffer");
    }

    #[test]
    fn identifier_words_once_each() {
        assert_eq!(
            words(["FieldLayout", "getLocalNDIndex", "field_layout"]),
            "field layout get local nd index"
        );
    }

    #[test]
    fn words_with_offsets_across_multibyte_text() {
        let t = "größe — Mesh.h, ok";
        let w: Vec<(usize, &str)> = words_at(t).collect();
        assert_eq!(w.len(), 3);
        assert_eq!(&t[w[1].0..w[1].0 + 6], "Mesh.h");
        for (at, word) in w {
            assert_eq!(&t[at..at + word.len()], word);
        }
    }

    #[test]
    fn sentence_of_a_mention() {
        let t = "Intro. The Mesh class holds cell sizes. Other.";
        let at = t.find("Mesh").unwrap();
        assert_eq!(sentence_around(t, at), "The Mesh class holds cell sizes.");
    }
}
