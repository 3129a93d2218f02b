//! Inverted-file (IVF) partitions of the chunk vectors: k-means centroids,
//! each chunk's partition, and each chunk's squared distance to its
//! centroid.
//!
//! It exists so that semantic search in a browser costs what a query
//! needs, not what the corpus holds: the site ships the centroids and the
//! two per-chunk bytes as a small directory, and each partition's product
//! codes ([`crate::pq`]) as one shard; a query fetches the directory once,
//! then only the partitions whose centroids lie nearest to it, then the
//! int8 vectors of the few chunks it refines. The native CLI runs the
//! very same search over the same partitions (`[retrieval] ivf_probe`), so
//! both rank alike, to the chunk.
//!
//! During one retrieval the probed partitions give the dense candidates,
//! with exact distances. Any other chunk that retrieval scores (a keyword
//! or structural candidate elsewhere) gets an estimate from the directory
//! alone: `|q - x|² ≈ |q - c|² + |x - c|²`, the cross term `2 (q - c)·(x - c)`
//! having expectation zero for a chunk the query did not pull toward.
//!
//! The partitions also carry each chunk's radius, the hubness correction
//! of its distances ([`crate::hubness`]): it is searched among the nearest
//! partitions, and the browser needs it wherever it needs the partitions.
//!
//! Built here, in pure code, from a fixed seed: the same vectors give the
//! same partitions on every machine.

use serde::{Deserialize, Serialize};

use crate::error::CoreError;
use crate::sort::sort_by;
use crate::vectors::QVec;

/// Vectors per partition the indexer aims at: about 12 KB of int8 vectors
/// per partition shard. Measured with `codegloss partitions`, finer
/// partitions reach a given recall@10 with fewer bytes per question, while
/// the directory grows with the number of centroids:
/// - 8.6k chunks (150 questions): 32 reaches 0.959 at 320 KiB (probe 24),
///   64 reaches 0.955 at 411 KiB (probe 16); directory 116 against 63 KiB;
/// - 44k chunks (40 questions): 32 reaches 0.930 at 446 KiB (probe 48),
///   64 reaches 0.877 at 450 KiB (probe 24); directory 598 against 324 KiB.
///
/// (Those shards held int8 vectors. With product codes and 30 chunks
/// refined, 32 still beats 64 on the 44k chunks: 0.957 at 316 KiB p50
/// with probe 96, against 0.965 at 485 KiB with probe 80.)
pub const DEFAULT_PARTITION_SIZE: usize = 32;
/// Lloyd iterations of the k-means.
const ITERATIONS: usize = 12;
/// Step of the stored squared residual: `|x - c|² ≈ STEP * byte`; unit
/// vectors lie within squared distance 4 of any centroid, and 255 steps of
/// 1/64 cover 3.98.
const RESIDUAL_STEP: f32 = 1.0 / 64.0;
/// At most this many partitions: partition ids are `u16`.
const MAX_PARTITIONS: usize = u16::MAX as usize;

/// The partitions of a vector index.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Ivf {
    /// One centroid per partition, int8 like the points.
    pub centroids: Vec<QVec>,
    /// Per chunk id: its partition.
    pub partition_of: Vec<u16>,
    /// Per chunk id: `|x - c|²` of its vector to its partition's centroid,
    /// in steps of 1/64.
    pub residual_sq: Vec<u8>,
    /// Per chunk id: its radius, the mean squared distance to its nearest
    /// chunks, in steps of [`crate::hubness::RADIUS_STEP`] (the hubness
    /// correction of semantic distances; see [`crate::hubness`]).
    pub radius: Vec<u8>,
}

/// The partitions probed for one query, nearest centroid first.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    /// Probed partition ids, nearest first (ties by id).
    pub partitions: Vec<u16>,
    /// Per partition: whether it is probed.
    probed: Vec<bool>,
    /// Per partition: squared distance from the query to its centroid.
    centroid_distance: Vec<f32>,
}

impl Probe {
    /// Whether partition `p` is probed.
    pub fn contains(&self, p: u16) -> bool {
        self.probed.get(p as usize).copied().unwrap_or(false)
    }

    /// The squared distance from the query to partition `p`'s centroid.
    pub fn centroid_distance(&self, p: u16) -> Option<f32> {
        self.centroid_distance.get(p as usize).copied()
    }
}

impl Ivf {
    /// Partitions for `n` vectors of about `size` each (at least one for a
    /// non-empty index).
    pub fn partitions_for(n: usize, size: usize) -> usize {
        if n == 0 {
            return 0;
        }
        n.div_ceil(size.max(1)).clamp(1, MAX_PARTITIONS)
    }

    /// k-means over `vectors` (chunk order) into `partitions` partitions:
    /// distinct seeded starting points, Lloyd iterations, an empty
    /// partition re-seeded with the point farthest from its centroid, and a
    /// last assignment against the stored (int8) centroids, so that the
    /// residuals are those a search sees.
    pub fn build(vectors: &[Vec<f32>], partitions: usize, seed: u64) -> Ivf {
        let n = vectors.len();
        let k = partitions.clamp(usize::from(n > 0), n.min(MAX_PARTITIONS));
        if k == 0 {
            return Ivf::default();
        }
        let centroids = kmeans(vectors, k, seed);
        let stored: Vec<QVec> = centroids.iter().map(|c| QVec::quantize(c)).collect();
        let dequantized: Vec<Vec<f32>> = stored.iter().map(QVec::dequantize).collect();
        let mut partition_of = Vec::with_capacity(n);
        let mut residual_sq = Vec::with_capacity(n);
        for v in vectors {
            let (c, d) = nearest(&dequantized, v);
            partition_of.push(c as u16);
            residual_sq.push((d / RESIDUAL_STEP).round().clamp(0.0, 255.0) as u8);
        }
        let mut ivf = Ivf {
            centroids: stored,
            partition_of,
            residual_sq,
            radius: Vec::new(),
        };
        ivf.radius = crate::hubness::radii(vectors, &dequantized, &ivf.lists(), &ivf.partition_of);
        ivf
    }

    /// Number of partitions.
    pub fn len(&self) -> usize {
        self.centroids.len()
    }

    /// Whether there are no partitions (an empty index).
    pub fn is_empty(&self) -> bool {
        self.centroids.is_empty()
    }

    /// Check the partitions against an index of `chunks` vectors of
    /// dimension `dim`.
    pub fn check(&self, chunks: usize, dim: usize) -> Result<(), CoreError> {
        if self.partition_of.len() != chunks
            || self.residual_sq.len() != chunks
            || self.radius.len() != chunks
        {
            return Err(CoreError::malformed(format!(
                "partitions name {}, {} and {} chunks, the index has {chunks}",
                self.partition_of.len(),
                self.residual_sq.len(),
                self.radius.len()
            )));
        }
        if (chunks > 0) == self.centroids.is_empty() || self.centroids.len() > MAX_PARTITIONS {
            return Err(CoreError::malformed(format!(
                "{} centroids for {chunks} chunks",
                self.centroids.len()
            )));
        }
        if let Some(i) = self.centroids.iter().position(|c| {
            c.data.len() != dim
                || !c.scale.is_finite()
                || c.sq
                    != c.data
                        .iter()
                        .map(|&x| i32::from(x) * i32::from(x))
                        .sum::<i32>()
        }) {
            return Err(CoreError::malformed(format!(
                "centroid {i} has the wrong length or values (dimension {dim})"
            )));
        }
        if self
            .partition_of
            .iter()
            .any(|&p| p as usize >= self.centroids.len())
        {
            return Err(CoreError::malformed(
                "a chunk names a partition that has no centroid",
            ));
        }
        Ok(())
    }

    /// Chunk ids of every partition, ascending.
    pub fn lists(&self) -> Vec<Vec<u32>> {
        let mut lists = vec![Vec::new(); self.centroids.len()];
        for (chunk, &p) in self.partition_of.iter().enumerate() {
            lists[p as usize].push(chunk as u32);
        }
        lists
    }

    /// The `nprobe` partitions nearest to `query` (ties by id).
    pub fn probe(&self, query: &[f32], nprobe: usize) -> Probe {
        let qq: f32 = query.iter().map(|x| x * x).sum();
        let centroid_distance: Vec<f32> = self
            .centroids
            .iter()
            .map(|c| crate::vectors::squared_l2_q(query, qq, c))
            .collect();
        let mut order: Vec<u16> = (0..self.centroids.len() as u16).collect();
        sort_by(&mut order, |&a, &b| {
            centroid_distance[a as usize]
                .total_cmp(&centroid_distance[b as usize])
                .then(a.cmp(&b))
        });
        order.truncate(nprobe.max(1));
        let mut probed = vec![false; self.centroids.len()];
        for &p in &order {
            probed[p as usize] = true;
        }
        Probe {
            partitions: order,
            probed,
            centroid_distance,
        }
    }

    /// The estimated squared distance from the probe's query to `chunk`:
    /// its centroid's distance plus its own residual.
    pub fn estimate(&self, probe: &Probe, chunk: u32) -> Option<f32> {
        let p = *self.partition_of.get(chunk as usize)?;
        let r = f32::from(*self.residual_sq.get(chunk as usize)?) * RESIDUAL_STEP;
        Some(probe.centroid_distance.get(p as usize)? + r)
    }
}

/// k-means of `vectors` into `k` clusters (`1 <= k <= vectors.len()`):
/// seeded k-means++ starting points, then Lloyd iterations, an empty
/// cluster re-seeded with the point farthest from its centroid.
fn kmeans(vectors: &[Vec<f32>], k: usize, seed: u64) -> Vec<Vec<f32>> {
    let dim = vectors[0].len();
    let mut centroids = plus_plus(vectors, k, seed);
    let mut assignment = vec![0usize; vectors.len()];
    for _ in 0..ITERATIONS {
        let mut worst = (f32::MIN, 0usize);
        for (i, v) in vectors.iter().enumerate() {
            let (c, d) = nearest(&centroids, v);
            assignment[i] = c;
            if d > worst.0 {
                worst = (d, i);
            }
        }
        let mut sums = vec![vec![0.0f64; dim]; k];
        let mut counts = vec![0usize; k];
        for (v, &c) in vectors.iter().zip(&assignment) {
            counts[c] += 1;
            for (s, x) in sums[c].iter_mut().zip(v) {
                *s += f64::from(*x);
            }
        }
        for (c, (sum, count)) in sums.into_iter().zip(counts).enumerate() {
            if count == 0 {
                // Re-seed an empty cluster with the worst-served point.
                centroids[c] = vectors[worst.1].clone();
                worst.0 = f32::MIN;
                continue;
            }
            centroids[c] = sum.into_iter().map(|s| (s / count as f64) as f32).collect();
        }
    }
    centroids
}

/// The nearest centroid to `v` and its squared distance (ties: lowest id).
fn nearest(centroids: &[Vec<f32>], v: &[f32]) -> (usize, f32) {
    let mut best = (0usize, f32::INFINITY);
    for (c, centroid) in centroids.iter().enumerate() {
        let d = squared_l2(centroid, v);
        if d < best.1 {
            best = (c, d);
        }
    }
    best
}

/// A seeded xorshift64* generator: the one source of randomness of the
/// partitions and of the product codebooks ([`crate::pq`]).
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed | 1;
    move || {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        s.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// k-means++ starting points: the first at a seeded position, each next
/// drawn with probability proportional to its squared distance from the
/// nearest point chosen so far (xorshift64* from `seed`).
fn plus_plus(vectors: &[Vec<f32>], k: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut next = xorshift(seed);
    let n = vectors.len();
    let mut chosen = vec![vectors[(next() % n as u64) as usize].clone()];
    let mut best: Vec<f32> = vectors.iter().map(|v| squared_l2(v, &chosen[0])).collect();
    while chosen.len() < k {
        let total: f64 = best.iter().map(|&d| f64::from(d)).sum();
        let pick = if total > 0.0 {
            let target = (next() >> 11) as f64 / (1u64 << 53) as f64 * total;
            let mut acc = 0.0;
            best.iter()
                .position(|&d| {
                    acc += f64::from(d);
                    acc > target
                })
                .unwrap_or(n - 1)
        } else {
            (next() % n as u64) as usize
        };
        let c = vectors[pick].clone();
        for (b, v) in best.iter_mut().zip(vectors) {
            *b = b.min(squared_l2(v, &c));
        }
        chosen.push(c);
    }
    chosen
}

/// Squared L2 distance, summed in eight interleaved lanes so that the
/// compiler can vectorise it: k-means over tens of thousands of vectors
/// spends nearly all its time here (a fixed order, so the result is the
/// same on every machine). The hubness radii ([`crate::hubness`]) read it too.
pub(crate) fn squared_l2(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 8;
    let mut acc = [0.0f32; LANES];
    let (a8, b8) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = a8
        .remainder()
        .iter()
        .zip(b8.remainder())
        .map(|(x, y)| (x - y) * (x - y))
        .sum();
    for (x, y) in a8.zip(b8) {
        for i in 0..LANES {
            let d = x[i] - y[i];
            acc[i] += d * d;
        }
    }
    acc.iter().sum::<f32>() + tail
}

// How the vector shards' reader decodes it (`crate::wire`).
crate::wire::wire_struct!(Ivf {
    centroids,
    partition_of,
    residual_sq,
    radius
});

#[cfg(test)]
mod tests {
    use super::*;

    fn clustered(n: usize, dim: usize) -> Vec<Vec<f32>> {
        // Four well-separated directions with small deterministic noise.
        let mut s = 0x1234_5678_9abc_def1u64;
        (0..n)
            .map(|i| {
                let mut v: Vec<f32> = (0..dim)
                    .map(|_| {
                        s ^= s << 13;
                        s ^= s >> 7;
                        s ^= s << 17;
                        (s % 1001) as f32 / 10_000.0
                    })
                    .collect();
                v[i % 4] += 1.0;
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter_mut().for_each(|x| *x /= norm);
                v
            })
            .collect()
    }

    #[test]
    fn partitions_follow_the_clusters_and_are_deterministic() {
        let vs = clustered(200, 16);
        let ivf = Ivf::build(&vs, 4, 7);
        assert_eq!(ivf, Ivf::build(&vs, 4, 7));
        ivf.check(200, 16).unwrap();
        for i in 0..200 {
            assert_eq!(ivf.partition_of[i], ivf.partition_of[i % 4], "chunk {i}");
        }
        let lists = ivf.lists();
        assert_eq!(lists.iter().map(Vec::len).sum::<usize>(), 200);
        assert!(lists.iter().all(|l| l.len() == 50));
    }

    #[test]
    fn a_probe_finds_the_querys_own_partition_first_and_estimates_others() {
        let vs = clustered(200, 16);
        let ivf = Ivf::build(&vs, 4, 7);
        let probe = ivf.probe(&vs[1], 1);
        assert_eq!(probe.partitions, vec![ivf.partition_of[1]]);
        assert!(probe.contains(ivf.partition_of[1]));
        assert!(!probe.contains(ivf.partition_of[0]));
        // The estimate of a far chunk is close to its true distance.
        let truth: f32 = vs[1]
            .iter()
            .zip(&vs[0])
            .map(|(a, b)| (a - b) * (a - b))
            .sum();
        let est = ivf.estimate(&probe, 0).unwrap();
        assert!((est - truth).abs() < 0.1, "{est} vs {truth}");
    }

    #[test]
    fn sizes_and_bad_tables() {
        assert_eq!(Ivf::partitions_for(0, 128), 0);
        assert_eq!(Ivf::partitions_for(1, 128), 1);
        assert_eq!(Ivf::partitions_for(129, 128), 2);
        assert_eq!(Ivf::build(&[], 4, 1), Ivf::default());
        let vs = clustered(10, 8);
        let one = Ivf::build(&vs, 50, 1);
        assert_eq!(one.len(), 10);
        let mut bad = Ivf::build(&vs, 2, 1);
        bad.partition_of[3] = 9;
        assert!(bad.check(10, 8).is_err());
        assert!(Ivf::build(&vs, 2, 1).check(11, 8).is_err());
        assert!(Ivf::build(&vs, 2, 1).check(10, 9).is_err());
    }
}
