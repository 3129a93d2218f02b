//! The vectors of a site ranked with `[retrieval] ivf_probe > 0`: one
//! small directory (the centroids, two bytes per chunk and the product
//! codebooks, see [`crate::ivf`] and [`crate::pq`]), one shard per
//! partition with its chunks' product codes, and refine blocks with the
//! int8 vectors of [`REFINE_BLOCK`] chunks each. Semantic search fetches
//! the directory once, then the partitions a question probes, then the
//! blocks of the few chunks it refines, instead of every vector of the
//! corpus.
//!
//! The manifest lists the directory; the directory lists the partition
//! shards and each partition shard its refine blocks (name, size,
//! SHA-256), so the manifest does not grow with the corpus and every shard
//! is still checked against a hash listed by a checked shard.

use serde::Serialize;

use super::shard::{decode_shard, encode_shard, shard, Fetched, ShardHash, SHARD_HASH_BYTES};
use super::{ShardInfo, ShardKind, WebIndex, WEB_MANIFEST};
use crate::embed::{EmbeddingSpec, Quantization};
use crate::error::CoreError;
use crate::ivf::Ivf;
use crate::pq::{ProductCodes, ProductQuantizer};
use crate::retrieve::{PartitionedVectors, REFINE_BLOCK};
use instant_distance::{HnswMap, Point};

use crate::vectors::{FVec, QVec, VectorIndex, VectorStore};

/// The vector directory shard.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct VectorDirectory {
    /// The model that made the vectors.
    pub spec: EmbeddingSpec,
    /// How the points are stored.
    pub quantization: Quantization,
    /// Centroids, each chunk's partition and residual.
    pub ivf: Ivf,
    /// The product codebooks of the partition shards' codes.
    pub pq: ProductQuantizer,
    /// Per partition, in partition order: its shard's size in bytes.
    pub sizes: Vec<u64>,
    /// Per partition: its shard's SHA-256 (the shard's name is
    /// `shards/partition-<hex>.bin`).
    pub hashes: Vec<ShardHash>,
}

/// The listed shards of a kind, from their sizes and hashes.
fn listed(kind: ShardKind, sizes: &[u64], hashes: &[ShardHash]) -> Vec<ShardInfo> {
    sizes
        .iter()
        .zip(hashes)
        .map(|(&bytes, hash)| ShardInfo::hashed(kind, hex::encode(hash), bytes, None))
        .collect()
}

/// One partition: its chunks (ascending), their product codes, and the
/// refine blocks that hold their int8 vectors.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct PartitionShard {
    /// Partition id.
    pub partition: u32,
    /// Chunk ids, ascending.
    pub chunks: Vec<u32>,
    /// Their codes, one run of `subspaces` bytes per chunk, same order.
    pub codes: Vec<u8>,
    /// Per refine block of the partition (chunks in runs of
    /// [`REFINE_BLOCK`]): its shard's size in bytes.
    pub block_sizes: Vec<u64>,
    /// Per refine block: its shard's SHA-256.
    pub block_hashes: Vec<ShardHash>,
}

/// The int8 (or `f32`) vectors of one run of a partition's chunks.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct BlockShard {
    /// Partition id.
    pub partition: u32,
    /// Position of the run among the partition's runs.
    pub run: u32,
    /// Chunk ids, ascending.
    pub chunks: Vec<u32>,
    /// Their points, in the same order.
    pub points: Points,
}

/// The directory shard and every other vector shard's `(path, bytes)`.
pub(super) type Partitioned = ((ShardInfo, Vec<u8>), Vec<(String, Vec<u8>)>);

/// A shard's SHA-256 as bytes.
fn hash_of(info: &ShardInfo) -> Result<ShardHash, CoreError> {
    let mut hash = [0u8; SHARD_HASH_BYTES];
    hex::decode_to_slice(&info.sha256, &mut hash).map_err(|e| CoreError::Encode {
        file: info.name.clone(),
        message: e.to_string(),
    })?;
    Ok(hash)
}

/// Lay out `v` as a directory, one shard per partition and its refine
/// blocks.
pub(super) fn partitioned(v: &VectorIndex) -> Result<Partitioned, CoreError> {
    let points = points(v);
    let codes = ProductCodes::build(&v.all_vectors(), &v.ivf, v.hnsw.seed);
    let (mut sizes, mut hashes) = (Vec::new(), Vec::new());
    let mut files = Vec::new();
    for (p, chunks) in v.ivf.lists().into_iter().enumerate() {
        let (mut block_sizes, mut block_hashes) = (Vec::new(), Vec::new());
        for (run, members) in chunks.chunks(REFINE_BLOCK).enumerate() {
            let block = BlockShard {
                partition: p as u32,
                run: run as u32,
                chunks: members.to_vec(),
                points: points.select(members),
            };
            let (info, bytes) = shard(
                ShardKind::Block,
                encode_shard(ShardKind::Block, &block)?,
                None,
            );
            block_sizes.push(info.bytes);
            block_hashes.push(hash_of(&info)?);
            files.push((info.name, bytes));
        }
        let part = PartitionShard {
            partition: p as u32,
            codes: chunks
                .iter()
                .flat_map(|&c| codes.code(c as usize).to_vec())
                .collect(),
            chunks,
            block_sizes,
            block_hashes,
        };
        let (info, bytes) = shard(
            ShardKind::Partition,
            encode_shard(ShardKind::Partition, &part)?,
            None,
        );
        sizes.push(info.bytes);
        hashes.push(hash_of(&info)?);
        files.push((info.name, bytes));
    }
    let directory = VectorDirectory {
        spec: v.spec.clone(),
        quantization: v.quantization,
        ivf: v.ivf.clone(),
        pq: codes.pq,
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
#[derive(Serialize, Clone, Debug, PartialEq)]
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

/// A listed shard's value, or a typed error saying what is not listed.
fn decode_listed<T: crate::wire::Wire>(
    info: Option<&ShardInfo>,
    unlisted: impl FnOnce() -> String,
    bytes: Fetched<'_>,
) -> Result<(ShardInfo, T), CoreError> {
    let info = info.cloned().ok_or_else(|| CoreError::Manifest {
        message: unlisted(),
    })?;
    let value = decode_shard(&info, bytes)?;
    Ok((info, value))
}

/// The error of a shard whose content disagrees with what lists it.
fn inconsistent(info: &ShardInfo) -> impl Fn(&str) -> CoreError + '_ {
    |message| CoreError::Inconsistent {
        file: info.name.clone(),
        message: message.into(),
    }
}

/// The partition shards and refine blocks a loaded directory lists.
#[derive(Default)]
pub(super) struct VectorShards {
    /// Per partition: its shard.
    partitions: Vec<ShardInfo>,
    /// Per refine block: its shard, once its partition's shard is loaded.
    blocks: Vec<Option<ShardInfo>>,
}

impl WebIndex {
    /// Add the vector directory: later searches probe its partitions, and
    /// [`WebIndex::missing_partitions`] and [`WebIndex::missing_blocks`]
    /// name those to fetch.
    pub fn add_vector_directory<'a>(
        &mut self,
        bytes: impl Into<Fetched<'a>>,
    ) -> Result<(), CoreError> {
        let info = self
            .manifest
            .vector_directory()
            .ok_or_else(|| CoreError::Manifest {
                message: format!("{WEB_MANIFEST}: the index has no vector directory"),
            })?
            .clone();
        let d: VectorDirectory = decode_shard(&info, bytes.into())?;
        let n = self.corpus.data.chunks.len();
        let bad = |message: String| CoreError::Inconsistent {
            file: info.name.clone(),
            message,
        };
        let dim = d.spec.dimension as usize;
        d.ivf.check(n, dim).map_err(|e| e.in_file(&info.name))?;
        if n > 0 {
            d.pq.check(dim).map_err(|e| e.in_file(&info.name))?;
        }
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
        let partitions = listed(ShardKind::Partition, &d.sizes, &d.hashes);
        let pv = PartitionedVectors::empty(d.ivf, 0, Some(ProductCodes::empty(d.pq, n)));
        self.vector_shards = VectorShards {
            partitions,
            blocks: vec![None; pv.blocks()],
        };
        self.corpus.chunk_vectors = vec![Vec::new(); n];
        self.corpus.partitioned = Some(pv);
        Ok(())
    }

    /// The partitions that the last retrieval probed but that are not
    /// loaded (ids, sorted): add them and retrieve again.
    pub fn missing_partitions(&self) -> Vec<usize> {
        self.corpus
            .partitioned
            .as_ref()
            .map(|pv| pv.take_wanted_partitions())
            .unwrap_or_default()
    }

    /// The refine blocks that the last retrieval refined but that are not
    /// loaded (ids, sorted): add them and retrieve again. With
    /// [`WebIndex::missing_partitions`] and the keyword postings empty, the
    /// last retrieval ran on everything it needed.
    pub fn missing_blocks(&self) -> Vec<usize> {
        self.corpus
            .partitioned
            .as_ref()
            .map(|pv| pv.take_wanted_blocks())
            .unwrap_or_default()
    }

    /// The listed shard of partition `p`.
    pub fn partition_shard(&self, p: usize) -> Option<&ShardInfo> {
        self.vector_shards.partitions.get(p)
    }

    /// The listed shard of refine block `b` (known once its partition is
    /// loaded).
    pub fn block_shard(&self, b: usize) -> Option<&ShardInfo> {
        self.vector_shards.blocks.get(b)?.as_ref()
    }

    /// Add partition `p`'s shard: its chunks' codes, and its blocks' list.
    pub fn add_partition<'a>(
        &mut self,
        p: usize,
        bytes: impl Into<Fetched<'a>>,
    ) -> Result<(), CoreError> {
        let (info, part): (_, PartitionShard) = decode_listed(
            self.vector_shards.partitions.get(p),
            || format!("the vector directory lists no partition {p}"),
            bytes.into(),
        )?;
        let bad = inconsistent(&info);
        let pv = self
            .corpus
            .partitioned
            .as_mut()
            .ok_or_else(|| bad("no vector directory is loaded"))?;
        if part.partition as usize != p {
            return Err(bad("it holds another partition"));
        }
        if part.chunks != pv.members[p] {
            return Err(bad("its chunks differ from the directory's"));
        }
        let runs = part.chunks.len().div_ceil(REFINE_BLOCK);
        if part.block_sizes.len() != runs || part.block_hashes.len() != runs {
            return Err(bad("it lists the wrong number of refine blocks"));
        }
        let centroid = pv.ivf.centroids[p].dequantize();
        let codes = pv
            .codes_mut()
            .ok_or_else(|| bad("no product codebooks are loaded"))?;
        let m = codes.subspaces();
        if part.codes.len() != part.chunks.len() * m {
            return Err(bad("its codes do not fit its chunks"));
        }
        for (&c, code) in part.chunks.iter().zip(part.codes.chunks(m.max(1))) {
            codes.set(c as usize, code, &centroid);
        }
        let first = pv.block_start[p] as usize;
        for (i, info) in listed(ShardKind::Block, &part.block_sizes, &part.block_hashes)
            .into_iter()
            .enumerate()
        {
            self.vector_shards.blocks[first + i] = Some(info);
        }
        pv.partitions_loaded[p] = true;
        Ok(())
    }

    /// Add refine block `b`'s shard: the vectors of its chunks.
    pub fn add_block<'a>(
        &mut self,
        b: usize,
        bytes: impl Into<Fetched<'a>>,
    ) -> Result<(), CoreError> {
        let (info, block): (_, BlockShard) = decode_listed(
            self.block_shard(b),
            || format!("no loaded partition lists refine block {b}"),
            bytes.into(),
        )?;
        let bad = inconsistent(&info);
        let pv = self
            .corpus
            .partitioned
            .as_mut()
            .ok_or_else(|| bad("no vector directory is loaded"))?;
        let (p, run, chunks) = pv
            .block_chunks(b as u32)
            .ok_or_else(|| bad("the directory has no such block"))?;
        if block.partition as usize != p
            || block.run as usize != run
            || block.chunks != chunks
            || block.points.len() != chunks.len()
        {
            return Err(bad("its chunks differ from its partition's"));
        }
        let dim = pv.ivf.centroids.first().map_or(0, |c| c.data.len());
        let vectors = block
            .points
            .dequantize(dim)
            .ok_or_else(|| bad("a point has the wrong length or values"))?;
        for (c, v) in block.chunks.into_iter().zip(vectors) {
            self.corpus.chunk_vectors[c as usize] = v;
        }
        pv.blocks_loaded[b] = true;
        Ok(())
    }
}

// How the browser reads these types without serde (`crate::wire`).
crate::wire::wire_struct!(VectorDirectory {
    spec,
    quantization,
    ivf,
    pq,
    sizes,
    hashes
});
crate::wire::wire_struct!(PartitionShard {
    partition,
    chunks,
    codes,
    block_sizes,
    block_hashes
});
crate::wire::wire_struct!(BlockShard {
    partition,
    run,
    chunks,
    points
});

impl crate::wire::Wire for Points {
    fn read(r: &mut crate::wire::Reader<'_>) -> Self {
        match r.variant() {
            0 => Points::Int8(crate::wire::Wire::read(r)),
            1 => Points::F32(crate::wire::Wire::read(r)),
            v => {
                r.fail(format!("unknown variant {v} of Points"));
                Points::Int8(Vec::new())
            }
        }
    }
}
