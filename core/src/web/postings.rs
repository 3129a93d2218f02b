//! The keyword side of the web layout: postings shards (each a run of the
//! sorted vocabulary with its posting lists), the vocabulary's runs as the
//! search shard's directory lists them, and how a [`WebIndex`] loads them and the
//! qualified-names shard on demand.
//!
//! Apart from `mod.rs` because it is the one place that decides which
//! keyword shards a query needs and checks what arrives against the
//! manifest: a run must be the sorted run the manifest places there.

use std::collections::BTreeSet;

use serde::Serialize;

use super::shard::{decode_shard, Fetched};
use super::{columns, QualifiedShard, RunLookups, ShardKind, WebIndex, WebManifest, WEB_MANIFEST};
use crate::error::CoreError;

/// A run of the sorted vocabulary with its posting lists, column by column:
/// the terms front-coded, each list's length, then every chunk id as a gap
/// from the one before it in its list, then every weighted term frequency
/// (gaps and frequencies apart compress better than interleaved).
#[derive(Serialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct PostingsShard {
    /// First term id.
    pub first: u32,
    /// The run's terms, each as a difference from the one before.
    terms: columns::DiffColumn,
    /// Length of each list, for terms `first..`.
    pub lengths: Vec<u32>,
    /// Chunk id gaps of all lists, in order.
    pub gaps: Vec<u32>,
    /// Weighted term frequencies × 8 of all lists, in order.
    pub tfs: Vec<u16>,
    /// The lookups by name whose keys lie in the run
    /// ([`super::names`]).
    pub lookups: RunLookups,
}

impl PostingsShard {
    /// Pack terms `first..` and their lists (each sorted by chunk id),
    /// with the lookups of the keys in the run.
    pub fn pack(
        first: u32,
        terms: &[String],
        lists: &[Vec<(u32, u16)>],
        lookups: RunLookups,
    ) -> Self {
        let mut p = PostingsShard {
            first,
            terms: columns::DiffColumn::front_code(terms),
            lookups,
            ..Default::default()
        };
        for list in lists {
            p.lengths.push(list.len() as u32);
            let mut prev = 0u32;
            for &(c, tf) in list {
                p.gaps.push(c - prev);
                p.tfs.push(tf);
                prev = c;
            }
        }
        p
    }

    /// The terms back, bounded like every front-coded column
    /// ([`columns::Budget`]).
    pub fn terms(&self) -> Result<Vec<String>, CoreError> {
        self.terms
            .front_coded(&columns::Budget::new(self.terms.weight()))
    }

    /// The lists back, or `None` when the columns disagree or an id is not
    /// below `chunks`.
    pub fn unpack(&self, chunks: usize) -> Option<Vec<Vec<(u32, u16)>>> {
        if self.gaps.len() != self.tfs.len()
            || self.lengths.iter().map(|&l| u64::from(l)).sum::<u64>() != self.gaps.len() as u64
        {
            return None;
        }
        let mut at = 0usize;
        self.lengths
            .iter()
            .map(|&l| {
                let l = l as usize;
                let mut prev = 0u32;
                let list = self.gaps[at..at + l]
                    .iter()
                    .zip(&self.tfs[at..at + l])
                    .map(|(&gap, &tf)| {
                        prev = prev.checked_add(gap).filter(|&c| (c as usize) < chunks)?;
                        Some((prev, tf))
                    })
                    .collect();
                at += l;
                list
            })
            .collect()
    }
}

/// The vocabulary's runs as the reader's list holds its postings shards
/// (from the search shard's directory): each
/// run's first term and first term id. The shards must cover term ids
/// `0..` in order, with strictly increasing first terms.
pub(super) fn vocabulary_runs(manifest: &WebManifest) -> Result<Vec<(String, u32)>, CoreError> {
    let mut runs: Vec<(String, u32)> = Vec::new();
    let mut next = 0u64;
    for (_, s) in manifest.shards_of(ShardKind::Postings) {
        let bad = |what: &str| CoreError::Manifest {
            message: format!("{WEB_MANIFEST}: postings shard {} {what}", s.name),
        };
        let [a, b] = s.terms.ok_or_else(|| bad("has no term range"))?;
        let first = s
            .first_term
            .as_ref()
            .ok_or_else(|| bad("has no first term"))?;
        if u64::from(a) != next || b < a {
            return Err(bad("does not continue the term ranges before it"));
        }
        if runs.last().is_some_and(|(previous, _)| previous >= first) {
            return Err(bad("does not start after the shard before it"));
        }
        runs.push((first.clone(), a));
        next = u64::from(b) + 1;
    }
    Ok(runs)
}

impl WebIndex {
    /// Positions of the keyword shards that the last retrieval needed but
    /// that are not loaded yet: the postings shards of the terms it looked
    /// up, and the qualified-names shard when it matched a `::` name (taken:
    /// a second call returns none). [`WebIndex::missing`] tells whether a
    /// retrieval was final.
    pub fn missing_keyword_shards(&self) -> Vec<usize> {
        let wanted = self.corpus.lexical.take_wanted();
        let mut need: BTreeSet<usize> = wanted
            .into_iter()
            .filter_map(|t| self.shard_covering(ShardKind::Postings, t as u32))
            .collect();
        if self.corpus.features.take_wanted() {
            need.extend(
                self.manifest
                    .shards_of(ShardKind::Qualified)
                    .map(|(i, _)| i),
            );
        }
        need.into_iter().collect()
    }

    /// Add a shard that [`WebIndex::missing`] named (its position in the
    /// manifest's shard list): a postings shard, the qualified-names shard,
    /// a name shard or an edge shard.
    pub fn add_shard<'a>(
        &mut self,
        position: usize,
        bytes: impl Into<Fetched<'a>>,
    ) -> Result<(), CoreError> {
        let bytes = bytes.into();
        match self.manifest.shards.get(position).map(|s| s.kind) {
            Some(ShardKind::Qualified) => self.add_qualified(position, bytes),
            Some(ShardKind::Edges) => self.add_edges(position, bytes),
            Some(ShardKind::Names) => self.add_names(position, bytes),
            _ => self.add_postings(position, bytes),
        }
    }

    /// Add the qualified-names shard.
    fn add_qualified(&mut self, position: usize, bytes: Fetched<'_>) -> Result<(), CoreError> {
        let info = self.shard_at(position, ShardKind::Qualified)?;
        let q: QualifiedShard = decode_shard(&info, bytes)?;
        let (names, lists) = q.unpack().map_err(|e| e.in_file(&info.name))?;
        self.corpus
            .features
            .load_qualified(names, lists)
            .map_err(|e| e.in_file(&info.name))
    }

    /// Add a postings shard: a run of the vocabulary with its lists.
    fn add_postings(&mut self, position: usize, bytes: Fetched<'_>) -> Result<(), CoreError> {
        let info = self.shard_at(position, ShardKind::Postings)?;
        let p: PostingsShard = decode_shard(&info, bytes)?;
        let n = self.corpus.data.chunks.len();
        let bad = |message: String| CoreError::Inconsistent {
            file: info.name.clone(),
            message,
        };
        let [a, b] = info.terms.unwrap_or([u32::MAX, 0]);
        if p.first != a || (p.lengths.len() as u64) != u64::from(b.wrapping_sub(a)) + 1 {
            return Err(bad("its term range differs from the manifest's".into()));
        }
        let terms = p.terms().map_err(|e| e.in_file(&info.name))?;
        // Its terms are sorted and lie in its run: from the manifest's start
        // of the run to before the next shard's (sorted, they all do when
        // the first and the last one do).
        let in_run = |t: &String| self.corpus.lexical.run_start(t) == Some(a);
        let after_start = |t: &String| info.first_term.as_ref().is_some_and(|s| s <= t);
        if terms.len() != p.lengths.len()
            || !terms.first().is_some_and(|t| in_run(t) && after_start(t))
            || !terms.last().is_some_and(in_run)
            || terms.windows(2).any(|w| w[0] >= w[1])
        {
            return Err(bad(
                "its terms are not the sorted run the manifest places there".into(),
            ));
        }
        let lists = p.unpack(n).ok_or_else(|| {
            bad("its posting columns disagree, or name a chunk outside the index".into())
        })?;
        if self.corpus.lexical.run_loaded(a) {
            return Ok(());
        }
        self.add_lookups(a, &p.lookups)
            .map_err(|e| e.in_file(&info.name))?;
        self.corpus.lexical.load_run(a, terms, lists);
        Ok(())
    }
}

// How the browser reads these types without serde (`crate::wire`).
crate::wire::wire_struct!(PostingsShard {
    first,
    terms,
    lengths,
    gaps,
    tfs,
    lookups
});
