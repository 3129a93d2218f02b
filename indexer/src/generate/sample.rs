//! Choosing the next token from a row of logits: greedy (temperature 0)
//! or temperature with nucleus (top-p) sampling from a seeded ChaCha8
//! stream, one stream per sequence, so that a sequence's text depends on
//! its seed and not on the batch it ran in.

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// How tokens are chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    /// 0 for greedy; otherwise logits are divided by it.
    pub temperature: f32,
    /// Keep the smallest set of tokens whose probability reaches this
    /// (1.0 keeps all).
    pub top_p: f32,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            temperature: 0.0,
            top_p: 1.0,
        }
    }
}

/// One sequence's sampler.
pub struct Sampler {
    sampling: Sampling,
    rng: ChaCha8Rng,
}

/// The index of the largest value (the first of equal ones).
pub fn argmax(row: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in row.iter().enumerate() {
        if v > row[best] {
            best = i;
        }
    }
    best
}

impl Sampler {
    /// A sampler for one sequence.
    pub fn new(sampling: Sampling, seed: u64) -> Sampler {
        Sampler {
            sampling,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// A uniform draw in [0, 1).
    fn uniform(&mut self) -> f32 {
        (self.rng.next_u32() >> 8) as f32 / (1u32 << 24) as f32
    }

    /// The next token for one row of logits.
    pub fn pick(&mut self, row: &[f32]) -> u32 {
        if self.sampling.temperature <= 0.0 || row.is_empty() {
            return argmax(row) as u32;
        }
        let t = self.sampling.temperature;
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        // Only tokens within 30 nats of the best can matter at all.
        let mut cand: Vec<(u32, f32)> = row
            .iter()
            .enumerate()
            .filter(|(_, &v)| (max - v) / t < 30.0)
            .map(|(i, &v)| (i as u32, ((v - max) / t).exp()))
            .collect();
        cand.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let total: f32 = cand.iter().map(|c| c.1).sum();
        let top_p = self.sampling.top_p.clamp(0.0, 1.0);
        let mut kept = 0.0;
        let mut n = 0;
        for c in &cand {
            kept += c.1;
            n += 1;
            if kept >= top_p * total {
                break;
            }
        }
        cand.truncate(n.max(1));
        let mass: f32 = cand.iter().map(|c| c.1).sum();
        let mut r = self.uniform() * mass;
        for c in &cand {
            if r < c.1 {
                return c.0;
            }
            r -= c.1;
        }
        cand[cand.len() - 1].0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_takes_the_first_maximum() {
        let mut s = Sampler::new(Sampling::default(), 1);
        assert_eq!(s.pick(&[0.1, 2.0, 2.0, -1.0]), 1);
    }

    #[test]
    fn sampling_depends_on_the_seed_only_and_respects_top_p() {
        let row = [1.0, 1.0, 1.0, -20.0];
        let sampling = Sampling {
            temperature: 1.0,
            top_p: 0.9,
        };
        let draw = |seed| {
            let mut s = Sampler::new(sampling, seed);
            (0..50).map(|_| s.pick(&row)).collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
        assert!(draw(7).iter().all(|&t| t < 3), "top-p drops the tail");
        let tight = Sampling {
            temperature: 1.0,
            top_p: 0.0,
        };
        let mut s = Sampler::new(tight, 3);
        assert!((0..20).all(|_| s.pick(&[0.0, 5.0, 1.0]) == 1));
    }
}
