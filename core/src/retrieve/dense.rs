//! The question's vector during one retrieval: its dense candidates and
//! its distance to any chunk. It exists so that every stage asks one place
//! how far a chunk is, whichever search the settings choose: exact or HNSW
//! over every vector (`ivf_probe = 0`), or the inverted-file partitions
//! nearest to the question (`ivf_probe > 0`).
//!
//! Under `ivf_probe`, the chunks of the probed partitions are ranked by
//! their product codes ([`crate::pq`]); the `ivf_refine` nearest of them
//! get their exact distance from their int8 vectors, the other probed
//! chunks keep the codes' estimate, and a chunk outside the probed
//! partitions gets the directory's estimate (see [`crate::ivf`]). Every
//! exact distance it gives carries the chunk's hubness correction
//! ([`crate::hubness`], `[retrieval] hubness_weight`); estimates do not.
//! Which chunks are refined depends only on the probe and the codes, never
//! on what else happens to be loaded, so the browser, which loads only
//! what a question needs, ranks exactly as the CLI, which holds everything.

use std::collections::{BTreeMap, BTreeSet};

use super::{Corpus, RetrievalSettings};
use crate::error::CoreError;
use crate::ivf::Probe;

/// Over every vector, the dense candidates are the `k` nearest by
/// corrected distance among this many times `k` nearest by raw distance
/// (the correction moves a chunk by at most a few tenths, so a chunk
/// further out rarely enters).
const HUBNESS_OVERSAMPLE: usize = 4;

/// A query vector bound to a corpus and its search settings.
pub(super) struct Dense<'a> {
    corpus: &'a Corpus,
    vector: Option<&'a [f32]>,
    probe: Option<Probe>,
    exact_below: usize,
    /// Under a probe: every chunk of the loaded probed partitions, with
    /// its distance estimated from its code.
    coded: BTreeMap<u32, f32>,
    /// Under a probe: the chunks refined with their exact distance.
    refined: BTreeSet<u32>,
    /// The hubness correction: every chunk's radius, the corpus mean and
    /// the weight (none when the weight is 0 or there are no partitions).
    hubness: Option<(&'a [u8], f32, f32)>,
}

impl<'a> Dense<'a> {
    /// Bind `vector` (none: keyword and structural retrieval only). With
    /// `ivf_probe > 0` and partitioned vectors, probe the nearest
    /// partitions and choose the chunks to refine now (the corpus records
    /// the partitions and refine blocks it lacks).
    pub(super) fn new(
        corpus: &'a Corpus,
        vector: Option<&'a [f32]>,
        settings: &RetrievalSettings,
    ) -> Result<Self, CoreError> {
        let probe = match vector {
            Some(q) => corpus.probe(q, settings.ivf_probe)?,
            None => None,
        };
        let mut coded = BTreeMap::new();
        let mut refined = BTreeSet::new();
        if let (Some(q), Some(probe), Some(pv)) = (vector, &probe, &corpus.partitioned) {
            let codes = pv.codes(&corpus.chunk_vectors);
            let table = codes.table(q);
            for &p in &probe.partitions {
                if !pv.partitions_loaded[p as usize] {
                    continue;
                }
                let cd = probe.centroid_distance(p).unwrap_or(f32::INFINITY);
                for &c in &pv.members[p as usize] {
                    coded.insert(c, codes.distance(&table, cd, c as usize));
                }
            }
            let mut order: Vec<(u32, f32)> = coded.iter().map(|(&c, &d)| (c, d)).collect();
            crate::sort::sort_long_by(&mut order, |a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            for &(c, _) in order.iter().take(settings.ivf_refine) {
                refined.insert(c);
                if corpus
                    .chunk_vectors
                    .get(c as usize)
                    .is_none_or(Vec::is_empty)
                {
                    pv.want_block_of(c);
                }
            }
        }
        let hubness = corpus
            .partitioned
            .as_ref()
            .filter(|_| settings.hubness_weight != 0.0)
            .map(|pv| {
                (
                    pv.ivf.radius.as_slice(),
                    pv.mean_radius,
                    settings.hubness_weight,
                )
            });
        Ok(Dense {
            corpus,
            vector,
            probe,
            exact_below: settings.exact_search_below,
            coded,
            refined,
            hubness,
        })
    }

    /// The query vector.
    pub(super) fn vector(&self) -> Option<&'a [f32]> {
        self.vector
    }

    /// A chunk's stored vector, when loaded (under a probe: only for a
    /// refined chunk).
    pub(super) fn stored(&self, chunk: u32) -> Option<&'a [f32]> {
        if self.probe.is_some() && !self.refined.contains(&chunk) {
            return None;
        }
        self.corpus
            .chunk_vectors
            .get(chunk as usize)
            .map(Vec::as_slice)
            .filter(|v| !v.is_empty())
    }

    /// Squared L2 distance from the query to a chunk: exact, with the
    /// chunk's hubness correction ([`crate::hubness`]), or under a probe,
    /// exact and corrected for a refined chunk, from its code for another
    /// probed one, and the directory's estimate elsewhere. An estimate is
    /// left uncorrected: its error is of the correction's size, and on the
    /// first benchmark codebase correcting the estimates too lowered the
    /// reworded questions' recall and MRR under `ivf_probe = 24`.
    pub(super) fn distance(&self, chunk: u32) -> Option<f32> {
        let q = self.vector?;
        if let (Some(probe), Some(pv)) = (&self.probe, &self.corpus.partitioned) {
            let p = *pv.ivf.partition_of.get(chunk as usize)?;
            if !probe.contains(p) {
                return pv.ivf.estimate(probe, chunk);
            }
            if !self.refined.contains(&chunk) {
                return self.coded.get(&chunk).copied();
            }
        }
        self.corpus
            .distance(Some(q), chunk)
            .map(|d| self.corrected(chunk, d))
    }

    /// A raw squared distance of `chunk` with its hubness correction.
    fn corrected(&self, chunk: u32, distance: f32) -> f32 {
        match self.hubness {
            Some((radius, mean, weight)) => radius.get(chunk as usize).map_or(distance, |&r| {
                distance + crate::hubness::correction(r, mean, weight)
            }),
            None => distance,
        }
    }

    /// The `k` nearest chunks `(chunk, corrected squared distance)`,
    /// nearest first, ties by chunk id: over the probed partitions, or
    /// among the [`HUBNESS_OVERSAMPLE`] × `k` nearest by raw distance over
    /// every vector.
    pub(super) fn search(&self, k: usize) -> Result<Vec<(u32, f32)>, CoreError> {
        let Some(q) = self.vector else {
            return Ok(Vec::new());
        };
        if self.probe.is_some() {
            let mut hits: Vec<(u32, f32)> = self
                .coded
                .keys()
                .filter_map(|&c| Some((c, self.distance(c)?)))
                .collect();
            crate::sort::sort_long_by(&mut hits, |a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            hits.truncate(k);
            return Ok(hits);
        }
        let wide = if self.hubness.is_some() {
            k.saturating_mul(HUBNESS_OVERSAMPLE)
        } else {
            k
        };
        let found = match (&self.corpus.vectors, &self.corpus.stored_vectors) {
            (Some(v), _) => v.search(q, wide, self.exact_below)?,
            (None, Some(v)) => v.search(q, wide, self.exact_below)?,
            (None, None) => return Ok(Vec::new()),
        };
        let mut hits: Vec<(u32, f32)> = found
            .into_iter()
            .map(|h| (h.chunk, self.corrected(h.chunk, h.distance)))
            .collect();
        crate::sort::sort_long_by(&mut hits, |a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        hits.truncate(k);
        Ok(hits)
    }
}

/// The dense search of one query alone, and what it read: how
/// `codegloss partitions` measures recall and bytes per question.
#[derive(Clone, Debug, PartialEq)]
pub struct SemanticSearch {
    /// The nearest chunks `(chunk, squared distance)`, nearest first.
    pub hits: Vec<(u32, f32)>,
    /// The partitions probed (none without a probe).
    pub partitions: Vec<u16>,
    /// The refine blocks of the refined chunks, ascending.
    pub blocks: Vec<u32>,
}

/// Search `query`'s `k` nearest chunks as retrieval's dense stage does.
pub fn semantic_search(
    corpus: &Corpus,
    query: &[f32],
    settings: &RetrievalSettings,
    k: usize,
) -> Result<SemanticSearch, CoreError> {
    let dense = Dense::new(corpus, Some(query), settings)?;
    let hits = dense.search(k)?;
    let blocks: BTreeSet<u32> = match &corpus.partitioned {
        Some(pv) => dense
            .refined
            .iter()
            .filter_map(|&c| pv.block_of(c))
            .collect(),
        None => BTreeSet::new(),
    };
    Ok(SemanticSearch {
        hits,
        partitions: dense.probe.map(|p| p.partitions).unwrap_or_default(),
        blocks: blocks.into_iter().collect(),
    })
}

/// A distance as the semantic share of a score, `1 / (1 + d)` (in
/// `(0, 1]`, a negative distance counted as 0): the reranker's score
/// fusion and the file evidence read distances the same way.
pub(super) fn semantic_share(distance: f32) -> f32 {
    1.0 / (1.0 + distance.max(0.0))
}
