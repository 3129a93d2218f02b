//! The one way retrieval and the answer context read names: an entity's
//! name, qualified name, parent symbol and class, a chunk's symbol, parent
//! symbol and class, and the lookups keyed by name (symbols, chunk
//! symbols, the callable vocabulary, acronyms).
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

use crate::lexical::Wanted;
use crate::model::{Chunk, Entity, EntityKind};

use super::corpus::Corpus;

/// Names that load per range of files: each range's first file, which
/// ranges are loaded, and which ones reads lacked. An entity without a
/// file (a module) always has its names.
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

    /// The range holding `file`.
    pub fn range_of(&self, file: u32) -> Option<usize> {
        self.starts.partition_point(|&s| s <= file).checked_sub(1)
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
            ranges.note(file);
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

    /// Whether the lookups keyed by `key` (lower case) are here; where they
    /// arrive with the vocabulary's runs, the run is recorded when not.
    fn holds(&self, key: &str) -> bool {
        !self.lookups_in_runs || self.lexical.holds_run_of(key)
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
    /// case).
    pub fn is_acronym(&self, a: &str) -> bool {
        self.holds(a) && self.acronyms.contains(a)
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
