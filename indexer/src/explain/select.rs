//! Which entities a run explains and in what order: the run's levels,
//! low-information entities marked as skipped, the priority order under
//! `max_entities`, the batches of a level (modules deepest first), and the
//! digests of inputs a prompt may not show whole.

use std::collections::BTreeMap;

use codegloss_core::format::sha256_hex;
use codegloss_core::{EdgeKind, Entity, EntityKind, GlossSource, IndexData, Scope, SourceType};

use super::{ExplainConfig, Level, Priority};
use crate::ingest::gloss::Adjacency;

/// Mark low-information entities at the run's levels and return the
/// candidates in priority order (capped by `max_entities`) and the number
/// of skipped entities.
pub(super) fn select(
    data: &mut IndexData,
    cfg: &ExplainConfig,
    levels: &[Level],
    structural: &[String],
    adj: &Adjacency,
) -> (Vec<u32>, usize) {
    let mut candidates: Vec<u32> = Vec::new();
    let mut skipped = 0;
    for e in &mut data.entities {
        if !levels.contains(&e.kind.level()) {
            continue;
        }
        if low_information(e, &structural[e.id as usize]) {
            e.gloss.source = GlossSource::SkippedLowInformation;
            e.gloss.model = None;
            skipped += 1;
        } else {
            candidates.push(e.id);
        }
    }
    // Priority order decides which entities a `max_entities` cap keeps and
    // the order of work within a level, so that an interrupted run has
    // done the most useful glosses first. The result does not depend on it.
    if cfg.priority == Priority::PublicApiFirst {
        candidates.sort_by_key(|&id| (priority_rank(data, adj, id), id));
    }
    if let Some(max) = cfg.max_entities {
        candidates.truncate(max);
    }
    (candidates, skipped)
}

/// The candidates of one level in runnable batches: one batch, except for
/// modules, which run deepest first (a module reads its submodules' glosses).
pub(super) fn batches(data: &IndexData, candidates: &[u32], level: Level) -> Vec<Vec<u32>> {
    let of_level = candidates
        .iter()
        .copied()
        .filter(|&id| data.entities[id as usize].kind.level() == level);
    if level != Level::Module {
        return vec![of_level.collect()];
    }
    let mut by_depth: BTreeMap<std::cmp::Reverse<usize>, Vec<u32>> = BTreeMap::new();
    for id in of_level {
        let depth = module_depth(&data.entities[id as usize].qualified_name);
        by_depth
            .entry(std::cmp::Reverse(depth))
            .or_default()
            .push(id);
    }
    by_depth.into_values().collect()
}

/// Tiny declarations and trivial accessors: not worth a model call
/// (`skipped_low_information` in the paper).
pub(super) fn low_information(e: &Entity, structural: &str) -> bool {
    let sig_len = e.signature.len();
    match e.kind {
        k if k.is_record() => !e.is_definition,
        EntityKind::TypeAlias | EntityKind::Enum => sig_len < 120 && e.doc_comment.is_none(),
        EntityKind::Namespace => true,
        k if k.is_callable() => {
            let lines = e
                .span
                .map_or(0, |s| s.end_line.saturating_sub(s.start_line) + 1);
            // A declaration without body that has a definition elsewhere, or
            // a one-to-three-line accessor without documentation.
            (!e.is_definition && structural.contains(" Defined at "))
                || (e.is_definition && lines <= 3 && e.doc_comment.is_none() && e.params.len() <= 1)
        }
        EntityKind::DocSection => e.span.is_some_and(|s| s.end_byte - s.start_byte < 80),
        EntityKind::File => e.span.is_some_and(|s| s.end_byte < 40),
        _ => false,
    }
}

/// Smaller ranks are explained first under `max_entities`.
fn priority_rank(data: &IndexData, adj: &Adjacency, id: u32) -> u8 {
    let e = &data.entities[id as usize];
    let file_rank = |fid: u32| {
        let f = &data.files[fid as usize];
        match (f.scope, f.source_type) {
            (Scope::Source, SourceType::Header) => 1,
            (Scope::Source, _) => 2,
            (Scope::Docs, _) => 3,
            (Scope::Example, _) => 4,
            _ => 5,
        }
    };
    match e.file {
        Some(f) => {
            let r = file_rank(f);
            if r == 1 && (e.doc_comment.is_some() || e.kind == EntityKind::File) {
                0
            } else {
                r
            }
        }
        None => {
            // Modules and call chains: the best rank among their files.
            let files: Vec<u32> = adj
                .out(id, EdgeKind::Contains)
                .iter()
                .filter_map(|c| data.entities[*c as usize].file)
                .collect();
            files.into_iter().map(file_rank).min().unwrap_or(3)
        }
    }
}

fn module_depth(path: &str) -> usize {
    if path == "." {
        0
    } else {
        path.split('/').count()
    }
}

/// Per-entity digest of inputs that a prompt may not show whole: the
/// file's SHA-256 for files, its files' and submodules' digests for
/// modules. Editing one function changes its file's digest and so every
/// module above it.
pub(super) fn input_digests(data: &IndexData, adj: &Adjacency) -> Vec<String> {
    let mut out = vec![String::new(); data.entities.len()];
    for e in &data.entities {
        if e.kind == EntityKind::File {
            if let Some(f) = e.file {
                out[e.id as usize] = data.files[f as usize].sha256.clone();
            }
        }
    }
    // Modules deepest first, so submodule digests exist when a parent needs them.
    let mut modules: Vec<&Entity> = data
        .entities
        .iter()
        .filter(|e| e.kind == EntityKind::Module)
        .collect();
    modules.sort_by_key(|e| std::cmp::Reverse(module_depth(&e.qualified_name)));
    for m in modules {
        let mut parts: Vec<&str> = adj
            .out(m.id, EdgeKind::Contains)
            .iter()
            .map(|c| out[*c as usize].as_str())
            .collect();
        parts.sort_unstable();
        out[m.id as usize] = sha256_hex(parts.join("\n").as_bytes());
    }
    out
}
