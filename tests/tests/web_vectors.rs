//! Partitioned vectors (`[retrieval] ivf_probe > 0`) over the fixture,
//! embedded by the real MiniLM session: the web layout ships a directory
//! and one shard per partition, the browser's reader fetches only the
//! partitions a question probes and ranks exactly like the native corpus,
//! to the chunk and the score, and damaged partitions are typed errors.

use std::sync::OnceLock;

use codegloss_core::format::Manifest;
use codegloss_core::lexical::LexicalIndex;
use codegloss_core::retrieve::{retrieve, Corpus, Retrieval, RetrievalSettings};
use codegloss_core::web::{
    build_site_index, wire_reads_as_written, ShardKind, SiteIndex, WebIndex,
};
use codegloss_core::{CoreError, IndexData, VectorIndex};
use codegloss_indexer::store;
use codegloss_tests::embedded_fixture;

/// Vectors per partition in these tests: small, so the fixture has many.
const PARTITION: usize = 12;

struct Fixture {
    manifest: Manifest,
    data: IndexData,
    lexical: LexicalIndex,
    vectors: VectorIndex,
    queries: Vec<(String, Vec<f32>)>,
}

const QUESTIONS: [&str; 6] = [
    "Where is accumulateHalo defined?",
    "How are halo cells exchanged between neighbouring ranks?",
    "What is the purpose of Picsim.cpp?",
    "How do I build the project with heFFTe?",
    "Which component pushes the particles in a time step?",
    "How does the particle layout update particles after a push?",
];

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let (data, mut v, mut embedder) = embedded_fixture();
        v.index.partition(PARTITION);
        let dir = tempfile::tempdir().unwrap();
        store::write_index(dir.path(), &data, Some((&v.index, &v.info)), "test").unwrap();
        let (manifest, data) = store::read_index(dir.path()).unwrap();
        let lexical = store::read_lexical(dir.path(), &manifest).unwrap();
        let vectors = store::read_vectors(dir.path(), &manifest).unwrap().unwrap();
        let queries = QUESTIONS
            .iter()
            .map(|q| (q.to_string(), embedder.embed_query(q).unwrap()))
            .collect();
        Fixture {
            manifest,
            data,
            lexical,
            vectors,
            queries,
        }
    })
}

fn settings(probe: usize) -> RetrievalSettings {
    RetrievalSettings {
        ivf_probe: probe,
        ..RetrievalSettings::default()
    }
}

fn site(probe: usize) -> SiteIndex {
    let f = fixture();
    let mut m = f.manifest.clone();
    m.retrieval = Some(settings(probe));
    build_site_index(&m, &f.data, &f.lexical, Some(&f.vectors)).unwrap()
}

fn bytes_of<'a>(site: &'a SiteIndex, name: &str) -> &'a [u8] {
    &site.files.iter().find(|(n, _)| n == name).unwrap().1
}

fn open_with_directory(s: &SiteIndex) -> WebIndex {
    let search = s.manifest.search_shard().unwrap();
    let mut w = WebIndex::open(s.manifest.clone(), bytes_of(s, &search.name)).unwrap();
    let dir = s.manifest.vector_directory().unwrap().clone();
    w.add_vector_directory(bytes_of(s, &dir.name)).unwrap();
    w
}

/// Retrieve as the worker does: add the postings, partitions and refine
/// blocks a retrieval asked for, until it asks for none. Returns the
/// retrieval and the partitions fetched.
fn retrieve_web(
    w: &mut WebIndex,
    s: &SiteIndex,
    q: &str,
    v: &[f32],
    settings: &RetrievalSettings,
) -> (Retrieval, Vec<usize>) {
    let mut fetched = Vec::new();
    for _ in 0..8 {
        let r = retrieve(&w.corpus, q, Some(v), settings).unwrap();
        let m = w.missing();
        if m.is_empty() {
            return (r, fetched);
        }
        let (postings, partitions, blocks) = (m.shards, m.partitions, m.blocks);
        for p in postings {
            let name = w.manifest.shards[p].name.clone();
            w.add_shard(p, bytes_of(s, &name)).unwrap();
        }
        for p in partitions {
            let name = w.partition_shard(p).unwrap().name.clone();
            w.add_partition(p, bytes_of(s, &name)).unwrap();
            fetched.push(p);
        }
        for b in blocks {
            let name = w.block_shard(b).unwrap().name.clone();
            w.add_block(b, bytes_of(s, &name)).unwrap();
        }
    }
    panic!("{q}: the shards did not settle");
}

/// The browser's hand-written reader reads the directory, every partition
/// and every refine block exactly as bincode wrote them.
#[test]
fn every_vector_shard_reads_as_written() {
    let s = site(2);
    let mut w = open_with_directory(&s);
    let dir = s.manifest.vector_directory().unwrap();
    assert!(wire_reads_as_written(dir, bytes_of(&s, &dir.name)).unwrap());
    for p in 0..fixture().vectors.ivf.len() {
        let info = w.partition_shard(p).unwrap().clone();
        let bytes = bytes_of(&s, &info.name);
        assert!(
            wire_reads_as_written(&info, bytes).unwrap(),
            "{}",
            info.name
        );
        w.add_partition(p, bytes).unwrap();
    }
    let blocks = w.corpus.partitioned.as_ref().unwrap().blocks();
    assert!(blocks > 0);
    for b in 0..blocks {
        let info = w.block_shard(b).unwrap().clone();
        let bytes = bytes_of(&s, &info.name);
        assert!(
            wire_reads_as_written(&info, bytes).unwrap(),
            "{}",
            info.name
        );
    }
}

#[test]
fn the_directory_lists_every_partition_and_the_manifest_none() {
    let f = fixture();
    let s = site(2);
    let m = &s.manifest;
    assert!(m.vectors_shard().is_none());
    assert_eq!(m.shards_of(ShardKind::Partition).count(), 0);
    let w = open_with_directory(&s);
    let all = f.vectors.ivf.len();
    assert!(all > 4, "{all} partitions");
    assert!(w.partition_shard(all).is_none());
    for p in 0..all {
        let info = w.partition_shard(p).unwrap();
        assert_eq!(info.kind, ShardKind::Partition);
        assert_eq!(bytes_of(&s, &info.name).len() as u64, info.bytes);
    }
    // Every shard written is listed: the manifest's, a postings or edge
    // shard that the search shard lists, a text shard that the text
    // directory lists, a partition, or a refine block that a partition
    // lists.
    let blocks = w.corpus.partitioned.as_ref().unwrap().blocks();
    assert!(blocks >= all, "{blocks} blocks");
    assert_eq!(
        s.files.len(),
        w.manifest.shards.len() + s.text.len() + all + blocks,
        "partition shards and blocks are written beside the listed ones"
    );
    // Without ivf_probe, the site keeps one vectors shard.
    assert!(site(0).manifest.vectors_shard().is_some());
}

#[test]
fn the_browser_ranks_like_the_cli_with_partitions_and_fetches_only_the_probed_ones() {
    let f = fixture();
    let settings = settings(2);
    let native = Corpus::new(
        f.data.clone(),
        Some(VectorIndex::decode(&f.vectors.encode().unwrap()).unwrap()),
        f.lexical.clone(),
    );
    let s = site(2);
    let mut w = open_with_directory(&s);
    let all = f.vectors.ivf.len();
    for (q, v) in &f.queries {
        let a = retrieve(&native, q, Some(v), &settings).unwrap();
        let (b, fetched) = retrieve_web(&mut w, &s, q, v, &settings);
        assert_eq!(a.chunks, b.chunks, "{q}");
        assert!(fetched.len() <= 2, "{q}: fetched {fetched:?}");
    }
    let pv = w.corpus.partitioned.as_ref().unwrap();
    let loaded = pv.partitions_loaded.iter().filter(|l| **l).count();
    assert!(loaded < all, "{loaded} of {all} partitions loaded");
    // Only the refined chunks' blocks are fetched, not every probed one.
    let blocks = pv.blocks_loaded.iter().filter(|l| **l).count();
    assert!(blocks < pv.blocks(), "{blocks} of {} blocks", pv.blocks());
    // A fresh reader fetches the question's partitions in its first round.
    let mut fresh = open_with_directory(&s);
    let (q, v) = &f.queries[1];
    assert_eq!(retrieve_web(&mut fresh, &s, q, v, &settings).1.len(), 2);
}

#[test]
fn probing_every_partition_finds_the_exact_nearest_chunks() {
    let f = fixture();
    let native = Corpus::new(
        f.data.clone(),
        Some(VectorIndex::decode(&f.vectors.encode().unwrap()).unwrap()),
        f.lexical.clone(),
    );
    // Raw distances (the hubness correction is checked in retrieve.rs).
    let every = RetrievalSettings {
        ivf_refine: usize::MAX,
        hubness_weight: 0.0,
        ..settings(f.vectors.ivf.len())
    };
    for (q, v) in &f.queries {
        let exact = f.vectors.search_exact(v, 5).unwrap();
        let r = retrieve(&native, q, Some(v), &every).unwrap();
        // Every chunk distance is exact once every partition is probed and
        // every probed chunk refined.
        for c in r.chunks.iter().filter(|c| c.score.distance.is_some()) {
            let d = c.score.distance.unwrap();
            let truth = native.distance(Some(v), c.chunk).unwrap();
            assert_eq!(d, truth, "{q}: chunk {}", c.chunk);
        }
        assert!(!exact.is_empty());
    }
}

#[test]
fn damaged_or_misplaced_partitions_and_blocks_are_typed_errors() {
    let s = site(2);
    let mut w = open_with_directory(&s);
    let first = w.partition_shard(0).unwrap().name.clone();
    let second = w.partition_shard(1).unwrap().name.clone();
    // Another partition's (intact) bytes under partition 0's listing.
    assert!(matches!(
        w.add_partition(0, bytes_of(&s, &second)),
        Err(CoreError::ChecksumMismatch { .. })
    ));
    let mut flipped = bytes_of(&s, &first).to_vec();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    assert!(w.add_partition(0, &flipped).is_err());
    assert!(w.add_partition(10_000, bytes_of(&s, &first)).is_err());
    let loaded = |w: &WebIndex| {
        w.corpus
            .partitioned
            .as_ref()
            .unwrap()
            .partitions_loaded
            .clone()
    };
    assert!(loaded(&w).iter().all(|l| !l));
    // A refine block is known only once its partition is loaded.
    assert!(matches!(
        w.add_block(0, &b"anything"[..]),
        Err(CoreError::Manifest { .. })
    ));
    w.add_partition(0, bytes_of(&s, &first)).unwrap();
    assert!(loaded(&w)[0]);
    let block = w.block_shard(0).unwrap().name.clone();
    let mut damaged = bytes_of(&s, &block).to_vec();
    let last = damaged.len() - 1;
    damaged[last] ^= 1;
    assert!(w.add_block(0, &damaged).is_err());
    // Partition 0's second block, if any, is not its first.
    if let Some(other) = w.block_shard(1).map(|i| i.name.clone()) {
        assert!(w.add_block(0, bytes_of(&s, &other)).is_err());
    }
    w.add_block(0, bytes_of(&s, &block)).unwrap();
    assert!(w.corpus.partitioned.as_ref().unwrap().blocks_loaded[0]);
}
