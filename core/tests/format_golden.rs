//! Golden files of both index formats: the hand-built index of
//! `common::sample()`, with deterministic 8-dimensional vectors and their
//! HNSW graph (built on one thread from a fixed seed, as the indexer
//! builds it), encoded as the native data files and manifest
//! (`golden/native/`) and laid out for the web as `codegloss.json`, `codegloss.bin` and its
//! shards (`golden/web/`), and laid out with partitioned vectors
//! (`golden/web-ivf/`: the vector directory and its partition shards),
//! checked in byte for byte.
//!
//! Two directions, per format: encoding the fixed data must give exactly
//! the golden bytes, and the golden bytes must decode to the fixed data.
//! So a serde change (a field added, renamed, reordered or retyped, an enum
//! variant moved) that forgets to bump [`FORMAT_VERSION`] or
//! [`WEB_FORMAT_VERSION`] fails here instead of silently breaking indexes
//! and sites already written.
//!
//! After a deliberate format change (with its version bump), rewrite the
//! files and commit them with the change:
//!
//! ```text
//! UPDATE_GOLDEN=1 cargo test -p codegloss-core --test format_golden
//! ```
//!
//! The web manifest also records the default retrieval settings (a site
//! ranks with them), so changing a default rewrites `codegloss.json` too.

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use codegloss_core::embed::{EmbeddingSpec, Pooling, Quantization, PROMPT_FORMAT_VERSION};
use codegloss_core::format::EmbeddingInfo;
use codegloss_core::lexical::{FieldWeights, LexicalIndex};
use codegloss_core::retrieve::RetrievalSettings;
use codegloss_core::vectors::{HnswParams, QVec, VectorStore};
use codegloss_core::web::{
    build_site_index, ShardInfo, ShardKind, WebIndex, WebManifest, WEB_MANIFEST, WEB_MANIFEST_BIN,
};
use codegloss_core::{DataKind, Entity, Gloss, IndexData, Manifest, VectorIndex, FORMAT_VERSION};
use common::*;

/// The environment variable that rewrites the golden files.
const UPDATE: &str = "UPDATE_GOLDEN";

/// `(path, bytes)` of every file of one format's golden folder.
type Files = Vec<(String, Vec<u8>)>;

fn golden_dir(format: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format)
}

fn updating() -> bool {
    std::env::var(UPDATE).is_ok_and(|v| v == "1")
}

/// Dimension of the golden vectors.
const DIM: usize = 8;

/// A deterministic vector for chunk `i` (xorshift, values in [-0.5, 0.5)).
fn vector(i: u32) -> Vec<f32> {
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

/// The embedding section of the golden index.
fn embedding(data: &IndexData) -> EmbeddingInfo {
    EmbeddingInfo {
        spec: EmbeddingSpec {
            model_id: "golden-model".into(),
            model_sha256: "0".repeat(64),
            tokenizer_sha256: "1".repeat(64),
            dimension: DIM as u32,
            pooling: Pooling::Mean,
            normalize: true,
            max_length: 256,
            prompt_format_version: PROMPT_FORMAT_VERSION,
            query_prefix: "query: ".into(),
            document_prefix: "passage: ".into(),
        },
        quantization: Quantization::Int8,
        vectors: data.chunks.len() as u64,
        hnsw: HnswParams::default(),
        hnsw_recall_at_10: 1.0,
        hnsw_recall_queries: 0,
    }
}

/// The golden vectors: int8, one per chunk, with the HNSW graph built on a
/// single thread from the default seed (the indexer's way, so the graph is
/// the same on every run).
fn vectors(data: &IndexData) -> VectorIndex {
    let info = embedding(data);
    let points: Vec<QVec> = (0..data.chunks.len() as u32)
        .map(|i| QVec::quantize(&vector(i)))
        .collect();
    let ids: Vec<u32> = (0..data.chunks.len() as u32).collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("one build thread");
    let graph = pool.install(|| {
        instant_distance::Builder::default()
            .ef_construction(info.hnsw.ef_construction as usize)
            .ef_search(info.hnsw.ef_search as usize)
            .seed(info.hnsw.seed)
            .select_heuristic(None)
            .build(points, ids)
    });
    let keys = (0..data.chunks.len()).map(|i| [i as u8; 16]).collect();
    VectorIndex::new(
        info.spec,
        info.quantization,
        info.hnsw,
        keys,
        VectorStore::Int8(graph),
    )
    .expect("the golden vectors are consistent")
}

/// The fixed index's manifest, with its embedding section.
fn golden_manifest(data: &IndexData, tables: &[Vec<u8>]) -> Manifest {
    Manifest {
        embedding: Some(embedding(data)),
        ..manifest_for(data, tables)
    }
}

/// The fixed index in the native format: `(file name, bytes)` of every data
/// file (the four tables, the keyword index and the vectors), then
/// `manifest.json`.
fn native_files(data: &IndexData) -> Files {
    let tables = encoded(data);
    let lexical = LexicalIndex::build(data, FieldWeights::default())
        .encode()
        .expect("keyword index encodes");
    let vectors = vectors(data).encode().expect("vectors encode");
    let mut manifest = golden_manifest(data, &tables);
    let mut all: Vec<(DataKind, Vec<u8>)> = DataKind::ALL.iter().copied().zip(tables).collect();
    for (kind, bytes) in [(DataKind::Lexical, lexical), (DataKind::Vectors, vectors)] {
        manifest
            .data_files
            .push(codegloss_core::format::DataFileInfo {
                name: kind.file_name().to_string(),
                kind,
                bytes: bytes.len() as u64,
                sha256: codegloss_core::format::sha256_hex(&bytes),
            });
        all.push((kind, bytes));
    }
    let mut out: Files = all
        .into_iter()
        .map(|(kind, bytes)| (kind.file_name().to_string(), bytes))
        .collect();
    out.push(("manifest.json".into(), manifest.to_json().into_bytes()));
    out
}

/// The fixed index laid out for the web: `codegloss.json`, then every
/// shard under the name the manifest gives it.
fn web_files(data: &IndexData) -> Files {
    web_layout(data, None)
}

/// The fixed index laid out for a site ranked with `ivf_probe = 1`, its
/// vectors cut into partitions of about 2: `codegloss.json`, the vector
/// directory, every partition shard and every refine block (besides the
/// shards of `web`).
fn web_ivf_files(data: &IndexData) -> Files {
    web_layout(data, Some(2))
}

/// The web layout of the fixed index: with one vectors shard, or (given a
/// partition size) ranked with `ivf_probe = 1` over partitions of that size.
fn web_layout(data: &IndexData, partition_size: Option<usize>) -> Files {
    let tables = encoded(data);
    let mut manifest = golden_manifest(data, &tables);
    let lexical = LexicalIndex::build(data, FieldWeights::default());
    let mut vectors = vectors(data);
    if let Some(size) = partition_size {
        manifest.retrieval = Some(RetrievalSettings {
            ivf_probe: 1,
            ..RetrievalSettings::default()
        });
        vectors.partition(size);
    }
    let site =
        build_site_index(&manifest, data, &lexical, Some(&vectors)).expect("the web layout builds");
    let mut out = vec![
        (
            WEB_MANIFEST.to_string(),
            site.manifest.to_json().into_bytes(),
        ),
        (
            WEB_MANIFEST_BIN.to_string(),
            site.manifest
                .to_binary()
                .expect("the binary manifest encodes"),
        ),
    ];
    out.extend(site.files);
    out
}

/// Every file under `dir`, as paths relative to it, sorted.
fn list(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if let Ok(rel) = path.strip_prefix(root) {
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Replace `dir` with exactly `files`.
fn write(dir: &Path, files: &[(String, Vec<u8>)]) {
    if dir.exists() {
        std::fs::remove_dir_all(dir).expect("remove the old golden files");
    }
    for (name, bytes) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().expect("a golden file has a folder"))
            .expect("create the golden folder");
        std::fs::write(&path, bytes).expect("write a golden file");
    }
}

/// The golden folder of `format`, rewritten first (once per run, before
/// any test of it reads it) under `UPDATE_GOLDEN=1`.
fn golden(format: &str) -> PathBuf {
    static NATIVE: OnceLock<()> = OnceLock::new();
    static WEB: OnceLock<()> = OnceLock::new();
    static WEB_IVF: OnceLock<()> = OnceLock::new();
    let dir = golden_dir(format);
    if updating() {
        let (once, files): (_, fn(&IndexData) -> Files) = match format {
            "native" => (&NATIVE, native_files),
            "web-ivf" => (&WEB_IVF, web_ivf_files),
            _ => (&WEB, web_files),
        };
        once.get_or_init(|| write(&dir, &files(&sample())));
    }
    dir
}

/// Check that `dir` holds exactly `files` with exactly these bytes.
/// `version` names the format version of this build, for the message.
fn check(dir: &Path, files: &[(String, Vec<u8>)], version: &str) {
    let hint = format!(
        "the encoding differs from the golden files in {} ({version}). If the format changed \
         on purpose, bump the format version and rerun with {UPDATE}=1; otherwise this change \
         alters the bytes of indexes already written",
        dir.display()
    );
    let mut expected: Vec<String> = files.iter().map(|(n, _)| n.clone()).collect();
    expected.sort();
    assert_eq!(list(dir), expected, "{hint}");
    for (name, bytes) in files {
        let golden = std::fs::read(dir.join(name)).expect("read a golden file");
        assert!(golden == *bytes, "{name}: {hint}");
    }
}

/// The golden web manifest of `dir` and a web index opened on its search
/// shard.
fn open_web(dir: &Path) -> (WebManifest, WebIndex) {
    let text = String::from_utf8(read(dir, WEB_MANIFEST)).expect("manifest is UTF-8");
    let manifest = WebManifest::from_json(&text).expect("the golden web manifest parses");
    let binary = WebManifest::from_binary(&read(dir, WEB_MANIFEST_BIN));
    assert_eq!(
        binary.as_ref(),
        Ok(&manifest),
        "the two manifest forms differ"
    );
    let search = read(dir, &manifest.search_shard().expect("a search shard").name);
    let index = WebIndex::open(manifest.clone(), &search).expect("the search shard opens");
    (manifest, index)
}

fn read(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name))
        .unwrap_or_else(|e| panic!("{}: {e}; run with {UPDATE}=1", dir.join(name).display()))
}

#[test]
fn native_encoding_matches_the_golden_files() {
    let files = native_files(&sample());
    check(
        &golden("native"),
        &files,
        &format!("FORMAT_VERSION {FORMAT_VERSION}"),
    );
}

#[test]
fn native_golden_files_decode_to_the_fixed_index() {
    let dir = golden("native");
    let data = sample();
    let text = String::from_utf8(read(&dir, "manifest.json")).expect("manifest is UTF-8");
    let manifest = Manifest::from_json(&text).expect("the golden manifest parses");
    let bytes: Vec<Vec<u8>> = [
        DataKind::Files,
        DataKind::Entities,
        DataKind::Chunks,
        DataKind::Graph,
        DataKind::Lexical,
        DataKind::Vectors,
    ]
    .iter()
    .map(|&kind| {
        let bytes = read(&dir, kind.file_name());
        manifest
            .verify_data_file(kind, &bytes)
            .expect("the golden data file matches its manifest entry");
        bytes
    })
    .collect();
    let decoded =
        IndexData::decode(&bytes[0], &bytes[1], &bytes[2], &bytes[3]).expect("golden decodes");
    assert_eq!(decoded, data);
    assert_eq!(manifest.counts, data.counts());
    let lexical = LexicalIndex::decode(&bytes[4], data.chunks.len()).expect("golden lexical");
    assert_eq!(
        lexical.encode().expect("re-encodes"),
        bytes[4],
        "the keyword index decodes to the value it was written from"
    );
    let v = VectorIndex::decode(&bytes[5]).expect("golden vectors decode");
    assert_eq!(v.spec, embedding(&data).spec);
    for (i, chunk) in data.chunks.iter().enumerate() {
        let expected = QVec::quantize(&vector(i as u32)).dequantize();
        assert_eq!(v.vector(chunk.id), Some(expected), "vector of chunk {i}");
    }
    assert_eq!(
        v.encode().expect("re-encodes"),
        bytes[5],
        "the vectors and their graph decode to the value they were written from"
    );
}

#[test]
fn web_layout_matches_the_golden_files() {
    let files = web_files(&sample());
    check(
        &golden("web"),
        &files,
        &format!(
            "WEB_FORMAT_VERSION {}",
            codegloss_core::web::WEB_FORMAT_VERSION
        ),
    );
}

#[test]
fn web_golden_files_decode_to_the_fixed_index() {
    let dir = golden("web");
    let data = sample();
    let (_, mut index) = open_web(&dir);
    // The text directory first: its text shards then join the manifest.
    for kind in [
        ShardKind::Postings,
        ShardKind::Qualified,
        ShardKind::Edges,
        ShardKind::Names,
        ShardKind::TextDirectory,
        ShardKind::Text,
    ] {
        let listed: Vec<(usize, ShardInfo)> = index
            .manifest
            .shards_of(kind)
            .map(|(p, s)| (p, s.clone()))
            .collect();
        assert!(!listed.is_empty(), "{kind:?} shards listed");
        for (position, info) in listed {
            let bytes = read(&dir, &info.name);
            match kind {
                ShardKind::Postings
                | ShardKind::Qualified
                | ShardKind::Edges
                | ShardKind::Names => index.add_shard(position, &bytes),
                _ => index.add_text(position, &bytes),
            }
            .expect("a golden shard loads");
        }
    }
    let vectors = index
        .manifest
        .vectors_shard()
        .expect("a vectors shard")
        .name
        .clone();
    index
        .add_vectors(&read(&dir, &vectors))
        .expect("the golden vectors shard loads");
    assert_eq!(
        index
            .corpus
            .stored_vectors
            .as_ref()
            .map(|v| v.spec().clone()),
        Some(embedding(&data).spec),
        "the vectors arrive with the index's embedding spec"
    );
    let web = &index.corpus.data;
    assert_eq!(web.chunks, data.chunks, "every chunk, with its text");
    assert_eq!(web.edges, data.edges);
    assert_eq!(web.files.len(), data.files.len());
    for (w, d) in web.files.iter().zip(&data.files) {
        // Include directives stay native: retrieval follows the include
        // edges, which arrive whole.
        assert_eq!((&w.path, &w.module), (&d.path, &d.module));
        assert!(w.includes.is_empty());
    }
    assert_eq!(web.entities.len(), data.entities.len());
    for (w, d) in web.entities.iter().zip(&data.entities) {
        // The web layout does not ship concept text (it only feeds the
        // keyword index and the vectors, which travel already built), and
        // ships display text only for entities that have a chunk.
        let mut d = d.clone();
        d.concepts.clear();
        if !data.chunks.iter().any(|c| c.entity == d.id) {
            d = Entity {
                parent: d.parent,
                parent_symbol: d.parent_symbol,
                class_name: d.class_name,
                file: d.file,
                is_definition: d.is_definition,
                section_path: d.section_path,
                module: d.module,
                gloss: Gloss {
                    text: String::new(),
                    ..d.gloss
                },
                ..Entity::new(d.id, d.kind, d.name, d.qualified_name)
            };
        }
        assert_eq!(*w, d);
    }
}

#[test]
fn partitioned_web_layout_matches_the_golden_files() {
    let files = web_ivf_files(&sample());
    check(
        &golden("web-ivf"),
        &files,
        &format!(
            "WEB_FORMAT_VERSION {}",
            codegloss_core::web::WEB_FORMAT_VERSION
        ),
    );
}

#[test]
fn partitioned_golden_files_load_every_vector() {
    let dir = golden("web-ivf");
    let data = sample();
    let (manifest, mut index) = open_web(&dir);
    assert!(manifest.vectors_shard().is_none());
    let directory = manifest
        .vector_directory()
        .expect("a vector directory")
        .clone();
    index
        .add_vector_directory(&read(&dir, &directory.name))
        .expect("the golden directory loads");
    let pv = index.corpus.partitioned.as_ref().expect("partitions");
    let (partitions, blocks) = (pv.ivf.len(), pv.blocks());
    assert!(partitions > 1, "{partitions} partitions");
    for p in 0..partitions {
        let name = index.partition_shard(p).expect("listed").name.clone();
        index
            .add_partition(p, &read(&dir, &name))
            .expect("a golden partition loads");
    }
    for b in 0..blocks {
        let name = index.block_shard(b).expect("listed").name.clone();
        index
            .add_block(b, &read(&dir, &name))
            .expect("a golden refine block loads");
    }
    for (i, chunk) in data.chunks.iter().enumerate() {
        let expected = QVec::quantize(&vector(i as u32)).dequantize();
        assert_eq!(
            index.corpus.chunk_vectors[chunk.id as usize], expected,
            "vector of chunk {i}"
        );
    }
}
