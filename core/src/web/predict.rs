//! What the search shard's columns predict each value to be from the rows
//! before it: a value that holds its prediction is stored as a zero or an
//! empty string, which deflate all but removes.
//!
//! It exists apart from `tables.rs` because both the search shard's tables
//! and the name shards (`names.rs`) predict names alike; a prediction that
//! misses costs bytes, never correctness.

use super::columns::{opt_step, unopt_step};
use crate::error::CoreError;
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
/// the last one named, a call chain (stored after every other entity) lies
/// in its callable's file, others in the last one named.
pub(super) fn predict_file(last: u32, kind: EntityKind, parent: Option<&Entity>) -> u32 {
    match kind {
        EntityKind::File => last.wrapping_add(1),
        EntityKind::CallChain => parent.and_then(|p| p.file).unwrap_or(last),
        _ => last,
    }
}

/// The parents of call chains taken out of `parents`: per call chain, in
/// order, 0 where its parent stays in `parents` (none, or no callable),
/// else 1 + the step of its callable's rank among the callables from one
/// past the last such rank. An index stores each callable's call chain
/// after every other entity, in callable order, so the steps are small.
pub(super) fn split_chain_parents(kinds: &[EntityKind], parents: &mut [Option<u32>]) -> Vec<u64> {
    let mut rank = vec![None; kinds.len()];
    for (r, i) in (0..kinds.len())
        .filter(|&i| kinds[i].is_callable())
        .enumerate()
    {
        rank[i] = Some(r as u32);
    }
    let mut next = 0u32;
    let mut steps = Vec::new();
    for (i, _) in kinds
        .iter()
        .enumerate()
        .filter(|(_, k)| **k == EntityKind::CallChain)
    {
        let r = parents
            .get(i)
            .copied()
            .flatten()
            .and_then(|p| rank.get(p as usize).copied().flatten());
        steps.push(opt_step(next, r));
        if let Some(r) = r {
            parents[i] = None;
            next = r.wrapping_add(1);
        }
    }
    steps
}

/// Put back into `parents` the call chains' parents that
/// [`split_chain_parents`] took out.
pub(super) fn join_chain_parents(
    kinds: &[EntityKind],
    parents: &mut [Option<u32>],
    steps: &[u64],
) -> Result<(), CoreError> {
    let callables: Vec<u32> = (0..kinds.len() as u32)
        .filter(|&i| kinds[i as usize].is_callable())
        .collect();
    let mut steps = steps.iter();
    let mut next = 0u32;
    for (i, _) in kinds
        .iter()
        .enumerate()
        .filter(|(_, k)| **k == EntityKind::CallChain)
    {
        let &s = steps
            .next()
            .ok_or_else(|| CoreError::malformed("fewer call-chain parents than call chains"))?;
        let Some(r) = unopt_step(next, s, "call-chain parent")? else {
            continue;
        };
        let p = callables
            .get(r as usize)
            .copied()
            .ok_or_else(|| CoreError::malformed("a call chain's callable is out of range"))?;
        let slot = parents
            .get_mut(i)
            .ok_or_else(|| CoreError::malformed("fewer parents than entities"))?;
        if slot.is_some() {
            return Err(CoreError::malformed("a call chain has two parents"));
        }
        *slot = Some(p);
        next = r.wrapping_add(1);
    }
    if steps.next().is_some() {
        return Err(CoreError::malformed(
            "more call-chain parents than call chains",
        ));
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_chain_parents_come_back_whether_they_are_callables_or_not() {
        use EntityKind::{CallChain, Class, Function, Method};
        let kinds = [
            Class, Method, Function, Method, CallChain, CallChain, CallChain, CallChain,
        ];
        // Chains of the method 1 and the method 3 (rank 2: a step of one
        // past the function 2), one of the class (no callable), and one
        // without a parent.
        let parents = [
            None,
            Some(0),
            None,
            Some(0),
            Some(1),
            Some(3),
            Some(0),
            None,
        ];
        let mut split = parents;
        let steps = split_chain_parents(&kinds, &mut split);
        assert_eq!(steps, [1, 3, 0, 0]);
        assert_eq!(split[4..], [None, None, Some(0), None]);
        let mut back = split;
        join_chain_parents(&kinds, &mut back, &steps).unwrap();
        assert_eq!(back, parents);
        // Damage is an error, not a panic.
        for bad in [
            &[1, 3, 0][..],
            &[1, 3, 0, 0, 0],
            &[1, 99, 0, 0],
            &[1, 3, 1, 0],
        ] {
            let mut p = split;
            assert!(join_chain_parents(&kinds, &mut p, bad).is_err(), "{bad:?}");
        }
    }
}
