//! The search shard's tables (files, entities, chunks, the graph's implied
//! edges and text features) stored column by column, each value written as the
//! difference from what the rows before it predict.
//!
//! It exists because the search shard is what a browser downloads before
//! its first result, and most of it is redundant: a chunk repeats its
//! entity's path, name and parent; an entity's qualified name is its
//! parent's plus its own name; ids grow in small steps.
//! Storing rows as bincode structs let deflate find some of that; storing
//! columns of differences from a prediction lets it find nearly all of it
//! (the IPPL search shard shrank from 468 KB to the size `cargo xtask bench
//! site` reports). The coding is lossless for the fields the search shard
//! carries (see [`Tables::pack`]): a prediction that misses only costs
//! bytes, never correctness, so the indexer may change how it names things
//! without touching this file. The predictions are in `predict.rs`.

use serde::Serialize;

use crate::error::CoreError;
use crate::model::{
    Chunk, CodeFrame, Edge, Entity, EntityKind, Gloss, GlossSource, Language, Scope, SourceFile,
    SourceType,
};
use crate::retrieve::features::{ChunkFeatures, TextFeatures};
use crate::retrieve::names::names_load_apart;
use crate::text::folder_of;

use super::columns::{
    opt_step, step, unopt_step, unstep, Budget, DiffColumn, KindsAndParents, OptDiffColumn,
    SplitColumn,
};
use super::edges::EdgeColumns;
use super::predict::{
    chunk_counts, join_chain_parents, predict_chunk, predict_entity, predict_file,
    predict_filed_name, predict_parts, predict_qualified, split_chain_parents,
};

/// Files, without their hashes, sizes, line counts, parse statistics,
/// warnings or `#include` directives (nothing in the browser reads them:
/// the manifest's build id identifies the index, and retrieval follows a
/// file's includes through the graph's include edges). A file's module is
/// stored as the difference from its folder.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct FileColumns {
    path: DiffColumn,
    language: Vec<Language>,
    source_type: Vec<SourceType>,
    scope: Vec<Scope>,
    module: DiffColumn,
}

/// Entities without their display fields (those travel in text shards).
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct EntityColumns {
    /// Kinds and parents, in one column.
    kind_parent: KindsAndParents,
    name: DiffColumn,
    qualified_name: DiffColumn,
    /// The call chains' parents ([`split_chain_parents`]), which
    /// `kind_parent` leaves out.
    chain_parent: Vec<u64>,
    parent_symbol: DiffColumn,
    class_name: OptDiffColumn,
    file: Vec<u64>,
    /// Whether it is a definition, 0 or 1, for the entities whose names
    /// the search shard carries (the others' ride in name shards).
    is_definition: SplitColumn,
    module: DiffColumn,
    gloss_source: Vec<GlossSource>,
}

/// Chunks without their display fields (those travel in text shards).
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct ChunkColumns {
    entity: Vec<u64>,
    /// The difference (wrapping) from the part predicted: 1 after another
    /// entity's chunk, else one more than the chunk before.
    part: Vec<u16>,
    /// The difference (wrapping) from the parts predicted: how many chunks
    /// the entity has.
    parts: Vec<u16>,
    path: DiffColumn,
    base_name: DiffColumn,
    /// `None` where it equals the file's.
    source_type: Vec<Option<Option<SourceType>>>,
    scope: Vec<Option<Scope>>,
    language: Vec<Option<Option<Language>>>,
    entity_type: Vec<Option<EntityKind>>,
    chunk_type: DiffColumn,
    symbol_name: DiffColumn,
    parent_symbol: DiffColumn,
    class_name: OptDiffColumn,
}

/// Text features, per-chunk facts as columns; the qualified names travel in
/// their own shard ([`super::QualifiedShard`]), and the token estimates not
/// at all (only `context_tokens`, a native report, reads them: on a 44k-chunk
/// codebase they were 55 KB of the search shard).
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct FeatureColumns {
    /// [`ChunkFeatures::bits`], for the chunks of entities whose names the
    /// search shard carries (the others' facts ride in their name shard).
    flags: SplitColumn,
}

/// The search shard's tables, column by column.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct Tables {
    files: FileColumns,
    entities: EntityColumns,
    chunks: ChunkColumns,
    edges: EdgeColumns,
    features: FeatureColumns,
}

/// What [`Tables`] hold, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// Files (no sha256, size, line count, parse statistics or warnings).
    pub files: Vec<SourceFile>,
    /// Entities (no display fields or span).
    pub entities: Vec<Entity>,
    /// Chunks (no display fields).
    pub chunks: Vec<Chunk>,
    /// The implied edges the graph has, sorted (the others arrive in edge
    /// shards).
    pub edges: Vec<Edge>,
    /// Whether implied edges were left out; if not, the one edge shard
    /// holds the graph whole, in its own order.
    pub edges_implied: bool,
    /// Text features, without the qualified names (marked absent: they
    /// arrive from their own shard).
    pub features: TextFeatures,
}

impl Tables {
    /// Pack the search shard's tables. Entities and chunks must already be
    /// stripped of their display fields (which travel in text shards); ids
    /// must equal positions. Packing then [`Tables::unpack`] gives back
    /// exactly these rows, except that files lose `sha256`, `bytes`,
    /// `lines`, `parse` and `warnings`, and entities lose `span`,
    /// `section_path` and their gloss's `model` (which travel in text
    /// shards, [`super::EntityText`]).
    pub fn pack(
        files: &[SourceFile],
        entities: &[Entity],
        chunks: &[Chunk],
        edges: EdgeColumns,
        features: &TextFeatures,
    ) -> Result<Self, CoreError> {
        let mut t = Tables::default();
        let f = &mut t.files;
        let mut previous = "";
        for (i, file) in files.iter().enumerate() {
            if file.id as usize != i {
                return Err(CoreError::malformed(format!(
                    "file {} sits at position {i}",
                    file.id
                )));
            }
            f.path.push(previous, &file.path);
            f.language.push(file.language);
            f.source_type.push(file.source_type);
            f.scope.push(file.scope);
            f.module.push(folder_of(&file.path), &file.module);
            previous = &file.path;
        }

        let en = &mut t.entities;
        let mut last_file = 0u32;
        let kinds: Vec<EntityKind> = entities.iter().map(|e| e.kind).collect();
        let mut parents: Vec<Option<u32>> = entities.iter().map(|e| e.parent).collect();
        en.chain_parent = split_chain_parents(&kinds, &mut parents);
        en.kind_parent = KindsAndParents::pack(&kinds, &parents);
        for (i, e) in entities.iter().enumerate() {
            if e.id as usize != i {
                return Err(CoreError::malformed(format!(
                    "entity {} sits at position {i}",
                    e.id
                )));
            }
            let parent = e.parent.and_then(|p| entities[..i].get(p as usize));
            let (parent_symbol, module) = predict_entity(files, parent, e.kind, e.file);
            let qualified = predict_qualified(e.kind, &e.name, &e.parent_symbol);
            let name = predict_filed_name(files, parent, e.kind, e.file);
            en.name.push(&name, &e.name);
            en.qualified_name.push(&qualified, &e.qualified_name);
            en.parent_symbol.push(&parent_symbol, &e.parent_symbol);
            en.class_name
                .push(Some(e.parent_symbol.as_str()), e.class_name.as_deref());
            en.file
                .push(opt_step(predict_file(last_file, e.kind, parent), e.file));
            last_file = e.file.unwrap_or(last_file);
            en.module.push(&module, &e.module);
            en.gloss_source.push(e.gloss.source);
        }
        en.is_definition = SplitColumn::pack(
            entities
                .iter()
                .map(|e| (names_load_apart(e), u8::from(e.is_definition))),
        );

        let ch = &mut t.chunks;
        let mut last_entity = 0u32;
        let counts = chunk_counts(chunks.iter().map(|c| c.entity), entities.len());
        let mut previous: Option<(u32, u16)> = None;
        for (i, c) in chunks.iter().enumerate() {
            if c.id as usize != i {
                return Err(CoreError::malformed(format!(
                    "chunk {} sits at position {i}",
                    c.id
                )));
            }
            let e = entities.get(c.entity as usize).ok_or_else(|| {
                CoreError::malformed(format!("chunk {i} names entity {}", c.entity))
            })?;
            let file = e.file.and_then(|f| files.get(f as usize));
            let p = predict_chunk(files, e, c.part, c.parts);
            ch.entity.push(step(last_entity, c.entity));
            last_entity = c.entity;
            let (part, parts) = predict_parts(previous, c.entity, &counts);
            ch.part.push(c.part.wrapping_sub(part));
            ch.parts.push(c.parts.wrapping_sub(parts));
            previous = Some((c.entity, c.part));
            ch.path.push(&p.path, &c.path);
            ch.base_name.push(&p.base_name, &c.base_name);
            let file_source = file.map(|f| f.source_type);
            ch.source_type
                .push((c.source_type != file_source).then_some(c.source_type));
            ch.scope
                .push((Some(c.scope) != file.map(|f| f.scope)).then_some(c.scope));
            let file_language = file.map(|f| f.language);
            ch.language
                .push((c.language != file_language).then_some(c.language));
            ch.entity_type
                .push((c.entity_type != e.kind).then_some(c.entity_type));
            ch.chunk_type.push(&p.chunk_type, &c.chunk_type);
            ch.symbol_name.push(&p.symbol_name, &c.symbol_name);
            ch.parent_symbol.push(&e.parent_symbol, &c.parent_symbol);
            ch.class_name
                .push(e.class_name.as_deref(), c.class_name.as_deref());
        }

        t.edges = edges;

        if features.chunks.len() != chunks.len() {
            return Err(CoreError::malformed(
                "the text features and the chunks differ in length",
            ));
        }
        t.features.flags = SplitColumn::pack(chunks.iter().zip(&features.chunks).map(|(c, f)| {
            let blanked = entities
                .get(c.entity as usize)
                .is_some_and(names_load_apart);
            (blanked, f.bits())
        }));
        Ok(t)
    }

    /// What the string columns cost in the shard.
    fn string_weight(&self) -> usize {
        let (f, en, ch) = (&self.files, &self.entities, &self.chunks);
        [
            &f.path,
            &f.module,
            &en.name,
            &en.qualified_name,
            &en.parent_symbol,
            &en.class_name.values,
            &en.module,
            &ch.path,
            &ch.base_name,
            &ch.chunk_type,
            &ch.symbol_name,
            &ch.parent_symbol,
            &ch.class_name.values,
        ]
        .iter()
        .map(|c| c.weight())
        .chain([en.class_name.tag.len(), ch.class_name.tag.len()])
        .sum()
    }

    /// Decode. Fails with [`CoreError::Malformed`] when columns disagree in
    /// length or a value is out of range, or when the string columns would
    /// decode to more than their budget (`columns::Budget`); it never
    /// panics on any input.
    pub fn unpack(&self) -> Result<Decoded, CoreError> {
        let budget = &Budget::new(self.string_weight());
        let f = &self.files;
        let n = f.path.len();
        same_len(
            &[
                f.language.len(),
                f.source_type.len(),
                f.scope.len(),
                f.module.len(),
            ],
            n,
            "file",
        )?;
        let mut files: Vec<SourceFile> = Vec::with_capacity(n);
        for i in 0..n {
            let previous = files.last();
            let path = f
                .path
                .get(i, previous.map_or("", |p| p.path.as_str()), budget)?;
            let module = f.module.get(i, folder_of(&path), budget)?;
            files.push(SourceFile {
                id: i as u32,
                path,
                language: f.language[i],
                source_type: f.source_type[i],
                scope: f.scope[i],
                module,
                sha256: String::new(),
                // No browser stage reads a file's size or line count.
                bytes: 0,
                lines: 0,
                includes: Vec::new(),
                parse: None,
                warnings: Vec::new(),
            });
        }

        let en = &self.entities;
        let n = en.kind_parent.len();
        same_len(
            &[
                en.name.len(),
                en.qualified_name.len(),
                en.parent_symbol.len(),
                en.class_name.tag.len(),
                en.file.len(),
                en.module.len(),
                en.gloss_source.len(),
            ],
            n,
            "entity",
        )?;
        let mut entities: Vec<Entity> = Vec::with_capacity(n);
        let mut last_file = 0u32;
        let mut class_names = Vec::with_capacity(n);
        let (kinds, mut parents) = en.kind_parent.unpack()?;
        join_chain_parents(&kinds, &mut parents, &en.chain_parent)?;
        for (i, (&parent, &kind)) in parents.iter().zip(&kinds).enumerate() {
            let id = i as u32;
            let parent_row = parent.and_then(|p| entities.get(p as usize));
            let predicted = predict_file(last_file, kind, parent_row);
            let file = unopt_step(predicted, en.file[i], "entity file")?;
            last_file = file.unwrap_or(last_file);
            let name = predict_filed_name(&files, parent_row, kind, file);
            let name = en.name.get(i, &name, budget)?;
            let (parent_symbol, module) = predict_entity(&files, parent_row, kind, file);
            let parent_symbol = en.parent_symbol.get(i, &parent_symbol, budget)?;
            class_names.push(parent_symbol.clone());
            let qualified = predict_qualified(kind, &name, &parent_symbol);
            let qualified_name = en.qualified_name.get(i, &qualified, budget)?;
            let module = en.module.get(i, &module, budget)?;
            // Display fields travel in text shards; concept text only feeds
            // the keyword index and the vectors, which the web layout ships
            // already built.
            entities.push(Entity {
                parent,
                parent_symbol,
                file,
                module,
                gloss: Gloss {
                    text: String::new(),
                    source: en.gloss_source[i],
                    // With the gloss text, in the entity's text shard.
                    model: None,
                },
                ..Entity::new(id, kind, name, qualified_name)
            });
        }
        let definitions = en.is_definition.unpack(
            &entities.iter().map(names_load_apart).collect::<Vec<_>>(),
            "entity definitions",
        )?;
        for (e, d) in entities.iter_mut().zip(definitions) {
            e.is_definition = match d {
                0 | 1 => d == 1,
                _ => {
                    return Err(CoreError::malformed(
                        "an entity definition flag is not 0 or 1",
                    ))
                }
            };
        }
        let decoded = en
            .class_name
            .decode(class_names.iter().map(|s| Some(s.as_str())), budget)?;
        for (e, c) in entities.iter_mut().zip(decoded) {
            e.class_name = c;
        }

        let ch = &self.chunks;
        let n = ch.entity.len();
        same_len(
            &[
                ch.part.len(),
                ch.parts.len(),
                ch.path.len(),
                ch.base_name.len(),
                ch.source_type.len(),
                ch.scope.len(),
                ch.language.len(),
                ch.entity_type.len(),
                ch.chunk_type.len(),
                ch.symbol_name.len(),
                ch.parent_symbol.len(),
                ch.class_name.tag.len(),
            ],
            n,
            "chunk",
        )?;
        let mut chunks = Vec::with_capacity(n);
        let mut last_entity = 0u32;
        let mut owners = Vec::with_capacity(n);
        let mut chunk_entities = Vec::with_capacity(n);
        for &s in &ch.entity {
            last_entity = unstep(last_entity, s, "chunk entity")?;
            chunk_entities.push(last_entity);
        }
        let counts = chunk_counts(chunk_entities.iter().copied(), entities.len());
        let mut previous: Option<(u32, u16)> = None;
        for (i, &entity) in chunk_entities.iter().enumerate() {
            let e = entities
                .get(entity as usize)
                .ok_or_else(|| CoreError::malformed(format!("chunk {i} names entity {entity}")))?;
            owners.push(entity as usize);
            let file = e.file.and_then(|f| files.get(f as usize));
            let (part, parts) = predict_parts(previous, entity, &counts);
            let (part, parts) = (
                ch.part[i].wrapping_add(part),
                ch.parts[i].wrapping_add(parts),
            );
            previous = Some((entity, part));
            let p = predict_chunk(&files, e, part, parts);
            let scope = match (ch.scope[i], file) {
                (Some(s), _) => s,
                (None, Some(f)) => f.scope,
                (None, None) => {
                    return Err(CoreError::malformed(format!("chunk {i} has no scope")))
                }
            };
            chunks.push(Chunk {
                id: i as u32,
                entity,
                part,
                parts,
                path: ch.path.get(i, &p.path, budget)?,
                file_name: String::new(),
                base_name: ch.base_name.get(i, &p.base_name, budget)?,
                source_type: ch.source_type[i].unwrap_or_else(|| file.map(|f| f.source_type)),
                scope,
                language: ch.language[i].unwrap_or_else(|| file.map(|f| f.language)),
                entity_type: ch.entity_type[i].unwrap_or(e.kind),
                chunk_type: ch.chunk_type.get(i, &p.chunk_type, budget)?,
                symbol_name: ch.symbol_name.get(i, &p.symbol_name, budget)?,
                parent_symbol: ch.parent_symbol.get(i, &e.parent_symbol, budget)?,
                class_name: None,
                return_type: None,
                parameters: String::new(),
                leading_comment: None,
                code: String::new(),
                frame: CodeFrame::default(),
                // Lines travel in the chunk's text shard.
                start_line: 0,
                end_line: 0,
                module: String::new(),
                section_path: None,
            });
        }
        let decoded = ch.class_name.decode(
            owners.iter().map(|&e| entities[e].class_name.as_deref()),
            budget,
        )?;
        for (c, name) in chunks.iter_mut().zip(decoded) {
            c.class_name = name;
        }

        let edges = self.edges.unpack(&entities)?;

        let blanked: Vec<bool> = owners
            .iter()
            .map(|&e| names_load_apart(&entities[e]))
            .collect();
        let flags = self.features.flags.unpack(&blanked, "feature flags")?;
        let chunks_features = flags
            .into_iter()
            .map(|f| {
                // Neither the token estimate (only native reports read it)
                // nor the qualified names (their own shard) ride here.
                let mut c = ChunkFeatures::default();
                c.set_bits(f);
                c
            })
            .collect();

        Ok(Decoded {
            files,
            entities,
            chunks,
            edges,
            edges_implied: self.edges.implied(),
            features: TextFeatures::without_qualified(chunks_features),
        })
    }
}

/// Every column of a table has the table's `n` rows.
fn same_len(lengths: &[usize], n: usize, what: &str) -> Result<(), CoreError> {
    if lengths.iter().any(|&l| l != n) {
        return Err(CoreError::malformed(format!(
            "the {what} columns differ in length"
        )));
    }
    Ok(())
}

// How the browser reads these types without serde (`crate::wire`).
crate::wire::wire_struct!(FileColumns {
    path,
    language,
    source_type,
    scope,
    module
});
crate::wire::wire_struct!(EntityColumns {
    kind_parent,
    name,
    qualified_name,
    chain_parent,
    parent_symbol,
    class_name,
    file,
    is_definition,
    module,
    gloss_source
});
crate::wire::wire_struct!(ChunkColumns {
    entity,
    part,
    parts,
    path,
    base_name,
    source_type,
    scope,
    language,
    entity_type,
    chunk_type,
    symbol_name,
    parent_symbol,
    class_name
});
crate::wire::wire_struct!(FeatureColumns { flags });
crate::wire::wire_struct!(Tables {
    files,
    entities,
    chunks,
    edges,
    features
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::columns::zigzag;

    #[test]
    fn diff_columns_round_trip_any_strings() {
        let mut c = DiffColumn::default();
        let rows = [
            ("", ""),
            ("abc", "abc"),
            ("abc", "abd"),
            ("ippl::Field", "ippl::FieldLayout"),
            ("x", ""),
            ("", "ünïcode"),
            ("ünïcode", "ünï"),
            ("ä", "å"),
        ];
        for (p, v) in rows {
            c.push(p, v);
        }
        for (i, (p, v)) in rows.iter().enumerate() {
            assert_eq!(c.get(i, p, &Budget::new(0)).unwrap(), *v);
        }
        assert_eq!(c.cut[1], 0);
        assert!(c.append[1].is_empty());
        // A bad cut is an error, not a panic.
        let budget = &Budget::new(0);
        assert!(c.get(0, "", budget).is_ok());
        assert!(c.get(99, "", budget).is_err());
        let bad = DiffColumn {
            cut: vec![5, 1],
            append: vec![String::new(), String::new()],
        };
        assert!(bad.get(0, "ab", budget).is_err());
        assert!(bad.get(1, "ä", budget).is_err());
    }

    #[test]
    fn optional_columns_round_trip() {
        let mut c = OptDiffColumn::default();
        let rows = [
            (None, None),
            (Some("a"), Some("a")),
            (Some("a"), None),
            (None, Some("b")),
            (Some("abc"), Some("abd")),
        ];
        for (p, v) in rows {
            c.push(p, v);
        }
        let got = c
            .decode(rows.iter().map(|(p, _)| *p), &Budget::new(0))
            .unwrap();
        let want: Vec<Option<String>> = rows.iter().map(|(_, v)| v.map(str::to_string)).collect();
        assert_eq!(got, want);
        assert_eq!(c.tag, vec![0, 0, 1, 2, 2]);
    }

    #[test]
    fn steps_round_trip_both_ways() {
        for (a, b) in [(0u32, 0u32), (5, 3), (3, 5), (0, u32::MAX), (u32::MAX, 0)] {
            assert_eq!(unstep(a, step(a, b), "x").unwrap(), b);
            assert_eq!(unopt_step(a, opt_step(a, Some(b)), "x").unwrap(), Some(b));
        }
        assert_eq!(unopt_step(7, opt_step(7, None), "x").unwrap(), None);
        assert!(unstep(0, zigzag(-1), "x").is_err());
    }

    #[test]
    fn qualified_names_predicted_from_parents_cannot_grow_past_the_budget() {
        // Each entity the child of the one before, named "ab": the predicted
        // qualified names grow by four bytes a row, quadratic in all
        // (3 Ki rows, 15 KB of columns: 60 MB of names, times three columns).
        let n: u32 = 3 << 10;
        let mut t = Tables::default();
        let en = &mut t.entities;
        for _ in 0..n {
            en.name.push("", "ab");
            en.qualified_name.push("", "");
            en.parent_symbol.push("", "");
            en.class_name.tag.push(0);
            en.file.push(0);
            en.module.push("", "");
            en.gloss_source.push(GlossSource::Structural);
        }
        en.is_definition = SplitColumn::pack((0..n).map(|_| (false, 1)));
        let chain: Vec<Option<u32>> = (0..n).map(|i| i.checked_sub(1)).collect();
        let classes = vec![EntityKind::Class; n as usize];
        t.entities.kind_parent = KindsAndParents::pack(&classes, &chain);
        let err = t.unpack().unwrap_err();
        assert!(err.to_string().contains("decode to more than"), "{err}");
        // A shallow tree of the same size decodes.
        t.entities.kind_parent = KindsAndParents::pack(&classes, &vec![None; n as usize]);
        assert_eq!(t.unpack().unwrap().entities.len(), n as usize);
    }

    #[test]
    fn predicted_entity_names_round_trip_whether_the_prediction_holds_or_not() {
        let file = SourceFile {
            module: "src/grid".into(),
            ..crate::model::fixtures::header(0, "src/grid/Halo.hpp")
        };
        let rows = [
            (EntityKind::File, "Halo.hpp", None),
            (EntityKind::Class, "Halo", Some(0)),
            (EntityKind::Constructor, "Halo", Some(1)),
            (EntityKind::Destructor, "~Halo", Some(1)),
            (EntityKind::Method, "exchange", Some(1)),
            (EntityKind::CallChain, "exchange", Some(4)),
            // Predictions that miss: a constructor defined out of its class,
            // a file entity under another name, a call chain renamed.
            (EntityKind::Constructor, "Other", Some(0)),
            (EntityKind::File, "renamed.hpp", None),
            (EntityKind::CallChain, "élan", Some(4)),
            (EntityKind::Destructor, "~Halo", None),
        ];
        let mut entities: Vec<Entity> = Vec::new();
        for (i, (kind, name, parent)) in rows.into_iter().enumerate() {
            let qualified = match parent.map(|p: u32| &entities[p as usize]) {
                Some(p) if kind == EntityKind::CallChain => {
                    format!("{} (call chain)", p.qualified_name)
                }
                Some(p) => format!("{}::{name}", p.qualified_name),
                None => name.to_string(),
            };
            let mut e = Entity::new(i as u32, kind, name.into(), qualified);
            e.parent = parent;
            e.parent_symbol =
                parent.map_or_else(String::new, |p| entities[p as usize].qualified_name.clone());
            // Only a file's entity has a file here: the search shard
            // predicts the others' names blank where they have one (their
            // names load apart).
            e.file = (kind == EntityKind::File).then_some(0);
            e.module = "src/grid".into();
            entities.push(e);
        }
        let features = TextFeatures::without_qualified(Vec::new());
        let t = Tables::pack(
            std::slice::from_ref(&file),
            &entities,
            &[],
            EdgeColumns::default(),
            &features,
        )
        .unwrap();
        // The names that hold their prediction cost nothing but a zero cut.
        let appended: Vec<&str> = t.entities.name.append.iter().map(String::as_str).collect();
        assert_eq!(appended[..6], ["", "Halo", "", "", "exchange", ""]);
        let back = t.unpack().unwrap().entities;
        for (a, b) in entities.iter().zip(&back) {
            assert_eq!(
                (a.kind, &a.name, &a.qualified_name, a.parent),
                (b.kind, &b.name, &b.qualified_name, b.parent)
            );
        }
        assert_eq!(back.len(), entities.len());
    }

    #[test]
    fn part_numbers_round_trip_whether_the_prediction_holds_or_not() {
        let file = crate::model::fixtures::header(0, "src/a.hpp");
        let mut f = Entity::new(0, EntityKind::File, "a.hpp".into(), "a.hpp".into());
        f.file = Some(0);
        let entities: Vec<Entity> = std::iter::once(f)
            .chain((1..4).map(|i| {
                let mut e = Entity::new(i, EntityKind::Function, String::new(), String::new());
                e.file = Some(0);
                e.parent = Some(0);
                e
            }))
            .collect();
        // (entity, part, parts): a file, a function in three parts, one
        // whole, and one whose numbers break the prediction.
        let rows = [
            (0, 1, 1),
            (1, 1, 3),
            (1, 2, 3),
            (1, 3, 3),
            (2, 1, 1),
            (3, 0, 7),
            (3, 5, 2),
        ];
        let chunks: Vec<Chunk> = rows
            .iter()
            .enumerate()
            .map(|(i, &(entity, part, parts))| Chunk {
                id: i as u32,
                entity,
                part,
                parts,
                entity_type: entities[entity as usize].kind,
                ..crate::model::fixtures::chunk("", 0, CodeFrame::default())
            })
            .collect();
        let features = TextFeatures::without_qualified(vec![ChunkFeatures::default(); rows.len()]);
        let t = Tables::pack(
            std::slice::from_ref(&file),
            &entities,
            &chunks,
            EdgeColumns::default(),
            &features,
        )
        .unwrap();
        // Held predictions cost a zero.
        assert_eq!(t.chunks.part[..5], [0; 5]);
        assert_eq!(t.chunks.parts[..5], [0; 5]);
        let back = t.unpack().unwrap().chunks;
        let got: Vec<(u32, u16, u16)> = back.iter().map(|c| (c.entity, c.part, c.parts)).collect();
        assert_eq!(got, rows);
    }
}
