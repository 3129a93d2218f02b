//! The fuzz harnesses of codegloss, one public function per target in
//! `fuzz_targets/` (the libFuzzer entry points only call them), so that the
//! same code also replays the seed corpus in `cargo test` here.
//!
//! It exists to check, on arbitrary bytes, what every decoder of untrusted
//! input promises: no panic, no hang, no allocation past a stated bound.
//! Each harness decodes its bytes the way the CLI or the browser engine
//! does, then *uses* what decoded (retrieval, context, prompt), because a
//! decoder that accepts bytes its users then index out of range is as
//! broken as one that panics itself. The bound is [`alloc::bounded`]'s:
//! every target's Rust heap may grow by at most [`BASE_BUDGET`] plus
//! [`BYTES_PER_INPUT_BYTE`] for each byte of (decompressed) input.
//!
//! Input layouts (the first bytes select what the rest is):
//! - `index_data`: `[sel] payload`; `sel % 6` picks files, entities,
//!   chunks, graph, lexical or vectors; with bit 7 the payload is the whole
//!   data file, else the harness puts a valid header (length, SHA-256) in
//!   front of it, so that mutations reach the bincode decoder.
//! - `index_manifest`: `manifest.json` text over the fixture's data files.
//! - `web_manifest`: `codegloss.json` text, optionally `\0` and the page's
//!   retrieval settings JSON, over the fixture's shards (its binary form
//!   must read back as the same manifest); or, when it starts with the
//!   shard magic, `codegloss.bin` bytes over the same shards.
//! - `web_shard`: `[sel] [which] payload`; `sel % 4` picks the search,
//!   postings, text or vectors shard (`which` the one of its kind); with
//!   bit 7 the payload is the whole shard, else its bincode payload, which
//!   the harness deflates and heads (a vectors payload also gets its data
//!   file header).
//! - `config`: `codegloss.toml` text.
//! - `sse`: `[chunk] stream`: a server-sent-event stream cut into pieces
//!   of `chunk + 1` bytes, then the text it streamed checked as an answer
//!   (the repetition guard at its prefixes, citations, support).
//! - `cpp`: `[sel] bytes` of a C++ file (`sel` picks parser settings).
//! - `docs`: `[lang] [budget] bytes` of a documentation file.

use std::collections::BTreeMap;

use codegloss_core::answer::{
    build_context_estimated, check_citations, context_chunks, parse_completion, parse_sse_line,
    StreamEvent,
};
use codegloss_core::chat::{cut_answer, repetition_cut};
use codegloss_core::lexical::LexicalIndex;
use codegloss_core::retrieve::{retrieve, Corpus, RetrievalSettings};
use codegloss_core::sse::SseLines;
use codegloss_core::web::{
    text_directory_shard, Missing, ShardInfo, ShardKind, WebIndex, WebManifest, WEB_MAGIC,
};
use codegloss_core::{DataKind, IndexData, Language, Manifest, VectorIndex};
use codegloss_indexer::config::ParseConfig;
use codegloss_indexer::{ingest::cpp, ingest::docs, Config};

pub mod alloc;
pub mod fixture;

/// Heap every target may use whatever its input.
pub const BASE_BUDGET: usize = 64 << 20;
/// Heap a target may use per byte of its input (after decompression).
pub const BYTES_PER_INPUT_BYTE: usize = 256;

fn budget(input_bytes: usize) -> usize {
    BASE_BUDGET.saturating_add(input_bytes.saturating_mul(BYTES_PER_INPUT_BYTE))
}

/// Run `f` within the budget for `input_bytes`, the fixture built first
/// (outside the budget).
fn run<T>(input_bytes: usize, f: impl FnOnce(&'static fixture::Fixture) -> T) -> T {
    static REPORT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let fx = fixture::get();
    let (out, peak) = alloc::bounded(budget(input_bytes), || f(fx));
    if *REPORT.get_or_init(|| std::env::var_os("CODEGLOSS_FUZZ_PEAK").is_some()) {
        eprintln!("codegloss-fuzz: {input_bytes} input bytes, peak {peak} bytes");
    }
    out
}

/// [`run`] for the targets whose input is text: input that is not UTF-8
/// is skipped (the readers take `&str`).
fn run_text(input: &[u8], f: impl FnOnce(&str, &'static fixture::Fixture)) {
    if let Ok(text) = std::str::from_utf8(input) {
        run(input.len(), |fx| f(text, fx));
    }
}

/// The data file kinds, in the order a target input's first byte selects.
pub const DATA_KINDS: [DataKind; 6] = [
    DataKind::Files,
    DataKind::Entities,
    DataKind::Chunks,
    DataKind::Graph,
    DataKind::Lexical,
    DataKind::Vectors,
];

/// SHA-256 as bytes (the data file header stores it raw).
fn sha256(bytes: &[u8]) -> Vec<u8> {
    let hex = codegloss_core::format::sha256_hex(bytes);
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect()
}

/// A data file of `kind` around `payload`, header valid.
pub fn data_file(kind: DataKind, payload: &[u8]) -> Vec<u8> {
    let fx = fixture::get();
    let mut out = fx.files[&kind][..16].to_vec();
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&sha256(payload));
    out.extend_from_slice(payload);
    out
}

/// A shard of `kind` around `payload`, header valid, deflated.
pub fn shard(kind: ShardKind, payload: &[u8]) -> Vec<u8> {
    let fx = fixture::get();
    let info = fx
        .web_listed
        .shards_of(kind)
        .chain(fx.web_ivf.shards_of(kind))
        .map(|(_, s)| s)
        .chain(fx.web_text.iter().filter(|s| s.kind == kind))
        .next()
        .expect("fixture shard");
    let mut out = fx.shards[&info.name][..16].to_vec();
    debug_assert_eq!(out[..8], WEB_MAGIC);
    out.extend_from_slice(&miniz_oxide::deflate::compress_to_vec(payload, 1));
    out
}

/// A shard listed in the search shard's directory (postings, edges),
/// vouched for after opening: the entry at `position` of the opened
/// index's list takes these size and hash.
struct Vouch {
    position: usize,
    bytes: u64,
    sha256: String,
}

/// The question a harness asks, `pick` choosing among two fixed ones (the
/// second a comparison) and one made of the corpus's own names: one
/// retrieval per input (retrieval is most of an input's time).
fn question(corpus: &Corpus, pick: usize) -> String {
    let data = &corpus.data;
    let name = data
        .entities
        .iter()
        .rev()
        .find(|e| !e.name.is_empty())
        .map_or("BareField", |e| e.name.as_str());
    let path = data.files.first().map_or("Field.h", |f| f.path.as_str());
    match pick % 4 {
        0 => "How are the halo cells of a field exchanged between ranks?".into(),
        1 => format!("What is the difference between {name} and fillHalo?"),
        // A qualified name: the web index fetches its qualified-names shard.
        2 => format!("How do I call detail::{name}?"),
        _ => format!("Where is {name} defined in {path} and what calls it?"),
    }
}

/// What the CLI's `query` and `ask` do with a loaded corpus.
fn use_corpus(corpus: &Corpus, settings: &RetrievalSettings, pick: usize) {
    let qv = fixture::query_vector();
    let qv = corpus.vectors.as_ref().map(|_| qv.as_slice());
    {
        let q = question(corpus, pick);
        let Ok(r) = retrieve(corpus, &q, qv, settings) else {
            return;
        };
        for c in &r.chunks {
            let _ = c.to_json(corpus, true);
        }
        let _ = (r.files(corpus), r.context_tokens(corpus));
        let _ = context_chunks(corpus, &r);
        let context = build_context_estimated(corpus, &r, &q, 2000);
        let _ = codegloss_core::answer::answer_template(&q).render(&q, &context);
    }
}

/// What `store::load_corpus` does after reading the bytes: decode and
/// check each file, then the cross-file checks of `read_vectors`.
fn load_corpus(
    manifest: &Manifest,
    files: &BTreeMap<DataKind, &[u8]>,
) -> Option<(Corpus, RetrievalSettings)> {
    for kind in DataKind::ALL {
        manifest.verify_data_file(kind, files[&kind]).ok()?;
    }
    let data = IndexData::decode(
        files[&DataKind::Files],
        files[&DataKind::Entities],
        files[&DataKind::Chunks],
        files[&DataKind::Graph],
    )
    .ok()?;
    let vectors = if manifest
        .data_files
        .iter()
        .any(|d| d.kind == DataKind::Vectors)
    {
        let bytes = files[&DataKind::Vectors];
        manifest.verify_data_file(DataKind::Vectors, bytes).ok()?;
        let v = VectorIndex::decode(bytes).ok()?;
        if manifest.embedding.as_ref().map(|i| &i.spec) != Some(&v.spec)
            || v.len() as u64 != manifest.counts.chunks
        {
            return None;
        }
        Some(v)
    } else {
        None
    };
    let lexical_bytes = files[&DataKind::Lexical];
    manifest
        .verify_data_file(DataKind::Lexical, lexical_bytes)
        .ok()?;
    let lexical = LexicalIndex::decode(lexical_bytes, manifest.counts.chunks as usize).ok()?;
    let settings = Config::default().retrieval_for(manifest);
    Some((Corpus::new(data, vectors, lexical), settings))
}

/// A manifest listing `files` with their true sizes and hashes.
fn manifest_for(base: &Manifest, files: &BTreeMap<DataKind, &[u8]>) -> Manifest {
    let mut m = base.clone();
    for d in &mut m.data_files {
        let bytes = files[&d.kind];
        d.bytes = bytes.len() as u64;
        d.sha256 = codegloss_core::format::sha256_hex(bytes);
    }
    m
}

/// The `index_data` target.
pub fn index_data(input: &[u8]) {
    let Some((&sel, rest)) = input.split_first() else {
        return;
    };
    let kind = DATA_KINDS[usize::from(sel & 0x7f) % DATA_KINDS.len()];
    let bytes = if sel & 0x80 != 0 {
        rest.to_vec()
    } else {
        data_file(kind, rest)
    };
    run(bytes.len(), |fx| {
        // The decoders on their own, as a caller without a manifest uses them.
        match kind {
            DataKind::Vectors => {
                if let Ok(v) = VectorIndex::decode(&bytes) {
                    if v.spec.dimension as usize == fixture::DIM {
                        let q = fixture::query_vector();
                        let _ = v.search_exact(&q, 10);
                        let _ = v.search_hnsw(&q, 10);
                        let _ = v.vector(0);
                    }
                }
            }
            DataKind::Lexical => {
                if let Ok(l) = LexicalIndex::decode(&bytes, fx.data.chunks.len()) {
                    let _ = l.search("halo cells exchange", 10);
                }
            }
            _ => {}
        }
        // The whole index as `codegloss query` reads it, this file replaced.
        let mut files: BTreeMap<DataKind, &[u8]> =
            fx.files.iter().map(|(k, v)| (*k, v.as_slice())).collect();
        files.insert(kind, &bytes);
        let mut manifest = manifest_for(&fx.manifest, &files);
        if let Ok(data) = IndexData::decode(
            files[&DataKind::Files],
            files[&DataKind::Entities],
            files[&DataKind::Chunks],
            files[&DataKind::Graph],
        ) {
            // As the indexer would have written them for these tables.
            manifest.counts = data.counts();
        }
        if let Some((corpus, settings)) = load_corpus(&manifest, &files) {
            use_corpus(&corpus, &settings, input.len());
        }
    });
}

/// The `index_manifest` target.
pub fn index_manifest(input: &[u8]) {
    run_text(input, |text, fx| {
        let Ok(manifest) = Manifest::from_json(text) else {
            return;
        };
        let _ = manifest.to_json();
        if let Some(e) = &manifest.embedding {
            let _ = e
                .spec
                .check_query_model(&fx.manifest.embedding.as_ref().expect("spec").spec);
        }
        let files: BTreeMap<DataKind, &[u8]> =
            fx.files.iter().map(|(k, v)| (*k, v.as_slice())).collect();
        if let Some((corpus, settings)) = load_corpus(&manifest, &files) {
            use_corpus(&corpus, &settings, input.len());
        }
    });
}

/// What the browser worker and engine do with a manifest and the shards it
/// names (`get` gives a shard's bytes by name): open, add the vectors, and
/// for each question fetch the postings a search asks for, search again,
/// fetch the text of the results and of their context, show the cards and
/// build the prompt.
fn drive_web<'a>(
    manifest: WebManifest,
    get: &dyn Fn(&str) -> Option<&'a [u8]>,
    settings_json: &str,
    pick: usize,
    vouch: Option<Vouch>,
) {
    let Ok(search) = manifest.search_shard() else {
        return;
    };
    let Some(search) = get(&search.name) else {
        return;
    };
    let Ok(settings) = manifest.retrieval.with_overrides(settings_json) else {
        return;
    };
    let Ok(mut index) = WebIndex::open(manifest, search) else {
        return;
    };
    if let Some(v) = vouch {
        if let Some(s) = index.manifest.shards.get_mut(v.position) {
            s.bytes = v.bytes;
            s.sha256 = v.sha256;
        }
    }
    if let Some(v) = index.manifest.vectors_shard().cloned() {
        if let Some(bytes) = get(&v.name) {
            let _ = index.add_vectors(bytes);
        }
    }
    if let Some(d) = index.manifest.vector_directory().cloned() {
        if let Some(bytes) = get(&d.name) {
            let _ = index.add_vector_directory(bytes);
        }
    }
    let qv = fixture::query_vector();
    let shard_bytes = |index: &WebIndex, position: usize| {
        index
            .manifest
            .shards
            .get(position)
            .and_then(|s| get(&s.name))
    };
    {
        let q = question(&index.corpus, pick);
        let qv = index.has_vectors().then_some(qv.as_slice());
        let mut result = None;
        // The engine answers `need_shards` until a search is final.
        for _ in 0..8 {
            let Ok(r) = retrieve(&index.corpus, &q, qv, &settings) else {
                break;
            };
            let missing = index.missing();
            if missing.is_empty() {
                result = Some(r);
                break;
            }
            let Missing {
                shards: need,
                partitions,
                blocks,
            } = missing;
            for p in need {
                if let Some(bytes) = shard_bytes(&index, p) {
                    let _ = index.add_shard(p, bytes);
                }
            }
            for p in partitions {
                let name = index.partition_shard(p).map(|s| s.name.clone());
                if let Some(bytes) = name.as_deref().and_then(get) {
                    let _ = index.add_partition(p, bytes);
                }
            }
            for b in blocks {
                let name = index.block_shard(b).map(|s| s.name.clone());
                if let Some(bytes) = name.as_deref().and_then(get) {
                    let _ = index.add_block(b, bytes);
                }
            }
        }
        let Some(r) = result else {
            return;
        };
        let ids: Vec<u32> = r.chunks.iter().map(|c| c.chunk).collect();
        let mut wanted = ids.clone();
        wanted.extend(context_chunks(&index.corpus, &r));
        // The text directory first, then the text shards it lists.
        for _ in 0..2 {
            for p in index.missing_text(&wanted) {
                if let Some(bytes) = shard_bytes(&index, p) {
                    let _ = index.add_text(p, bytes);
                }
            }
        }
        // `Engine::cards` indexes the tables directly.
        let data = &index.corpus.data;
        for rc in &r.chunks {
            let c = &data.chunks[rc.chunk as usize];
            let e = &data.entities[c.entity as usize];
            let _ = (&c.code, &e.gloss.text, rc.to_json(&index.corpus, false));
        }
        let _ = (r.files(&index.corpus), r.context_tokens(&index.corpus));
        // The engine answers `need_shards` until the context's edges are
        // loaded.
        let mut context = build_context_estimated(&index.corpus, &r, &q, 2000);
        for _ in 0..3 {
            let missing = index.missing();
            if missing.is_empty() {
                break;
            }
            for p in missing.shards {
                if let Some(bytes) = shard_bytes(&index, p) {
                    let _ = index.add_shard(p, bytes);
                }
            }
            context = build_context_estimated(&index.corpus, &r, &q, 2000);
        }
        let _ = codegloss_core::answer::answer_template(&q).render(&q, &context);
    }
}

/// The `web_manifest` target.
pub fn web_manifest(input: &[u8]) {
    if input.starts_with(&WEB_MAGIC) {
        run(input.len(), |fx| {
            let Ok(m) = WebManifest::from_binary(input) else {
                return;
            };
            drive_web(
                m,
                &|name| fx.shards.get(name).map(Vec::as_slice),
                "{}",
                input.len(),
                None,
            );
        });
        return;
    }
    let Ok(text) = std::str::from_utf8(input) else {
        return;
    };
    let (manifest, settings) = text.split_once('\0').unwrap_or((text, "{}"));
    run(input.len(), |fx| {
        let Ok(m) = WebManifest::from_json(manifest) else {
            return;
        };
        let binary = m.to_binary().expect("a manifest that parsed encodes");
        assert_eq!(
            WebManifest::from_binary(&binary).as_ref(),
            Ok(&m),
            "the binary form reads back as another manifest"
        );
        let _ = (m.to_json(), m.bytes_of(ShardKind::Text), m.vectors_shard());
        drive_web(
            m,
            &|name| fx.shards.get(name).map(Vec::as_slice),
            settings,
            input.len(),
            None,
        );
    });
}

/// The `web_shard` target.
pub fn web_shard(input: &[u8]) {
    let [sel, which, payload @ ..] = input else {
        return;
    };
    let kinds = [
        ShardKind::Search,
        ShardKind::Postings,
        ShardKind::Text,
        ShardKind::Vectors,
        ShardKind::VectorDirectory,
        ShardKind::Qualified,
        ShardKind::TextDirectory,
        ShardKind::Edges,
        ShardKind::Names,
    ];
    let kind = kinds[usize::from(sel & 0x7f) % kinds.len()];
    let (bytes, inflated) = if sel & 0x80 != 0 {
        let inflated = payload.get(16..).map_or(0, |d| {
            miniz_oxide::inflate::decompress_to_vec_with_limit(d, 64 << 20).map_or(0, |v| v.len())
        });
        (payload.to_vec(), inflated)
    } else if kind == ShardKind::Vectors {
        let file = data_file(DataKind::Vectors, payload);
        (shard(kind, &file), file.len())
    } else {
        (shard(kind, payload), payload.len())
    };
    run(bytes.len().max(inflated), |fx| {
        let mut manifest = if kind == ShardKind::VectorDirectory {
            fx.web_ivf.clone()
        } else {
            fx.web.clone()
        };
        // A text shard is listed in the text directory: list the fuzzed
        // bytes in a new directory, itself listed in the manifest.
        let mut directory = None;
        if kind == ShardKind::Text {
            let mut text = fx.web_text.clone();
            let Some(i) = usize::from(*which).checked_rem(text.len()) else {
                return;
            };
            text[i] = ShardInfo::hashed(
                ShardKind::Text,
                codegloss_core::web::shard_hash_hex(&bytes),
                bytes.len() as u64,
                text[i].chunks,
            );
            let Ok((_, d)) = text_directory_shard(&text) else {
                return;
            };
            directory = Some((text[i].name.clone(), d));
        }
        let listed = if directory.is_some() {
            ShardKind::TextDirectory
        } else {
            kind
        };
        // Postings, edge and name shards are listed in the search shard:
        // vouched for once it is open.
        let in_search = matches!(
            listed,
            ShardKind::Postings | ShardKind::Edges | ShardKind::Names
        );
        let list = if in_search { &fx.web_listed } else { &manifest };
        let positions: Vec<usize> = list.shards_of(listed).map(|(i, _)| i).collect();
        let Some(&position) = positions.get(usize::from(*which) % positions.len().max(1)) else {
            return;
        };
        let (fuzzed_name, listed_bytes) = match &directory {
            Some((text_name, d)) => (text_name.clone(), d.as_slice()),
            None => (String::new(), bytes.as_slice()),
        };
        let (size, sha256) = (
            listed_bytes.len() as u64,
            codegloss_core::web::shard_hash_hex(listed_bytes),
        );
        let mut vouch = None;
        let name = if in_search {
            let name = fx.web_listed.shards[position].name.clone();
            vouch = Some(Vouch {
                position,
                bytes: size,
                sha256,
            });
            name
        } else {
            let info = &mut manifest.shards[position];
            info.bytes = size;
            info.sha256 = sha256;
            info.name.clone()
        };
        let fuzzed: &[u8] = &bytes;
        let get = move |n: &str| {
            if n == name {
                Some(listed_bytes)
            } else if n == fuzzed_name {
                Some(fuzzed)
            } else {
                fx.shards.get(n).map(Vec::as_slice)
            }
        };
        drive_web(manifest, &get, "{}", input.len(), vouch);
    });
}

/// The `config` target.
pub fn config(input: &[u8]) {
    run_text(input, |text, fx| {
        let Ok(cfg) = Config::parse(text) else {
            return;
        };
        let _ = cfg.hash();
        let settings = cfg.retrieval_for(&fx.manifest);
        // What indexing and querying do with the settings, on samples.
        let _ = cpp::parse_cpp(&fx.cpp_sample, &cfg.parse);
        let _ = docs::split_doc(
            "README.md",
            Language::Markdown,
            &fx.doc_sample,
            cfg.chunk.doc_max_tokens,
        );
        let q = "How are the halo cells of a field exchanged between ranks?";
        if let Ok(r) = retrieve(&fx.corpus, q, Some(&fixture::query_vector()), &settings) {
            let _ = build_context_estimated(&fx.corpus, &r, q, cfg.answer.context_tokens);
        }
    });
}

/// The `sse` target.
pub fn sse(input: &[u8]) {
    let Some((&chunk, stream)) = input.split_first() else {
        return;
    };
    run(input.len(), |fx| {
        let mut lines = SseLines::new();
        let mut text = String::new();
        let mut all = Vec::new();
        for piece in stream.chunks(usize::from(chunk) + 1) {
            match lines.push(piece) {
                Ok(l) => all.extend(l),
                Err(_) => return,
            }
        }
        all.extend(lines.finish());
        for line in &all {
            match parse_sse_line(line) {
                Ok(StreamEvent::Delta(d)) => text.push_str(&d),
                Ok(_) => {}
                Err(e) => {
                    let _ = e.to_string();
                }
            }
        }
        // A whole (non-streamed) body, and the answer checks the CLI and
        // the widget run on what the server said.
        let body = String::from_utf8_lossy(stream);
        if let Ok(c) = parse_completion(&body) {
            text.push_str(&c.text);
        }
        // The repetition guard, at every prefix a stream could end a piece
        // on (any character boundary; in the first 4 KB, so that an input
        // stays well within the time limit), and the cut it makes.
        let guarded = (0..=text.len().min(4096)).filter(|&e| text.is_char_boundary(e));
        for end in guarded.chain([text.len()]) {
            if let Some(cut) = repetition_cut(&text[..end]) {
                let _ = cut_answer(&text[..end], cut);
            }
        }
        let q = "How are the halo cells of a field exchanged between ranks?";
        let _ = check_citations(&text, &fx.context);
        let _ = codegloss_core::support::check_support(&text, q, &fx.context);
    });
}

/// Text as `walk::load` makes it from a file's bytes.
fn file_text(bytes: &[u8]) -> String {
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    String::from_utf8_lossy(body).into_owned()
}

/// The `cpp` target.
pub fn cpp(input: &[u8]) {
    let Some((&sel, rest)) = input.split_first() else {
        return;
    };
    let text = file_text(rest);
    run(input.len(), |_| {
        let mut cfg = ParseConfig {
            generic_caps_rule: sel & 1 != 0,
            ..ParseConfig::default()
        };
        if sel & 2 != 0 {
            // Macro settings of the kind a configuration gives.
            cfg.attribute_macros.push("API_*".into());
            cfg.macro_replacements
                .insert("CAPTURE".into(), "[=]".into());
        }
        let _ = cpp::parse_cpp(&text, &cfg);
    });
}

/// The `docs` target.
pub fn docs(input: &[u8]) {
    let [lang, max_tokens, rest @ ..] = input else {
        return;
    };
    let language = [
        Language::Markdown,
        Language::Rst,
        Language::Text,
        Language::Cmake,
    ][usize::from(*lang) % 4];
    let text = file_text(rest);
    run(input.len(), |_| {
        let sections = docs::split_doc("doc.md", language, &text, usize::from(*max_tokens));
        // What chunking relies on: every part is exactly its span's text.
        for s in &sections {
            for p in &s.parts {
                let span = text.get(p.span.start_byte as usize..p.span.end_byte as usize);
                assert_eq!(span, Some(p.text.as_str()), "part text is not its span");
            }
        }
    });
}

#[cfg(test)]
mod tests;
