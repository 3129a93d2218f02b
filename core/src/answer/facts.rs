//! The fact sheet at the top of an answer context: for each excerpt, the
//! exact qualified name, kind, `path:lines`, signature and relations of
//! its entity, composed by code from the structure graph, so that a small
//! model copies names and locations instead of guessing them.
//!
//! Only facts go in: what a file or namespace declares, what a class
//! derives from and holds, what a function calls and is called by, what a
//! file includes. Boilerplate that structural glosses carry for search
//! (line counts, scope words, long included-by lists) stays out. Every
//! name comes from the entity table, and the signature and bases only of
//! the excerpt's own entity, whose text the browser has loaded for the
//! excerpt, so the browser composes the same sheet.

use crate::model::{EdgeKind, Entity, EntityKind, GlossSource};
use crate::retrieve::Corpus;

/// Names listed at most per relation.
const LIST: usize = 6;

/// Names of what a file, namespace or class declares, at most.
const DECLARED: usize = 10;

/// Characters of a signature kept (cut at a word end).
const SIGNATURE_CHARS: usize = 200;

/// Characters of a call chain's or module's own summary kept.
const SUMMARY_CHARS: usize = 240;

/// `items` joined with ", ", the first `max` of them, then "and N more".
fn list(items: &[String], max: usize) -> String {
    let mut s = items
        .iter()
        .take(max)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > max {
        s.push_str(&format!(" and {} more", items.len() - max));
    }
    s
}

/// Cut `text` to at most `max` characters at a word end, marked with `…`.
pub(super) fn cut(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut end = text.char_indices().nth(max).map_or(text.len(), |(i, _)| i);
    if let Some(sp) = text[..end].rfind(' ') {
        end = sp;
    }
    format!("{}…", text[..end].trim_end())
}

/// Distinct names, in order.
fn push_unique(out: &mut Vec<String>, name: &str) {
    if !name.is_empty() && !out.iter().any(|n| n == name) {
        out.push(name.to_string());
    }
}

/// The targets of an entity's edges of one kind, by short name.
fn targets(corpus: &Corpus, entity: u32, kind: EdgeKind, outgoing: bool) -> Vec<String> {
    let edges = if outgoing {
        corpus.out_edges(entity)
    } else {
        corpus.in_edges(entity)
    };
    let mut out = Vec::new();
    for (k, t) in edges {
        if *k == kind {
            let e = corpus.named(*t);
            let name = match e.kind {
                EntityKind::File | EntityKind::Module => e.qualified_name.as_str(),
                _ => e.name.as_str(),
            };
            push_unique(&mut out, name);
        }
    }
    out
}

/// What an entity declares: its contained entities, with a namespace's
/// declarations listed in its place (a file holding one namespace block
/// declares that block's members).
fn declared(corpus: &Corpus, entity: u32) -> Vec<String> {
    let mut out = Vec::new();
    for (k, t) in corpus.out_edges(entity) {
        if *k != EdgeKind::Contains {
            continue;
        }
        let child = corpus.named(*t);
        if child.kind == EntityKind::Namespace {
            for (k2, t2) in corpus.out_edges(*t) {
                if *k2 == EdgeKind::Contains {
                    push_unique(&mut out, &corpus.named(*t2).qualified_name);
                }
            }
        } else {
            push_unique(&mut out, &child.qualified_name);
        }
    }
    out
}

/// The relations that say what an entity is, as `name: items` parts.
fn relations(corpus: &Corpus, id: u32, e: &Entity) -> Vec<String> {
    let mut parts = Vec::new();
    let mut add = |label: &str, items: Vec<String>, max: usize| {
        if !items.is_empty() {
            parts.push(format!("{label} {}", list(&items, max)));
        }
    };
    match e.kind {
        EntityKind::File | EntityKind::Namespace => {
            add("declares", declared(corpus, id), DECLARED);
            add(
                "includes",
                targets(corpus, id, EdgeKind::Includes, true),
                LIST,
            );
            let by = targets(corpus, id, EdgeKind::Includes, false);
            if !by.is_empty() {
                parts.push(format!(
                    "included by {} file{}",
                    by.len(),
                    if by.len() == 1 { "" } else { "s" }
                ));
            }
        }
        EntityKind::Module => add(
            "contains",
            targets(corpus, id, EdgeKind::Contains, true),
            LIST,
        ),
        EntityKind::Class | EntityKind::Struct | EntityKind::Union | EntityKind::Enum => {
            add("derives from", e.bases.clone(), LIST);
            add(
                "members",
                targets(corpus, id, EdgeKind::Contains, true),
                DECLARED,
            );
            add(
                "derived by",
                targets(corpus, id, EdgeKind::Inherits, false),
                LIST,
            );
        }
        k if k.is_callable() => {
            add("calls", targets(corpus, id, EdgeKind::Calls, true), LIST);
            add(
                "called by",
                targets(corpus, id, EdgeKind::Calls, false),
                LIST,
            );
        }
        _ => {}
    }
    parts
}

/// The fact line of excerpt `n`, whose entity is `id`, showing lines
/// `location` (`path` or `path:a-b`).
pub(super) fn fact_line(corpus: &Corpus, n: u32, id: u32, location: &str) -> String {
    let e = corpus.named(id);
    let mut s = format!(
        "- [{n}] `{}` ({}, {location})",
        e.qualified_name,
        e.kind.as_str()
    );
    let mut details: Vec<String> = Vec::new();
    let sig = e.signature.trim();
    if !sig.is_empty()
        && !matches!(
            e.kind,
            EntityKind::File | EntityKind::Module | EntityKind::DocSection
        )
    {
        details.push(format!("`{}`", cut(sig, SIGNATURE_CHARS)));
    }
    details.extend(relations(corpus, id, e));
    if matches!(e.kind, EntityKind::CallChain | EntityKind::Module)
        && e.gloss.source == GlossSource::Structural
        && !e.gloss.text.trim().is_empty()
        && details.len() <= 1
    {
        details.push(cut(&e.gloss.text, SUMMARY_CHARS));
    }
    if !details.is_empty() {
        s.push_str(": ");
        s.push_str(&details.join("; "));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_cut_with_a_count() {
        let items: Vec<String> = (0..9).map(|i| format!("n{i}")).collect();
        assert_eq!(list(&items, 3), "n0, n1, n2 and 6 more");
        assert_eq!(list(&items[..2], 3), "n0, n1");
    }

    #[test]
    fn cut_ends_at_a_word() {
        assert_eq!(cut("void exchange(int a, int b)", 12), "void…");
        assert_eq!(cut("short", 12), "short");
    }
}
