//! Product codes of the chunk vectors: each vector's residual to its
//! partition's centroid (see [`crate::ivf`]) cut into subspaces of
//! [`SUBSPACE_DIM`] components, each subspace coded by one byte, the
//! nearest of 256 centroids learnt for that subspace.
//!
//! It exists so that semantic search in a browser reads many partitions
//! for the bytes of a few: a partition shard carries one byte per subspace
//! and chunk (64 for 384 dimensions) instead of an int8 vector (392 bytes),
//! so a question can probe about six times as many partitions for the
//! same bytes. The codes rank the probed chunks approximately
//! (asymmetric distance: the query stays exact, the vector is decoded);
//! the nearest few are then *refined* with their int8 vectors, fetched in
//! small blocks (`[retrieval] ivf_refine`). Measured with `codegloss
//! partitions` on a 44k-chunk codebase (166 questions), probing 128
//! partitions of 32 and refining 100 finds 0.956 of the exact top 10 for
//! 350 KiB a question (p50; 415 p95, 457 max), where int8 partition shards
//! reached 0.930 for 446 KiB (probe 48, 40 questions).
//!
//! The distance from a query `q` to a chunk `x = c + r` (centroid `c`,
//! decoded residual `r`) is `|q - c|² + (|r|² + 2 c·r) - 2 q·r`: the first
//! term comes with the probe, the second is fixed per chunk (computed when
//! its code is loaded), and `q·r` is a sum of one table entry per subspace,
//! the table computed once per query.
//!
//! Trained here, in pure code, from a fixed seed and a fixed sample: the
//! same vectors and partitions give the same codebooks on every machine,
//! so the indexer (which writes the site) and the CLI (which derives the
//! codes from the vectors file) search with the same codes.

use serde::{Deserialize, Serialize};

use crate::error::CoreError;
use crate::ivf::{xorshift, Ivf};

/// Components per subspace: 64 one-byte codes for 384 dimensions.
/// Measured with `codegloss partitions` (166 questions, recall@10 against
/// exact search, bytes of partitions and refine blocks a question fetches,
/// p50 / p95 / max), coarser codes cost more refining but fewer partition
/// bytes, and 6 components win on both codebases measured:
/// - 44k chunks, probe 128: 4 components with 40 refined reach 0.956 for
///   406 / 500 / 551 KiB; 6 with 100 refined 0.956 for 350 / 415 / 457;
///   8 with 160 refined need probe 144 for 0.956 at 370 / 427 / 465;
/// - 8.6k chunks, probe 32: 4 components with 30 refined reach 0.962 for
///   145 / 172 / 182 KiB; 6 with 60 refined 0.960 for 133 / 155 / 166.
pub const SUBSPACE_DIM: usize = 6;
/// Centroids per subspace (one byte of code).
pub const CODEBOOK_SIZE: usize = 256;
/// At most this many residuals train the codebooks (an even sample of the
/// chunks): about 32 per centroid.
const TRAIN_MAX: usize = 8192;

/// The codebooks: per subspace, [`CODEBOOK_SIZE`] centroids of
/// `sub_dim` components, int8 with one scale per subspace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct ProductQuantizer {
    /// Components per subspace.
    pub sub_dim: u32,
    /// Per subspace: `value ≈ scale * byte`.
    pub scales: Vec<f32>,
    /// Subspace-major, then centroid, then component.
    pub codebooks: Vec<i8>,
}

impl ProductQuantizer {
    /// Learn codebooks from `residuals` (vectors minus their centroids):
    /// k-means per subspace over an even sample.
    pub fn train(residuals: &[Vec<f32>], seed: u64) -> ProductQuantizer {
        let Some(dim) = residuals.first().map(Vec::len) else {
            return ProductQuantizer::default();
        };
        let sub = SUBSPACE_DIM.min(dim).max(1);
        let subspaces = dim.div_ceil(sub);
        let step = residuals.len().div_ceil(TRAIN_MAX).max(1);
        let sample: Vec<&Vec<f32>> = residuals.iter().step_by(step).collect();
        let k = CODEBOOK_SIZE.min(sample.len());
        let mut scales = Vec::with_capacity(subspaces);
        let mut codebooks = Vec::with_capacity(subspaces * CODEBOOK_SIZE * sub);
        for m in 0..subspaces {
            let part: Vec<f32> = sample.iter().flat_map(|r| slice(r, m, sub)).collect();
            let centroids =
                train_subspace(&part, sub, k, seed ^ (m as u64).wrapping_mul(0x9e37_79b9));
            let max = centroids.iter().fold(0.0f32, |a, x| a.max(x.abs()));
            let scale = if max > 0.0 && max.is_finite() {
                max / 127.0
            } else {
                1.0
            };
            scales.push(scale);
            codebooks.extend((0..CODEBOOK_SIZE * sub).map(|i| {
                let x = centroids.get(i).copied().unwrap_or(0.0);
                (x / scale).round().clamp(-127.0, 127.0) as i8
            }));
        }
        ProductQuantizer {
            sub_dim: sub as u32,
            scales,
            codebooks,
        }
    }

    /// Number of subspaces (code bytes per vector).
    pub fn subspaces(&self) -> usize {
        self.scales.len()
    }

    /// Check against vectors of dimension `dim`.
    pub fn check(&self, dim: usize) -> Result<(), CoreError> {
        let sub = self.sub_dim as usize;
        let m = self.scales.len();
        if sub == 0
            || m != dim.div_ceil(sub)
            || self.codebooks.len() != m * CODEBOOK_SIZE * sub
            || self.scales.iter().any(|s| !s.is_finite())
        {
            return Err(CoreError::malformed(format!(
                "product codebooks of {m} subspaces of {sub} do not fit dimension {dim}"
            )));
        }
        Ok(())
    }

    /// The codebooks in `f32`, component-major within each subspace
    /// (subspace, then component, then centroid).
    fn columns(&self) -> Vec<f32> {
        let sub = self.sub_dim as usize;
        let per = (CODEBOOK_SIZE * sub).max(1);
        (0..self.codebooks.len())
            .map(|i| {
                let (m, rest) = (i / per, i % per);
                let (t, j) = (rest / CODEBOOK_SIZE, rest % CODEBOOK_SIZE);
                let byte = self.codebooks.get(m * per + j * sub + t).copied();
                f32::from(byte.unwrap_or(0)) * self.scales.get(m).copied().unwrap_or(0.0)
            })
            .collect()
    }
}

/// Lloyd iterations of a subspace's k-means.
const ITERATIONS: usize = 8;

/// k-means of `points` (`n` runs of `sub` components) into `k` centroids
/// (`k <= n`), returned as `k` runs of `sub`: seeded distinct starting
/// points, Lloyd iterations, an empty cluster re-seeded with the point
/// farthest from its centroid. The centroids are kept component-major, so
/// that the distances from one point to all of them vectorise (96
/// subspaces on 8k chunks: about 1.5 s, where one centroid at a time took
/// about 20 s).
fn train_subspace(points: &[f32], sub: usize, k: usize, seed: u64) -> Vec<f32> {
    let n = points.len() / sub.max(1);
    if n == 0 || k == 0 {
        return Vec::new();
    }
    // Distinct starting points: a seeded partial Fisher-Yates shuffle.
    let mut next = xorshift(seed);
    let mut order: Vec<usize> = (0..n).collect();
    for i in 0..k {
        let j = i + (next() % (n - i) as u64) as usize;
        order.swap(i, j);
    }
    // cols[t][j]: component t of centroid j.
    let mut cols: Vec<Vec<f32>> = (0..sub)
        .map(|t| order[..k].iter().map(|&p| points[p * sub + t]).collect())
        .collect();
    let mut assignment = vec![0usize; n];
    let mut dist = vec![0.0f32; k];
    for _ in 0..ITERATIONS {
        let mut worst = (f32::MIN, 0usize);
        for (i, x) in points.chunks_exact(sub).enumerate() {
            dist.fill(0.0);
            for (col, &xt) in cols.iter().zip(x) {
                for (d, &c) in dist.iter_mut().zip(col) {
                    *d += (xt - c) * (xt - c);
                }
            }
            let (best, d) =
                dist.iter().enumerate().fold(
                    (0, f32::INFINITY),
                    |b, (j, &d)| if d < b.1 { (j, d) } else { b },
                );
            assignment[i] = best;
            if d > worst.0 {
                worst = (d, i);
            }
        }
        let mut sums = vec![0.0f64; k * sub];
        let mut counts = vec![0usize; k];
        for (x, &c) in points.chunks_exact(sub).zip(&assignment) {
            counts[c] += 1;
            for (t, &xt) in x.iter().enumerate() {
                sums[c * sub + t] += f64::from(xt);
            }
        }
        for (j, &count) in counts.iter().enumerate() {
            for (t, col) in cols.iter_mut().enumerate() {
                col[j] = if count == 0 {
                    // Re-seed an empty cluster with the worst-served point.
                    points[worst.1 * sub + t]
                } else {
                    (sums[j * sub + t] / count as f64) as f32
                };
            }
            if count == 0 {
                worst.0 = f32::MIN;
            }
        }
    }
    (0..k * sub).map(|i| cols[i % sub][i / sub]).collect()
}

/// Subspace `m` of `v` (zero-padded past the end).
fn slice(v: &[f32], m: usize, sub: usize) -> Vec<f32> {
    (0..sub)
        .map(|t| v.get(m * sub + t).copied().unwrap_or(0.0))
        .collect()
}

/// The codes of every chunk, and what a search needs to use them: the
/// decoded codebooks and each chunk's fixed term `|r|² + 2 c·r`. In the
/// browser the codes of a partition arrive with its shard
/// ([`ProductCodes::set`]); natively all are derived from the vectors
/// ([`ProductCodes::build`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ProductCodes {
    /// The codebooks.
    pub pq: ProductQuantizer,
    /// Per chunk, `subspaces` bytes (zero while not loaded).
    pub codes: Vec<u8>,
    /// Per chunk: `|r|² + 2 c·r` of its decoded residual `r`.
    extra: Vec<f32>,
    /// The codebooks in `f32`, component-major within each subspace
    /// (subspace, then component, then centroid), so that coding
    /// vectorises.
    columns: Vec<f32>,
}

impl ProductCodes {
    /// No codes yet for `chunks` chunks (the browser's start).
    pub fn empty(pq: ProductQuantizer, chunks: usize) -> ProductCodes {
        ProductCodes {
            codes: vec![0; chunks * pq.subspaces()],
            extra: vec![0.0; chunks],
            columns: pq.columns(),
            pq,
        }
    }

    /// Train codebooks on `vectors` (chunk order) partitioned by `ivf`, and
    /// code every vector.
    pub fn build(vectors: &[Vec<f32>], ivf: &Ivf, seed: u64) -> ProductCodes {
        let centroids: Vec<Vec<f32>> = ivf.centroids.iter().map(|c| c.dequantize()).collect();
        let residuals: Vec<Vec<f32>> = vectors
            .iter()
            .zip(&ivf.partition_of)
            .map(|(v, &p)| {
                let c = &centroids[p as usize];
                v.iter().zip(c).map(|(x, y)| x - y).collect()
            })
            .collect();
        let mut out = ProductCodes::empty(ProductQuantizer::train(&residuals, seed), vectors.len());
        for (chunk, (r, &p)) in residuals.iter().zip(&ivf.partition_of).enumerate() {
            let code = out.encode(r);
            out.set(chunk, &code, &centroids[p as usize]);
        }
        out
    }

    /// Code bytes per chunk.
    pub fn subspaces(&self) -> usize {
        self.pq.subspaces()
    }

    /// The nearest codebook centroid per subspace of a residual.
    pub fn encode(&self, residual: &[f32]) -> Vec<u8> {
        let sub = self.pq.sub_dim as usize;
        let m = self.subspaces();
        let mut padded = residual.to_vec();
        padded.resize(m * sub, 0.0);
        let mut dist = [0.0f32; CODEBOOK_SIZE];
        padded
            .chunks(sub.max(1))
            .zip(self.columns.chunks((CODEBOOK_SIZE * sub).max(1)))
            .map(|(r, cols)| {
                dist.fill(0.0);
                for (&x, col) in r.iter().zip(cols.chunks_exact(CODEBOOK_SIZE)) {
                    for (d, &c) in dist.iter_mut().zip(col) {
                        *d += (x - c) * (x - c);
                    }
                }
                let (best, _) = dist
                    .iter()
                    .enumerate()
                    .fold(
                        (0, f32::INFINITY),
                        |b, (j, &d)| if d < b.1 { (j, d) } else { b },
                    );
                best as u8
            })
            .collect()
    }

    /// The code of `chunk`.
    pub fn code(&self, chunk: usize) -> &[u8] {
        let m = self.subspaces();
        self.codes.get(chunk * m..(chunk + 1) * m).unwrap_or(&[])
    }

    /// Set the code of `chunk`, whose partition's centroid is `centroid`.
    pub fn set(&mut self, chunk: usize, code: &[u8], centroid: &[f32]) {
        let m = self.subspaces();
        let sub = self.pq.sub_dim as usize;
        if code.len() != m || chunk >= self.extra.len() {
            return;
        }
        self.codes[chunk * m..(chunk + 1) * m].copy_from_slice(code);
        let mut extra = 0.0f32;
        for (s, &b) in code.iter().enumerate() {
            for t in 0..sub {
                let r = self.columns[(s * sub + t) * CODEBOOK_SIZE + usize::from(b)];
                let c = centroid.get(s * sub + t).copied().unwrap_or(0.0);
                extra += r * r + 2.0 * c * r;
            }
        }
        self.extra[chunk] = extra;
    }

    /// The query's table: `q·r` of every codebook centroid, per subspace.
    pub fn table(&self, query: &[f32]) -> Vec<f32> {
        let sub = self.pq.sub_dim as usize;
        (0..self.subspaces() * CODEBOOK_SIZE)
            .map(|i| {
                let (m, j) = (i / CODEBOOK_SIZE, i % CODEBOOK_SIZE);
                (0..sub)
                    .map(|t| {
                        self.columns[(m * sub + t) * CODEBOOK_SIZE + j]
                            * query.get(m * sub + t).copied().unwrap_or(0.0)
                    })
                    .sum()
            })
            .collect()
    }

    /// The approximate squared distance from the table's query to `chunk`,
    /// given the query's squared distance to the chunk's centroid.
    pub fn distance(&self, table: &[f32], centroid_distance: f32, chunk: usize) -> f32 {
        let dot: f32 = self
            .code(chunk)
            .iter()
            .enumerate()
            .map(|(m, &b)| table[m * CODEBOOK_SIZE + usize::from(b)])
            .sum();
        (centroid_distance + self.extra.get(chunk).copied().unwrap_or(0.0) - 2.0 * dot).max(0.0)
    }
}

// How the vector directory's reader decodes it (`crate::wire`).
crate::wire::wire_struct!(ProductQuantizer {
    sub_dim,
    scales,
    codebooks
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ivf::Ivf;

    fn vectors(n: usize, dim: usize) -> Vec<Vec<f32>> {
        let mut s = 0x2545_f491_4f6c_dd1du64;
        (0..n)
            .map(|_| {
                let mut v: Vec<f32> = (0..dim)
                    .map(|_| {
                        s ^= s << 13;
                        s ^= s >> 7;
                        s ^= s << 17;
                        (s % 2001) as f32 / 1000.0 - 1.0
                    })
                    .collect();
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter_mut().for_each(|x| *x /= norm);
                v
            })
            .collect()
    }

    #[test]
    fn codes_approximate_the_distance_and_are_deterministic() {
        let vs = vectors(600, 24);
        let ivf = Ivf::build(&vs, 8, 3);
        let pc = ProductCodes::build(&vs, &ivf, 3);
        assert_eq!(pc, ProductCodes::build(&vs, &ivf, 3));
        pc.pq.check(24).unwrap();
        assert_eq!(pc.subspaces(), 24 / SUBSPACE_DIM);
        let q = &vs[5];
        let table = pc.table(q);
        let probe = ivf.probe(q, 8);
        let mut err = 0.0;
        for (c, v) in vs.iter().enumerate() {
            let truth: f32 = q.iter().zip(v).map(|(a, b)| (a - b) * (a - b)).sum();
            let cd = probe.centroid_distance(ivf.partition_of[c]).unwrap();
            err += (pc.distance(&table, cd, c) - truth).abs();
        }
        // Mean error far below the spread of the distances (0 to 4).
        assert!(err / 600.0 < 0.12, "mean error {}", err / 600.0);
    }

    #[test]
    fn the_browser_codes_equal_the_built_ones() {
        let vs = vectors(100, 12);
        let ivf = Ivf::build(&vs, 4, 1);
        let built = ProductCodes::build(&vs, &ivf, 1);
        let mut loaded = ProductCodes::empty(built.pq.clone(), vs.len());
        for c in 0..vs.len() {
            let centroid = ivf.centroids[ivf.partition_of[c] as usize].dequantize();
            loaded.set(c, built.code(c), &centroid);
        }
        assert_eq!(loaded, built);
    }

    #[test]
    fn bad_codebooks_are_rejected() {
        let vs = vectors(40, 2 * SUBSPACE_DIM);
        let ivf = Ivf::build(&vs, 2, 1);
        let pc = ProductCodes::build(&vs, &ivf, 1);
        assert!(pc.pq.check(2 * SUBSPACE_DIM).is_ok());
        assert!(pc.pq.check(4 * SUBSPACE_DIM).is_err());
        let mut bad = pc.pq.clone();
        bad.codebooks.pop();
        assert!(bad.check(2 * SUBSPACE_DIM).is_err());
        assert_eq!(ProductQuantizer::train(&[], 1), ProductQuantizer::default());
    }
}
