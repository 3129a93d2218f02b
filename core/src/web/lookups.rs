//! The lookups by name in the web layout: which entities a symbol name
//! names, which chunks a lower-case symbol name names, the stemmed parts
//! of callable names, and the acronyms.
//!
//! Apart from `names.rs` (the name shards) because they travel elsewhere:
//! each key in the postings shard of the vocabulary run that holds it, so
//! that a question's lookups mostly fall in runs its own terms fetch, and
//! in the search shard what every question may ask whatever its terms
//! (the acronyms, which a question tries as the initials of every run of
//! its words, and the keys that are stopwords). Measured by `cargo xtask
//! bench site` on Kokkos (16 questions): with the acronyms and stopwords in
//! runs too, the first question fetched 24 postings shards (103 KB)
//! instead of 13 (62 KB).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::columns::{step, unstep, Budget, DiffColumn};
use super::WebIndex;
use crate::error::CoreError;
use crate::retrieve::names::NameLookups;

/// What the lookups hold for one key (lower case).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct KeyEntry {
    /// Symbol names whose lower case is the key, with their entities.
    variants: Vec<(String, Vec<u32>)>,
    /// Chunks whose symbol name, lower case, is the key.
    chunks: Vec<u32>,
    /// A stemmed part of a callable's name.
    callable: bool,
}

/// Every key of `lookups` but the acronyms (which travel whole, in the
/// search shard), sorted.
pub(super) fn key_entries(lookups: NameLookups) -> BTreeMap<String, KeyEntry> {
    let mut out: BTreeMap<String, KeyEntry> = BTreeMap::new();
    for (name, ids) in lookups.by_symbol {
        out.entry(name.to_lowercase())
            .or_default()
            .variants
            .push((name, ids));
    }
    for (key, chunks) in lookups.chunks_by_symbol_lower {
        out.entry(key).or_default().chunks = chunks;
    }
    for key in lookups.callable_vocabulary {
        out.entry(key).or_default().callable = true;
    }
    out
}

/// What the search shard carries of the names' lookups: the acronyms, and
/// the lookups of the keys that are stopwords.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct GlobalLookups {
    acronyms: DiffColumn,
    stopwords: RunLookups,
}

impl GlobalLookups {
    /// Take the stopword keys out of `keys`, with the acronyms.
    pub(super) fn pack(keys: &mut BTreeMap<String, KeyEntry>, acronyms: &BTreeSet<String>) -> Self {
        let words: Vec<String> = keys
            .keys()
            .filter(|k| crate::lexical::is_stopword(k))
            .cloned()
            .collect();
        let stop: BTreeMap<String, KeyEntry> = words
            .into_iter()
            .filter_map(|k| keys.remove_entry(&k))
            .collect();
        GlobalLookups {
            acronyms: DiffColumn::front_code(acronyms),
            stopwords: RunLookups::pack(&stop),
        }
    }
}

impl WebIndex {
    /// Add the search shard's lookups: the acronyms, and the stopword keys'.
    pub(super) fn add_global_lookups(&mut self, g: &GlobalLookups) -> Result<(), CoreError> {
        let acronyms = g.acronyms.front_coded(&Budget::new(g.acronyms.weight()))?;
        if acronyms.windows(2).any(|w| w[0] >= w[1]) {
            return Err(CoreError::malformed("the acronyms are not sorted"));
        }
        self.corpus.acronyms.extend(acronyms);
        let data = &self.corpus.data;
        let entries = g.stopwords.unpack(data.entities.len(), data.chunks.len())?;
        if entries.iter().any(|(k, _)| !crate::lexical::is_stopword(k)) {
            return Err(CoreError::malformed(
                "the search shard's lookups hold a key that is no stopword",
            ));
        }
        self.insert_lookups(entries);
        Ok(())
    }
}

/// The lookups of the keys of one postings run, column by column: keys
/// front-coded; per key its flags (bit 0: a callable stem),
/// how many symbol names and chunks it has; per symbol name its spelling
/// as a difference from the key and how many entities; then every entity
/// and chunk id as a gap within its list.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct RunLookups {
    keys: DiffColumn,
    flags: Vec<u8>,
    variants: Vec<u32>,
    chunk_counts: Vec<u32>,
    spellings: DiffColumn,
    entity_counts: Vec<u32>,
    entity_gaps: Vec<u64>,
    chunk_gaps: Vec<u64>,
}

/// Ids as steps from the one before (the first from 0).
fn gaps(ids: &[u32], out: &mut Vec<u64>) {
    let mut last = 0u32;
    for &id in ids {
        out.push(step(last, id));
        last = id;
    }
}

/// `count` ids back from `gaps` at `at`, each below `bound`.
fn ungaps(gaps: &[u64], at: &mut usize, count: u32, bound: usize) -> Result<Vec<u32>, CoreError> {
    let end = at
        .checked_add(count as usize)
        .filter(|&e| e <= gaps.len())
        .ok_or_else(|| CoreError::malformed("the lookups list more ids than they hold"))?;
    let mut last = 0u32;
    let mut out = Vec::with_capacity(count as usize);
    for &g in &gaps[*at..end] {
        last = unstep(last, g, "lookup id")?;
        if last as usize >= bound {
            return Err(CoreError::malformed(
                "a lookup names an id outside the index",
            ));
        }
        out.push(last);
    }
    *at = end;
    Ok(out)
}

impl RunLookups {
    /// Pack these keys (sorted) with their entries.
    pub(super) fn pack<'a>(entries: impl IntoIterator<Item = (&'a String, &'a KeyEntry)>) -> Self {
        let mut l = RunLookups::default();
        let mut keys = Vec::new();
        for (key, e) in entries {
            keys.push(key.clone());
            l.flags.push(u8::from(e.callable));
            l.variants.push(e.variants.len() as u32);
            l.chunk_counts.push(e.chunks.len() as u32);
            for (name, ids) in &e.variants {
                l.spellings.push(key, name);
                l.entity_counts.push(ids.len() as u32);
                gaps(ids, &mut l.entity_gaps);
            }
            gaps(&e.chunks, &mut l.chunk_gaps);
        }
        l.keys = DiffColumn::front_code(&keys);
        l
    }

    /// The keys and their entries back, each id checked against the
    /// index's `entities` and `chunks`.
    pub(super) fn unpack(
        &self,
        entities: usize,
        chunks: usize,
    ) -> Result<Vec<(String, KeyEntry)>, CoreError> {
        let budget = &Budget::new(self.keys.weight() + self.spellings.weight());
        let keys = self.keys.front_coded(budget)?;
        let n = keys.len();
        if self.flags.len() != n || self.variants.len() != n || self.chunk_counts.len() != n {
            return Err(CoreError::malformed("the lookup columns differ in length"));
        }
        let (mut v, mut at_e, mut at_c) = (0usize, 0usize, 0usize);
        let mut out = Vec::with_capacity(n);
        for (i, key) in keys.into_iter().enumerate() {
            let mut entry = KeyEntry {
                callable: self.flags[i] & 1 != 0,
                ..KeyEntry::default()
            };
            for _ in 0..self.variants[i] {
                let count = *self
                    .entity_counts
                    .get(v)
                    .ok_or_else(|| CoreError::malformed("fewer symbol names than listed"))?;
                let name = self.spellings.get(v, &key, budget)?;
                v += 1;
                let ids = ungaps(&self.entity_gaps, &mut at_e, count, entities)?;
                entry.variants.push((name, ids));
            }
            entry.chunks = ungaps(&self.chunk_gaps, &mut at_c, self.chunk_counts[i], chunks)?;
            out.push((key, entry));
        }
        if v != self.entity_counts.len()
            || v != self.spellings.len()
            || at_e != self.entity_gaps.len()
            || at_c != self.chunk_gaps.len()
        {
            return Err(CoreError::malformed("the lookups hold more than they list"));
        }
        Ok(out)
    }
}

impl WebIndex {
    /// Add the lookups of a postings run whose first term id is `first`:
    /// every key must lie in that run.
    pub(super) fn add_lookups(
        &mut self,
        first: u32,
        lookups: &RunLookups,
    ) -> Result<(), CoreError> {
        let data = &self.corpus.data;
        let entries = lookups.unpack(data.entities.len(), data.chunks.len())?;
        if entries.iter().any(|(k, _)| {
            crate::lexical::is_stopword(k) || self.corpus.lexical.run_start(k).unwrap_or(0) != first
        }) {
            return Err(CoreError::malformed("a lookup key lies outside its run"));
        }
        self.insert_lookups(entries);
        Ok(())
    }

    /// Put lookups into the corpus.
    fn insert_lookups(&mut self, entries: Vec<(String, KeyEntry)>) {
        let c = &mut self.corpus;
        for (key, e) in entries {
            let mut lower: Vec<u32> = Vec::new();
            for (name, ids) in e.variants {
                lower.extend(&ids);
                c.by_symbol.insert(name, ids);
            }
            if !lower.is_empty() {
                crate::sort::sort_values(&mut lower);
                c.by_symbol_lower.insert(key.clone(), lower);
            }
            if !e.chunks.is_empty() {
                c.chunks_by_symbol_lower.insert(key.clone(), e.chunks);
            }
            if e.callable {
                c.callable_vocabulary.insert(key);
            }
        }
    }
}

// How the browser reads these types without serde (`crate::wire`).
crate::wire::wire_struct!(GlobalLookups {
    acronyms,
    stopwords
});
crate::wire::wire_struct!(RunLookups {
    keys,
    flags,
    variants,
    chunk_counts,
    spellings,
    entity_counts,
    entity_gaps,
    chunk_gaps
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_come_back_and_refuse_damage() {
        let mut lookups = NameLookups::default();
        lookups.by_symbol.insert("Grid".into(), vec![3, 4]);
        lookups.by_symbol.insert("grid".into(), vec![9]);
        lookups.by_symbol.insert("fillHalo".into(), vec![5]);
        lookups
            .chunks_by_symbol_lower
            .insert("fillhalo".into(), vec![5, 8]);
        lookups.callable_vocabulary.insert("fill".into());
        lookups.acronyms.insert("fft".into());
        lookups.by_symbol.insert("The".into(), vec![7]);
        let mut keys = key_entries(lookups.clone());
        assert_eq!(
            keys.keys().map(String::as_str).collect::<Vec<_>>(),
            ["fill", "fillhalo", "grid", "the"]
        );
        // The search shard takes the stopwords' keys, with the acronyms.
        let global = GlobalLookups::pack(&mut keys, &lookups.acronyms);
        assert_eq!(global.stopwords.unpack(10, 10).unwrap().len(), 1);
        assert!(!keys.contains_key("the"));
        assert_eq!(keys["grid"].variants.len(), 2);
        let packed = RunLookups::pack(&keys);
        let back: BTreeMap<String, KeyEntry> = packed.unpack(10, 10).unwrap().into_iter().collect();
        assert_eq!(back, keys);
        // An id outside the index, counts that disagree.
        assert!(packed.unpack(9, 10).is_err());
        assert!(packed.unpack(10, 8).is_err());
        let mut short = packed.clone();
        short.entity_counts.pop();
        assert!(short.unpack(10, 10).is_err());
        let mut long = packed.clone();
        long.chunk_gaps.push(0);
        assert!(long.unpack(10, 10).is_err());
        let mut flags = packed;
        flags.flags.pop();
        assert!(flags.unpack(10, 10).is_err());
    }
}
