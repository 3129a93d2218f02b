//! Names in the web layout: the *name shards*, each the names of the
//! entities of a range of files and of their chunks.
//!
//! It exists because names were half of the search shard (on a 44k-chunk
//! codebase about 105 of its 217 KB), which a browser downloads before its
//! first result, while a question reads the names of a few dozen
//! candidates. The search shard now carries the names of entities without
//! a file (modules) and of files only
//! ([`crate::retrieve::names::names_load_apart`]); retrieval reads the
//! others through [`crate::retrieve::Corpus::named`], which records the
//! ranges it lacked; [`WebIndex::missing`] names their shards, and the
//! caller retrieves again until nothing is lacking, as for postings and
//! edges. The lookups by name travel apart (`lookups.rs`).
//!
//! A name shard predicts each row only from the shard itself and from the
//! entities the search shard names, so what it decodes to never depends
//! on what else is loaded.

use std::collections::BTreeSet;

use serde::Serialize;

use super::columns::{Budget, DiffColumn, OptDiffColumn};
use super::predict::{predict_chunk, predict_name, predict_qualified};
use super::shard::{decode_shard, Fetched};
use super::{ShardKind, WebIndex, WebManifest, WEB_MANIFEST};
use crate::error::CoreError;
use crate::model::{Chunk, Entity, SourceFile};
use crate::retrieve::features::ChunkFeatures;
use crate::retrieve::names::{names_load_apart, NameRanges};

/// The names of the entities whose file lies in a range of files, in id
/// order, and of their chunks (each entity's in part order), column by
/// column, each a difference from its prediction.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct NameShard {
    /// First and last file.
    range: [u32; 2],
    name: DiffColumn,
    qualified_name: DiffColumn,
    parent_symbol: DiffColumn,
    class_name: OptDiffColumn,
    symbol_name: DiffColumn,
    chunk_parent_symbol: DiffColumn,
    chunk_class_name: OptDiffColumn,
    /// Per entity: whether it is a definition (ranking reads it of the
    /// symbols a question names).
    is_definition: Vec<bool>,
    /// Per chunk: its [`crate::retrieve::features::ChunkFeatures::bits`]
    /// (the final filter reads them of the chosen chunks).
    facts: Vec<u8>,
}

/// The entities whose names load apart, by name shard (the range of
/// `ranges` that holds the entity's file), each shard's by id: one pass
/// over the entities, rather than one per shard.
pub(super) fn rows_by_range(entities: &[Entity], ranges: &NameRanges) -> Vec<Vec<u32>> {
    let mut rows = vec![Vec::new(); ranges.count()];
    for e in entities.iter().filter(|e| names_load_apart(e)) {
        if let Some(r) = e.file.and_then(|f| ranges.range_of(f)) {
            rows[r].push(e.id);
        }
    }
    rows
}

/// The parent a row of the shard of `ids` may be predicted from: an entity
/// whose names the search shard holds, or one of the shard's rows before
/// it (`done(j)` gives the `j`-th row when it is before, as decoded so
/// far).
fn visible<'a>(
    entities: &'a [Entity],
    ids: &[u32],
    done: impl Fn(usize) -> Option<&'a Entity>,
    parent: Option<u32>,
) -> Option<&'a Entity> {
    let p = parent?;
    let e = entities.get(p as usize)?;
    if !names_load_apart(e) {
        return Some(e);
    }
    ids.binary_search(&p).ok().and_then(done)
}

/// The decoded rows of a shard: its entities and its chunks, ready to be
/// copied into a corpus.
pub(super) struct Decoded {
    entities: Vec<Entity>,
    chunks: Vec<ChunkRow>,
}

/// What a name shard brings of a chunk.
#[derive(Debug)]
struct ChunkRow {
    id: u32,
    symbol_name: String,
    parent_symbol: String,
    class_name: Option<String>,
    /// [`crate::retrieve::features::ChunkFeatures::bits`].
    facts: u8,
}

impl NameShard {
    /// The names of files `range` of an index, whose entities with names
    /// apart are `ids` ([`rows_by_range`]); `facts` are every chunk's
    /// [`crate::retrieve::features::ChunkFeatures::bits`], by id.
    pub(super) fn pack(
        files: &[SourceFile],
        entities: &[Entity],
        chunks: &[Chunk],
        chunks_of_entity: &[Vec<u32>],
        facts: &[u8],
        range: [u32; 2],
        ids: &[u32],
    ) -> Self {
        let mut s = NameShard {
            range,
            ..NameShard::default()
        };
        for (k, &id) in ids.iter().enumerate() {
            let e = &entities[id as usize];
            let before = |j: usize| (j < k).then(|| &entities[ids[j] as usize]);
            let parent = visible(entities, ids, before, e.parent);
            s.name
                .push(&predict_name(files, parent, e.kind, e.file), &e.name);
            let parent_symbol = parent.map_or("", |p| p.qualified_name.as_str());
            s.parent_symbol.push(parent_symbol, &e.parent_symbol);
            s.qualified_name.push(
                &predict_qualified(e.kind, &e.name, &e.parent_symbol),
                &e.qualified_name,
            );
            s.class_name
                .push(Some(e.parent_symbol.as_str()), e.class_name.as_deref());
            s.is_definition.push(e.is_definition);
            for &c in chunks_of_entity.get(id as usize).into_iter().flatten() {
                s.facts.push(facts.get(c as usize).copied().unwrap_or(0));
                let c = &chunks[c as usize];
                let p = predict_chunk(files, e, c.part, c.parts);
                s.symbol_name.push(&p.symbol_name, &c.symbol_name);
                s.chunk_parent_symbol
                    .push(&e.parent_symbol, &c.parent_symbol);
                s.chunk_class_name
                    .push(e.class_name.as_deref(), c.class_name.as_deref());
            }
        }
        s
    }

    /// What the string columns cost, for the decode bound.
    fn weight(&self) -> usize {
        [
            &self.name,
            &self.qualified_name,
            &self.parent_symbol,
            &self.class_name.values,
            &self.symbol_name,
            &self.chunk_parent_symbol,
            &self.chunk_class_name.values,
        ]
        .iter()
        .map(|c| c.weight())
        .sum::<usize>()
            + self.class_name.tag.len()
            + self.chunk_class_name.tag.len()
    }

    /// Decode against the search shard's tables (whose entities without a
    /// file have their names), the range's entities with names apart being
    /// `ids`. Fails with [`CoreError::Malformed`] when the columns do not
    /// fit the range's entities and chunks.
    pub(super) fn unpack(
        &self,
        files: &[SourceFile],
        entities: &[Entity],
        chunks: &[Chunk],
        chunks_of_entity: &[Vec<u32>],
        ids: &[u32],
    ) -> Result<Decoded, CoreError> {
        let budget = &Budget::new(self.weight());
        let n = ids.len();
        let nc: usize = ids
            .iter()
            .map(|&e| chunks_of_entity.get(e as usize).map_or(0, Vec::len))
            .sum();
        if [
            self.name.len(),
            self.qualified_name.len(),
            self.parent_symbol.len(),
            self.class_name.tag.len(),
            self.is_definition.len(),
        ]
        .iter()
        .any(|&l| l != n)
            || [
                self.symbol_name.len(),
                self.chunk_parent_symbol.len(),
                self.chunk_class_name.tag.len(),
                self.facts.len(),
            ]
            .iter()
            .any(|&l| l != nc)
        {
            return Err(CoreError::malformed(format!(
                "the name columns do not fit the {n} entities and {nc} chunks of files {}-{}",
                self.range[0], self.range[1]
            )));
        }
        let mut done: Vec<Entity> = Vec::with_capacity(n);
        for (k, &id) in ids.iter().enumerate() {
            let e = &entities[id as usize];
            let parent = visible(entities, ids, |j| done.get(j), e.parent);
            let name = self
                .name
                .get(k, &predict_name(files, parent, e.kind, e.file), budget)?;
            let predicted = parent.map_or("", |p| p.qualified_name.as_str());
            let parent_symbol = self.parent_symbol.get(k, predicted, budget)?;
            let qualified = predict_qualified(e.kind, &name, &parent_symbol);
            let qualified_name = self.qualified_name.get(k, &qualified, budget)?;
            let mut row = e.clone();
            row.name = name;
            row.qualified_name = qualified_name;
            row.parent_symbol = parent_symbol;
            row.is_definition = self.is_definition[k];
            done.push(row);
        }
        let class_names = self
            .class_name
            .decode(done.iter().map(|e| Some(e.parent_symbol.as_str())), budget)?;
        for (e, c) in done.iter_mut().zip(class_names) {
            e.class_name = c;
        }
        let mut out_chunks = Vec::with_capacity(nc);
        let mut owners = Vec::with_capacity(nc);
        for (k, e) in done.iter().enumerate() {
            for &c in chunks_of_entity.get(e.id as usize).into_iter().flatten() {
                let ch = chunks.get(c as usize).ok_or_else(|| {
                    CoreError::malformed(format!("entity {} lists chunk {c}", e.id))
                })?;
                let i = out_chunks.len();
                let p = predict_chunk(files, e, ch.part, ch.parts);
                let symbol = self.symbol_name.get(i, &p.symbol_name, budget)?;
                let parent = self.chunk_parent_symbol.get(i, &e.parent_symbol, budget)?;
                out_chunks.push(ChunkRow {
                    id: c,
                    symbol_name: symbol,
                    parent_symbol: parent,
                    class_name: None,
                    facts: self.facts[i],
                });
                owners.push(k);
            }
        }
        let classes = self.chunk_class_name.decode(
            owners.iter().map(|&k| done[k].class_name.as_deref()),
            budget,
        )?;
        for (row, class) in out_chunks.iter_mut().zip(classes) {
            row.class_name = class;
        }
        Ok(Decoded {
            entities: done,
            chunks: out_chunks,
        })
    }
}

/// The file ranges of the name shards: consecutive files holding about
/// `entities_per_shard` entities each (at least one file per range).
pub(super) fn name_ranges(
    files: usize,
    entities: &[Entity],
    entities_per_shard: usize,
) -> Vec<[u32; 2]> {
    let mut per_file = vec![0usize; files];
    for e in entities {
        if let Some(n) = e.file.and_then(|f| per_file.get_mut(f as usize)) {
            *n += 1;
        }
    }
    let mut out = Vec::new();
    let (mut start, mut count) = (0usize, 0usize);
    for (f, &n) in per_file.iter().enumerate() {
        count += n;
        if count >= entities_per_shard || f + 1 == files {
            out.push([start as u32, f as u32]);
            start = f + 1;
            count = 0;
        }
    }
    out
}

impl WebIndex {
    /// Add a name shard (its position in the manifest's shard list).
    pub(super) fn add_names(
        &mut self,
        position: usize,
        bytes: Fetched<'_>,
    ) -> Result<(), CoreError> {
        let info = self.shard_at(position, ShardKind::Names)?;
        let shard: NameShard = decode_shard(&info, bytes)?;
        if Some(shard.range) != info.files {
            return Err(CoreError::Inconsistent {
                file: info.name.clone(),
                message: "its file range differs from the manifest's".into(),
            });
        }
        let c = &mut self.corpus;
        let Some((range, loaded)) = c
            .name_ranges
            .as_ref()
            .and_then(|r| r.range_of(shard.range[0]).map(|i| (i, r.is_loaded(i))))
        else {
            return Ok(());
        };
        // A shard loaded before (its hash checked again above) is not
        // decoded again.
        if loaded {
            return Ok(());
        }
        let ids = self.name_rows.get(range).map_or(&[][..], Vec::as_slice);
        let d = shard
            .unpack(
                &c.data.files,
                &c.data.entities,
                &c.data.chunks,
                &c.chunks_of_entity,
                ids,
            )
            .map_err(|e| e.in_file(&info.name))?;
        for e in d.entities {
            let row = &mut c.data.entities[e.id as usize];
            row.name = e.name;
            row.qualified_name = e.qualified_name;
            row.parent_symbol = e.parent_symbol;
            row.class_name = e.class_name;
            row.is_definition = e.is_definition;
        }
        for r in d.chunks {
            let row = &mut c.data.chunks[r.id as usize];
            row.symbol_name = r.symbol_name;
            row.parent_symbol = r.parent_symbol;
            row.class_name = r.class_name;
            if let Some(f) = c.features.chunks.get_mut(r.id as usize) {
                f.set_bits(r.facts);
            }
        }
        if let Some(r) = c.name_ranges.as_mut() {
            r.set_loaded(range);
        }
        Ok(())
    }

    /// Positions of the name shards whose names the last retrieval read
    /// and did not have (taken).
    pub(super) fn missing_name_shards(&self) -> Vec<usize> {
        let positions: Vec<usize> = self
            .manifest
            .shards_of(ShardKind::Names)
            .map(|(i, _)| i)
            .collect();
        self.corpus
            .take_wanted_names()
            .into_iter()
            .filter_map(|r| positions.get(r).copied())
            .collect()
    }
}

/// The first file of each name shard, as the manifest lists them: the
/// shards must cover files `0..files` in order, without gaps.
pub(super) fn name_starts(manifest: &WebManifest, files: usize) -> Result<Vec<u32>, CoreError> {
    let mut starts = Vec::new();
    let mut next = 0u64;
    for (_, s) in manifest.shards_of(ShardKind::Names) {
        let [a, b] = s.files.ok_or_else(|| CoreError::Manifest {
            message: format!("{WEB_MANIFEST}: name shard {} has no file range", s.name),
        })?;
        if u64::from(a) != next || b < a {
            return Err(CoreError::Manifest {
                message: format!(
                    "{WEB_MANIFEST}: name shard {} does not continue the file ranges before it",
                    s.name
                ),
            });
        }
        starts.push(a);
        next = u64::from(b) + 1;
    }
    if next != files as u64 {
        return Err(CoreError::Manifest {
            message: format!("{WEB_MANIFEST}: the name shards cover {next} of {files} files"),
        });
    }
    Ok(starts)
}

/// Blank what name shards bring of every entity whose names load apart,
/// and of its chunks: names, whether it is a definition, the chunks' text
/// facts. The search shard carries the others only.
pub(super) fn blank_filed_rows(
    entities: &mut [Entity],
    chunks: &mut [Chunk],
    features: &mut [ChunkFeatures],
) {
    let filed: BTreeSet<u32> = entities
        .iter()
        .filter(|e| names_load_apart(e))
        .map(|e| e.id)
        .collect();
    for e in entities.iter_mut().filter(|e| names_load_apart(e)) {
        e.name.clear();
        e.qualified_name.clear();
        e.parent_symbol.clear();
        e.class_name = None;
        e.is_definition = false;
    }
    for c in chunks.iter_mut().filter(|c| filed.contains(&c.entity)) {
        c.symbol_name.clear();
        c.parent_symbol.clear();
        c.class_name = None;
        if let Some(f) = features.get_mut(c.id as usize) {
            f.set_bits(0);
        }
    }
}

// How the browser reads these types without serde (`crate::wire`).
crate::wire::wire_struct!(NameShard {
    range,
    name,
    qualified_name,
    parent_symbol,
    class_name,
    symbol_name,
    chunk_parent_symbol,
    chunk_class_name,
    is_definition,
    facts
});
#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EntityKind, Scope};

    fn file(id: u32, path: &str) -> SourceFile {
        crate::model::fixtures::header(id, path)
    }

    fn entity(
        id: u32,
        kind: EntityKind,
        name: &str,
        qualified: &str,
        parent: Option<u32>,
        file: Option<u32>,
    ) -> Entity {
        let mut e = Entity::new(id, kind, name.into(), qualified.into());
        e.parent = parent;
        e.file = file;
        e
    }

    /// Two files: a module, each file's entity, a namespace, a class with a
    /// constructor and a method in the first file, a function in the
    /// second whose parent (the namespace) lies in the first, and a call
    /// chain of the method; one chunk each.
    fn index() -> (Vec<SourceFile>, Vec<Entity>, Vec<Chunk>, Vec<Vec<u32>>) {
        let files = vec![file(0, "src/a.h"), file(1, "src/b.cpp")];
        let mut entities = vec![
            entity(0, EntityKind::Module, "src", "src", None, None),
            entity(1, EntityKind::File, "a.h", "src/a.h", Some(0), Some(0)),
            entity(2, EntityKind::Namespace, "ns", "ns", Some(1), Some(0)),
            entity(3, EntityKind::Class, "Grid", "ns::Grid", Some(2), Some(0)),
            entity(
                4,
                EntityKind::Constructor,
                "Grid",
                "ns::Grid::Grid",
                Some(3),
                Some(0),
            ),
            entity(
                5,
                EntityKind::Method,
                "fillHalo",
                "ns::Grid::fillHalo",
                Some(3),
                Some(0),
            ),
            entity(6, EntityKind::File, "b.cpp", "src/b.cpp", Some(0), Some(1)),
            entity(
                7,
                EntityKind::Function,
                "solve",
                "ns::solve",
                Some(2),
                Some(1),
            ),
            entity(
                8,
                EntityKind::CallChain,
                "fillHalo",
                "ns::Grid::fillHalo (call chain)",
                Some(5),
                Some(0),
            ),
        ];
        let parent_symbols = [
            "",
            "src",
            "src/a.h",
            "ns",
            "ns::Grid",
            "ns::Grid",
            "src",
            "ns",
            "ns::Grid::fillHalo",
        ];
        for (e, p) in entities.iter_mut().zip(parent_symbols) {
            e.parent_symbol = p.into();
        }
        entities[4].class_name = Some("ns::Grid".into());
        entities[5].class_name = Some("ns::Grid".into());
        let chunks: Vec<Chunk> = entities
            .iter()
            .map(|e| Chunk {
                id: e.id,
                entity: e.id,
                part: 1,
                parts: 1,
                path: String::new(),
                file_name: String::new(),
                base_name: String::new(),
                source_type: None,
                scope: Scope::Source,
                language: None,
                entity_type: e.kind,
                chunk_type: e.kind.as_str().into(),
                symbol_name: e.name.clone(),
                parent_symbol: e.parent_symbol.clone(),
                class_name: e.class_name.clone(),
                return_type: None,
                parameters: String::new(),
                leading_comment: None,
                code: String::new(),
                frame: crate::model::CodeFrame::default(),
                start_line: 0,
                end_line: 0,
                module: String::new(),
                section_path: None,
            })
            .collect();
        let chunks_of_entity = (0..entities.len() as u32).map(|i| vec![i]).collect();
        (files, entities, chunks, chunks_of_entity)
    }

    #[test]
    fn a_name_shard_gives_back_the_names_of_its_files() {
        let (files, full, chunks, of) = index();
        let mut blank = full.clone();
        let mut blank_chunks = chunks.clone();
        blank_filed_rows(&mut blank, &mut blank_chunks, &mut []);
        // The module and the files' own entities keep their names.
        assert_eq!(blank[0].name, "src");
        assert_eq!(blank[1].name, "a.h");
        assert!(blank[2..6]
            .iter()
            .chain(&blank[7..])
            .all(|e| e.name.is_empty()));
        let ranges = name_ranges(files.len(), &full, 1);
        assert_eq!(ranges, vec![[0, 0], [1, 1]]);
        let starts = NameRanges::new(vec![0, 1]);
        let rows = rows_by_range(&full, &starts);
        // The rows are found the same from the search shard's blank names.
        assert_eq!(rows, rows_by_range(&blank, &starts));
        // Every chunk's facts differ, and so does whether an entity is a
        // definition.
        let facts: Vec<u8> = (0..chunks.len()).map(|i| (i % 16) as u8).collect();
        let mut full = full;
        for e in &mut full {
            e.is_definition = e.id % 3 != 0;
        }
        for (r, range) in ranges.into_iter().enumerate() {
            let ids = &rows[r];
            let shard = NameShard::pack(&files, &full, &chunks, &of, &facts, range, ids);
            let d = shard
                .unpack(&files, &blank, &blank_chunks, &of, ids)
                .unwrap();
            assert_eq!(d.entities.len(), ids.len());
            for e in &d.entities {
                let want = &full[e.id as usize];
                assert_eq!(
                    (
                        &e.name,
                        &e.qualified_name,
                        &e.parent_symbol,
                        &e.class_name,
                        e.is_definition
                    ),
                    (
                        &want.name,
                        &want.qualified_name,
                        &want.parent_symbol,
                        &want.class_name,
                        want.is_definition
                    )
                );
            }
            for c in &d.chunks {
                let want = &chunks[c.id as usize];
                assert_eq!(
                    (&c.symbol_name, &c.parent_symbol, &c.class_name, c.facts),
                    (
                        &want.symbol_name,
                        &want.parent_symbol,
                        &want.class_name,
                        facts[c.id as usize]
                    )
                );
            }
            // A shard does not fit the rows of other files.
            let other = &rows[1 - r];
            assert!(shard
                .unpack(&files, &blank, &blank_chunks, &of, other)
                .is_err());
        }
        // The constructor and the call chain cost nothing: predicted from
        // their parents in the same shard.
        let ids = &rows[0];
        let first = NameShard::pack(&files, &full, &chunks, &of, &facts, [0, 0], ids);
        let at = |id: u32| ids.iter().position(|&i| i == id).unwrap();
        assert!(first.name.append[at(4)].is_empty() && first.name.cut[at(4)] == 0);
        assert!(first.name.append[at(8)].is_empty() && first.name.cut[at(8)] == 0);
    }

    #[test]
    fn ranges_cut_after_the_file_that_reaches_the_count() {
        let (files, full, _, _) = index();
        assert_eq!(name_ranges(files.len(), &full, 100), vec![[0, 1]]);
        assert_eq!(name_ranges(files.len(), &full, 3), vec![[0, 0], [1, 1]]);
        assert!(name_ranges(0, &full, 3).is_empty());
    }
}
