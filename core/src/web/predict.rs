//! What the search shard's columns predict each value to be from the rows
//! before it: a value that holds its prediction is stored as a zero or an
//! empty string, which deflate all but removes.
//!
//! It exists apart from `tables.rs` because both the search shard's tables
//! and the name shards (`names.rs`) predict names alike; a prediction that
//! misses costs bytes, never correctness.

use crate::model::{Entity, EntityKind, SourceFile};
use crate::retrieve::names::kind_loads_apart;
use crate::text::{base_name, file_name};

/// Separator between a parent's qualified name and a child's name.
fn separator(kind: EntityKind) -> &'static str {
    match kind {
        EntityKind::Module | EntityKind::File => "/",
        _ => "::",
    }
}

/// What a chunk's string fields are predicted to be from its entity.
pub(super) struct ChunkPrediction {
    pub(super) path: String,
    pub(super) base_name: String,
    pub(super) chunk_type: String,
    pub(super) symbol_name: String,
}

pub(super) fn predict_chunk(
    files: &[SourceFile],
    e: &Entity,
    part: u16,
    parts: u16,
) -> ChunkPrediction {
    let file = e.file.and_then(|f| files.get(f as usize));
    let path = file.map_or_else(|| e.qualified_name.clone(), |f| f.path.clone());
    let base_name = base_name(file.map_or(e.name.as_str(), |f| file_name(&f.path))).to_string();
    let chunk_type = match (e.kind, file) {
        (EntityKind::DocSection, Some(f)) => format!("{}_section", f.language.as_str()),
        (k, _) if parts > 1 => format!("{}_part", k.as_str()),
        (k, _) => k.as_str().to_string(),
    };
    let symbol_name = if e.kind == EntityKind::DocSection && parts > 1 {
        format!("{}_{part}", e.name)
    } else {
        e.name.clone()
    };
    ChunkPrediction {
        path,
        base_name,
        chunk_type,
        symbol_name,
    }
}

/// The predicted name of an entity from its parent and file: a call chain
/// is named after the callable it summarizes (its parent), a constructor
/// after its class and a destructor after it with a `~`, a file entity
/// after its file; others are not predicted ("").
pub(super) fn predict_name(
    files: &[SourceFile],
    parent: Option<&Entity>,
    kind: EntityKind,
    file: Option<u32>,
) -> String {
    match (kind, parent) {
        (EntityKind::CallChain | EntityKind::Constructor, Some(p)) => p.name.clone(),
        (EntityKind::Destructor, Some(p)) => format!("~{}", p.name),
        (EntityKind::File, _) => file
            .and_then(|f| files.get(f as usize))
            .map(|f| file_name(&f.path).to_string())
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// The predicted file of an entity: a file's entity opens the file after
/// the last one named, others lie in it.
pub(super) fn predict_file(last: u32, kind: EntityKind) -> u32 {
    if kind == EntityKind::File {
        last.wrapping_add(1)
    } else {
        last
    }
}

/// The predicted module of a file: the folder its path lies in (`.` at
/// the top).
pub(super) fn folder_of(path: &str) -> &str {
    path.rsplit_once('/').map_or(".", |(folder, _)| folder)
}

/// The predicted name of an entity in the search shard, which names only
/// the entities whose names do not load per range of files (their names
/// are blank there: see `names.rs`).
pub(super) fn predict_filed_name(
    files: &[SourceFile],
    parent: Option<&Entity>,
    kind: EntityKind,
    file: Option<u32>,
) -> String {
    if kind_loads_apart(kind, file) {
        return String::new();
    }
    predict_name(files, parent, kind, file)
}

/// The predicted parent symbol and module of an entity in the search shard
/// from its parent (the parent symbol blank where the names load apart).
pub(super) fn predict_entity(
    files: &[SourceFile],
    parent: Option<&Entity>,
    kind: EntityKind,
    file: Option<u32>,
) -> (String, String) {
    let parent_symbol = match parent {
        Some(p) if !kind_loads_apart(kind, file) => p.qualified_name.clone(),
        _ => String::new(),
    };
    let module = file
        .and_then(|f| files.get(f as usize))
        .map(|f| f.module.clone())
        .or_else(|| parent.map(|p| p.module.clone()))
        .unwrap_or_default();
    (parent_symbol, module)
}

/// The predicted qualified name of an entity from its parent symbol as
/// stored (which, unlike the parent's qualified name, also names the class
/// of a method defined outside it).
pub(super) fn predict_qualified(kind: EntityKind, name: &str, parent_symbol: &str) -> String {
    match parent_symbol {
        "" | "." => name.to_string(),
        p if kind == EntityKind::CallChain => format!("{p} (call chain)"),
        p => format!("{p}{}{name}", separator(kind)),
    }
}

/// How many chunks each entity has, by entity id (an id past the end
/// counts nothing: the rows' checks report it).
pub(super) fn chunk_counts(entities: impl Iterator<Item = u32>, n: usize) -> Vec<u16> {
    let mut counts = vec![0u16; n];
    for e in entities {
        if let Some(c) = counts.get_mut(e as usize) {
            *c = c.saturating_add(1);
        }
    }
    counts
}

/// A chunk's predicted `(part, parts)`: an entity's chunks follow each
/// other, numbered from 1 (`previous` is the entity and part of the chunk
/// before), and `parts` counts them.
pub(super) fn predict_parts(
    previous: Option<(u32, u16)>,
    entity: u32,
    counts: &[u16],
) -> (u16, u16) {
    let part = match previous {
        Some((e, p)) if e == entity => p.wrapping_add(1),
        _ => 1,
    };
    (part, counts.get(entity as usize).copied().unwrap_or(1))
}
