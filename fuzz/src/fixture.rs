//! The valid index every harness starts from: `tests/fixtures/sci-demo`
//! indexed by the real indexer once per process (so it always matches the
//! current format, and no index bytes are committed), with small
//! deterministic vectors, written and read back as a native index, and laid
//! out as a site. Targets replace one piece of it by fuzzed bytes and run
//! what the CLI or the browser runs next.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use codegloss_core::answer::{build_context_estimated, Context};
use codegloss_core::embed::{EmbeddingSpec, Pooling, Quantization, PROMPT_FORMAT_VERSION};
use codegloss_core::format::EmbeddingInfo;
use codegloss_core::lexical::{FieldWeights, LexicalIndex};
use codegloss_core::retrieve::{retrieve, Corpus, RetrievalSettings};
use codegloss_core::vectors::HnswParams;
use codegloss_core::web::{build_site_index, ShardInfo, WebIndex, WebManifest};
use codegloss_core::{DataKind, IndexData, Manifest, VectorIndex};
use codegloss_indexer::{embed::vectorize, ingest::build, store, Config};

/// Dimension of the fixture's vectors.
pub const DIM: usize = 8;

/// The fixture index, native and web.
pub struct Fixture {
    /// The native manifest.
    pub manifest: Manifest,
    /// `manifest.json` as written.
    pub manifest_json: String,
    /// The decoded tables.
    pub data: IndexData,
    /// Data file bytes by kind, as written (all six kinds).
    pub files: BTreeMap<DataKind, Vec<u8>>,
    /// The corpus over all of it (vectors included).
    pub corpus: Corpus,
    /// The web manifest.
    pub web: WebManifest,
    /// The web manifest with the postings and edge shards that the search
    /// shard lists, at the positions a `WebIndex` opened on it gives them.
    pub web_listed: WebManifest,
    /// The text shards its text directory lists.
    pub web_text: Vec<ShardInfo>,
    /// `codegloss.json` as written.
    pub web_json: String,
    /// The web manifest of the same index ranked with `ivf_probe = 2`:
    /// a vector directory and partition shards instead of one vectors shard.
    pub web_ivf: WebManifest,
    /// Shard bytes by the name a web manifest (or the vector directory)
    /// gives them, of both layouts.
    pub shards: BTreeMap<String, Vec<u8>>,
    /// An answer context built from the corpus (for the answer checks).
    pub context: Context,
    /// One C++ header and one Markdown file of the fixture repository.
    pub cpp_sample: String,
    /// See `cpp_sample`.
    pub doc_sample: String,
}

/// The fixture repository.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/sci-demo")
}

/// A deterministic unit-ish vector for chunk `i` (or a query, `i = u32::MAX`).
pub fn vector(i: u32) -> Vec<f32> {
    let mut s = u64::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..DIM)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            ((s.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        })
        .collect()
}

/// The query vector the harnesses search with.
pub fn query_vector() -> Vec<f32> {
    vector(u32::MAX)
}

fn spec() -> EmbeddingSpec {
    EmbeddingSpec {
        model_id: "fuzz-model".into(),
        model_sha256: "0".repeat(64),
        tokenizer_sha256: "1".repeat(64),
        dimension: DIM as u32,
        pooling: Pooling::Mean,
        normalize: false,
        max_length: 256,
        prompt_format_version: PROMPT_FORMAT_VERSION,
        query_prefix: String::new(),
        document_prefix: String::new(),
    }
}

/// The files of the fixture repository the fixture index holds: a few of
/// each kind, so that its data files (the seeds) stay small.
pub const INDEXED: [&str; 7] = [
    "src/Field/BareField.h",
    "src/Field/HaloCells.h",
    "src/Field/HaloCells.hpp",
    "src/Picsim.h",
    "README.md",
    "docs/INSTALL.rst",
    "test/CMakeLists.txt",
];

fn build_fixture() -> Fixture {
    let mut cfg = Config::default();
    cfg.embedding.enabled = false;
    let dir = std::env::temp_dir().join(format!("codegloss-fuzz-{}", std::process::id()));
    let src = dir.join("repo");
    for rel in INDEXED {
        let to = src.join(rel);
        std::fs::create_dir_all(to.parent().expect("parent")).expect("fixture copy");
        std::fs::copy(repo().join(rel), &to).expect("fixture copy");
    }
    let built = build::build_index(&src, &cfg, &indicatif::ProgressBar::hidden())
        .expect("indexing the fixture repository");
    let data = built.data;
    let vectors: Vec<Vec<f32>> = (0..data.chunks.len() as u32).map(vector).collect();
    let params = HnswParams::default();
    let store_ = vectorize::build_store(&vectors, Quantization::Int8, &params)
        .expect("building the fixture's HNSW graph");
    let v = VectorIndex::new(
        spec(),
        Quantization::Int8,
        params.clone(),
        vec![[0; 16]; data.chunks.len()],
        store_,
    )
    .expect("fixture vectors");
    let info = EmbeddingInfo {
        spec: spec(),
        quantization: Quantization::Int8,
        vectors: data.chunks.len() as u64,
        hnsw: params,
        hnsw_recall_at_10: 1.0,
        hnsw_recall_queries: 0,
    };
    let out = dir.join("index");
    let manifest = store::write_index_with_glosses(
        &out,
        &data,
        Some((&v, &info)),
        None,
        &cfg.hash(),
        Some(&cfg.retrieval),
    )
    .expect("writing the fixture index");
    let read = |name: &str| {
        std::fs::read(out.join(name))
            .unwrap_or_else(|e| panic!("reading the fixture index {name}: {e}"))
    };
    let manifest_json = String::from_utf8(read(store::MANIFEST)).expect("manifest text");
    let files: BTreeMap<DataKind, Vec<u8>> = manifest
        .data_files
        .iter()
        .map(|d| (d.kind, read(&d.name)))
        .collect();
    let (_, corpus) = store::load_corpus(&out).expect("reading the fixture index back");
    std::fs::remove_dir_all(&dir).ok();
    let lexical = LexicalIndex::build(&data, FieldWeights::default());
    let site = build_site_index(&manifest, &data, &lexical, corpus.vectors.as_ref())
        .expect("laying the fixture out for the web");
    let web_json = site.manifest.to_json();
    let mut shards: BTreeMap<String, Vec<u8>> = site.files.into_iter().collect();
    let search = site.manifest.search_shard().expect("a search shard");
    let web_listed = WebIndex::open(site.manifest.clone(), &shards[&search.name])
        .expect("opening the fixture's web index")
        .manifest;
    let mut partitioned = manifest.clone();
    partitioned.retrieval = Some(RetrievalSettings {
        ivf_probe: 2,
        ..cfg.retrieval.clone()
    });
    let mut vectors = VectorIndex::decode(&v.encode().expect("fixture vectors encode"))
        .expect("fixture vectors decode");
    vectors.partition(8);
    let site_ivf = build_site_index(&partitioned, &data, &lexical, Some(&vectors))
        .expect("laying the fixture out with partitions");
    shards.extend(site_ivf.files);
    let question = "How are the halo cells of a field exchanged between ranks?";
    let r = retrieve(
        &corpus,
        question,
        Some(&query_vector()),
        &RetrievalSettings::default(),
    )
    .expect("fixture retrieval");
    let context = build_context_estimated(&corpus, &r, question, 3000);
    let sample = |rel: &str| std::fs::read_to_string(repo().join(rel)).expect("fixture file");
    Fixture {
        manifest,
        manifest_json,
        data,
        files,
        corpus,
        web: site.manifest,
        web_listed,
        web_text: site.text,
        web_ivf: site_ivf.manifest,
        web_json,
        shards,
        context,
        cpp_sample: sample("src/Field/BareField.h"),
        doc_sample: sample("README.md"),
    }
}

/// The fixture, built on first use.
pub fn get() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(build_fixture)
}
