//! The search engine the browser worker drives: a [`WebIndex`] (core's web
//! layout) plus the last retrieval, exposed to JavaScript through
//! wasm-bindgen. Retrieval and the answer context are `codegloss-core`'s,
//! called exactly as the native CLI calls them, so the browser's ranked
//! context equals `codegloss query --json`; the answer module
//! (`codegloss-wasm-answer`) renders the prompt from that context and
//! checks the answer's citations.
//!
//! The worker owns I/O: it fetches the manifest and shards (with the Cache
//! API), inflates each shard's payload with the browser's
//! `DecompressionStream`, and hands both in (`bytes`, `payload`): this
//! module carries no inflater (core without its `inflate` feature), and
//! verifies every file's bytes against the manifest, or its seal, before
//! it reads the payload. Every failure is a JavaScript `Error` with a
//! readable message.

use codegloss_core::answer::{build_context_for, Budget};
use codegloss_core::embed::query_prompt;
use codegloss_core::retrieve::{retrieve, Retrieval};
use codegloss_core::text::estimate_tokens;
use codegloss_core::web::{Fetched, Missing, ShardKind, WebIndex, WebManifest};
use wasm_bindgen::prelude::*;

use crate::out::{
    json, AnswerContext, Card, Counts, Embedding, FileRef, Found, Info, Listed, Listing, Need,
    NeedText,
};

fn js_error(context: &str, e: impl std::fmt::Display) -> JsError {
    JsError::new(&format!("{context}: {e}"))
}

/// What the worker needs from a manifest (`codegloss.bin` bytes, and its
/// `payload` inflated) before it opens the engine: `{search, files:
/// [{name, bytes, sha256}]}`, the search shard's path and every file the
/// manifest lists (shards and model files, relative to it), so each is
/// checked against its size and hash on arrival.
#[wasm_bindgen(js_name = manifestFiles)]
pub fn manifest_files(manifest: &[u8], payload: &[u8]) -> Result<String, JsError> {
    let m = WebManifest::from_binary(Fetched::inflated(manifest, payload))
        .map_err(|e| js_error("index manifest", e))?;
    let search = m
        .search_shard()
        .map_err(|e| js_error("index manifest", e))?;
    let files = m
        .shards
        .iter()
        .map(|s| (&s.name, s.bytes, &s.sha256))
        .chain(m.model_files.iter().map(|f| (&f.name, f.bytes, &f.sha256)))
        .map(|(name, bytes, sha256)| FileRef {
            name,
            bytes,
            sha256,
        })
        .collect();
    Ok(json(&Listing {
        search: &search.name,
        files,
    }))
}

/// A loaded index and the last retrieval.
#[wasm_bindgen]
pub struct Engine {
    index: WebIndex,
    last: Option<(String, Retrieval)>,
}

#[wasm_bindgen]
impl Engine {
    /// Open an index from its manifest (`codegloss.bin` bytes) and the
    /// search shard's bytes, each with its payload inflated. It ranks with
    /// the manifest's retrieval settings, those `codegloss query` uses on
    /// the same index.
    #[wasm_bindgen(constructor)]
    pub fn new(
        manifest: &[u8],
        manifest_payload: &[u8],
        search: &[u8],
        search_payload: &[u8],
    ) -> Result<Engine, JsError> {
        let manifest = WebManifest::from_binary(Fetched::inflated(manifest, manifest_payload))
            .map_err(|e| js_error("index manifest", e))?;
        let index = WebIndex::open(manifest, Fetched::inflated(search, search_payload))
            .map_err(|e| js_error("index", e))?;
        Ok(Engine { index, last: None })
    }

    /// JSON facts for the page: build id, counts, whether the index has
    /// vectors, the model files and the vectors shard.
    pub fn info(&self) -> String {
        let m = &self.index.manifest;
        json(&Info {
            build_id: &m.build_id,
            tool_version: &m.tool_version,
            counts: Counts {
                files: m.counts.files,
                entities: m.counts.entities,
                chunks: m.counts.chunks,
                edges: m.counts.edges,
            },
            embedding: m.embedding.as_ref().map(|e| Embedding {
                model_id: &e.spec.model_id,
                dimension: e.spec.dimension,
                model_sha256: &e.spec.model_sha256,
                tokenizer_sha256: &e.spec.tokenizer_sha256,
                max_length: e.spec.max_length,
                query_prefix: &e.spec.query_prefix,
            }),
            model_files: &m.model_files,
            vectors: m.vectors_shard(),
            vector_directory: m.vector_directory(),
            text_shards: m.shards_of(ShardKind::Text).count(),
            has_vectors: self.index.has_vectors(),
        })
    }

    /// Add the vectors shard's bytes: later searches use dense retrieval
    /// when given a query vector.
    #[wasm_bindgen(js_name = addVectors)]
    pub fn add_vectors(&mut self, bytes: &[u8], payload: &[u8]) -> Result<(), JsError> {
        self.index
            .add_vectors(Fetched::inflated(bytes, payload))
            .map_err(|e| js_error("vectors", e))
    }

    /// Add the vector directory's bytes (a site ranked with `ivf_probe >
    /// 0`): later searches probe its partitions and name those to fetch in
    /// `need_partitions`.
    #[wasm_bindgen(js_name = addVectorDirectory)]
    pub fn add_vector_directory(&mut self, bytes: &[u8], payload: &[u8]) -> Result<(), JsError> {
        self.index
            .add_vector_directory(Fetched::inflated(bytes, payload))
            .map_err(|e| js_error("vector directory", e))
    }

    /// Add a partition shard's bytes (`partition` from `need_partitions`).
    #[wasm_bindgen(js_name = addPartition)]
    pub fn add_partition(
        &mut self,
        partition: usize,
        bytes: &[u8],
        payload: &[u8],
    ) -> Result<(), JsError> {
        self.index
            .add_partition(partition, Fetched::inflated(bytes, payload))
            .map_err(|e| js_error("vector partition", e))
    }

    /// Add a refine block's bytes (`block` from `need_blocks`).
    #[wasm_bindgen(js_name = addBlock)]
    pub fn add_block(&mut self, block: usize, bytes: &[u8], payload: &[u8]) -> Result<(), JsError> {
        self.index
            .add_block(block, Fetched::inflated(bytes, payload))
            .map_err(|e| js_error("vector block", e))
    }

    /// The index's embedding spec as JSON (for `QueryEncoder`), when it
    /// has vectors.
    #[wasm_bindgen(js_name = embeddingSpec)]
    pub fn embedding_spec(&self) -> Option<String> {
        self.index
            .manifest
            .embedding
            .as_ref()
            .and_then(|e| serde_json::to_string(&e.spec).ok())
    }

    /// The text to embed for a question (the index's query prompt).
    #[wasm_bindgen(js_name = queryText)]
    pub fn query_text(&self, question: &str) -> String {
        let prefix = self
            .index
            .manifest
            .embedding
            .as_ref()
            .map_or("", |e| e.spec.query_prefix.as_str());
        query_prompt(question, prefix)
    }

    /// Retrieve for a question. `query_vector` is the embedded
    /// [`Engine::query_text`] (omit it for keyword and structure only).
    /// Returns JSON `{need_shards: [{position, name, bytes, sha256, sealed}],
    /// need_partitions: [{partition, name, bytes, sha256, sealed}], need_blocks:
    /// [{block, name, bytes, sha256, sealed}]}` when shards listed in the manifest
    /// (the postings runs of some query terms and names, the qualified
    /// names, the names of some candidates' files, the edges of the
    /// entities expansion follows), the codes of some probed
    /// partitions or the vectors of some refined chunks must be fetched
    /// first (hand them to [`Engine::add_shard`], [`Engine::add_partition`]
    /// and [`Engine::add_block`] and search again), else `{chunks:
    /// [...], files, missing: [{position, name, bytes, sha256, sealed}]}`:
    /// `missing` lists the text shards to fetch and hand to
    /// [`Engine::add_text`] before [`Engine::cards`] and [`Engine::answer_context`]
    /// show their text (the text directory alone, until it is loaded: then
    /// ask [`Engine::missing_text`] again).
    pub fn search(
        &mut self,
        question: &str,
        k: Option<u32>,
        query_vector: Option<Vec<f32>>,
    ) -> Result<String, JsError> {
        let mut settings = self.index.manifest.retrieval.clone();
        if let Some(k) = k {
            settings.k = k as usize;
        }
        let qv = query_vector.filter(|_| self.index.has_vectors());
        let r = retrieve(&self.index.corpus, question, qv.as_deref(), &settings)
            .map_err(|e| js_error("search", e))?;
        let corpus = &self.index.corpus;
        // A chunk's lines arrive with its text: until then it has none. Its
        // names are read (and recorded when not loaded) here too.
        let chunks = r
            .chunks
            .iter()
            .map(|rc| {
                let mut row = rc.row(corpus, false);
                if !self.index.has_text(rc.chunk) {
                    (row.start_line, row.end_line) = (None, None);
                }
                row
            })
            .collect();
        // Postings, names, edges and vectors load per query: when this
        // retrieval (or its rows) read what is not here yet, its result is
        // not final.
        let m = self.index.missing();
        if !m.is_empty() {
            return Ok(json(&self.need(m)));
        }
        let ids: Vec<u32> = r.chunks.iter().map(|c| c.chunk).collect();
        let out = json(&Found {
            question,
            intent: r.route.intent.as_str(),
            semantic: qv.is_some(),
            files: r.files(corpus),
            chunks,
            missing: self.shard_refs(self.index.missing_text(&ids)),
        });
        self.last = Some((question.to_string(), r));
        Ok(out)
    }

    /// The text shards still missing for these chunks (`[{position, name,
    /// bytes, sha256, sealed}]` as JSON), so a page can load the text of the cards
    /// in view first and the rest on demand. Until the text directory is
    /// loaded, that directory alone: add it with [`Engine::add_text`], then
    /// ask again.
    #[wasm_bindgen(js_name = missingText)]
    pub fn missing_text(&self, chunks: Vec<u32>) -> String {
        json(&self.shard_refs(self.index.missing_text(&chunks)))
    }

    /// Add the bytes of a shard listed in the manifest (`position` from
    /// `need_shards`): a postings run, the qualified names, a name shard
    /// or an edge shard.
    #[wasm_bindgen(js_name = addShard)]
    pub fn add_shard(
        &mut self,
        position: usize,
        bytes: &[u8],
        payload: &[u8],
    ) -> Result<(), JsError> {
        self.index
            .add_shard(position, Fetched::inflated(bytes, payload))
            .map_err(|e| js_error("index shard", e))
    }

    /// Add a text shard's or the text directory's bytes (`position` from
    /// `missing`).
    #[wasm_bindgen(js_name = addText)]
    pub fn add_text(
        &mut self,
        position: usize,
        bytes: &[u8],
        payload: &[u8],
    ) -> Result<(), JsError> {
        self.index
            .add_text(position, Fetched::inflated(bytes, payload))
            .map_err(|e| js_error("index text", e))
    }

    fn last(&self) -> Result<&(String, Retrieval), JsError> {
        self.last
            .as_ref()
            .ok_or_else(|| JsError::new("no search has run yet"))
    }

    /// The evidence cards of the last search, JSON: `[{n, chunk, role,
    /// symbol, qualified_name, kind, path, start_line, end_line, language,
    /// gloss, code, frame, score}]`, in rank order (`frame`: which lines of
    /// `code` are not the file's own, `codegloss_core::CodeFrame`).
    pub fn cards(&self) -> Result<String, JsError> {
        let (_, r) = self.last()?;
        let data = &self.index.corpus.data;
        let cards: Vec<Card> = r
            .chunks
            .iter()
            .enumerate()
            .map(|(i, rc)| {
                let c = &data.chunks[rc.chunk as usize];
                let e = self.index.corpus.named(c.entity);
                // Lines arrive with the chunk's text.
                let lines = self.index.has_text(rc.chunk);
                Card {
                    n: i + 1,
                    chunk: rc.chunk,
                    role: rc.role.as_str(),
                    symbol: &c.symbol_name,
                    qualified_name: &e.qualified_name,
                    kind: e.kind.as_str(),
                    path: &c.path,
                    start_line: lines.then_some(c.start_line),
                    end_line: lines.then_some(c.end_line),
                    language: codegloss_core::answer::fence_language(&c.path),
                    gloss: &e.gloss.text,
                    code: c.searchable_code(),
                    frame: &c.frame,
                    score: rc.score.combined,
                }
            })
            .collect();
        Ok(json(&cards))
    }

    /// The chunks whose text the answer context of `r` needs next. The
    /// context shows the retrieved chunks and the chunks that complete them
    /// into whole units (the rest of a split class, a section's
    /// subsections, a file's text); the units are chosen by lines, which
    /// arrive with the text. So: while the text of the chunks whose lines
    /// choose the units is missing, those chunks; then the units' chunks.
    fn text_wanted(&self, r: &Retrieval) -> Vec<u32> {
        let corpus = &self.index.corpus;
        let lines = codegloss_core::answer::line_chunks(corpus, r);
        if !self.index.missing_text(&lines).is_empty() {
            return lines;
        }
        codegloss_core::answer::context_chunks(corpus, r)
    }

    /// The answer context of the last search, JSON: `{question, context}`;
    /// `context` is core's `Context`, from which the answer module renders
    /// the prompt (`prompt`) and checks the answer (`citations`). It is
    /// numbered in rank order, so `[n]` names the n-th card; the
    /// lowest-ranked chunks are left out when the `evidence` budget
    /// (estimated tokens, the answer module's
    /// `answerDefaults().evidence_tokens`) is spent, and the model's
    /// prompt is the part that fits `budget` (`context_tokens`).
    ///
    /// When the text of the context's chunks is not all loaded, returns
    /// `{need_text: [chunk]}` instead (load it with
    /// [`Engine::missing_text`] and [`Engine::add_text`], and ask again;
    /// the first answer names the chunks whose lines choose the units, the
    /// next the units' chunks); when the context looked up the edges or
    /// the names of entities whose edge or name shards are not loaded,
    /// `{need_shards: [...]}` (as [`Engine::search`] does): add them and
    /// ask again.
    #[wasm_bindgen(js_name = answerContext)]
    pub fn answer_context(&self, budget: u32, evidence: u32) -> Result<String, JsError> {
        let (question, r) = self.last()?;
        let wanted = self.text_wanted(r);
        if !self.index.missing_text(&wanted).is_empty() {
            return Ok(json(&NeedText { need_text: wanted }));
        }
        let budget = Budget {
            prompt: budget as usize,
            evidence: evidence as usize,
        };
        let context = build_context_for(&self.index.corpus, r, question, budget, &estimate_tokens);
        let m = self.index.missing();
        if !m.is_empty() {
            return Ok(json(&self.need(m)));
        }
        Ok(json(&AnswerContext {
            question,
            context: &context,
        }))
    }
}

impl Engine {
    /// What to fetch before a result is final, as [`Engine::search`]
    /// returns it.
    fn need(&self, m: Missing) -> Need<'_> {
        Need {
            need_shards: self.shard_refs(m.shards),
            need_partitions: m
                .partitions
                .into_iter()
                .filter_map(|p| {
                    Some(Listed {
                        partition: Some(p),
                        ..Listed::of(self.index.partition_shard(p)?)
                    })
                })
                .collect(),
            need_blocks: m
                .blocks
                .into_iter()
                .filter_map(|b| {
                    Some(Listed {
                        block: Some(b),
                        ..Listed::of(self.index.block_shard(b)?)
                    })
                })
                .collect(),
        }
    }

    /// `[{position, name, bytes, sha256, sealed}]` of shards by manifest
    /// position: what the worker fetches, checks and hands back (the text
    /// shards are listed in the text directory, not in the manifest the
    /// worker read; `sealed`: the shard ends with its seal under the key
    /// `sha256`, see `codegloss_core::web::ShardInfo`).
    fn shard_refs(&self, positions: Vec<usize>) -> Vec<Listed<'_>> {
        positions
            .into_iter()
            .map(|p| Listed {
                position: Some(p),
                ..Listed::of(&self.index.manifest.shards[p])
            })
            .collect()
    }
}
