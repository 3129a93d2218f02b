//! A loaded index with the lookup tables retrieval needs: chunks per
//! entity, file names and base names, symbol and module names, graph
//! adjacency, and the vocabulary of callable names. Built once after
//! loading (natively or in the browser), in linear time.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::CoreError;
use crate::format::IndexData;
use crate::ivf::Probe;
use crate::lexical::LexicalIndex;
use crate::model::{EdgeKind, EntityKind};
use crate::text::{base_name, file_name};
use crate::vectors::VectorIndex;

use super::features::TextFeatures;
use super::graph::Graph;
use super::names::NameLookups;
use super::partitioned::PartitionedVectors;

/// Index data plus lookups.
pub struct Corpus {
    /// The index tables.
    pub data: IndexData,
    /// Chunk vectors, when the index has them.
    pub vectors: Option<VectorIndex>,
    /// In the browser, the single vectors shard in place of `vectors`:
    /// the same points and graph, read without serde and searched alike.
    pub stored_vectors: Option<crate::hnsw::StoredVectors>,
    /// Dequantised vectors by chunk id (empty without vectors; in the
    /// browser, empty for a chunk whose partition is not loaded).
    pub chunk_vectors: Vec<Vec<f32>>,
    /// The vectors' inverted-file partitions and product codes, when the
    /// index has vectors (natively from the vectors file, in the browser
    /// from the vector directory).
    pub partitioned: Option<PartitionedVectors>,
    /// Keyword index.
    pub lexical: LexicalIndex,
    /// Chunk ids per entity, in part order.
    pub chunks_of_entity: Vec<Vec<u32>>,
    /// Chunk ids per file id (the chunks of every entity in the file), in
    /// chunk order.
    pub chunks_of_file: Vec<Vec<u32>>,
    /// File-level entity per file id.
    pub file_entity: Vec<Option<u32>>,
    /// Lower-case file name → file ids.
    pub by_file_name: BTreeMap<String, Vec<u32>>,
    /// Lower-case base name (no extension) → file ids.
    pub by_base_name: BTreeMap<String, Vec<u32>>,
    /// Symbol name → entity ids (code symbols only).
    pub by_symbol: BTreeMap<String, Vec<u32>>,
    /// Lower-case symbol name → entity ids.
    pub by_symbol_lower: BTreeMap<String, Vec<u32>>,
    /// Lower-case chunk symbol name → chunk ids ([`Corpus::chunks_named`]).
    pub chunks_by_symbol_lower: BTreeMap<String, Vec<u32>>,
    /// Lower-case module name (last folder) → module entity ids.
    pub by_module: BTreeMap<String, Vec<u32>>,
    /// The graph's edges per entity, both ways ([`Corpus::out_edges`],
    /// [`Corpus::in_edges`], [`Corpus::call_chain`]); in the browser, loaded
    /// per range of entities.
    pub graph: Graph,
    /// Stemmed parts of callable names: the index's own action vocabulary.
    pub callable_vocabulary: BTreeSet<String>,
    /// Acronyms the index's names are written with (`CIC` of `CIC.hpp`,
    /// `FFT` of `FFTSolver`), lower case: a question that spells one out
    /// ("cloud-in-cell") is matched to them.
    pub acronyms: BTreeSet<String>,
    /// Text facts per chunk: retrieval ranks from these, never from the
    /// text itself, so a corpus whose text is not loaded ranks the same.
    pub features: TextFeatures,
    /// Where entity and chunk names load per range of files (the browser);
    /// `None`: every name is here. Read through [`Corpus::named`].
    pub name_ranges: Option<super::names::NameRanges>,
    /// Whether the name lookups (`by_symbol`, `by_symbol_lower`,
    /// `chunks_by_symbol_lower`, `callable_vocabulary`, `acronyms`) arrive
    /// with the keyword index's runs, each key with the run that holds it
    /// in the vocabulary's order; read through [`Corpus::symbols`] and its
    /// siblings.
    pub lookups_in_runs: bool,
}

impl Corpus {
    /// Build the lookups. `lexical` must have been built over `data`.
    pub fn new(data: IndexData, vectors: Option<VectorIndex>, lexical: LexicalIndex) -> Self {
        let mut features = TextFeatures::compute(&data);
        features.set_length_steps(&lexical);
        Self::with_features(data, vectors, lexical, features)
    }

    /// Build the lookups with text features computed elsewhere (the web
    /// search shard, whose chunks carry no text). `features` must have been
    /// computed over the full text of the same index.
    pub fn with_features(
        data: IndexData,
        vectors: Option<VectorIndex>,
        lexical: LexicalIndex,
        features: TextFeatures,
    ) -> Self {
        let ne = data.entities.len();
        let mut chunks_of_entity = vec![Vec::new(); ne];
        let mut chunks_of_file = vec![Vec::new(); data.files.len()];
        for c in &data.chunks {
            chunks_of_entity[c.entity as usize].push(c.id);
            let file = data.entities.get(c.entity as usize).and_then(|e| e.file);
            if let Some(list) = file.and_then(|f| chunks_of_file.get_mut(f as usize)) {
                list.push(c.id);
            }
        }
        let mut file_entity = vec![None; data.files.len()];
        let mut by_module: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for e in &data.entities {
            match e.kind {
                EntityKind::File => {
                    if let Some(f) = e.file {
                        file_entity[f as usize] = Some(e.id);
                    }
                }
                EntityKind::Module => {
                    let last = e.name.rsplit('/').next().unwrap_or(&e.name).to_lowercase();
                    by_module.entry(last).or_default().push(e.id);
                }
                _ => {}
            }
        }
        let NameLookups {
            by_symbol,
            by_symbol_lower,
            chunks_by_symbol_lower,
            callable_vocabulary,
            acronyms,
        } = NameLookups::build(&data);
        let mut by_file_name: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        let mut by_base_name: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for f in &data.files {
            let name = file_name(&f.path).to_lowercase();
            let base = base_name(&name).to_string();
            by_file_name.entry(name).or_default().push(f.id);
            by_base_name.entry(base).or_default().push(f.id);
        }
        let graph = Graph::complete(&data.entities, &data.edges);
        let chunk_vectors = vectors
            .as_ref()
            .map(|v| v.all_vectors())
            .unwrap_or_default();
        let partitioned = vectors
            .as_ref()
            .map(|v| PartitionedVectors::complete(v.ivf.clone(), v.hnsw.seed));
        Corpus {
            data,
            vectors,
            stored_vectors: None,
            chunk_vectors,
            partitioned,
            lexical,
            chunks_of_entity,
            chunks_of_file,
            file_entity,
            by_file_name,
            by_base_name,
            by_symbol,
            by_symbol_lower,
            chunks_by_symbol_lower,
            by_module,
            graph,
            callable_vocabulary,
            acronyms,
            features,
            name_ranges: None,
            lookups_in_runs: false,
        }
    }

    /// Outgoing edges of `entity`: `(kind, to)`, in the graph's order.
    pub fn out_edges(&self, entity: u32) -> &[(EdgeKind, u32)] {
        self.graph.out_edges(entity)
    }

    /// Incoming edges of `entity`: `(kind, from)`, in the graph's order.
    pub fn in_edges(&self, entity: u32) -> &[(EdgeKind, u32)] {
        self.graph.in_edges(entity)
    }

    /// The call chain that summarizes `entity`, if any.
    pub fn call_chain(&self, entity: u32) -> Option<u32> {
        self.graph.call_chain(entity)
    }

    /// The first chunk of an entity.
    pub fn first_chunk(&self, entity: u32) -> Option<u32> {
        self.chunks_of_entity
            .get(entity as usize)
            .and_then(|v| v.first().copied())
    }

    /// The file-level chunk of a file.
    pub fn file_chunk(&self, file: u32) -> Option<u32> {
        self.file_entity
            .get(file as usize)
            .copied()
            .flatten()
            .and_then(|e| self.first_chunk(e))
    }

    /// The chunks of a file (none for an unknown file id).
    pub fn chunks_of_file(&self, file: u32) -> &[u32] {
        self.chunks_of_file
            .get(file as usize)
            .map_or(&[], Vec::as_slice)
    }

    /// File id of a chunk's entity, when it has one.
    pub fn file_of_chunk(&self, chunk: u32) -> Option<u32> {
        let c = self.data.chunks.get(chunk as usize)?;
        self.data.entities.get(c.entity as usize)?.file
    }

    /// The `nprobe` partitions nearest to `query`, recording those not
    /// loaded; none when `nprobe` is 0 or the vectors are not partitioned.
    pub fn probe(&self, query: &[f32], nprobe: usize) -> Result<Option<Probe>, CoreError> {
        let Some(pv) = self
            .partitioned
            .as_ref()
            .filter(|pv| nprobe > 0 && !pv.ivf.is_empty())
        else {
            return Ok(None);
        };
        let dim = pv.ivf.centroids[0].data.len();
        if query.len() != dim {
            return Err(CoreError::ModelMismatch {
                field: "dimension".into(),
                index: dim.to_string(),
                query: query.len().to_string(),
            });
        }
        let probe = pv.ivf.probe(query, nprobe);
        for &p in &probe.partitions {
            pv.want_partition(p as usize);
        }
        Ok(Some(probe))
    }

    /// Squared L2 distance between a query vector and a chunk's vector.
    pub fn distance(&self, query: Option<&[f32]>, chunk: u32) -> Option<f32> {
        let q = query?;
        let v = self.chunk_vectors.get(chunk as usize)?;
        if v.len() != q.len() {
            return None;
        }
        Some(q.iter().zip(v).map(|(a, b)| (a - b) * (a - b)).sum())
    }
}
