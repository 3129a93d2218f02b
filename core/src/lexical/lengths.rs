//! Document lengths as BM25 reads them, in two stages: a fine byte a
//! chunk ([`length_code`], 16 steps per doubling) and a coarse one
//! ([`coarse_code`], [`COARSE_STEPS`] per doubling) with the fine step
//! within it ([`length_step`]).
//!
//! It exists because the browser needs one length for every chunk before
//! its first result, while ranking reads a fine length for a few dozen
//! chunks only. So keyword scores over all chunks (which chunks enter the
//! pool, the best score, target alignment, file evidence, supplementary
//! chunks) use the coarse length, the search shard ships the coarse byte, and the fine
//! step travels with a chunk's other facts in its name shard
//! ([`crate::retrieve::features::ChunkFeatures::length_step`]): the scores
//! that re-ranking reads use the fine length. Natively the same two stages
//! run over the same codes, so both rank alike.

use super::{LexicalIndex, B, K1};

/// Coarse steps per doubling of a length ([`coarse_code`]).
///
/// Measured, `codegloss eval` on IPPL against one code for every score
/// (hit@5 / MRR; named 100 and reworded dev half, with and without
/// vectors): 2 steps keep them within one question each way (named,
/// keywords only: hit@5 0.92 -> 0.94, MRR 0.784 -> 0.787; reworded,
/// keywords only: hit@5 0.86 -> 0.84, MRR 0.613 -> 0.611; with vectors:
/// hit@5 0.98 -> 0.97 named, 0.92 -> 0.92 reworded, MRR 0.832 -> 0.830
/// and 0.686 -> 0.687). 1 step lost more (reworded hit@1 0.46 -> 0.44
/// without vectors, 0.54 -> 0.52 with them; MRR 0.613 -> 0.598 and 0.686
/// -> 0.666); 4 steps were no better than 2. The Kokkos search shard's
/// lengths, deflated: 29.3 KB fine, 14.7 KB at 2 steps, 9.8 KB at 1.
pub const COARSE_STEPS: u32 = 2;

/// Fine steps per coarse step.
const SPAN: u32 = 16 / COARSE_STEPS;

/// The band of lengths that one coarse step covers, as fine steps:
/// [`length_step`] lies below it.
pub const STEP_SPAN: u8 = SPAN as u8;

/// A document length as one byte: exact below 32, then 16 steps per
/// doubling (at most 6% off), up to 255. Ranking reads lengths through
/// this, so the web layout ships a byte a chunk and still ranks exactly as
/// the native index.
///
/// 8 steps per doubling for every score, measured and left: the Kokkos
/// search shard's lengths 29.1 -> 24.7 KB deflated, but `codegloss eval
/// --no-vectors` on IPPL's reworded dev half fell (hit@1 0.46 -> 0.44,
/// hit@5 0.86 -> 0.84, MRR 0.613 -> 0.600; the named 100: hit@5 0.92 ->
/// 0.93, the rest equal). Hence two stages, [`coarse_code`].
pub fn length_code(len: u32) -> u8 {
    if len < 32 {
        return len as u8;
    }
    let e = 31 - len.leading_zeros() - 4; // len >> e lies in 16..32
    let code = 32 + e * 16 + ((len >> e) - 16);
    code.min(255) as u8
}

/// The length a [`length_code`] stands for (a fixed point of the coding).
pub fn length_of_code(code: u8) -> u32 {
    let c = u32::from(code);
    if c < 32 {
        return c;
    }
    let e = (c - 32) / 16;
    (16 + (c - 32) % 16) << e
}

/// The coarse code of a fine [`length_code`]: exact below 32, then
/// [`COARSE_STEPS`] per doubling.
pub fn coarse_code(fine: u8) -> u8 {
    let f = u32::from(fine);
    if f < 32 {
        return fine;
    }
    let (e, m) = ((f - 32) / 16, (f - 32) % 16);
    (32 + e * COARSE_STEPS + m / SPAN) as u8
}

/// Where a fine [`length_code`] lies within its coarse step: below
/// [`STEP_SPAN`].
pub fn length_step(fine: u8) -> u8 {
    let f = u32::from(fine);
    if f < 32 {
        return 0;
    }
    ((f - 32) % SPAN) as u8
}

/// The fine code of a coarse code and a step within it, the inverse of
/// [`coarse_code`] and [`length_step`]. A step beyond the band, or a code
/// beyond the last, reads as the band's last step or the last code (a
/// shard's bytes are checked by their hash, so only a wrong writer can
/// send them).
pub fn fine_code(coarse: u8, step: u8) -> u8 {
    let c = u32::from(coarse);
    if c < 32 {
        return coarse;
    }
    let (e, q) = ((c - 32) / COARSE_STEPS, (c - 32) % COARSE_STEPS);
    let fine = 32 + e * 16 + q * SPAN + u32::from(step).min(SPAN - 1);
    fine.min(255) as u8
}

/// The length that the coarse scores read for a coarse code: the middle
/// fine step of its band.
pub fn coarse_length(coarse: u8) -> u32 {
    length_of_code(fine_code(coarse, STEP_SPAN / 2))
}

/// The least length of a coarse code's band, which the browser keeps as a
/// chunk's length: its [`length_code`] is the band's first fine code, so
/// its coarse code is `coarse` again.
pub fn lower_length(coarse: u8) -> u32 {
    length_of_code(fine_code(coarse, 0))
}

impl LexicalIndex {
    /// The coarse code of chunk `chunk`'s length (which must exist).
    pub fn coarse_code_of(&self, chunk: u32) -> u8 {
        coarse_code(length_code(self.doc_len[chunk as usize]))
    }

    /// The mean coarse length of the chunks (at least 1), which both
    /// stages of scoring normalise by.
    pub fn average_length(&self) -> f32 {
        if self.doc_len.is_empty() {
            return 1.0;
        }
        let sum: f64 = self
            .doc_len
            .iter()
            .map(|&l| f64::from(coarse_length(coarse_code(length_code(l)))))
            .sum();
        (sum as f32 / self.doc_len.len() as f32).max(1.0)
    }

    /// Coarse scores of every chunk for a tokenised query (repeated query
    /// terms count once): lengths by their [`coarse_length`].
    pub fn scores(&self, query: &[String]) -> Vec<f32> {
        self.scorer(query).coarse_scores()
    }

    /// A tokenised query made ready to score, in both stages: its terms'
    /// lists (repeated terms once) and the mean coarse length, looked up
    /// once for [`QueryScorer::coarse_scores`] and every
    /// [`QueryScorer::fine_score`]. Nothing is looked up in an empty index.
    pub fn scorer(&self, query: &[String]) -> QueryScorer<'_> {
        let mut terms = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        for t in query.iter().filter(|_| !self.doc_len.is_empty()) {
            if seen.contains(&t.as_str()) {
                continue;
            }
            seen.push(t);
            if let Some(id) = self.term_id(t) {
                terms.push((self.idf(t), self.postings[id].as_slice()));
            }
        }
        QueryScorer {
            index: self,
            avg: self.average_length(),
            terms,
        }
    }
}

/// A query's terms, ready to score every chunk at its coarse length or
/// single chunks at their fine length ([`LexicalIndex::scorer`]).
pub struct QueryScorer<'a> {
    /// The index the terms were looked up in.
    index: &'a LexicalIndex,
    /// The mean coarse length ([`LexicalIndex::average_length`]).
    avg: f32,
    /// Each distinct query term in the vocabulary: its idf and its list.
    terms: Vec<(f32, &'a [(u32, u16)])>,
}

impl QueryScorer<'_> {
    /// The score of every chunk, by chunk id, with its [`coarse_length`].
    pub fn coarse_scores(&self) -> Vec<f32> {
        let doc_len = &self.index.doc_len;
        let mut scores = vec![0f32; doc_len.len()];
        if doc_len.is_empty() {
            return scores;
        }
        let norms: Vec<f32> = doc_len
            .iter()
            .map(|&l| norm(coarse_length(coarse_code(length_code(l))), self.avg))
            .collect();
        for (idf, list) in &self.terms {
            for &(chunk, tf8) in *list {
                scores[chunk as usize] += term_score(*idf, tf8, norms[chunk as usize]);
            }
        }
        scores
    }

    /// The score of chunk `chunk` with the length of the fine code `fine`
    /// ([`fine_code`] of its coarse code and its [`length_step`]): as
    /// [`QueryScorer::coarse_scores`], with that length.
    pub fn fine_score(&self, chunk: u32, fine: u8) -> f32 {
        let norm = norm(length_of_code(fine), self.avg);
        let mut score = 0f32;
        for (idf, list) in &self.terms {
            if let Ok(i) = list.binary_search_by_key(&chunk, |&(c, _)| c) {
                score += term_score(*idf, list[i].1, norm);
            }
        }
        score
    }
}

/// BM25's length normalisation of a document `len` long.
fn norm(len: u32, avg: f32) -> f32 {
    K1 * (1.0 - B + B * len as f32 / avg)
}

/// One term's BM25 share.
fn term_score(idf: f32, tf8: u16, norm: f32) -> f32 {
    let tf = f32::from(tf8) / 8.0;
    idf * tf * (K1 + 1.0) / (tf + norm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_codes_are_monotone_fixed_points_within_a_sixteenth() {
        let mut last = 0;
        for len in (0..300_000u32)
            .step_by(7)
            .chain([31, 32, 33, 253_952, u32::MAX])
        {
            let back = length_of_code(length_code(len));
            assert_eq!(length_of_code(length_code(back)), back, "{len}");
            if len <= 253_952 {
                assert!(back <= len && (len - back) * 16 <= len, "{len} -> {back}");
            }
            if len < 300_000 {
                assert!(back >= last || len < last, "{len}");
                last = back;
            }
        }
        assert_eq!(length_of_code(length_code(31)), 31);
        assert_eq!(length_of_code(255), 253_952);
    }

    #[test]
    fn coarse_codes_and_steps_give_back_every_fine_code() {
        let mut last = 0;
        for fine in 0..=255u8 {
            let c = coarse_code(fine);
            let s = length_step(fine);
            assert!(s < STEP_SPAN, "{fine}");
            assert_eq!(fine_code(c, s), fine, "{fine}");
            assert!(c >= last, "{fine}");
            last = c;
            assert!(lower_length(c) <= coarse_length(c));
            // The length the browser keeps codes back to the same coarse
            // code, for every code a length has (32..48 stand for lengths
            // that are exact below 32, so none has them).
            if length_code(length_of_code(fine)) == fine {
                assert_eq!(coarse_code(length_code(lower_length(c))), c, "{fine}");
            }
        }
        // Bytes no writer sends still decode to a code.
        assert_eq!(fine_code(255, 255), 255);
        assert_eq!(fine_code(40, 200), fine_code(40, STEP_SPAN - 1));
    }

    #[test]
    fn fine_scores_share_the_coarse_scores_normalisation() {
        let terms = vec!["field".to_string(), "halo".to_string()];
        let postings = vec![vec![(0, 8), (1, 16), (2, 8)], vec![(1, 8), (2, 24)]];
        let ix = LexicalIndex::new(
            super::super::FieldWeights::default(),
            terms,
            postings,
            vec![40, 400, 4000],
        );
        let q: Vec<String> = ["halo", "field", "halo", "mesh"].map(String::from).to_vec();
        let fine = ix.scorer(&q);
        let coarse = fine.coarse_scores();
        assert_eq!(coarse, ix.scores(&q));
        for c in 0..3u32 {
            let code = ix.coarse_code_of(c);
            // The middle step is the length the coarse scores read.
            let mid = fine_code(code, STEP_SPAN / 2);
            assert_eq!(fine.fine_score(c, mid), coarse[c as usize], "{c}");
            // Within a band, a longer chunk scores less.
            let (first, last) = (fine_code(code, 0), fine_code(code, STEP_SPAN - 1));
            assert!(fine.fine_score(c, first) > fine.fine_score(c, last), "{c}");
        }
        // A chunk no token matches scores 0 at any length.
        let other = vec!["mesh".to_string()];
        assert_eq!(ix.scorer(&other).fine_score(1, 100), 0.0);
    }
}
