//! The partitioned vectors as retrieval sees them: the partitions
//! ([`crate::ivf`]), their product codes ([`crate::pq`]), the refine
//! blocks that hold the int8 vectors, and which of these are loaded.
//!
//! It exists so that one place knows what a search under `[retrieval]
//! ivf_probe` reads and what it still lacks. Natively everything is
//! loaded and the codes are derived from the vectors on the first probe;
//! in the browser the vector directory brings the partitions and the
//! codebooks, a partition shard the codes of its chunks, and a refine
//! block the int8 vectors of [`REFINE_BLOCK`] of them. A retrieval records
//! the partitions and blocks it lacked; the caller fetches them and
//! retrieves again, until nothing is lacking: then it ranked exactly as
//! the CLI.

use std::sync::OnceLock;

use crate::ivf::Ivf;
use crate::lexical::Wanted;
use crate::pq::ProductCodes;

/// Vectors per refine block: the browser fetches the int8 vectors of the
/// chunks it refines in blocks of this many chunks of one partition.
/// Measured with `codegloss partitions` on a 44k-chunk codebase (166
/// questions, probe 128, refine 40, recall@10 0.950 either way): blocks of
/// 8 fetched 417 / 504 KiB a question (p50 / p95), blocks of 4 (with the
/// 128-bit shard hashes of web format 9) 394 / 493: most refined chunks sit
/// in blocks of their own, so smaller blocks send fewer unused vectors.
/// Each partition shard lists a size and hash per block, so still smaller
/// blocks enlarge every probed partition. With 6-component product codes
/// (web format 15; probe 128, refine 100, recall 0.956), p50 / p95 / max
/// of a question alone: blocks of 4 350 / 415 / 457 KiB, of 2 330 / 396 /
/// 438, of 1 332 / 402 / 449 (8.6k chunks, probe 32, refine 60: 133 / 155 /
/// 166, 121 / 139 / 148, 118 / 139 / 145). But over a reader's sequence of
/// questions in the browser (`cargo xtask bench site`), where partitions
/// and blocks fetched before are reused, blocks of 2 fetched more at the
/// median (222 against 217 KB on the 44k chunks, 96 against 89 KB on the
/// 8.6k), for twice the block files and a 3–4% larger site: not kept.
pub const REFINE_BLOCK: usize = 4;

/// Partitions, codes and what of them is loaded.
pub struct PartitionedVectors {
    /// The partitions.
    pub ivf: Ivf,
    /// Chunk ids of every partition, ascending.
    pub members: Vec<Vec<u32>>,
    /// The mean of the chunks' radii ([`crate::hubness::mean_radius`]).
    pub mean_radius: f32,
    /// Per partition: the id of its first refine block (blocks are
    /// numbered partition after partition).
    pub block_start: Vec<u32>,
    /// Per chunk: its refine block.
    block_of: Vec<u32>,
    /// The product codes: set by the browser from the directory, or
    /// derived from the vectors on first use.
    codes: OnceLock<ProductCodes>,
    /// Seed of the codebooks when they are derived.
    seed: u64,
    /// Per partition: whether its codes are loaded.
    pub partitions_loaded: Vec<bool>,
    /// Per refine block: whether its vectors are loaded.
    pub blocks_loaded: Vec<bool>,
    partitions_wanted: Wanted,
    blocks_wanted: Wanted,
}

impl PartitionedVectors {
    /// Everything loaded; the codes are derived on first use from the
    /// vectors, with `seed` (the indexer's: the vectors' HNSW seed).
    pub fn complete(ivf: Ivf, seed: u64) -> Self {
        let mut s = Self::empty(ivf, seed, None);
        s.partitions_loaded.fill(true);
        s.blocks_loaded.fill(true);
        s
    }

    /// Nothing loaded but the partitions and (when given) the codebooks.
    pub fn empty(ivf: Ivf, seed: u64, codes: Option<ProductCodes>) -> Self {
        let members = ivf.lists();
        let mut block_start = Vec::with_capacity(members.len());
        let mut block_of = vec![0u32; ivf.partition_of.len()];
        let mut next = 0u32;
        for list in &members {
            block_start.push(next);
            for (i, &c) in list.iter().enumerate() {
                block_of[c as usize] = next + (i / REFINE_BLOCK) as u32;
            }
            next += list.len().div_ceil(REFINE_BLOCK) as u32;
        }
        let once = OnceLock::new();
        if let Some(c) = codes {
            let _ = once.set(c);
        }
        PartitionedVectors {
            mean_radius: crate::hubness::mean_radius(&ivf.radius),
            partitions_loaded: vec![false; members.len()],
            blocks_loaded: vec![false; next as usize],
            ivf,
            members,
            block_start,
            block_of,
            codes: once,
            seed,
            partitions_wanted: Wanted::default(),
            blocks_wanted: Wanted::default(),
        }
    }

    /// Number of refine blocks.
    pub fn blocks(&self) -> usize {
        self.blocks_loaded.len()
    }

    /// The refine block of a chunk.
    pub fn block_of(&self, chunk: u32) -> Option<u32> {
        self.block_of.get(chunk as usize).copied()
    }

    /// The chunks of refine block `b`: its partition, its position among
    /// the partition's blocks, and its chunk ids.
    pub fn block_chunks(&self, b: u32) -> Option<(usize, usize, &[u32])> {
        let p = self
            .block_start
            .partition_point(|&s| s <= b)
            .checked_sub(1)?;
        let i = (b - self.block_start[p]) as usize;
        let list = &self.members[p];
        let from = i * REFINE_BLOCK;
        (from < list.len()).then(|| (p, i, &list[from..(from + REFINE_BLOCK).min(list.len())]))
    }

    /// The product codes, derived from `vectors` (chunk order) when no
    /// directory set them.
    pub fn codes(&self, vectors: &[Vec<f32>]) -> &ProductCodes {
        self.codes
            .get_or_init(|| ProductCodes::build(vectors, &self.ivf, self.seed))
    }

    /// The codes to fill in (the browser's, set from the directory).
    pub fn codes_mut(&mut self) -> Option<&mut ProductCodes> {
        self.codes.get_mut()
    }

    /// Record a probed partition whose codes are not loaded.
    pub(super) fn want_partition(&self, p: usize) {
        if !self.partitions_loaded.get(p).copied().unwrap_or(true) {
            self.partitions_wanted.lock().insert(p);
        }
    }

    /// Record a refined chunk whose vector is not loaded.
    pub(super) fn want_block_of(&self, chunk: u32) {
        if let Some(b) = self.block_of(chunk) {
            if !self.blocks_loaded.get(b as usize).copied().unwrap_or(true) {
                self.blocks_wanted.lock().insert(b as usize);
            }
        }
    }

    /// The partitions wanted since the last call, sorted.
    pub fn take_wanted_partitions(&self) -> Vec<usize> {
        std::mem::take(&mut *self.partitions_wanted.lock())
            .into_iter()
            .collect()
    }

    /// The refine blocks wanted since the last call, sorted.
    pub fn take_wanted_blocks(&self) -> Vec<usize> {
        std::mem::take(&mut *self.blocks_wanted.lock())
            .into_iter()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_number_partition_after_partition() {
        // Partition 0 holds REFINE_BLOCK + 2 chunks (2 blocks), partition 1
        // holds chunks 1 and 4.
        let n = REFINE_BLOCK + 4;
        let mut partition_of = vec![0; n];
        partition_of[1] = 1;
        partition_of[4] = 1;
        let ivf = Ivf {
            centroids: vec![crate::vectors::QVec::quantize(&[1.0]); 2],
            partition_of,
            residual_sq: vec![0; n],
            radius: vec![0; n],
        };
        let s = PartitionedVectors::empty(ivf, 1, None);
        assert_eq!(s.blocks(), 3);
        assert_eq!(s.block_start, vec![0, 2]);
        assert_eq!(s.block_of(0), Some(0));
        assert_eq!(s.block_of(n as u32 - 1), Some(1));
        assert_eq!(s.block_of(4), Some(2));
        let (p, i, chunks) = s.block_chunks(1).unwrap();
        assert_eq!((p, i), (0, 1));
        assert_eq!(chunks, &[n as u32 - 2, n as u32 - 1]);
        assert_eq!(s.block_chunks(2).unwrap().2, &[1, 4]);
        assert!(s.block_chunks(3).is_none());
        s.want_block_of(4);
        s.want_partition(1);
        assert_eq!(s.take_wanted_blocks(), vec![2]);
        assert_eq!(s.take_wanted_partitions(), vec![1]);
        assert!(s.take_wanted_blocks().is_empty());
    }
}
