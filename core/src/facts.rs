//! The explanation line of an answer-context block, written for a small
//! answer model: facts, not bookkeeping.
//!
//! A structural gloss is built for retrieval: it names everything near an
//! entity, including a file's scope, its line count and everyone who
//! includes it ("Included by … and 105 more"). A 1.5B answer model copies
//! such text instead of the code below it. For a file, the answer context
//! therefore gets facts composed from the graph: what the file declares at
//! namespace level (declarations too, not only definitions), what it
//! includes, and how many files include it. Other structural glosses are
//! facts already (members, bases, calls) and stay; model glosses stay as
//! written.

use crate::model::{EdgeKind, Entity, EntityKind, GlossSource};
use crate::retrieve::Corpus;

/// Most names listed in one fact.
const LIST_MAX: usize = 16;

fn list(names: &[String]) -> String {
    let mut shown: Vec<String> = names.iter().take(LIST_MAX).cloned().collect();
    if names.len() > LIST_MAX {
        shown.push(format!("and {} more", names.len() - LIST_MAX));
    }
    shown.join(", ")
}

/// The explanation shown for `e` in an answer context.
pub fn answer_explanation(corpus: &Corpus, e: &Entity) -> String {
    if e.gloss.source == GlossSource::Structural && e.kind == EntityKind::File {
        if let Some(f) = file_facts(corpus, e) {
            return f;
        }
    }
    e.gloss.text.trim().to_string()
}

/// Facts of a file entity: kind and module, its namespace-level
/// declarations in line order, its includes, and the number of files that
/// include it. None for an entity without a file.
pub fn file_facts(corpus: &Corpus, e: &Entity) -> Option<String> {
    let data = &corpus.data;
    let f = data.files.get(e.file? as usize)?;
    let mut parts = vec![format!(
        "File `{}`: {} {} in module `{}`.",
        f.path,
        f.language.as_str(),
        f.source_type.as_str(),
        f.module
    )];
    let top_level = |x: &Entity| {
        x.parent.is_some_and(|p| {
            matches!(
                data.entities[p as usize].kind,
                EntityKind::File | EntityKind::Namespace
            )
        })
    };
    let mut declared: Vec<(u32, String)> = data
        .entities
        .iter()
        .filter(|x| x.file == e.file && top_level(x))
        .filter(|x| {
            !matches!(
                x.kind,
                EntityKind::File
                    | EntityKind::Module
                    | EntityKind::CallChain
                    | EntityKind::Namespace
                    | EntityKind::DocSection
            )
        })
        // A forward declaration (`class X;`) says nothing about this file.
        .filter(|x| !x.kind.is_record() || x.is_definition)
        .map(|x| {
            let what = if x.kind.is_callable() && !x.is_definition {
                format!("{} `{}` (declaration)", x.kind.as_str(), x.qualified_name)
            } else {
                format!("{} `{}`", x.kind.as_str(), x.qualified_name)
            };
            (x.span.map_or(0, |s| s.start_line), what)
        })
        .collect();
    declared.sort();
    declared.dedup_by(|a, b| a.1 == b.1);
    let declared: Vec<String> = declared.into_iter().map(|(_, w)| w).collect();
    if !declared.is_empty() {
        parts.push(format!("Declares {}.", list(&declared)));
    }
    let mut methods: Vec<String> = data
        .entities
        .iter()
        .filter(|x| x.file == e.file && x.kind.is_callable() && !top_level(x))
        .map(|x| x.qualified_name.clone())
        .collect();
    methods.dedup();
    if !methods.is_empty() {
        parts.push(format!("Member functions: {}.", list(&methods)));
    }
    let includes: Vec<String> = f.includes.iter().map(|i| i.target.clone()).collect();
    if !includes.is_empty() {
        parts.push(format!("Includes {}.", list(&includes)));
    }
    let by = corpus.in_edges[e.id as usize]
        .iter()
        .filter(|(k, _)| *k == EdgeKind::Includes)
        .count();
    if by > 0 {
        parts.push(format!(
            "Included by {by} file{}.",
            if by == 1 { "" } else { "s" }
        ));
    }
    Some(parts.join(" "))
}
