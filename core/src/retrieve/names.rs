//! The one way retrieval and the answer context read names: an entity's
//! name, qualified name, parent symbol and class, a chunk's symbol, parent
//! symbol and class, and the lookups keyed by name (symbols, chunk
//! symbols, the callable vocabulary, acronyms); and what loads with the
//! names because only candidates' are read: whether an entity is a
//! definition, a chunk's text facts ([`Corpus::facts_of`]).
//!
//! It exists because names are most of what a browser downloads before its
//! first result, while a question reads the names of about twenty
//! candidates and looks up a few dozen keys. Natively everything is here
//! and these accessors only read. In a corpus whose names arrive per query
//! (by range of files for rows, with the vocabulary's runs for lookups),
//! a read of what is not loaded yet returns it blank or absent and records
//! what was lacking, as the keyword index and the graph do for postings
//! and edges: the caller fetches it and retrieves again, until a retrieval
//! lacked nothing and so ranked exactly as natively.

use std::collections::{BTreeMap, BTreeSet};

use crate::format::IndexData;
use crate::lexical::{identifier_parts, is_stopword, stem, Wanted};
use crate::model::{Chunk, Entity, EntityKind};

use super::corpus::Corpus;

/// The lookups keyed by name, built from every name of an index (the
/// browser receives them with the vocabulary's runs instead, each key in
/// the run that holds it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NameLookups {
    /// Symbol name (before any `<`) → entity ids (code symbols only: no
    /// file, module, call chain or documentation section).
    pub by_symbol: BTreeMap<String, Vec<u32>>,
    /// Lower-case symbol name → entity ids.
    pub by_symbol_lower: BTreeMap<String, Vec<u32>>,
    /// Lower-case chunk symbol name → chunk ids.
    pub chunks_by_symbol_lower: BTreeMap<String, Vec<u32>>,
    /// Stemmed parts (3 letters or more) of callable names.
    pub callable_vocabulary: BTreeSet<String>,
    /// Acronyms the names and file names are written with, lower case.
    pub acronyms: BTreeSet<String>,
}

impl NameLookups {
    /// The lookups of `data`'s names, ids in increasing order.
    pub fn build(data: &IndexData) -> Self {
        let mut l = NameLookups::default();
        for e in &data.entities {
            if matches!(
                e.kind,
                EntityKind::File
                    | EntityKind::Module
                    | EntityKind::CallChain
                    | EntityKind::DocSection
            ) {
                continue;
            }
            let base = e
                .name
                .split('<')
                .next()
                .unwrap_or(&e.name)
                .trim()
                .to_string();
            l.by_symbol_lower
                .entry(base.to_lowercase())
                .or_default()
                .push(e.id);
            if e.kind.is_callable() {
                for p in identifier_parts(&base) {
                    if p.len() >= 3 {
                        l.callable_vocabulary.insert(stem(&p));
                    }
                }
            }
            l.by_symbol.entry(base).or_default().push(e.id);
        }
        for c in &data.chunks {
            l.chunks_by_symbol_lower
                .entry(c.symbol_name.to_lowercase())
                .or_default()
                .push(c.id);
        }
        for name in l.by_symbol.keys().map(String::as_str).chain(
            data.files
                .iter()
                .map(|f| f.path.rsplit('/').next().unwrap_or(&f.path)),
        ) {
            let base = name.split('.').next().unwrap_or(name);
            l.acronyms.extend(acronyms_of(base));
        }
        l
    }
}

/// The all-capital parts (3 to 6 letters) of an identifier, lower case.
fn acronyms_of(name: &str) -> Vec<String> {
    identifier_parts(name)
        .into_iter()
        .filter(|p| (3..=6).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_alphabetic()))
        .filter(|p| name.contains(&p.to_ascii_uppercase()))
        .collect()
}

/// Whether an entity's names (and its chunks') load per range of files
/// where names load apart: every entity with a file except the file's own
/// entity, whose names its file predicts.
pub fn names_load_apart(e: &Entity) -> bool {
    kind_loads_apart(e.kind, e.file)
}

/// [`names_load_apart`] for an entity of `kind` in `file`.
pub(crate) fn kind_loads_apart(kind: EntityKind, file: Option<u32>) -> bool {
    file.is_some() && kind != EntityKind::File
}

/// Names that load per range of files: each range's first file, which
/// ranges are loaded, and which ones reads lacked. An entity without a
/// file (a module) or a file's own entity always has its names.
#[derive(Clone, Debug, Default)]
pub struct NameRanges {
    /// First file of each range, increasing from 0.
    starts: Vec<u32>,
    loaded: Vec<bool>,
    /// Ranges a read needed since the last [`NameRanges::take_wanted`].
    wanted: Wanted,
}

impl NameRanges {
    /// Ranges starting at these files (increasing from 0; the caller
    /// checks), none loaded.
    pub fn new(starts: Vec<u32>) -> Self {
        NameRanges {
            loaded: vec![false; starts.len()],
            starts,
            wanted: Wanted::default(),
        }
    }

    /// How many ranges there are.
    pub fn count(&self) -> usize {
        self.starts.len()
    }

    /// The range holding `file`.
    pub fn range_of(&self, file: u32) -> Option<usize> {
        self.starts.partition_point(|&s| s <= file).checked_sub(1)
    }

    /// Whether range `range` is loaded.
    pub fn is_loaded(&self, range: usize) -> bool {
        self.loaded.get(range).copied().unwrap_or(false)
    }

    /// Mark range `range` loaded.
    pub fn set_loaded(&mut self, range: usize) {
        if let Some(l) = self.loaded.get_mut(range) {
            *l = true;
        }
    }

    /// Whether the names of `file`'s entities are here; if not, its range
    /// is recorded as wanted.
    fn note(&self, file: u32) -> bool {
        match self.range_of(file) {
            Some(r) if !self.loaded[r] => {
                self.wanted.lock().insert(r);
                false
            }
            _ => true,
        }
    }

    /// What reads lacked since the last call: the ranges, in order.
    pub fn take_wanted(&self) -> Vec<usize> {
        std::mem::take(&mut *self.wanted.lock())
            .into_iter()
            .collect()
    }
}

impl Corpus {
    /// Entity `id` (which must exist), to read its names: where names load
    /// per range, its range is recorded when it is not here, and the names
    /// read blank until it is.
    pub fn named(&self, id: u32) -> &Entity {
        let e = &self.data.entities[id as usize];
        if let (Some(ranges), Some(file)) = (&self.name_ranges, e.file) {
            if names_load_apart(e) {
                ranges.note(file);
            }
        }
        e
    }

    /// Chunk `id` (which must exist), to read its names: as
    /// [`Corpus::named`] for its entity.
    pub fn named_chunk(&self, id: u32) -> &Chunk {
        let c = &self.data.chunks[id as usize];
        self.named(c.entity);
        c
    }

    /// The text facts of chunk `id` (which must exist) that ranking reads,
    /// [`crate::retrieve::features::TextFeatures::of`]: they load with its
    /// names, so where names load per range its range is recorded when it
    /// is not here, and they read as defaults until it is.
    pub fn facts_of(&self, id: u32) -> crate::retrieve::features::ChunkFeatures {
        self.named_chunk(id);
        self.features.of(id)
    }

    /// The fine [`crate::lexical::length_code`] of chunk `id`'s keyword
    /// length (which must exist): its coarse code with the
    /// [`crate::lexical::length_step`] that loads with its names, so where
    /// names load per range its range is recorded when it is not here, and
    /// the step reads as 0 until it is.
    pub fn length_code_of(&self, id: u32) -> u8 {
        self.named_chunk(id);
        let step = self
            .features
            .chunks
            .get(id as usize)
            .map_or(0, |f| f.length_step);
        crate::lexical::fine_code(self.lexical.coarse_code_of(id), step)
    }

    /// Whether the lookups keyed by `key` (lower case) are here; where they
    /// arrive with the vocabulary's runs, the run is recorded when not.
    /// A stopword's arrive with the search shard: every question looks
    /// its words up, and a stopword is no term whose run it fetches anyway.
    fn holds(&self, key: &str) -> bool {
        !self.lookups_in_runs || is_stopword(key) || self.lexical.holds_run_of(key)
    }

    /// The code symbols whose name (before any `<`) is `name`, by id.
    pub fn symbols(&self, name: &str) -> Option<&Vec<u32>> {
        if !self.holds(&name.to_lowercase()) {
            return None;
        }
        self.by_symbol.get(name)
    }

    /// The code symbols whose name (before any `<`), lower case, is
    /// `lower`, by id.
    pub fn symbols_lower(&self, lower: &str) -> Option<&Vec<u32>> {
        if !self.holds(lower) {
            return None;
        }
        self.by_symbol_lower.get(lower)
    }

    /// The chunks whose symbol name, lower case, is `lower`, by id.
    pub fn chunks_named(&self, lower: &str) -> &[u32] {
        if !self.holds(lower) {
            return &[];
        }
        self.chunks_by_symbol_lower
            .get(lower)
            .map_or(&[], Vec::as_slice)
    }

    /// Whether `stem` is a stemmed part of a callable's name.
    pub fn is_callable_stem(&self, stem: &str) -> bool {
        self.holds(stem) && self.callable_vocabulary.contains(stem)
    }

    /// Whether the index's names are written with the acronym `a` (lower
    /// case). The acronyms are always here (a question tries the initials
    /// of every run of its words, which no run of the vocabulary holds).
    pub fn is_acronym(&self, a: &str) -> bool {
        self.acronyms.contains(a)
    }

    /// Whether a name (any case) names a namespace of the index: such a
    /// name qualifies everything and anchors nothing.
    pub fn is_namespace(&self, name: &str) -> bool {
        self.symbols_lower(&name.to_lowercase()).is_some_and(|ids| {
            ids.iter()
                .any(|&e| self.data.entities[e as usize].kind == EntityKind::Namespace)
        })
    }

    /// What name reads lacked since the last call: the ranges of files
    /// whose names are not loaded (the lookups' runs are recorded with the
    /// keyword index's, [`crate::lexical::LexicalIndex::take_wanted`]).
    pub fn take_wanted_names(&self) -> Vec<usize> {
        self.name_ranges
            .as_ref()
            .map(NameRanges::take_wanted)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acronyms_are_capital_parts_only() {
        assert_eq!(acronyms_of("CIC"), vec!["cic"]);
        assert_eq!(acronyms_of("FFTPeriodicSolver"), vec!["fft"]);
        assert_eq!(acronyms_of("HaloCells"), Vec::<String>::new());
        assert_eq!(acronyms_of("MPI_Comm"), vec!["mpi"]);
        assert_eq!(acronyms_of("ID"), Vec::<String>::new());
    }

    #[test]
    fn ranges_record_what_reads_lacked() {
        let mut r = NameRanges::new(vec![0, 3, 7]);
        assert_eq!(r.range_of(0), Some(0));
        assert_eq!(r.range_of(6), Some(1));
        assert_eq!(r.range_of(100), Some(2));
        assert!(!r.note(4));
        assert!(!r.note(8));
        assert!(!r.note(5));
        assert_eq!(r.take_wanted(), vec![1, 2]);
        assert!(r.take_wanted().is_empty());
        r.set_loaded(1);
        assert!(r.note(4));
        assert!(r.take_wanted().is_empty());
    }
}
