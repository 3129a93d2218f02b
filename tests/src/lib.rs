//! Shared helpers for the integration tests in `tests/tests/`.
//!
//! The tests run the real indexer over `tests/fixtures/sci-demo`, a small
//! scientific C++ project written for this purpose, and over bad inputs
//! made in temporary directories.

use std::path::PathBuf;

/// Questions over the fixture of the router's main intents: a symbol
/// written as code, plain words, a file, a build question, a qualified
/// name's calls, a workflow.
pub const FIXTURE_QUESTIONS: [&str; 6] = [
    "Where is accumulateHalo defined?",
    "How are halo cells exchanged between neighbouring ranks?",
    "What is the purpose of Picsim.cpp?",
    "How do I build the project with heFFTe?",
    "What does picsim::detail::HaloCells::fillHalo call?",
    "How does the particle layout update particles after a push?",
];

/// The question of the answer and context tests.
pub const ANSWER_QUESTION: &str = "How does BareField fill its halo cells?";

/// An index's tables as a keyword-only corpus (no vectors), with the
/// default field weights.
pub fn keyword_corpus(data: codegloss_core::IndexData) -> codegloss_core::retrieve::Corpus {
    use codegloss_core::lexical::{FieldWeights, LexicalIndex};
    let lexical = LexicalIndex::build(&data, FieldWeights::default());
    codegloss_core::retrieve::Corpus::new(data, None, lexical)
}

/// The fixture repository indexed with the default configuration, as a
/// keyword-only corpus ([`keyword_corpus`]), built once per test binary.
pub fn fixture_corpus() -> &'static codegloss_core::retrieve::Corpus {
    static C: std::sync::OnceLock<codegloss_core::retrieve::Corpus> = std::sync::OnceLock::new();
    C.get_or_init(|| {
        let out = codegloss_indexer::ingest::build::build_index(
            &fixture_repo(),
            &codegloss_indexer::Config::default(),
            &indicatif::ProgressBar::hidden(),
        )
        .unwrap();
        keyword_corpus(out.data)
    })
}

/// Path of the fixture repository.
pub fn fixture_repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/sci-demo")
}

/// Base URL of the real test answer server (SmolLM2-135M served by
/// llama-cpp-python), which `cargo xtask ci` starts and passes in
/// `CODEGLOSS_TEST_LLM_URL`. `None` (the test skips) outside CI; under CI a
/// missing URL is a failure, never a silent skip.
pub fn test_llm_url() -> Option<String> {
    match std::env::var("CODEGLOSS_TEST_LLM_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CODEGLOSS_TEST_LLM_URL is not set: run the tests through `cargo xtask ci`, which starts the test answer server"
            );
            eprintln!("skipping: no answer server (start one with `cargo xtask llm-server` and set CODEGLOSS_TEST_LLM_URL)");
            None
        }
    }
}

/// The embedder of the default model. The model files come from
/// `cargo xtask models` (which `cargo xtask ci` runs first); without them
/// this panics with the message that says what to run.
pub fn default_embedder() -> codegloss_indexer::embed::Embedder {
    let cfg = codegloss_indexer::config::EmbeddingConfig::default();
    codegloss_indexer::embed::Embedder::new(&cfg)
        .unwrap_or_else(|e| panic!("the embedding tests need the default models: {e}"))
}

/// The fixture repository indexed with the default configuration and
/// embedded by the default model: its tables, its vector index and the
/// embedder (for the questions).
pub fn embedded_fixture() -> (
    codegloss_core::IndexData,
    codegloss_indexer::embed::vectorize::VectorOutput,
    codegloss_indexer::embed::Embedder,
) {
    let cfg = codegloss_indexer::Config::default();
    let out = codegloss_indexer::ingest::build::build_index(
        &fixture_repo(),
        &cfg,
        &indicatif::ProgressBar::hidden(),
    )
    .expect("indexes the fixture");
    let mut embedder = default_embedder();
    let v = codegloss_indexer::embed::vectorize::build_vectors(
        &out.data,
        &mut embedder,
        &cfg.embedding,
        None,
        &indicatif::ProgressBar::hidden(),
    )
    .expect("embeds the fixture");
    (out.data, v, embedder)
}

/// Copy a directory tree (the fixture) into `dst`.
pub fn copy_tree(src: &std::path::Path, dst: &std::path::Path) {
    std::fs::create_dir_all(dst).expect("create dir");
    for entry in std::fs::read_dir(src).expect("read dir") {
        let entry = entry.expect("dir entry");
        let to = dst.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), &to).expect("copy file");
        }
    }
}

/// The SmolLM2 decoder converted to ONNX (`cargo xtask models --group
/// smollm2-onnx`, which `cargo xtask ci` runs). `None` (the test skips)
/// outside CI when it is not installed; under CI its absence is a failure.
pub fn smollm2_decoder() -> Option<codegloss_indexer::generate::Decoder> {
    use codegloss_indexer::generate::{Decoder, DecoderFiles};
    let files = codegloss_indexer::embed::onnxruntime_library(None)
        .and_then(|lib| DecoderFiles::installed("smollm2", &lib));
    match files {
        Ok(files) => Some(
            Decoder::load(&files, 2, codegloss_indexer::config::Device::Cpu)
                .unwrap_or_else(|e| panic!("cannot load the SmolLM2 decoder: {e}")),
        ),
        Err(e) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "the ONNX SmolLM2 decoder is not installed ({e}): run `cargo xtask models --group smollm2-onnx`"
            );
            eprintln!("skipping: {e}");
            None
        }
    }
}
