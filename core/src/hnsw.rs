//! The vectors data file as it is stored (instant-distance's HNSW layout
//! included), and a search over it that visits, orders and returns exactly
//! what instant-distance's `Hnsw::search` does.
//!
//! It exists for two readers that cannot use instant-distance's own types:
//! - natively, [`crate::vectors::VectorIndex::decode`] reads the file a
//!   second time through [`StoredIndex`] (by hand, [`crate::wire`]) to
//!   check the graph before instant-distance walks it (a neighbour id past
//!   its layer would panic inside it);
//! - in the browser, the search module reads the single vectors shard into
//!   [`StoredVectors`] by hand ([`crate::wire`]), without serde or
//!   instant-distance's decoder, and searches it here: the module went from
//!   216,816 to 193,321 bytes gzipped (`gzip -9`) with it.
//!
//! The search is instant-distance 0.6's algorithm, step for step: start at
//! point 0 in the top layer; on each upper layer a greedy search with
//! `ef = 1` over `M` links, whose result seeds the layer below; on the zero
//! layer `ef = ef_search` over `2 M` links. Candidates are ordered by
//! distance, then point id, with distances compared as `OrderedFloat`
//! compares them. `tests/tests/web_vectors.rs` checks that the browser's
//! search returns the native one's chunks and distances with HNSW forced
//! and without.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use instant_distance::Point;

use crate::embed::{EmbeddingSpec, Quantization};
use crate::error::CoreError;
use crate::format::{data_file_payload, DataKind};
use crate::ivf::Ivf;
use crate::vectors::{
    check_points, check_query_dimension, squared_l2, squared_l2_q, top_k, FVec, HnswParams,
    PointsOf, QVec, VectorHit,
};
use crate::wire::{Reader, Wire, WireError};

/// instant-distance's `M`: neighbours per node in the upper layers.
const M: usize = 32;

/// [`crate::vectors::VectorIndex`]'s serialised layout, the HNSW graph's
/// private fields included.
pub(crate) struct StoredIndex {
    spec: EmbeddingSpec,
    quantization: Quantization,
    hnsw: HnswParams,
    keys: Vec<[u8; 16]>,
    pub(crate) store: StoredStore,
    ivf: Ivf,
}

/// [`crate::vectors::VectorStore`]'s layout (same variants, same order).
pub(crate) enum StoredStore {
    /// int8 points.
    Int8(StoredMap<QVec>),
    /// `f32` points.
    F32(StoredMap<FVec>),
}

/// `instant_distance::HnswMap`'s layout: the graph and each point's chunk.
pub(crate) struct StoredMap<P> {
    pub(crate) hnsw: StoredGraph<P>,
    values: Vec<u32>,
}

/// `instant_distance::Hnsw`'s layout: the points, the zero layer (one node
/// of `2 * M` neighbour ids per point) and the upper layers (`M` ids per
/// node), the lowest first; `u32::MAX` ends a node's list.
pub(crate) struct StoredGraph<P> {
    ef_search: usize,
    points: Vec<P>,
    zero: Vec<Links<{ 2 * M }>>,
    pub(crate) layers: Vec<Vec<Links<M>>>,
}

/// One node's neighbour ids (a fixed-size tuple of `PointId(u32)`).
pub(crate) struct Links<const N: usize>([u32; N]);

impl<const N: usize> Wire for Links<N> {
    fn read(r: &mut Reader<'_>) -> Self {
        Links(Wire::read(r))
    }
}

crate::wire::wire_struct!(StoredIndex {
    spec,
    quantization,
    hnsw,
    keys,
    store,
    ivf
});
crate::wire::wire_struct!(StoredMap<P> { hnsw, values });
crate::wire::wire_struct!(StoredGraph<P> {
    ef_search,
    points,
    zero,
    layers
});

impl Wire for StoredStore {
    fn read(r: &mut Reader<'_>) -> Self {
        match r.variant() {
            0 => StoredStore::Int8(Wire::read(r)),
            1 => StoredStore::F32(Wire::read(r)),
            v => {
                r.fail(format!("unknown variant {v} of the vector store"));
                StoredStore::Int8(StoredMap {
                    hnsw: StoredGraph {
                        ef_search: 0,
                        points: Vec::new(),
                        zero: Vec::new(),
                        layers: Vec::new(),
                    },
                    values: Vec::new(),
                })
            }
        }
    }
}

impl<P> StoredGraph<P> {
    /// Every id a search can reach lies inside the layer it indexes.
    pub(crate) fn check(&self) -> Result<(), CoreError> {
        let n = self.points.len();
        if self.zero.len() != n {
            return Err(CoreError::malformed(format!(
                "{n} points but {} zero-layer nodes",
                self.zero.len()
            )));
        }
        fn ids_below<const N: usize>(nodes: &[Links<N>], bound: usize) -> bool {
            nodes.iter().all(|node| {
                node.0
                    .iter()
                    .take_while(|&&id| id != u32::MAX)
                    .all(|&id| (id as usize) < bound)
            })
        }
        if !ids_below(&self.zero, n) {
            return Err(CoreError::malformed(
                "a zero-layer neighbour is not a point",
            ));
        }
        // A search starts at point 0 in the top layer and carries its
        // candidates down, so each layer must fit in the one below it.
        let mut below = n;
        for (i, layer) in self.layers.iter().enumerate() {
            if layer.len() > below || (layer.is_empty() && n > 0) {
                return Err(CoreError::malformed(format!(
                    "layer {} has {} nodes, the layer below {below}",
                    i + 1,
                    layer.len()
                )));
            }
            if !ids_below(layer, layer.len()) {
                return Err(CoreError::malformed(format!(
                    "a neighbour in layer {} is outside it",
                    i + 1
                )));
            }
            below = layer.len();
        }
        Ok(())
    }
}

/// A candidate of the search: `OrderedFloat`'s order on the distance (NaN
/// last and equal to itself, -0 equal to 0), then the point id.
#[derive(Clone, Copy)]
struct Candidate {
    distance: f32,
    pid: u32,
}

/// Distances as `OrderedFloat` orders them.
fn order(a: f32, b: f32) -> Ordering {
    a.partial_cmp(&b)
        .unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        order(self.distance, other.distance).then(self.pid.cmp(&other.pid))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Candidate {}

/// The state of one search (instant-distance's `Search`).
struct Walk<'a, P> {
    points: &'a [P],
    query: &'a P,
    visited: Vec<bool>,
    candidates: BinaryHeap<Reverse<Candidate>>,
    /// Nearest first, at most `ef`.
    nearest: Vec<Candidate>,
    ef: usize,
}

impl<P: Point> Walk<'_, P> {
    fn push(&mut self, pid: u32) {
        match self.visited.get_mut(pid as usize) {
            Some(seen) if !*seen => *seen = true,
            _ => return,
        }
        let new = Candidate {
            distance: self.query.distance(&self.points[pid as usize]),
            pid,
        };
        if let Err(at) = self.nearest.binary_search(&new) {
            if at < self.ef {
                self.nearest.insert(at, new);
                self.candidates.push(Reverse(new));
            }
        }
    }

    fn search_layer<const N: usize>(&mut self, layer: &[Links<N>], links: usize) {
        while let Some(Reverse(candidate)) = self.candidates.pop() {
            if let Some(furthest) = self.nearest.last() {
                if order(candidate.distance, furthest.distance) == Ordering::Greater {
                    break;
                }
            }
            if let Some(node) = layer.get(candidate.pid as usize) {
                for &pid in node.0.iter().take(links).take_while(|&&p| p != u32::MAX) {
                    self.push(pid);
                }
            }
            self.nearest.truncate(self.ef);
        }
    }

    /// The nearest become the next layer's entry points.
    fn cull(&mut self) {
        self.candidates.clear();
        self.visited.fill(false);
        for &c in &self.nearest {
            self.candidates.push(Reverse(c));
            if let Some(seen) = self.visited.get_mut(c.pid as usize) {
                *seen = true;
            }
        }
    }
}

impl<P: Point> StoredGraph<P> {
    /// The points instant-distance's search returns for `query`, nearest
    /// first (at most `ef_search`).
    fn search(&self, query: &P) -> Vec<u32> {
        if self.points.is_empty() {
            return Vec::new();
        }
        let mut walk = Walk {
            points: &self.points,
            query,
            visited: vec![false; self.points.len()],
            candidates: BinaryHeap::new(),
            nearest: Vec::new(),
            ef: 1,
        };
        walk.push(0);
        for layer in (0..=self.layers.len()).rev() {
            if layer == 0 {
                walk.ef = self.ef_search;
                walk.search_layer(&self.zero, 2 * M);
            } else {
                walk.ef = 1;
                walk.search_layer(&self.layers[layer - 1], M);
                walk.cull();
            }
        }
        walk.nearest.iter().map(|c| c.pid).collect()
    }
}

/// The single vectors shard as the browser holds it: the points in graph
/// order, each point's chunk, the graph and the partitions, searched as
/// [`crate::vectors::VectorIndex::search`] searches (exactly below
/// `exact_below` vectors, through the graph above).
pub struct StoredVectors {
    spec: EmbeddingSpec,
    hnsw: HnswParams,
    store: StoredStore,
    ivf: Ivf,
}

impl StoredVectors {
    /// Read and check a `vectors.bin` data file: header, checksum, points,
    /// chunks, graph and partitions, with what
    /// [`crate::vectors::VectorIndex::decode`] checks.
    pub fn decode(bytes: &[u8]) -> Result<Self, CoreError> {
        let file = DataKind::Vectors.file_name();
        let payload = data_file_payload(file, DataKind::Vectors, bytes)?;
        let stored: StoredIndex =
            Reader::decode_all(payload).map_err(|e: WireError| CoreError::Decode {
                file: file.into(),
                message: e.to_string(),
            })?;
        let n = stored.keys.len();
        let dim = stored.spec.dimension as usize;
        let (kind, points) = match &stored.store {
            StoredStore::Int8(m) => (
                Quantization::Int8,
                PointsOf::Int8(m.hnsw.points.iter().collect(), &m.values),
            ),
            StoredStore::F32(m) => (
                Quantization::F32,
                PointsOf::F32(m.hnsw.points.iter().collect(), &m.values),
            ),
        };
        check_points(stored.quantization, kind, n, dim, &points)?;
        stored.ivf.check(n, dim).map_err(|e| e.in_file(file))?;
        match &stored.store {
            StoredStore::Int8(m) => m.hnsw.check(),
            StoredStore::F32(m) => m.hnsw.check(),
        }
        .map_err(|e| CoreError::Inconsistent {
            file: file.into(),
            message: format!("HNSW graph: {e}"),
        })?;
        Ok(StoredVectors {
            spec: stored.spec,
            hnsw: stored.hnsw,
            store: stored.store,
            ivf: stored.ivf,
        })
    }

    /// Number of vectors (= chunks).
    pub fn len(&self) -> usize {
        match &self.store {
            StoredStore::Int8(m) => m.values.len(),
            StoredStore::F32(m) => m.values.len(),
        }
    }

    /// Whether there are no vectors.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The embedding model the vectors come from.
    pub fn spec(&self) -> &EmbeddingSpec {
        &self.spec
    }

    /// The partitions.
    pub fn ivf(&self) -> &Ivf {
        &self.ivf
    }

    /// The HNSW build parameters (their seed also seeds the product codes).
    pub fn hnsw_params(&self) -> &HnswParams {
        &self.hnsw
    }

    /// Every vector, dequantised, indexed by chunk id.
    pub fn all_vectors(&self) -> Vec<Vec<f32>> {
        let mut out = vec![Vec::new(); self.len()];
        match &self.store {
            StoredStore::Int8(m) => {
                for (p, &c) in m.hnsw.points.iter().zip(&m.values) {
                    out[c as usize] = p.dequantize();
                }
            }
            StoredStore::F32(m) => {
                for (p, &c) in m.hnsw.points.iter().zip(&m.values) {
                    out[c as usize] = p.0.clone();
                }
            }
        }
        out
    }

    /// The `k` nearest chunks: exact when there are fewer than
    /// `exact_below` vectors, through the graph otherwise, with the
    /// distances [`crate::vectors::VectorIndex::search`] gives.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        exact_below: usize,
    ) -> Result<Vec<VectorHit>, CoreError> {
        check_query_dimension(&self.spec, query)?;
        let qq: f32 = query.iter().map(|x| x * x).sum();
        let exact = self.len() < exact_below;
        let mut hits: Vec<VectorHit> = match &self.store {
            StoredStore::Int8(m) => {
                let rows = if exact {
                    (0..m.values.len() as u32).collect()
                } else {
                    m.hnsw.search(&QVec::quantize(query))
                };
                rows.into_iter()
                    .map(|pid| VectorHit {
                        chunk: m.values[pid as usize],
                        distance: squared_l2_q(query, qq, &m.hnsw.points[pid as usize]),
                    })
                    .collect()
            }
            StoredStore::F32(m) => {
                let rows = if exact {
                    (0..m.values.len() as u32).collect()
                } else {
                    m.hnsw.search(&FVec(query.to_vec()))
                };
                rows.into_iter()
                    .map(|pid| VectorHit {
                        chunk: m.values[pid as usize],
                        distance: squared_l2(query, &m.hnsw.points[pid as usize].0),
                    })
                    .collect()
            }
        };
        Ok(top_k(&mut hits, k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vectors::tests::{index, vectors};
    use crate::vectors::VectorIndex;

    fn hits(h: Vec<VectorHit>) -> Vec<(u32, u32)> {
        h.into_iter()
            .map(|h| (h.chunk, h.distance.to_bits()))
            .collect()
    }

    /// The browser's reading and search of a vectors file give what
    /// instant-distance gives natively: the same chunks, in the same order,
    /// at the same distances, through the graph and exactly.
    #[test]
    fn stored_vectors_search_as_the_native_index_does() {
        for (n, quant) in [
            (2_000, Quantization::Int8),
            (700, Quantization::F32),
            (1, Quantization::Int8),
        ] {
            let bytes = index(&vectors(n, 16), quant).encode().unwrap();
            let native = VectorIndex::decode(&bytes).unwrap();
            let web = StoredVectors::decode(&bytes).unwrap();
            assert_eq!(web.len(), n);
            assert_eq!(web.all_vectors(), native.all_vectors());
            let queries = vectors(60, 16);
            for (i, q) in queries.iter().enumerate() {
                let k = 1 + i % 25;
                assert_eq!(
                    hits(web.search(q, k, 0).unwrap()),
                    hits(native.search_hnsw(q, k).unwrap()),
                    "{n} points, query {i}: graph search"
                );
                assert_eq!(
                    hits(web.search(q, k, usize::MAX).unwrap()),
                    hits(native.search_exact(q, k).unwrap()),
                    "{n} points, query {i}: exact search"
                );
            }
            assert!(web.search(&[0.0; 3], 5, 0).is_err());
        }
    }

    /// With a small `ef_search` the graph search is far from exact, so
    /// agreeing with instant-distance means following its steps.
    #[test]
    fn an_approximate_search_follows_instant_distance_step_for_step() {
        use crate::vectors::VectorStore;
        let vs = vectors(3_000, 12);
        let points = vs.iter().map(|v| QVec::quantize(v)).collect();
        // On one thread, as the indexer builds it: instant-distance inserts
        // in parallel, and the graph (so the count below) would vary with
        // the scheduling.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("one build thread");
        let map = pool.install(|| {
            instant_distance::Builder::default()
                .seed(11)
                .ef_construction(16)
                .ef_search(3)
                .build(points, (0..vs.len() as u32).rev().collect())
        });
        let spec = EmbeddingSpec {
            model_id: "test".into(),
            dimension: 12,
            ..EmbeddingSpec::default()
        };
        let native = VectorIndex::new(
            spec,
            Quantization::Int8,
            HnswParams::default(),
            vec![[0; 16]; vs.len()],
            VectorStore::Int8(map),
        )
        .unwrap();
        let web = StoredVectors::decode(&native.encode().unwrap()).unwrap();
        let mut approximate = 0;
        for (i, q) in vectors(200, 12).iter().enumerate() {
            let graph = hits(native.search_hnsw(q, 3).unwrap());
            assert_eq!(hits(web.search(q, 3, 0).unwrap()), graph, "query {i}");
            approximate += usize::from(graph != hits(native.search_exact(q, 3).unwrap()));
        }
        // 8 of the 200 differ from the exact top 3 (deterministic: the
        // graph is built on one thread).
        assert!(
            approximate >= 5,
            "only {approximate} of 200 searches were approximate"
        );
    }

    #[test]
    fn damaged_files_are_typed_errors() {
        let bytes = index(&vectors(300, 8), Quantization::Int8)
            .encode()
            .unwrap();
        for cut in [0, 10, 60, bytes.len() / 2, bytes.len() - 1] {
            assert!(
                StoredVectors::decode(&bytes[..cut]).is_err(),
                "cut at {cut}"
            );
        }
    }
}
