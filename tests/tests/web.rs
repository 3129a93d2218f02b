//! The web layout of the index (`core::web`) over the fixture: the browser's
//! reader gets back exactly the native tables, ranks exactly as the native
//! corpus does, is deterministic, and rejects every kind of damage with a
//! typed error.

use std::sync::OnceLock;

use codegloss_core::answer::build_context_estimated;
use codegloss_core::format::Manifest;
use codegloss_core::lexical::{coarse_code, length_code, lower_length, LexicalIndex};
use codegloss_core::model::EntityKind;
use codegloss_core::retrieve::{retrieve, Corpus, RetrievalSettings};
use codegloss_core::web::{
    build_site_index_with, open_shard, shard_hash_hex, wire_reads_as_written, ShardInfo, ShardKind,
    SiteIndex, WebIndex, WebManifest, SHARD_HASH_BYTES,
};
use codegloss_core::{CoreError, IndexData};
use codegloss_indexer::{ingest::build, Config};
use codegloss_tests::{fixture_repo, FIXTURE_QUESTIONS as QUESTIONS};
use indicatif::ProgressBar;

fn native() -> &'static (Manifest, IndexData, LexicalIndex) {
    static N: OnceLock<(Manifest, IndexData, LexicalIndex)> = OnceLock::new();
    N.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let out = build::build_index(&fixture_repo(), &Config::default(), &ProgressBar::hidden())
            .unwrap();
        codegloss_indexer::store::write_index(dir.path(), &out.data, None, "test").unwrap();
        let (manifest, data) = codegloss_indexer::store::read_index(dir.path()).unwrap();
        let lexical = codegloss_indexer::store::read_lexical(dir.path(), &manifest).unwrap();
        (manifest, data, lexical)
    })
}

/// The fixture's site, its vocabulary spread over runs of about 1,000
/// postings (the default puts the whole fixture in one run).
fn site() -> SiteIndex {
    let (m, d, l) = native();
    build_site_index_with(m, d, l, None, 1_000, 40, 60).unwrap()
}

fn bytes_of<'a>(site: &'a SiteIndex, name: &str) -> &'a [u8] {
    &site.files.iter().find(|(n, _)| n == name).unwrap().1
}

fn open(site: &SiteIndex) -> WebIndex {
    let search = site.manifest.search_shard().unwrap();
    WebIndex::open(site.manifest.clone(), bytes_of(site, &search.name)).unwrap()
}

/// Every shard the site lists: the manifest's, and the postings and edge
/// shards of the search shard's directory, at the positions a
/// [`WebIndex`] opened on it gives them.
fn listed(site: &SiteIndex) -> WebManifest {
    open(site).manifest
}

/// Load every edge shard into `w`.
fn load_edges(w: &mut WebIndex, s: &SiteIndex) {
    for (p, info) in listed(s).shards_of(ShardKind::Edges) {
        w.add_shard(p, bytes_of(s, &info.name)).unwrap();
    }
}

/// Load every name shard into `w`.
fn load_names(w: &mut WebIndex, s: &SiteIndex) {
    for (p, info) in listed(s).shards_of(ShardKind::Names) {
        w.add_shard(p, bytes_of(s, &info.name)).unwrap();
    }
}

/// Load the text directory into `w`: its text shards join `w`'s manifest.
fn load_text_directory(w: &mut WebIndex, s: &SiteIndex) {
    let (p, d) = s
        .manifest
        .shards_of(ShardKind::TextDirectory)
        .next()
        .unwrap();
    w.add_text(p, bytes_of(s, &d.name)).unwrap();
}

#[test]
fn shards_are_content_addressed_or_sealed() {
    let s = site();
    let m = &s.manifest;
    assert_eq!(m.shards_of(ShardKind::Search).count(), 1);
    // The text shards are listed in the text directory, the postings and
    // edge shards in the search shard, not the manifest.
    assert_eq!(m.shards_of(ShardKind::TextDirectory).count(), 1);
    assert_eq!(m.shards_of(ShardKind::Text).count(), 0);
    assert_eq!(m.shards_of(ShardKind::Postings).count(), 0);
    assert_eq!(m.shards_of(ShardKind::Edges).count(), 0);
    assert!(!s.text.is_empty());
    let all = listed(&s);
    let (_, directory) = all.shards.split_at(m.shards.len());
    assert!(!directory.is_empty());
    let written = m.shards.iter().chain(directory).chain(&s.text);
    assert_eq!(written.clone().count(), s.files.len());
    let listed_apart = m.shards.len()..s.files.len();
    for (i, (info, (name, bytes))) in written.zip(&s.files).enumerate() {
        assert_eq!(&info.name, name);
        assert_eq!(info.sha256.len(), 2 * SHARD_HASH_BYTES);
        // The manifest's shards are named and checked by their hash; the
        // directories' shards are sealed under their directory's key,
        // named by it and their place, and listed without sizes.
        if listed_apart.contains(&i) {
            assert!(info.sealed, "{name}");
            assert_eq!(info.bytes, 0);
            assert!(name.contains(&format!("-{}-", info.sha256)), "{name}");
            assert_ne!(info.sha256, shard_hash_hex(bytes));
        } else {
            assert!(!info.sealed, "{name}");
            assert_eq!(info.sha256, shard_hash_hex(bytes));
            assert_eq!(info.bytes, bytes.len() as u64);
            assert!(name.ends_with(&format!("{}.bin", info.sha256)));
        }
        // Every shard opens as its entry says.
        assert!(open_shard(info, bytes).is_ok(), "{name}");
    }
    // One key per directory: the search shard's, the text directory's.
    let keys = |shards: &mut dyn Iterator<Item = &ShardInfo>| {
        shards
            .map(|s| s.sha256.clone())
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(keys(&mut directory.iter()).len(), 1);
    assert_eq!(keys(&mut s.text.iter()).len(), 1);
    // A place's name is unique per kind: `<kind>-<key>-<place>.bin`.
    for (kind, n) in [
        (
            ShardKind::Postings,
            all.shards_of(ShardKind::Postings).count(),
        ),
        (ShardKind::Names, all.shards_of(ShardKind::Names).count()),
    ] {
        let (_, last) = all.shards_of(kind).last().unwrap();
        assert!(
            last.name.ends_with(&format!("-{}.bin", n - 1)),
            "{}",
            last.name
        );
    }
    // Postings shards cover every term exactly once, in order.
    let mut next = 0u32;
    for (_, p) in all.shards_of(ShardKind::Postings) {
        let [a, b] = p.terms.unwrap();
        assert_eq!(a, next);
        next = b + 1;
    }
    assert!(next > 0);
    // Text shards cover every chunk exactly once, in order, and the text
    // directory lists them as the site wrote them, but for their sizes.
    let mut w = open(&s);
    load_text_directory(&mut w, &s);
    let listed: Vec<&ShardInfo> = w
        .manifest
        .shards_of(ShardKind::Text)
        .map(|(_, t)| t)
        .collect();
    let sizeless: Vec<ShardInfo> = s
        .text
        .iter()
        .map(|t| ShardInfo {
            bytes: 0,
            ..t.clone()
        })
        .collect();
    assert_eq!(listed, sizeless.iter().collect::<Vec<_>>());
    let mut next = 0u32;
    for t in &s.text {
        let [a, b] = t.chunks.unwrap();
        assert_eq!(a, next);
        assert!(b >= a);
        next = b + 1;
    }
    assert_eq!(next as u64, m.counts.chunks);
    // The manifest round-trips through JSON.
    assert_eq!(&WebManifest::from_json(&m.to_json()).unwrap(), m);
}

/// The browser's hand-written reader reads every shard of the site (the
/// search shard, postings, edges, qualified names, the text directory and
/// the text shards) exactly as bincode wrote it, and the binary manifest
/// back into the manifest.
#[test]
fn every_shard_reads_as_written() {
    let s = site();
    let listed = listed(&s);
    let mut kinds = std::collections::BTreeSet::new();
    for info in listed.shards.iter().chain(&s.text) {
        let bytes = bytes_of(&s, &info.name);
        assert!(wire_reads_as_written(info, bytes).unwrap(), "{}", info.name);
        kinds.insert(info.kind);
    }
    for kind in [
        ShardKind::Search,
        ShardKind::Postings,
        ShardKind::Edges,
        ShardKind::Qualified,
        ShardKind::TextDirectory,
        ShardKind::Text,
    ] {
        assert!(
            kinds.contains(&kind),
            "no {kind:?} shard in the fixture site"
        );
    }
    let binary = s.manifest.to_binary().unwrap();
    assert_eq!(WebManifest::from_binary(&binary).unwrap(), s.manifest);
}

#[test]
fn deterministic() {
    let (a, b) = (site(), site());
    assert_eq!(a.manifest.to_json(), b.manifest.to_json());
    assert_eq!(a.files, b.files);
}

/// The native tables as the search shard should carry them: no text, no
/// file hashes, parse statistics, warnings, include directives, entity
/// spans or chunk lines.
fn stripped(data: &IndexData) -> IndexData {
    let mut d = data.clone();
    for f in &mut d.files {
        f.sha256.clear();
        f.bytes = 0;
        f.lines = 0;
        f.parse = None;
        f.warnings.clear();
        f.includes.clear();
    }
    for e in &mut d.entities {
        e.gloss.text.clear();
        e.gloss.model = None;
        e.section_path = None;
        e.concepts.clear();
        e.doc_comment = None;
        e.signature.clear();
        e.params.clear();
        e.template_params = None;
        e.bases.clear();
        e.return_type = None;
        e.span = None;
    }
    for c in &mut d.chunks {
        c.code.clear();
        c.frame = codegloss_core::CodeFrame::default();
        c.leading_comment = None;
        c.parameters.clear();
        c.return_type = None;
        c.section_path = None;
        c.file_name.clear();
        c.module.clear();
        c.start_line = 0;
        c.end_line = 0;
    }
    d
}

#[test]
fn the_search_shard_carries_the_tables_exactly() {
    let s = site();
    let mut w = open(&s);
    // The names of entities with a file arrive in name shards.
    assert!(listed(&s).shards_of(ShardKind::Names).count() > 1);
    assert!(w
        .corpus
        .data
        .entities
        .iter()
        .any(|e| e.file.is_some() && e.kind != EntityKind::File && e.name.is_empty()));
    load_names(&mut w, &s);
    let (_, data, _) = native();
    let want = stripped(data);
    assert_eq!(w.corpus.data.files, want.files);
    for (a, b) in w.corpus.data.entities.iter().zip(&want.entities) {
        assert_eq!(a, b);
    }
    for (a, b) in w.corpus.data.chunks.iter().zip(&want.chunks) {
        assert_eq!(a, b);
    }
    // The search shard carries the edges the entities imply; edge shards
    // bring the others.
    assert!(w.corpus.data.edges.len() < want.edges.len());
    assert!(w.corpus.data.edges.iter().all(|e| want.edges.contains(e)));
    load_edges(&mut w, &s);
    assert_eq!(w.corpus.data, want);
    let (_, _, lexical) = native();
    // Document lengths travel as the coarse byte the scores over all
    // chunks read them through; the fine step rides with each chunk's
    // facts, so every fine code ranking reads is the native one.
    let coarse =
        |l: &[u32]| -> Vec<u8> { l.iter().map(|&x| coarse_code(length_code(x))).collect() };
    assert_eq!(coarse(&w.corpus.lexical.doc_len), coarse(&lexical.doc_len));
    assert!(w
        .corpus
        .lexical
        .doc_len
        .iter()
        .all(|&x| lower_length(coarse_code(length_code(x))) == x));
    assert!(
        w.corpus.lexical.terms.is_empty(),
        "the vocabulary is not in the search shard"
    );
    // The qualified names are not in the search shard; their own shard
    // completes the features.
    assert!(w.corpus.features.qualified_absent);
    assert!(w.corpus.features.names.is_empty());
    let (q, info) = s.manifest.shards_of(ShardKind::Qualified).next().unwrap();
    w.add_shard(q, bytes_of(&s, &info.name)).unwrap();
    // Everything but the token estimates, which the web layout omits.
    let mut want = codegloss_core::retrieve::features::TextFeatures::compute(data);
    want.set_length_steps(lexical);
    assert!(want.chunks.iter().any(|c| c.tokens > 0));
    assert!(want.chunks.iter().any(|c| c.length_step > 0));
    for c in &mut want.chunks {
        c.tokens = 0;
    }
    assert_eq!(w.corpus.features, want);
    assert!(!w.corpus.features.qualified_absent);
}

#[test]
fn only_a_question_that_writes_a_qualified_name_fetches_them() {
    let s = site();
    let (q, _) = s.manifest.shards_of(ShardKind::Qualified).next().unwrap();
    let fetched = |question: &str| retrieve_web(&mut open(&s), &s, question).1;
    assert!(!fetched(QUESTIONS[1]).contains(&q), "{}", QUESTIONS[1]);
    let api = "How do I call picsim::detail::HaloCells::fillHalo?";
    assert!(fetched(api).contains(&q), "{api}");
}

#[test]
fn postings_shards_carry_the_vocabulary_in_runs() {
    let s = site();
    let mut w = open(&s);
    let (_, _, lexical) = native();
    // The manifest names each run's first term; the runs cover the
    // vocabulary in order.
    let all = listed(&s);
    let firsts: Vec<&str> = all
        .shards_of(ShardKind::Postings)
        .map(|(_, p)| p.first_term.as_deref().unwrap())
        .collect();
    assert!(firsts.len() >= 2, "the fixture spans several runs");
    assert!(firsts.windows(2).all(|f| f[0] < f[1]));
    // Loaded in reverse order, every run gives back its terms and lists.
    let shards: Vec<(usize, String)> = all
        .shards_of(ShardKind::Postings)
        .map(|(p, i)| (p, i.name.clone()))
        .collect();
    for (p, name) in shards.iter().rev() {
        w.add_shard(*p, bytes_of(&s, name)).unwrap();
    }
    let web = &w.corpus.lexical;
    assert_eq!(web.terms.len(), lexical.terms.len());
    for term in &lexical.terms {
        assert_eq!(web.chunks_with(term), lexical.chunks_with(term), "{term}");
    }
    assert!(web.take_wanted().is_empty());
    // A term before every run, and one inside a loaded run but not in it,
    // are absent and want nothing.
    assert!(web.chunks_with("").is_empty());
    let inside = format!("{}\u{1}", firsts[0]);
    assert!(!lexical.terms.contains(&inside));
    assert!(web.chunks_with(&inside).is_empty());
    assert!(web.take_wanted().is_empty());
}

#[test]
fn a_term_outside_the_vocabulary_costs_the_run_it_would_be_in() {
    let s = site();
    let w = open(&s);
    // Not loaded: the lookup records the run that would hold it.
    let absent = "zzzz-not-a-term";
    assert!(w.corpus.lexical.chunks_with(absent).is_empty());
    let need = w.missing_keyword_shards();
    assert_eq!(need.len(), 1);
    let last = listed(&s).shards_of(ShardKind::Postings).last().unwrap().0;
    assert_eq!(need[0], last);
}

#[test]
fn search_shard_holds_no_text_and_text_shards_restore_it() {
    let s = site();
    let mut w = open(&s);
    let (_, data, _) = native();
    assert!(w.corpus.data.chunks.iter().all(|c| c.code.is_empty()));
    assert!(w
        .corpus
        .data
        .entities
        .iter()
        .all(|e| e.gloss.text.is_empty()));
    let all: Vec<u32> = (0..data.chunks.len() as u32).collect();
    // First the text directory alone, then the shards it lists.
    let directory: Vec<usize> = s
        .manifest
        .shards_of(ShardKind::TextDirectory)
        .map(|(p, _)| p)
        .collect();
    assert_eq!(w.missing_text(&all), directory);
    assert!(w.missing_text(&[]).is_empty());
    load_text_directory(&mut w, &s);
    load_edges(&mut w, &s);
    load_names(&mut w, &s);
    let missing = w.missing_text(&all);
    assert_eq!(missing.len(), s.text.len());
    for p in missing {
        let name = w.manifest.shards[p].name.clone();
        w.add_text(p, bytes_of(&s, &name)).unwrap();
    }
    assert!(w.missing_text(&all).is_empty());
    // A second copy of the directory changes nothing.
    let before = w.manifest.shards.len();
    load_text_directory(&mut w, &s);
    assert_eq!(w.manifest.shards.len(), before);
    // Everything comes back but what the browser never reads: file hashes,
    // sizes, line counts, parse statistics, warnings, include directives
    // (retrieval follows the include edges) and concept text (which only
    // fed the vectors, shipped built). An entity's section path comes back
    // with its text.
    let mut expected = data.clone();
    assert!(expected.files.iter().any(|f| !f.includes.is_empty()));
    assert!(expected.entities.iter().any(|e| e.section_path.is_some()));
    for f in &mut expected.files {
        f.sha256.clear();
        f.bytes = 0;
        f.lines = 0;
        f.parse = None;
        f.warnings.clear();
        f.includes.clear();
    }
    assert!(expected.entities.iter().any(|e| !e.concepts.is_empty()));
    for e in &mut expected.entities {
        e.concepts.clear();
    }
    assert_eq!(w.corpus.data, expected);
}

/// Retrieve as the browser does: fetch the keyword shards a retrieval
/// needed and did not have, until it asks for none. Returns the positions
/// it fetched.
fn retrieve_web(
    w: &mut WebIndex,
    s: &SiteIndex,
    q: &str,
) -> (codegloss_core::retrieve::Retrieval, Vec<usize>) {
    let mut fetched = Vec::new();
    for _ in 0..8 {
        let r = retrieve(&w.corpus, q, None, &RetrievalSettings::default()).unwrap();
        let m = w.missing();
        let need = m.shards;
        if need.is_empty() {
            return (r, fetched);
        }
        for p in need {
            let name = w.manifest.shards[p].name.clone();
            w.add_shard(p, bytes_of(s, &name)).unwrap();
            fetched.push(p);
        }
    }
    panic!("{q}: postings and edges did not settle");
}

#[test]
fn the_web_corpus_ranks_like_the_native_one() {
    let (_, data, lexical) = native();
    let native = Corpus::new(data.clone(), None, lexical.clone());
    let s = site();
    let mut w = open(&s);
    let settings = RetrievalSettings::default();
    assert!(listed(&s).shards_of(ShardKind::Postings).count() >= 1);
    for q in QUESTIONS {
        let a = retrieve(&native, q, None, &settings).unwrap();
        let (b, _) = retrieve_web(&mut w, &s, q);
        assert_eq!(a.chunks, b.chunks, "{q}");
        assert!(a.context_tokens(&native) > 0, "{q}");
        // The web layout ships no token estimates (a native report).
        assert_eq!(b.context_tokens(&w.corpus), 0, "{q}");
    }
    // A fresh index needs a round of postings for a keyword query.
    let mut fresh = open(&s);
    assert!(!retrieve_web(&mut fresh, &s, QUESTIONS[1]).1.is_empty());
    // A question reads the names of the files of its candidates: from a
    // fresh index, some of the name shards, never all.
    let names = listed(&s).shards_of(ShardKind::Names).count();
    for q in QUESTIONS {
        let mut fresh = open(&s);
        let (_, fetched) = retrieve_web(&mut fresh, &s, q);
        let read = fetched
            .iter()
            .filter(|&&p| fresh.manifest.shards[p].kind == ShardKind::Names)
            .count();
        assert!(
            read > 0 && read < names,
            "{q}: {read} of {names} name shards"
        );
    }
}

/// The answer's context of `b`, built again with the edges and names it
/// lacked, as the worker does.
fn context_with_edges(
    w: &mut WebIndex,
    s: &SiteIndex,
    b: &codegloss_core::retrieve::Retrieval,
    q: &str,
) -> codegloss_core::answer::Context {
    let mut context = build_context_estimated(&w.corpus, b, q, 2_000);
    for _ in 0..3 {
        let m = w.missing();
        if m.is_empty() {
            break;
        }
        for p in m.shards {
            let kind = w.manifest.shards[p].kind;
            assert!(
                matches!(kind, ShardKind::Edges | ShardKind::Names),
                "{q}: shard {p}"
            );
            let name = w.manifest.shards[p].name.clone();
            w.add_shard(p, bytes_of(s, &name)).unwrap();
        }
        context = build_context_estimated(&w.corpus, b, q, 2_000);
    }
    assert!(
        w.missing().is_empty(),
        "{q}: the context's edges and names did not settle"
    );
    context
}

#[test]
fn edges_load_for_the_entities_a_question_and_its_answer_look_up() {
    let (_, data, lexical) = native();
    let native = Corpus::new(data.clone(), None, lexical.clone());
    let s = site();
    let edge_shards: Vec<usize> = listed(&s)
        .shards_of(ShardKind::Edges)
        .map(|(p, _)| p)
        .collect();
    assert!(edge_shards.len() >= 3, "{} edge shards", edge_shards.len());
    let settings = RetrievalSettings::default();
    let mut fetched_any = false;
    for q in QUESTIONS {
        let mut w = open(&s);
        // All the text, so that the contexts compare whole.
        load_text_directory(&mut w, &s);
        let all: Vec<u32> = (0..data.chunks.len() as u32).collect();
        for p in w.missing_text(&all) {
            let name = w.manifest.shards[p].name.clone();
            w.add_text(p, bytes_of(&s, &name)).unwrap();
        }
        let (b, fetched) = retrieve_web(&mut w, &s, q);
        let a = retrieve(&native, q, None, &settings).unwrap();
        assert_eq!(a.chunks, b.chunks, "{q}");
        let edges = fetched.iter().filter(|p| edge_shards.contains(p)).count();
        assert!(edges < edge_shards.len(), "{q}: every edge shard fetched");
        fetched_any |= edges > 0;
        let context = context_with_edges(&mut w, &s, &b, q);
        assert_eq!(
            context,
            build_context_estimated(&native, &a, q, 2_000),
            "{q}"
        );
    }
    assert!(fetched_any, "no question followed an edge");
}

/// What the worker does for an answer (`Engine::prompt`), without the
/// text of any chunk to start with: load the text of `line_chunks` (a
/// chunk's lines arrive with its text, and they choose the units), then of
/// `context_chunks`, then the edges the context looks up. The context is
/// the native one.
#[test]
fn an_answer_loads_the_lines_then_the_text_of_its_units() {
    let (_, data, lexical) = native();
    let native = Corpus::new(data.clone(), None, lexical.clone());
    let s = site();
    assert!(s.manifest.shards_of(ShardKind::TextDirectory).count() == 1);
    let settings = RetrievalSettings::default();
    for q in QUESTIONS {
        let mut w = open(&s);
        let (b, _) = retrieve_web(&mut w, &s, q);
        let a = retrieve(&native, q, None, &settings).unwrap();
        assert_eq!(a.chunks, b.chunks, "{q}");
        let mut rounds = 0;
        loop {
            let lines = codegloss_core::answer::line_chunks(&w.corpus, &b);
            let wanted = if w.missing_text(&lines).is_empty() {
                codegloss_core::answer::context_chunks(&w.corpus, &b)
            } else {
                lines
            };
            if w.missing_text(&wanted).is_empty() {
                break;
            }
            rounds += 1;
            assert!(rounds < 6, "{q}: the text did not settle");
            for _ in 0..2 {
                for p in w.missing_text(&wanted) {
                    let name = w.manifest.shards[p].name.clone();
                    w.add_text(p, bytes_of(&s, &name)).unwrap();
                }
            }
        }
        let context = context_with_edges(&mut w, &s, &b, q);
        assert_eq!(
            context,
            build_context_estimated(&native, &a, q, 2_000),
            "{q}"
        );
        let all: Vec<u32> = (0..data.chunks.len() as u32).collect();
        assert!(
            !w.missing_text(&all).is_empty(),
            "{q}: every text shard loaded"
        );
    }
}

#[test]
fn damage_is_a_typed_error() {
    let s = site();
    let info = s.manifest.search_shard().unwrap().clone();
    let good = bytes_of(&s, &info.name).to_vec();
    let open_with = |bytes: &[u8], manifest: &WebManifest| {
        WebIndex::open(manifest.clone(), bytes)
            .map(|_| ())
            .unwrap_err()
    };
    // A flipped byte: the hash no longer matches.
    let mut flipped = good.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x40;
    assert!(matches!(
        open_with(&flipped, &s.manifest),
        CoreError::ChecksumMismatch { .. }
    ));
    // Truncated.
    assert!(matches!(
        open_with(&good[..good.len() - 10], &s.manifest),
        CoreError::ChecksumMismatch { .. }
    ));
    // A manifest that vouches for bad bytes: the format checks still catch them.
    let vouch = |bytes: &[u8]| {
        let mut m = s.manifest.clone();
        let sh = m.shards.iter_mut().find(|x| x.name == info.name).unwrap();
        sh.sha256 = shard_hash_hex(bytes);
        sh.bytes = bytes.len() as u64;
        open_with(bytes, &m)
    };
    let mut magic = good.clone();
    magic[0] = b'X';
    assert!(matches!(vouch(&magic), CoreError::BadMagic { .. }));
    let mut version = good.clone();
    version[8] = 99;
    assert!(matches!(
        vouch(&version),
        CoreError::UnsupportedVersion { found: 99, .. }
    ));
    let mut kind = good.clone();
    kind[12] = 3;
    assert!(matches!(vouch(&kind), CoreError::WrongKind { .. }));
    let mut body = good.clone();
    let last = body.len() - 1;
    body[last] ^= 0xff;
    body.truncate(body.len() - 100);
    assert!(matches!(vouch(&body), CoreError::Decode { .. }));
    assert!(matches!(vouch(&good[..5]), CoreError::Truncated { .. }));
    // A text shard handed in at the wrong position.
    let mut w = open(&s);
    load_text_directory(&mut w, &s);
    let (p, t) = w.manifest.shards_of(ShardKind::Text).next().unwrap();
    let t = t.clone();
    assert!(w.add_text(p + 1000, bytes_of(&s, &t.name)).is_err());
    assert!(
        w.add_text(0, bytes_of(&s, &t.name)).is_err(),
        "position 0 is the search shard"
    );
    let (pp, ps) = {
        let (p, i) = w.manifest.shards_of(ShardKind::Postings).next().unwrap();
        (p, i.clone())
    };
    assert!(
        w.add_shard(p, bytes_of(&s, &ps.name)).is_err(),
        "postings at a text position"
    );
    assert!(
        w.add_shard(pp, bytes_of(&s, &t.name)).is_err(),
        "text bytes as postings"
    );
    // A postings shard that is not the run the listing names: its first
    // term lies before the listing's start.
    let positions: Vec<usize> = w
        .manifest
        .shards_of(ShardKind::Postings)
        .map(|(p, _)| p)
        .collect();
    let last = *positions.last().unwrap();
    let mut m = open(&s);
    let first = m.manifest.shards[last].first_term.clone().unwrap();
    m.manifest.shards[last].first_term = Some(format!("{first}~"));
    let last_name = m.manifest.shards[last].name.clone();
    assert!(matches!(
        m.add_shard(last, bytes_of(&s, &last_name)),
        Err(CoreError::Inconsistent { .. })
    ));
    w.add_shard(pp, bytes_of(&s, &ps.name)).unwrap();
    // An edge shard handed in at another's position.
    let mut r = open(&s);
    let edges: Vec<(usize, ShardInfo)> = r
        .manifest
        .shards_of(ShardKind::Edges)
        .map(|(p, i)| (p, i.clone()))
        .collect();
    r.manifest.shards[edges[1].0].sha256 = edges[0].1.sha256.clone();
    r.manifest.shards[edges[1].0].bytes = edges[0].1.bytes;
    assert!(matches!(
        r.add_shard(edges[1].0, bytes_of(&s, &edges[0].1.name)),
        Err(CoreError::Inconsistent { .. })
    ));
    // A manifest that lists postings or edge shards beside the search
    // shard's directory (an older layout, or a forged one).
    for kind in [ShardKind::Postings, ShardKind::Edges] {
        let mut beside = s.manifest.clone();
        let (_, extra) = listed(&s)
            .shards_of(kind)
            .next()
            .map(|(p, i)| (p, i.clone()))
            .unwrap();
        beside.shards.push(extra);
        assert!(matches!(
            WebIndex::open(beside, bytes_of(&s, &info.name)),
            Err(CoreError::Manifest { .. })
        ));
    }
    // A manifest of another format or version.
    let mut m = s.manifest.clone();
    m.format_version = 99;
    assert!(matches!(
        WebManifest::from_json(&m.to_json()),
        Err(CoreError::UnsupportedVersion { found: 99, .. })
    ));
    assert!(WebManifest::from_json("{\"format\": \"x\"}").is_err());
    assert!(WebManifest::from_json("not json").is_err());
}
