//! The vectors of a site ranked with `[retrieval] ivf_probe > 0`: one
//! small directory (the centroids and two bytes per chunk, see
//! [`crate::ivf`]) and one shard per partition, so that semantic search
//! fetches the directory once and then only the partitions a question
//! probes, instead of every vector of the corpus.
//!
//! The manifest lists the directory; the directory lists the partition
//! shards (name, size, SHA-256), so the manifest does not grow with the
//! corpus and every partition is still checked against a listed hash.

use serde::{Deserialize, Serialize};

use super::shard::{decode_shard, encode_shard, shard};
use super::{ShardInfo, ShardKind, WebIndex, WEB_MANIFEST};
use crate::embed::{EmbeddingSpec, Quantization};
use crate::error::CoreError;
use crate::ivf::Ivf;
use instant_distance::{HnswMap, Point};

use crate::vectors::{FVec, QVec, VectorIndex, VectorStore};

/// The vector directory shard.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct VectorDirectory {
    /// The model that made the vectors.
    pub spec: EmbeddingSpec,
    /// How the points are stored.
    pub quantization: Quantization,
    /// Centroids, each chunk's partition and residual.
    pub ivf: Ivf,
    /// Per partition, in partition order: its shard's size in bytes.
    pub sizes: Vec<u64>,
    /// Per partition: its shard's SHA-256 (the shard's name is
    /// `shards/partition-<hex>.bin`).
    pub hashes: Vec<[u8; 32]>,
}

impl VectorDirectory {
    /// The listed shard of every partition.
    fn shards(&self) -> Vec<ShardInfo> {
        self.sizes
            .iter()
            .zip(&self.hashes)
            .map(|(&bytes, hash)| {
                let sha256 = hex::encode(hash);
                ShardInfo {
                    kind: ShardKind::Partition,
                    name: format!("shards/{}-{sha256}.bin", ShardKind::Partition.as_str()),
                    bytes,
                    sha256,
                    chunks: None,
                    terms: None,
                }
            })
            .collect()
    }
}

/// One partition's vectors: its chunks (ascending) and their points.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct PartitionShard {
    /// Partition id.
    pub partition: u32,
    /// Chunk ids, ascending.
    pub chunks: Vec<u32>,
    /// Their points, in the same order.
    pub points: Points,
}

/// The directory shard and every partition shard's `(path, bytes)`.
pub(super) type Partitioned = ((ShardInfo, Vec<u8>), Vec<(String, Vec<u8>)>);

/// Lay out `v` as a directory and one shard per partition.
pub(super) fn partitioned(v: &VectorIndex) -> Result<Partitioned, CoreError> {
    let points = points(v);
    let (mut sizes, mut hashes) = (Vec::new(), Vec::new());
    let mut files = Vec::new();
    for (p, chunks) in v.ivf.lists().into_iter().enumerate() {
        let part = PartitionShard {
            partition: p as u32,
            points: points.select(&chunks),
            chunks,
        };
        let (info, bytes) = shard(
            ShardKind::Partition,
            encode_shard(ShardKind::Partition, &part)?,
            None,
        );
        let mut hash = [0u8; 32];
        hex::decode_to_slice(&info.sha256, &mut hash).map_err(|e| CoreError::Encode {
            file: info.name.clone(),
            message: e.to_string(),
        })?;
        sizes.push(info.bytes);
        hashes.push(hash);
        files.push((info.name, bytes));
    }
    let directory = VectorDirectory {
        spec: v.spec.clone(),
        quantization: v.quantization,
        ivf: v.ivf.clone(),
        sizes,
        hashes,
    };
    let dir = shard(
        ShardKind::VectorDirectory,
        encode_shard(ShardKind::VectorDirectory, &directory)?,
        None,
    );
    Ok((dir, files))
}

/// Points as stored, without a graph (a run of chunks' vectors).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub enum Points {
    /// int8 points.
    Int8(Vec<QVec>),
    /// `f32` points.
    F32(Vec<FVec>),
}

impl Points {
    /// Number of points.
    pub fn len(&self) -> usize {
        match self {
            Points::Int8(p) => p.len(),
            Points::F32(p) => p.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The points at these positions, in that order.
    pub fn select(&self, positions: &[u32]) -> Points {
        fn pick<P: Clone>(v: &[P], at: &[u32]) -> Vec<P> {
            at.iter()
                .filter_map(|&i| v.get(i as usize).cloned())
                .collect()
        }
        match self {
            Points::Int8(p) => Points::Int8(pick(p, positions)),
            Points::F32(p) => Points::F32(pick(p, positions)),
        }
    }

    /// Every point dequantised, or `None` when one is not `dim` long, not
    /// finite, or (int8) carries a wrong `sq`.
    pub fn dequantize(&self, dim: usize) -> Option<Vec<Vec<f32>>> {
        match self {
            Points::Int8(p) => p
                .iter()
                .map(|q| {
                    (q.data.len() == dim
                        && q.scale.is_finite()
                        && q.sq
                            == q.data
                                .iter()
                                .map(|&x| i32::from(x) * i32::from(x))
                                .sum::<i32>())
                    .then(|| q.dequantize())
                })
                .collect(),
            Points::F32(p) => p
                .iter()
                .map(|f| {
                    (f.0.len() == dim && f.0.iter().all(|x| x.is_finite())).then(|| f.0.clone())
                })
                .collect(),
        }
    }
}

/// Every stored point, as stored, by chunk id.
fn points(v: &VectorIndex) -> Points {
    fn by_chunk<P: Clone + Point>(m: &HnswMap<P, u32>, n: usize) -> Vec<P> {
        let mut out: Vec<Option<P>> = vec![None; n];
        for ((_, p), &c) in m.iter().zip(&m.values) {
            out[c as usize] = Some(p.clone());
        }
        out.into_iter().flatten().collect()
    }
    match &v.store {
        VectorStore::Int8(m) => Points::Int8(by_chunk(m, v.len())),
        VectorStore::F32(m) => Points::F32(by_chunk(m, v.len())),
    }
}

impl WebIndex {
    /// Add the vector directory: later searches probe its partitions, and
    /// [`WebIndex::missing_partitions`] names those to fetch.
    pub fn add_vector_directory(&mut self, bytes: &[u8]) -> Result<(), CoreError> {
        let info = self
            .manifest
            .vector_directory()
            .ok_or_else(|| CoreError::Manifest {
                message: format!("{WEB_MANIFEST}: the index has no vector directory"),
            })?
            .clone();
        let d: VectorDirectory = decode_shard(&info, bytes)?;
        let n = self.corpus.data.chunks.len();
        let bad = |message: String| CoreError::Inconsistent {
            file: info.name.clone(),
            message,
        };
        d.ivf
            .check(n, d.spec.dimension as usize)
            .map_err(|e| e.in_file(&info.name))?;
        if d.sizes.len() != d.ivf.len() || d.hashes.len() != d.ivf.len() {
            return Err(bad(format!(
                "{} partition shards listed for {} partitions",
                d.sizes.len().min(d.hashes.len()),
                d.ivf.len()
            )));
        }
        if let Some(e) = &self.manifest.embedding {
            if e.spec != d.spec {
                return Err(bad("its embedding model differs from the manifest's".into()));
            }
        }
        self.corpus.chunk_vectors = vec![Vec::new(); n];
        self.corpus.partitions_loaded = vec![false; d.ivf.len()];
        self.partitions = d.shards();
        self.corpus.ivf = Some(d.ivf);
        Ok(())
    }

    /// The partitions that the last retrieval probed but that are not
    /// loaded (ids, sorted): add them and retrieve again. Empty: the last
    /// retrieval ran on every vector it needed.
    pub fn missing_partitions(&self) -> Vec<usize> {
        self.corpus
            .take_wanted_partitions()
            .into_iter()
            .filter(|&p| {
                !self
                    .corpus
                    .partitions_loaded
                    .get(p)
                    .copied()
                    .unwrap_or(true)
            })
            .collect()
    }

    /// The listed shard of partition `p`.
    pub fn partition_shard(&self, p: usize) -> Option<&ShardInfo> {
        self.partitions.get(p)
    }

    /// Add partition `p`'s shard.
    pub fn add_partition(&mut self, p: usize, bytes: &[u8]) -> Result<(), CoreError> {
        let info = self
            .partitions
            .get(p)
            .cloned()
            .ok_or_else(|| CoreError::Manifest {
                message: format!("the vector directory lists no partition {p}"),
            })?;
        let part: PartitionShard = decode_shard(&info, bytes)?;
        let bad = |message: &str| CoreError::Inconsistent {
            file: info.name.clone(),
            message: message.into(),
        };
        let ivf = self
            .corpus
            .ivf
            .as_ref()
            .ok_or_else(|| bad("no vector directory is loaded"))?;
        if part.partition as usize != p {
            return Err(bad("it holds another partition"));
        }
        let expected: Vec<u32> = ivf
            .partition_of
            .iter()
            .enumerate()
            .filter(|(_, &q)| q as usize == p)
            .map(|(c, _)| c as u32)
            .collect();
        if part.chunks != expected || part.points.len() != expected.len() {
            return Err(bad("its chunks differ from the directory's"));
        }
        let dim = ivf.centroids.first().map_or(0, |c| c.data.len());
        let vectors = part
            .points
            .dequantize(dim)
            .ok_or_else(|| bad("a point has the wrong length or values"))?;
        for (c, v) in part.chunks.into_iter().zip(vectors) {
            self.corpus.chunk_vectors[c as usize] = v;
        }
        self.corpus.partitions_loaded[p] = true;
        Ok(())
    }
}
