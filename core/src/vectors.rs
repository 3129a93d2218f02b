//! The vector index: one embedding per chunk, stored as int8 with a
//! per-vector scale (or as `f32`), searchable exactly or through an
//! instant-distance HNSW graph over the same points.
//!
//! Distances are squared L2, as FAISS `IndexFlatL2` reports them (the
//! paper's retriever; its reranker turns a distance `d` into
//! `1 / (1 + d)`). For unit vectors squared L2 is `2 - 2 cos`.
//!
//! The HNSW graph is *built* by the indexer (instant-distance builds with
//! rayon); this module only holds the types, searches, and measures recall,
//! so it stays free of threads and I/O.

use instant_distance::{HnswMap, Point, Search};
use serde::{Deserialize, Serialize};

use crate::embed::{EmbeddingSpec, Quantization};
use crate::error::CoreError;
use crate::format::{decode_data_file, encode_data_file, DataKind, HEADER_LEN};
use crate::hnsw::{StoredIndex, StoredStore};
use crate::ivf::{Ivf, DEFAULT_PARTITION_SIZE};

/// An int8 vector: `value[i] ≈ scale * data[i]`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct QVec {
    /// Dequantisation factor (`max |x| / 127`).
    pub scale: f32,
    /// `Σ data[i]²`, kept so that a distance costs one dot product.
    pub sq: i32,
    /// Quantised components.
    pub data: Vec<i8>,
}

pub(crate) fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .sum()
}

impl QVec {
    /// Quantise with a per-vector scale. Quantising the dequantised vector
    /// again gives the same bytes, so reused vectors stay bit-identical.
    pub fn quantize(v: &[f32]) -> QVec {
        let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        if max == 0.0 || !max.is_finite() {
            return QVec {
                scale: 0.0,
                sq: 0,
                data: vec![0; v.len()],
            };
        }
        let scale = max / 127.0;
        let data: Vec<i8> = v
            .iter()
            .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8)
            .collect();
        QVec {
            scale,
            sq: dot_i8(&data, &data),
            data,
        }
    }

    /// The approximate `f32` vector.
    pub fn dequantize(&self) -> Vec<f32> {
        self.data
            .iter()
            .map(|&q| f32::from(q) * self.scale)
            .collect()
    }
}

impl Point for QVec {
    fn distance(&self, other: &Self) -> f32 {
        let ab = dot_i8(&self.data, &other.data) as f32;
        let (sa, sb) = (self.scale, other.scale);
        (sa * sa * self.sq as f32 + sb * sb * other.sq as f32 - 2.0 * sa * sb * ab).max(0.0)
    }
}

/// A full-precision vector.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct FVec(pub Vec<f32>);

impl Point for FVec {
    fn distance(&self, other: &Self) -> f32 {
        squared_l2(&self.0, &other.0)
    }
}

pub(crate) fn squared_l2(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// Squared L2 between an `f32` query and a stored int8 vector, without
/// quantising the query.
pub(crate) fn squared_l2_q(query: &[f32], qq: f32, v: &QVec) -> f32 {
    let qx: f32 = query
        .iter()
        .zip(&v.data)
        .map(|(&q, &x)| q * f32::from(x))
        .sum();
    (qq + v.scale * v.scale * v.sq as f32 - 2.0 * v.scale * qx).max(0.0)
}

/// The points and the HNSW graph over them; map values are chunk ids.
#[derive(Serialize, Deserialize)]
pub enum VectorStore {
    /// int8 points.
    Int8(HnswMap<QVec, u32>),
    /// `f32` points.
    F32(HnswMap<FVec, u32>),
}

/// HNSW construction and search parameters, recorded for reproducibility.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct HnswParams {
    /// Candidate list size while building.
    pub ef_construction: u32,
    /// Candidate list size while searching.
    pub ef_search: u32,
    /// Seed of the layer assignment.
    pub seed: u64,
}

impl Default for HnswParams {
    fn default() -> Self {
        HnswParams {
            ef_construction: 100,
            ef_search: 100,
            seed: 0x5eed_c0de,
        }
    }
}

/// One search result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VectorHit {
    /// Chunk id.
    pub chunk: u32,
    /// Squared L2 distance between the query and the stored vector.
    pub distance: f32,
}

/// `vectors.bin`: every chunk's vector, the HNSW graph, and the key each
/// vector was computed for.
#[derive(Serialize, Deserialize)]
pub struct VectorIndex {
    /// The model that made the vectors.
    pub spec: EmbeddingSpec,
    /// How the points are stored.
    pub quantization: Quantization,
    /// HNSW parameters.
    pub hnsw: HnswParams,
    /// Per chunk id: the first 16 bytes of SHA-256 over the model id, the
    /// prompt format version and the exact embedded text. A re-index
    /// reuses a vector whose key is unchanged.
    pub keys: Vec<[u8; 16]>,
    /// Points and graph.
    pub store: VectorStore,
    /// The points' inverted-file partitions (the browser's unit of fetch,
    /// and the search of `[retrieval] ivf_probe`).
    pub ivf: Ivf,
    /// Per chunk id: position of its point in the store (rebuilt on load).
    #[serde(skip)]
    row_of_chunk: Vec<u32>,
}

impl VectorIndex {
    /// Assemble an index from a built store, checking that it holds exactly
    /// one vector of the right dimension per chunk, and partition it into
    /// partitions of about [`DEFAULT_PARTITION_SIZE`] vectors (seeded by
    /// the HNSW seed).
    pub fn new(
        spec: EmbeddingSpec,
        quantization: Quantization,
        hnsw: HnswParams,
        keys: Vec<[u8; 16]>,
        store: VectorStore,
    ) -> Result<Self, CoreError> {
        let mut v = VectorIndex {
            spec,
            quantization,
            hnsw,
            keys,
            store,
            ivf: Ivf::default(),
            row_of_chunk: Vec::new(),
        };
        v.check()?;
        v.partition(DEFAULT_PARTITION_SIZE);
        Ok(v)
    }

    /// Partition the stored points again, into partitions of about `size`
    /// vectors.
    pub fn partition(&mut self, size: usize) {
        let vectors = self.all_vectors();
        self.ivf = Ivf::build(
            &vectors,
            Ivf::partitions_for(vectors.len(), size),
            self.hnsw.seed,
        );
    }

    fn check(&mut self) -> Result<(), CoreError> {
        let (stored, points) = match &self.store {
            VectorStore::Int8(m) => (
                Quantization::Int8,
                PointsOf::Int8(m.iter().map(|(_, p)| p).collect(), &m.values),
            ),
            VectorStore::F32(m) => (
                Quantization::F32,
                PointsOf::F32(m.iter().map(|(_, p)| p).collect(), &m.values),
            ),
        };
        self.row_of_chunk = check_points(
            self.quantization,
            stored,
            self.keys.len(),
            self.spec.dimension as usize,
            &points,
        )?;
        Ok(())
    }

    /// Encode as the `vectors.bin` data file.
    pub fn encode(&self) -> Result<Vec<u8>, CoreError> {
        encode_data_file(DataKind::Vectors, self)
    }

    /// Decode and check a `vectors.bin` data file, its HNSW graph included.
    pub fn decode(bytes: &[u8]) -> Result<Self, CoreError> {
        let mut v: VectorIndex =
            decode_data_file(DataKind::Vectors.file_name(), DataKind::Vectors, bytes)?;
        v.check()?;
        v.ivf
            .check(v.len(), v.spec.dimension as usize)
            .map_err(|e| e.in_file(DataKind::Vectors.file_name()))?;
        // The header and checksum are checked: the payload follows it.
        let bad = |message: String| CoreError::Inconsistent {
            file: DataKind::Vectors.file_name().into(),
            message,
        };
        let stored: StoredIndex = crate::wire::Reader::decode_all(&bytes[HEADER_LEN..])
            .map_err(|e| bad(format!("cannot read the HNSW graph: {e}")))?;
        match &stored.store {
            StoredStore::Int8(m) => m.hnsw.check(),
            StoredStore::F32(m) => m.hnsw.check(),
        }
        .map_err(|e| bad(format!("HNSW graph: {e}")))?;
        Ok(v)
    }

    /// Number of vectors (= chunks).
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there are no vectors.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The stored vector of a chunk, dequantised.
    pub fn vector(&self, chunk: u32) -> Option<Vec<f32>> {
        let row = *self.row_of_chunk.get(chunk as usize)? as usize;
        Some(match &self.store {
            VectorStore::Int8(m) => m.iter().nth(row)?.1.dequantize(),
            VectorStore::F32(m) => m.iter().nth(row)?.1 .0.clone(),
        })
    }

    /// Every stored vector, dequantised, by chunk id.
    pub fn all_vectors(&self) -> Vec<Vec<f32>> {
        let mut out = vec![Vec::new(); self.len()];
        match &self.store {
            VectorStore::Int8(m) => {
                for ((_, p), &c) in m.iter().zip(&m.values) {
                    out[c as usize] = p.dequantize();
                }
            }
            VectorStore::F32(m) => {
                for ((_, p), &c) in m.iter().zip(&m.values) {
                    out[c as usize] = p.0.clone();
                }
            }
        }
        out
    }

    fn check_query(&self, query: &[f32]) -> Result<(), CoreError> {
        check_query_dimension(&self.spec, query)
    }

    /// Exact top-`k` by squared L2, ties broken by chunk id.
    pub fn search_exact(&self, query: &[f32], k: usize) -> Result<Vec<VectorHit>, CoreError> {
        self.check_query(query)?;
        let qq: f32 = query.iter().map(|x| x * x).sum();
        let mut hits: Vec<VectorHit> = match &self.store {
            VectorStore::Int8(m) => m
                .iter()
                .zip(&m.values)
                .map(|((_, p), &chunk)| VectorHit {
                    chunk,
                    distance: squared_l2_q(query, qq, p),
                })
                .collect(),
            VectorStore::F32(m) => m
                .iter()
                .zip(&m.values)
                .map(|((_, p), &chunk)| VectorHit {
                    chunk,
                    distance: squared_l2(query, &p.0),
                })
                .collect(),
        };
        Ok(top_k(&mut hits, k))
    }

    /// Approximate top-`k` through the HNSW graph. Distances are recomputed
    /// against the unquantised query, so they are comparable with
    /// [`VectorIndex::search_exact`].
    pub fn search_hnsw(&self, query: &[f32], k: usize) -> Result<Vec<VectorHit>, CoreError> {
        self.check_query(query)?;
        let qq: f32 = query.iter().map(|x| x * x).sum();
        let mut search = Search::default();
        let mut hits: Vec<VectorHit> = match &self.store {
            VectorStore::Int8(m) => m
                .search(&QVec::quantize(query), &mut search)
                .map(|item| VectorHit {
                    chunk: *item.value,
                    distance: squared_l2_q(query, qq, item.point),
                })
                .collect(),
            VectorStore::F32(m) => m
                .search(&FVec(query.to_vec()), &mut search)
                .map(|item| VectorHit {
                    chunk: *item.value,
                    distance: squared_l2(query, &item.point.0),
                })
                .collect(),
        };
        Ok(top_k(&mut hits, k))
    }

    /// Exact search when the index holds fewer than `exact_below` vectors
    /// (faster and exact there), HNSW otherwise.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        exact_below: usize,
    ) -> Result<Vec<VectorHit>, CoreError> {
        if self.len() < exact_below {
            self.search_exact(query, k)
        } else {
            self.search_hnsw(query, k)
        }
    }

    /// Mean share of the exact top-`k` that HNSW also returns, over the
    /// given queries.
    pub fn hnsw_recall(&self, queries: &[Vec<f32>], k: usize) -> Result<f64, CoreError> {
        if queries.is_empty() || k == 0 {
            return Ok(1.0);
        }
        let mut total = 0.0;
        for q in queries {
            let exact = self.search_exact(q, k)?;
            let approx = self.search_hnsw(q, k)?;
            if exact.is_empty() {
                total += 1.0;
                continue;
            }
            let found = exact
                .iter()
                .filter(|e| approx.iter().any(|a| a.chunk == e.chunk))
                .count();
            total += found as f64 / exact.len() as f64;
        }
        Ok(total / queries.len() as f64)
    }
}

/// The points of a vectors file in graph order, with each one's chunk.
pub(crate) enum PointsOf<'a> {
    /// int8 points.
    Int8(Vec<&'a QVec>, &'a [u32]),
    /// `f32` points.
    F32(Vec<&'a FVec>, &'a [u32]),
}

/// The checks of a vectors file's points (natively and in the browser):
/// the quantization recorded is the one stored, there are as many points
/// and chunks as keys, every point has the dimension and finite values
/// (an int8 one its own squared norm), and every chunk has one point.
/// Returns each chunk's row.
pub(crate) fn check_points(
    recorded: Quantization,
    stored: Quantization,
    n: usize,
    dim: usize,
    points: &PointsOf<'_>,
) -> Result<Vec<u32>, CoreError> {
    let bad = |message: String| CoreError::Inconsistent {
        file: DataKind::Vectors.file_name().into(),
        message,
    };
    let (values, lens): (&[u32], Vec<(usize, bool)>) = match points {
        PointsOf::Int8(ps, values) => (
            values,
            ps.iter()
                .map(|p| {
                    let ok = p.scale.is_finite() && p.sq == dot_i8(&p.data, &p.data);
                    (p.data.len(), ok)
                })
                .collect(),
        ),
        PointsOf::F32(ps, values) => (
            values,
            ps.iter()
                .map(|p| (p.0.len(), p.0.iter().all(|x| x.is_finite())))
                .collect(),
        ),
    };
    if stored != recorded {
        return Err(bad(format!(
            "quantization is recorded as {} but the points are {}",
            recorded.as_str(),
            stored.as_str()
        )));
    }
    if values.len() != n || lens.len() != n {
        return Err(bad(format!(
            "{n} keys but {} points and {} values",
            lens.len(),
            values.len()
        )));
    }
    if let Some(i) = lens.iter().position(|&(len, ok)| len != dim || !ok) {
        return Err(bad(format!(
            "point {i} has length {} or non-finite values (dimension {dim})",
            lens[i].0
        )));
    }
    let mut row = vec![u32::MAX; n];
    for (pos, &chunk) in values.iter().enumerate() {
        let slot = row
            .get_mut(chunk as usize)
            .ok_or_else(|| bad(format!("point {pos} names chunk {chunk} of {n}")))?;
        if *slot != u32::MAX {
            return Err(bad(format!("chunk {chunk} has two vectors")));
        }
        *slot = pos as u32;
    }
    Ok(row)
}

/// A query vector of another dimension than the index's is a model
/// mismatch.
pub(crate) fn check_query_dimension(spec: &EmbeddingSpec, query: &[f32]) -> Result<(), CoreError> {
    if query.len() != spec.dimension as usize {
        return Err(CoreError::ModelMismatch {
            field: "dimension".into(),
            index: spec.dimension.to_string(),
            query: query.len().to_string(),
        });
    }
    Ok(())
}

pub(crate) fn top_k(hits: &mut Vec<VectorHit>, k: usize) -> Vec<VectorHit> {
    let order = |a: &VectorHit, b: &VectorHit| {
        a.distance
            .total_cmp(&b.distance)
            .then(a.chunk.cmp(&b.chunk))
    };
    if k < hits.len() && k > 0 {
        hits.select_nth_unstable_by(k - 1, order);
    }
    hits.truncate(k);
    crate::sort::sort_long_by(hits, order);
    std::mem::take(hits)
}

/// Embedding key of one text: SHA-256 over model id, prompt format version
/// and text, cut to 16 bytes.
pub fn embedding_key(model_id: &str, prompt_format_version: u32, text: &str) -> [u8; 16] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(model_id.as_bytes());
    h.update([0]);
    h.update(prompt_format_version.to_le_bytes());
    h.update(text.as_bytes());
    let d = h.finalize();
    let mut out = [0u8; 16];
    out.copy_from_slice(&d[..16]);
    out
}

// How the web shards' reader decodes these types (`crate::wire`).
crate::wire::wire_struct!(QVec { scale, sq, data });
crate::wire::wire_struct!(HnswParams {
    ef_construction,
    ef_search,
    seed
});

impl crate::wire::Wire for FVec {
    fn read(r: &mut crate::wire::Reader<'_>) -> Self {
        FVec(crate::wire::Wire::read(r))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use instant_distance::Builder;

    fn unit(v: Vec<f32>) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect()
    }

    pub(crate) fn vectors(n: usize, dim: usize) -> Vec<Vec<f32>> {
        // A small deterministic generator; no randomness in core.
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        (0..n)
            .map(|_| {
                unit(
                    (0..dim)
                        .map(|_| {
                            s ^= s << 13;
                            s ^= s >> 7;
                            s ^= s << 17;
                            (s % 2001) as f32 / 1000.0 - 1.0
                        })
                        .collect(),
                )
            })
            .collect()
    }

    fn spec(dim: u32) -> EmbeddingSpec {
        EmbeddingSpec {
            model_id: "test".into(),
            dimension: dim,
            ..EmbeddingSpec::default()
        }
    }

    pub(crate) fn index(vs: &[Vec<f32>], quant: Quantization) -> VectorIndex {
        let ids: Vec<u32> = (0..vs.len() as u32).collect();
        let b = Builder::default()
            .seed(7)
            .ef_construction(100)
            .ef_search(100);
        let store = match quant {
            Quantization::Int8 => {
                VectorStore::Int8(b.build(vs.iter().map(|v| QVec::quantize(v)).collect(), ids))
            }
            Quantization::F32 => {
                VectorStore::F32(b.build(vs.iter().map(|v| FVec(v.clone())).collect(), ids))
            }
        };
        VectorIndex::new(
            spec(vs[0].len() as u32),
            quant,
            HnswParams::default(),
            vec![[0; 16]; vs.len()],
            store,
        )
        .unwrap()
    }

    #[test]
    fn quantisation_round_trips_and_is_idempotent() {
        let v = unit(vec![0.3, -0.7, 0.1, 0.0, 0.6]);
        let q = QVec::quantize(&v);
        let back = q.dequantize();
        for (a, b) in v.iter().zip(&back) {
            assert!((a - b).abs() <= q.scale / 2.0 + 1e-6);
        }
        assert_eq!(QVec::quantize(&back), q);
        assert_eq!(QVec::quantize(&[0.0, 0.0]).scale, 0.0);
    }

    #[test]
    fn int8_distance_matches_f32_distance() {
        let vs = vectors(2, 64);
        let (a, b) = (QVec::quantize(&vs[0]), QVec::quantize(&vs[1]));
        let exact = squared_l2(&vs[0], &vs[1]);
        assert!((a.distance(&b) - exact).abs() < 0.02, "{}", exact);
        let qq: f32 = vs[0].iter().map(|x| x * x).sum();
        assert!((squared_l2_q(&vs[0], qq, &b) - exact).abs() < 0.02);
        assert!(a.distance(&a) < 1e-4);
    }

    #[test]
    fn exact_search_finds_itself_first_and_hnsw_agrees() {
        let vs = vectors(600, 32);
        for quant in [Quantization::Int8, Quantization::F32] {
            let idx = index(&vs, quant);
            let hits = idx.search_exact(&vs[42], 5).unwrap();
            assert_eq!(hits[0].chunk, 42);
            assert!(hits.windows(2).all(|w| w[0].distance <= w[1].distance));
            let approx = idx.search_hnsw(&vs[42], 5).unwrap();
            assert_eq!(approx[0].chunk, 42);
            let recall = idx.hnsw_recall(&vs[..50], 10).unwrap();
            assert!(recall > 0.9, "{recall}");
            assert_eq!(idx.search(&vs[1], 3, 1000).unwrap()[0].chunk, 1);
            assert_eq!(idx.search(&vs[1], 3, 10).unwrap()[0].chunk, 1);
        }
    }

    #[test]
    fn round_trip_and_lookups() {
        let vs = vectors(40, 8);
        let idx = index(&vs, Quantization::Int8);
        let bytes = idx.encode().unwrap();
        let back = VectorIndex::decode(&bytes).unwrap();
        assert_eq!(back.encode().unwrap(), bytes);
        let v7 = back.vector(7).unwrap();
        assert!(squared_l2(&v7, &vs[7]) < 1e-3);
        assert_eq!(back.all_vectors()[7], v7);
        assert!(back.vector(40).is_none());
    }

    #[test]
    fn wrong_query_dimension_is_a_typed_error() {
        let vs = vectors(10, 8);
        let idx = index(&vs, Quantization::F32);
        assert!(matches!(
            idx.search_exact(&[0.0; 4], 3),
            Err(CoreError::ModelMismatch { field, .. }) if field == "dimension"
        ));
    }

    #[test]
    fn inconsistent_store_is_rejected() {
        let vs = vectors(10, 8);
        let ids: Vec<u32> = vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 8];
        let store = VectorStore::F32(
            Builder::default()
                .seed(1)
                .build(vs.iter().map(|v| FVec(v.clone())).collect(), ids),
        );
        let err = VectorIndex::new(
            spec(8),
            Quantization::F32,
            HnswParams::default(),
            vec![[0; 16]; 10],
            store,
        )
        .err()
        .unwrap();
        assert!(err.to_string().contains("two vectors"), "{err}");
    }

    #[test]
    fn keys_depend_on_model_version_and_text() {
        let a = embedding_key("m", 1, "text");
        assert_eq!(a, embedding_key("m", 1, "text"));
        assert_ne!(a, embedding_key("n", 1, "text"));
        assert_ne!(a, embedding_key("m", 2, "text"));
        assert_ne!(a, embedding_key("m", 1, "text "));
    }

    /// `bytes` (a `vectors.bin`) with its header's checksum made right again.
    fn reseal(mut bytes: Vec<u8>) -> Vec<u8> {
        use sha2::{Digest, Sha256};
        let sum = Sha256::digest(&bytes[HEADER_LEN..]);
        bytes[24..56].copy_from_slice(&sum);
        bytes
    }

    #[test]
    fn built_graphs_pass_the_graph_check() {
        for (n, quant) in [
            (1, Quantization::F32),
            (3, Quantization::Int8),
            (600, Quantization::Int8),
        ] {
            let v = index(&vectors(n, 16), quant);
            let bytes = v.encode().unwrap();
            let back = VectorIndex::decode(&bytes).unwrap();
            assert_eq!(
                back.search_hnsw(&vectors(1, 16)[0], 5).unwrap().len(),
                n.min(5)
            );
            let stored: StoredIndex =
                crate::wire::Reader::decode_all(&bytes[HEADER_LEN..]).unwrap();
            let StoredStore::Int8(m) = stored.store else {
                continue;
            };
            // Enough points for upper layers, each smaller than the one below.
            assert_eq!(m.hnsw.layers.is_empty(), n < 100, "{n} points");
        }
    }

    #[test]
    fn a_graph_neighbour_outside_the_points_is_rejected_on_load() {
        // Found by `cargo xtask fuzz` (index_data): a vectors.bin whose zero
        // layer names point 111 of 92 decoded, and its first HNSW search
        // panicked inside instant-distance.
        let bytes = index(&vectors(3, 2), Quantization::F32).encode().unwrap();
        // The zero layer: each node lists its neighbours (one-byte varints
        // here), then u32::MAX (0xfc and four 0xff bytes) ends the list.
        let end = [0xfc, 0xff, 0xff, 0xff, 0xff];
        let at = (HEADER_LEN..bytes.len() - 5)
            .find(|&i| bytes[i] < 3 && bytes[i + 1..i + 6] == end)
            .expect("a zero-layer node");
        let mut bad = bytes.clone();
        bad[at] = 100;
        let err = VectorIndex::decode(&reseal(bad)).err().expect("rejected");
        assert!(err.to_string().contains("HNSW graph"), "{err}");
        assert!(VectorIndex::decode(&bytes).is_ok());
    }
}
