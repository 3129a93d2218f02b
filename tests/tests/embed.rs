//! The embedding stage with a real ONNX session (the default MiniLM model
//! installed by `cargo xtask models`): agreement with an independently
//! computed reference vector, dense ranking on the fixture, int8 against
//! f32 search, incremental re-indexing, determinism and the stored index.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::OnceLock;

use codegloss_core::embed::{EmbeddingSpec, Quantization};
use codegloss_core::vectors::HnswParams;
use codegloss_core::{IndexData, VectorIndex};
use codegloss_indexer::config::EmbeddingConfig;
use codegloss_indexer::embed::vectorize::{build_store, build_vectors, VectorOutput};
use codegloss_indexer::{ingest::build, store, Config};
use codegloss_tests::{copy_tree, default_embedder, fixture_repo};
use indicatif::ProgressBar;

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

fn index_repo(root: &Path, previous: Option<&VectorIndex>) -> (IndexData, VectorOutput) {
    let cfg = Config::default();
    let out = build::build_index(root, &cfg, &ProgressBar::hidden()).expect("indexes");
    let mut embedder = default_embedder();
    let v = build_vectors(
        &out.data,
        &mut embedder,
        &cfg.embedding,
        previous,
        &ProgressBar::hidden(),
    )
    .expect("embeds");
    (out.data, v)
}

/// The fixture index with vectors, built once per test binary.
fn fixture() -> &'static (IndexData, VectorOutput) {
    static F: OnceLock<(IndexData, VectorOutput)> = OnceLock::new();
    F.get_or_init(|| index_repo(&fixture_repo(), None))
}

#[test]
fn rust_embedder_matches_the_python_onnxruntime_reference() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/reference/minilm-halo.json"),
    )
    .unwrap();
    let reference: serde_json::Value = serde_json::from_str(&text).unwrap();
    let sentence = reference["sentence"].as_str().unwrap().to_string();
    let want: Vec<f32> = reference["vector"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect();
    let mut e = default_embedder();
    assert_eq!(
        e.spec().model_sha256,
        reference["model_sha256"].as_str().unwrap()
    );
    let got = e
        .embed_texts(std::slice::from_ref(&sentence), None)
        .unwrap()
        .remove(0);
    assert_eq!(got.len(), 384);
    let c = cosine(&got, &want);
    eprintln!("cosine to the Python onnxruntime reference: {c:.6}");
    assert!(c > 0.999, "cosine to the reference is {c}");
    // Batching with longer texts (padding) must not change the vector.
    let batch = vec![
        "short".to_string(),
        sentence.clone(),
        "a much longer text that pads the batch ".repeat(12),
    ];
    let in_batch = e.embed_texts(&batch, None).unwrap();
    assert!(cosine(&in_batch[1], &want) > 0.999);
    let norm: f32 = got.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-4, "{norm}");
}

#[test]
fn long_texts_are_cut_at_the_real_limit_keeping_the_header() {
    let e = default_embedder();
    let (data, _) = fixture();
    let mut checked = 0;
    for c in &data.chunks {
        let gloss = &data.entities[c.entity as usize].gloss.text;
        let prompt = codegloss_core::embed::DocPrompt::new(c, gloss, "");
        let text = e.fit_document(&prompt).unwrap();
        assert!(
            text.starts_with(&prompt.header),
            "header kept for {}",
            c.symbol_name
        );
        let n = e.count_tokens(&text).unwrap();
        assert!(n <= 256, "{} has {n} tokens", c.symbol_name);
        if e.count_tokens(&prompt.full()).unwrap() > 256 {
            checked += 1;
            // Limit is 256, not the 128 the shipped tokenizer.json pads to.
            assert!(n >= 220, "{} shrunk to only {n} tokens", c.symbol_name);
        }
    }
    assert!(checked > 0, "the fixture has chunks over the limit");
}

#[test]
fn a_halo_question_ranks_halo_chunks_above_unrelated_ones() {
    let (data, v) = fixture();
    let mut e = default_embedder();
    let q = e
        .embed_query("How are the halo cells exchanged with neighbouring ranks?")
        .unwrap();
    let hits = v.index.search_exact(&q, data.chunks.len()).unwrap();
    let rank = |pred: &dyn Fn(&codegloss_core::Chunk) -> bool| {
        hits.iter()
            .position(|h| pred(&data.chunks[h.chunk as usize]))
            .expect("a matching chunk")
    };
    let halo = rank(&|c| c.code.contains("halo") || c.path.contains("Halo"));
    let unrelated = rank(&|c| c.path.ends_with("CMakeLists.txt"));
    assert!(halo < 3, "first halo chunk at rank {halo}");
    assert!(halo < unrelated, "halo {halo} vs build file {unrelated}");
    let top = &data.chunks[hits[0].chunk as usize];
    assert!(
        top.path.contains("Halo") || top.code.to_lowercase().contains("halo"),
        "top hit {}:{}",
        top.path,
        top.symbol_name
    );
}

#[test]
fn int8_search_agrees_with_f32_search_on_fixture_queries() {
    let (_, v) = fixture();
    let vectors = v.index.all_vectors();
    let params = HnswParams::default();
    let spec = v.index.spec.clone();
    let keys = v.index.keys.clone();
    let f32_index = VectorIndex::new(
        spec,
        Quantization::F32,
        params.clone(),
        keys,
        build_store(&vectors, Quantization::F32, &params).unwrap(),
    )
    .unwrap();
    let mut e = default_embedder();
    let questions = [
        "How are the halo cells exchanged with neighbouring ranks?",
        "Where is the field solver initialised?",
        "How are particles pushed in a time step?",
        "What does the FFT class do?",
        "How do I build the project with CMake?",
        "Which function writes diagnostics output?",
    ];
    let mut total = 0.0;
    for q in questions {
        let qv = e.embed_query(q).unwrap();
        let a: BTreeSet<u32> = v
            .index
            .search_exact(&qv, 10)
            .unwrap()
            .iter()
            .map(|h| h.chunk)
            .collect();
        let b: BTreeSet<u32> = f32_index
            .search_exact(&qv, 10)
            .unwrap()
            .iter()
            .map(|h| h.chunk)
            .collect();
        let overlap = a.intersection(&b).count() as f64 / 10.0;
        eprintln!("{q}: int8/f32 top-10 overlap {overlap}");
        total += overlap;
        assert!(overlap >= 0.9, "{q}: overlap {overlap}");
    }
    eprintln!("mean top-10 overlap {}", total / questions.len() as f64);
}

#[test]
fn reindex_after_touching_one_file_computes_only_that_files_chunks() {
    let dir = tempfile::tempdir().unwrap();
    // Same folder name as the fixture: the root module is named after it.
    let root = dir.path().join("sci-demo");
    copy_tree(&fixture_repo(), &root);
    let (_, first) = fixture();
    // Start from the fixture's vectors (same files, so everything is reused).
    let (_, again) = index_repo(&root, Some(&first.index));
    assert_eq!(again.stats.computed, 0);
    assert_eq!(again.stats.reused, first.index.len());
    assert_eq!(again.index.encode().unwrap(), first.index.encode().unwrap());

    let touched = "src/Field/HaloCells.hpp";
    let path = root.join(touched);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text = text.replacen(
        "{",
        "{\n    // touched: a comment inside the first body\n",
        1,
    );
    std::fs::write(&path, text).unwrap();
    let (data, after) = index_repo(&root, Some(&again.index));
    let changed: Vec<&codegloss_core::Chunk> = data
        .chunks
        .iter()
        .filter(|c| !again.index.keys.contains(&after.index.keys[c.id as usize]))
        .collect();
    assert_eq!(after.stats.computed, changed.len());
    assert!(after.stats.computed > 0);
    for c in &changed {
        assert_eq!(
            c.path, touched,
            "recomputed {} {}",
            c.chunk_type, c.symbol_name
        );
    }
    assert_eq!(after.stats.reused + after.stats.computed, data.chunks.len());
}

#[test]
fn vectors_are_deterministic_and_round_trip_through_the_index() {
    let (data, v) = fixture();
    let (_, again) = index_repo(&fixture_repo(), None);
    assert_eq!(again.index.encode().unwrap(), v.index.encode().unwrap());
    assert_eq!(again.info, v.info);
    let dir = tempfile::tempdir().unwrap();
    let m = store::write_index(dir.path(), data, Some((&v.index, &v.info)), "h").unwrap();
    let info = m.embedding.as_ref().unwrap();
    assert_eq!(info.spec.model_id, "all-MiniLM-L6-v2-int8");
    assert_eq!(info.spec.dimension, 384);
    assert_eq!(info.spec.max_length, 256);
    assert_eq!(info.quantization, Quantization::Int8);
    assert_eq!(info.vectors, data.chunks.len() as u64);
    assert_eq!(info.hnsw_recall_queries, 200);
    assert!(info.hnsw_recall_at_10 > 0.95, "{}", info.hnsw_recall_at_10);
    let json = m.to_json();
    for field in [
        "model_sha256",
        "pooling",
        "max_length",
        "prompt_format_version",
        "quantization",
        "hnsw_recall_at_10",
    ] {
        assert!(json.contains(field), "manifest lacks {field}");
    }
    let back = store::read_vectors(dir.path(), &m).unwrap().unwrap();
    assert_eq!(back.encode().unwrap(), v.index.encode().unwrap());
    // Without vectors, the stale vectors file is removed.
    store::write_index(dir.path(), data, None, "h").unwrap();
    assert!(std::fs::read_dir(dir.path()).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with("vectors")));
}

#[test]
fn a_different_query_model_is_refused() {
    let (_, v) = fixture();
    let e = default_embedder();
    assert!(v.index.spec.check_query_model(e.spec()).is_ok());
    let other = EmbeddingSpec {
        model_id: "nomic-embed-text".into(),
        dimension: 768,
        ..e.spec().clone()
    };
    let err = v.index.spec.check_query_model(&other).unwrap_err();
    assert!(err.to_string().contains("model_id"), "{err}");
    let err = v.index.search_exact(&[0.0; 768], 5).unwrap_err();
    assert!(err.to_string().contains("dimension"), "{err}");
}

#[test]
fn a_missing_model_is_a_clear_error() {
    let cfg = EmbeddingConfig {
        model: Some("/nonexistent/model.onnx".into()),
        ..EmbeddingConfig::default()
    };
    let err = codegloss_indexer::embed::Embedder::new(&cfg)
        .err()
        .expect("fails")
        .to_string();
    assert!(err.contains("cargo xtask models"), "{err}");
}
