//! From chunks to the vector index: build each chunk's document prompt,
//! reuse vectors whose embedded text is unchanged since the previous index,
//! embed the rest, build the HNSW graph and measure its recall.
//!
//! The output is deterministic for the same input and the same previous
//! index: vectors are embedded in a fixed order, int8 quantisation is
//! idempotent for reused vectors, and the HNSW graph is built on one
//! thread with a fixed seed (instant-distance inserts in parallel
//! otherwise, which makes the graph depend on scheduling).

use std::collections::HashMap;
use std::time::Instant;

use codegloss_core::embed::{DocPrompt, Quantization};
use codegloss_core::format::EmbeddingInfo;
use codegloss_core::vectors::{embedding_key, FVec, HnswParams, QVec, VectorStore};
use codegloss_core::{IndexData, VectorIndex};
use indicatif::ProgressBar;
use instant_distance::Builder;
use rayon::prelude::*;

use crate::config::EmbeddingConfig;
use crate::embed::Embedder;
use crate::error::IndexError;

/// What the embedding stage did.
#[derive(Debug, Clone, Default)]
pub struct EmbedStats {
    /// Vectors computed by the model in this run.
    pub computed: usize,
    /// Vectors reused from the previous index.
    pub reused: usize,
    /// Seconds spent building and fitting document prompts.
    pub prompt_seconds: f64,
    /// Seconds spent in tokenisation and inference.
    pub embed_seconds: f64,
    /// Seconds spent building the HNSW graph and measuring its recall.
    pub hnsw_seconds: f64,
}

/// The vector index of an [`IndexData`] and its manifest entry.
pub struct VectorOutput {
    /// The `vectors.bin` content.
    pub index: VectorIndex,
    /// The manifest's `embedding` section.
    pub info: EmbeddingInfo,
    /// Counts and timings.
    pub stats: EmbedStats,
}

/// The exact text embedded for every chunk, in chunk order.
pub fn document_texts(data: &IndexData, embedder: &Embedder) -> Result<Vec<String>, IndexError> {
    let prefix = embedder.spec().document_prefix.clone();
    data.chunks
        .par_iter()
        .map(|c| {
            let explanation = data
                .entities
                .get(c.entity as usize)
                .map_or(String::new(), explanation_text);
            embedder.fit_document(&DocPrompt::new(c, &explanation, &prefix))
        })
        .collect()
}

/// The explanation part of a chunk's embedded text: the entity's concept
/// text (the repository's own words, first, so that it survives when the
/// prompt is cut to the model's token limit), then its gloss.
pub fn explanation_text(e: &codegloss_core::Entity) -> String {
    match (e.concepts.trim(), e.gloss.text.trim()) {
        ("", g) => g.to_string(),
        (c, "") => c.to_string(),
        (c, g) => format!("{c}\n{g}"),
    }
}

/// Build the store over `vectors` (chunk order) on a single thread, so
/// that the graph is the same on every run.
pub fn build_store(
    vectors: &[Vec<f32>],
    quantization: Quantization,
    params: &HnswParams,
) -> Result<VectorStore, IndexError> {
    let builder = Builder::default()
        .ef_construction(params.ef_construction as usize)
        .ef_search(params.ef_search as usize)
        .seed(params.seed)
        .select_heuristic(None);
    let ids: Vec<u32> = (0..vectors.len() as u32).collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .map_err(|e| IndexError::Embed {
            message: format!("cannot create the HNSW build thread: {e}"),
        })?;
    Ok(pool.install(|| match quantization {
        Quantization::Int8 => VectorStore::Int8(
            builder.build(vectors.iter().map(|v| QVec::quantize(v)).collect(), ids),
        ),
        Quantization::F32 => {
            VectorStore::F32(builder.build(vectors.iter().map(|v| FVec(v.clone())).collect(), ids))
        }
    }))
}

/// `n` pseudo-random positions below `len`, distinct where possible, from
/// a fixed seed (xorshift64*).
pub fn sample_positions(len: usize, n: usize, seed: u64) -> Vec<usize> {
    if len == 0 {
        return Vec::new();
    }
    let mut s = seed | 1;
    let mut out = Vec::with_capacity(n.min(len));
    let mut seen = vec![false; len];
    while out.len() < n.min(len) {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        let i = (s.wrapping_mul(0x2545_f491_4f6c_dd1d) % len as u64) as usize;
        if !seen[i] {
            seen[i] = true;
            out.push(i);
        }
    }
    out
}

/// Embed every chunk of `data`, reusing vectors from `previous` whose key
/// (model id, prompt version, exact text) is unchanged, and build the
/// vector index. `progress` counts computed chunks.
pub fn build_vectors(
    data: &IndexData,
    embedder: &mut Embedder,
    cfg: &EmbeddingConfig,
    previous: Option<&VectorIndex>,
    progress: &ProgressBar,
) -> Result<VectorOutput, IndexError> {
    let mut stats = EmbedStats::default();
    let t = Instant::now();
    let texts = document_texts(data, embedder)?;
    let spec = embedder.spec().clone();
    let keys: Vec<[u8; 16]> = texts
        .iter()
        .map(|t| embedding_key(&spec.model_id, spec.prompt_format_version, t))
        .collect();
    stats.prompt_seconds = t.elapsed().as_secs_f64();

    let mut reusable: HashMap<[u8; 16], Vec<f32>> = HashMap::new();
    if let Some(prev) = previous {
        if prev.spec == spec {
            for (key, v) in prev.keys.iter().zip(prev.all_vectors()) {
                reusable.insert(*key, v);
            }
        } else {
            log::info!(
                "previous index used another embedding model or settings; recomputing all vectors"
            );
        }
    }
    let mut vectors: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
    let mut todo: Vec<usize> = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        match reusable.get(key) {
            Some(v) => {
                vectors[i] = v.clone();
                stats.reused += 1;
            }
            None => todo.push(i),
        }
    }
    progress.set_length(todo.len() as u64);
    progress.set_position(0);
    progress.set_message("embedding");
    let t = Instant::now();
    let todo_texts: Vec<String> = todo.iter().map(|&i| texts[i].clone()).collect();
    let computed = embedder.embed_texts(&todo_texts, Some(progress))?;
    for (&i, v) in todo.iter().zip(computed) {
        vectors[i] = v;
    }
    stats.computed = todo.len();
    stats.embed_seconds = t.elapsed().as_secs_f64();

    progress.set_message("vector index");
    let t = Instant::now();
    let params = HnswParams {
        ef_construction: cfg.hnsw_ef_construction as u32,
        ef_search: cfg.hnsw_ef_search as u32,
        ..HnswParams::default()
    };
    let store = build_store(&vectors, cfg.quantization, &params)?;
    let mut index = VectorIndex::new(spec.clone(), cfg.quantization, params.clone(), keys, store)
        .map_err(|e| IndexError::Embed {
        message: format!("vector index: {e}"),
    })?;
    if cfg.ivf_partition_size != codegloss_core::ivf::DEFAULT_PARTITION_SIZE {
        index.partition(cfg.ivf_partition_size);
    }
    let queries: Vec<Vec<f32>> = sample_positions(vectors.len(), cfg.recall_queries, params.seed)
        .into_iter()
        .map(|i| vectors[i].clone())
        .collect();
    let recall = index
        .hnsw_recall(&queries, 10)
        .map_err(|e| IndexError::Embed {
            message: format!("recall: {e}"),
        })?;
    stats.hnsw_seconds = t.elapsed().as_secs_f64();
    let info = EmbeddingInfo {
        spec,
        quantization: cfg.quantization,
        vectors: vectors.len() as u64,
        hnsw: params,
        hnsw_recall_at_10: (recall * 10_000.0).round() / 10_000.0,
        hnsw_recall_queries: queries.len() as u32,
    };
    Ok(VectorOutput { index, info, stats })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_is_deterministic_and_distinct() {
        let a = sample_positions(1000, 200, 42);
        assert_eq!(a, sample_positions(1000, 200, 42));
        assert_eq!(a.len(), 200);
        let mut b = a.clone();
        b.sort_unstable();
        b.dedup();
        assert_eq!(b.len(), 200);
        assert_eq!(sample_positions(5, 200, 1).len(), 5);
        assert!(sample_positions(0, 10, 1).is_empty());
    }
}
