//! File evidence: how strongly a candidate's whole file answers the
//! question, added to the candidate's combined score by the reranker.
//!
//! A chunk is ranked by its own text, so a question asked in concepts
//! ("which component does the ghost-layer bookkeeping?") often puts an
//! incidental match (one method of a hub file that shares a word) above
//! the file whose many chunks all speak of the subject. Here every
//! candidate file is scored by the mean of its [`EVIDENCE_CHUNKS`] best
//! chunks, once by semantic share and once by BM25 share (a missing chunk
//! counts as zero, so one strong chunk is less evidence than three), each
//! scaled to `[0, 1]` over the candidate files, and weighted by
//! [`DENSE_WEIGHT`] and [`BM25_WEIGHT`]. It orders the pool only: the
//! primary gates read each chunk's own score (`select.rs`), so a weak
//! chunk of a strong file does not join the context for its file's sake.
//! A chunk without a file (a module) has none.
//!
//! It reads only what the reranker already has (the query's distance to
//! any chunk and every chunk's BM25 score), so it ranks the same natively
//! and in the browser, with or without vectors, under exact or partitioned
//! search. Measured on the first benchmark codebase (named and reworded
//! dev questions, one index), the weights lie inside a plateau where 2–4
//! for the dense part, 1–3 for the BM25 part and 2–4 chunks all raise both
//! sets; the middle of it is kept.

use std::collections::BTreeMap;

use super::dense::{semantic_share, Dense};
use super::pool::{Bm25, Candidate};
use super::{Corpus, EntityTarget, Route};

/// Chunks of a file whose scores are averaged (the file's best ones).
const EVIDENCE_CHUNKS: usize = 3;
/// Weight of the file's dense evidence, scaled to `[0, 1]`.
const DENSE_WEIGHT: f32 = 3.0;
/// Weight of the file's keyword evidence, scaled to `[0, 1]`.
const BM25_WEIGHT: f32 = 2.0;
/// Smallest spread of evidence over the candidate files that is scaled;
/// below it every file gets zero.
const MIN_SPREAD: f32 = 1e-6;

/// The weighted file evidence of every candidate, in pool order; zero
/// for all when the question asks for a module (a folder is no file, and
/// file evidence would rank files above every module).
pub(super) fn file_evidence(
    corpus: &Corpus,
    pool: &[Candidate],
    route: &Route,
    dense: &Dense<'_>,
    bm25: &Bm25,
) -> Vec<f32> {
    if route.entity_target == Some(EntityTarget::Module) {
        return vec![0.0; pool.len()];
    }
    // (dense, bm25) evidence per candidate file.
    let mut per_file: BTreeMap<u32, (f32, f32)> = BTreeMap::new();
    for f in pool.iter().filter_map(|c| corpus.file_of_chunk(c.chunk)) {
        per_file.entry(f).or_insert_with(|| {
            let chunks = corpus.chunks_of_file(f);
            let semantic = chunks
                .iter()
                .filter_map(|&c| dense.distance(c))
                .map(semantic_share);
            let keyword = chunks.iter().map(|&c| bm25.scores[c as usize] / bm25.max);
            (best_mean(semantic), best_mean(keyword))
        });
    }
    let dense_scale = Scale::over(per_file.values().map(|e| e.0));
    let bm25_scale = Scale::over(per_file.values().map(|e| e.1));
    pool.iter()
        .map(|c| {
            corpus
                .file_of_chunk(c.chunk)
                .and_then(|f| per_file.get(&f))
                .map_or(0.0, |&(d, b)| {
                    DENSE_WEIGHT * dense_scale.of(d) + BM25_WEIGHT * bm25_scale.of(b)
                })
        })
        .collect()
}

/// The sum of the [`EVIDENCE_CHUNKS`] largest values divided by
/// [`EVIDENCE_CHUNKS`] (missing values count as zero).
fn best_mean(values: impl Iterator<Item = f32>) -> f32 {
    let mut best = [0.0f32; EVIDENCE_CHUNKS];
    for v in values {
        // Keep `best` sorted, largest first.
        if let Some(i) = best.iter().position(|&b| v > b) {
            best[i..].rotate_right(1);
            best[i] = v;
        }
    }
    best.iter().sum::<f32>() / EVIDENCE_CHUNKS as f32
}

/// Min-max scaling to `[0, 1]`.
struct Scale {
    low: f32,
    spread: f32,
}

impl Scale {
    fn over(values: impl Iterator<Item = f32>) -> Self {
        let (low, high) = values.fold((f32::MAX, f32::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
        Scale {
            low,
            spread: high - low,
        }
    }

    fn of(&self, v: f32) -> f32 {
        if self.spread < MIN_SPREAD {
            0.0
        } else {
            (v - self.low) / self.spread
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_mean_averages_the_largest_and_counts_missing_as_zero() {
        let m = best_mean([0.2, 0.9, 0.1, 0.6, 0.3].into_iter());
        assert!((m - (0.9 + 0.6 + 0.3) / 3.0).abs() < 1e-6, "{m}");
        let one = best_mean([0.9].into_iter());
        assert!((one - 0.3).abs() < 1e-6, "{one}");
        assert_eq!(best_mean(std::iter::empty()), 0.0);
        // Equal values are all kept.
        let eq = best_mean([0.5, 0.5, 0.5, 0.5].into_iter());
        assert!((eq - 0.5).abs() < 1e-6, "{eq}");
    }

    #[test]
    fn scale_maps_to_unit_range_and_a_flat_set_to_zero() {
        let s = Scale::over([1.0, 3.0, 2.0].into_iter());
        assert_eq!(s.of(1.0), 0.0);
        assert_eq!(s.of(3.0), 1.0);
        assert_eq!(s.of(2.0), 0.5);
        let flat = Scale::over([0.4, 0.4].into_iter());
        assert_eq!(flat.of(0.4), 0.0);
        let empty = Scale::over(std::iter::empty());
        assert_eq!(empty.of(0.0), 0.0);
    }
}
