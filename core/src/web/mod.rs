//! The index laid out for the web: what `codegloss index --site` writes and
//! what the WebAssembly client reads, as one set of types used by both.
//!
//! It exists because the native layout (a few whole-table files) makes a
//! browser download every chunk's code before its first search. Here:
//! - `codegloss.json`, a small manifest (format version, build id, model
//!   files with sha256, counts, and the shards loaded first or once, each
//!   with its size and hash), and the same manifest in binary form,
//!   `codegloss.bin`, which the browser reads (`manifest_bin.rs`): the only
//!   files a host must not cache for long;
//! - immutable shards named by the first 64 bits of the SHA-256 of their
//!   bytes ([`ShardHash`]), or, for those a directory lists, sealed under
//!   its key (`seal_shards` in `shard.rs`), so hosts can cache them forever;
//! - one *search* shard (metadata, graph, the keyword index's document
//!   lengths and the text features retrieval ranks from, but no code,
//!   gloss text, vocabulary, qualified names, or names of entities with a
//!   file), loaded first; *postings* shards, each a run of the sorted
//!   vocabulary with its posting lists and the lookups by name whose keys
//!   it holds (`lookups.rs`), listed in the search shard's
//!   [`ShardDirectory`] with the run's first term so that a query fetches
//!   the runs of its terms and names and nothing else (the *edge* shards,
//!   runs of entities, and the *name* shards, runs of files, `names.rs`,
//!   are listed there too); one *qualified*
//!   shard (the `a::b` names each chunk's code writes), fetched by the
//!   first question that writes such a name; one *vectors* shard, loaded with semantic search, or under
//!   `[retrieval] ivf_probe` a vector *directory* loaded with semantic
//!   search and the *partitions* a question probes (`vectors.rs`); and *text*
//!   shards (code, glosses and lines of a run of chunks, [`TEXT_SHARD_RAW_BYTES`]
//!   before compression),
//!   fetched only for the chunks shown or sent to the model.
//!
//! Shards are deflate-compressed here, so the bytes a browser transfers do
//! not depend on the host's compression. Every decode checks size, hash,
//! magic, version and kind, and fails with a typed [`CoreError`].

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::error::CoreError;
use crate::format::{
    from_versioned_json, to_pretty_json, Counts, EmbeddingInfo, IndexData, JsonFormat,
};
use crate::lexical::{lower_length, LexicalIndex};
use crate::model::{Chunk, CodeFrame, Entity};
use crate::retrieve::graph::Graph;
use crate::retrieve::Corpus;

mod build;
mod columns;
mod directory;
mod edges;
mod lookups;
mod manifest_bin;
mod names;
mod postings;
mod predict;
mod qualified;
mod shard;
mod tables;
mod textdir;
mod vectors;
pub use build::{build_site_index, build_site_index_with, SiteIndex};
pub use directory::ShardDirectory;
pub use lookups::{GlobalLookups, RunLookups};
pub use manifest_bin::WEB_MANIFEST_BIN;
pub use names::NameShard;
pub use postings::PostingsShard;
pub use qualified::QualifiedShard;
use shard::decode_shard;
pub use shard::{deflate_once, Fetched};
pub use shard::{
    open_shard, shard_hash, shard_hash_hex, wire_reads_as_written, ShardHash, ShardInfo,
    SHARD_HASH_BYTES, WEB_FORMAT_VERSION, WEB_MAGIC,
};
pub use tables::Tables;
pub use textdir::{text_directory_shard, TextDirectory};
pub use vectors::{PartitionShard, Points, VectorDirectory};

/// File name of the web manifest inside a site's index folder.
pub const WEB_MANIFEST: &str = "codegloss.json";
/// Postings per postings shard (a run of the vocabulary: its terms and
/// their lists, and the lookups by name whose keys it holds), so a query
/// fetches the runs of its few terms, not the whole keyword index. A term
/// outside the vocabulary costs its run too. Measured by `cargo xtask
/// bench site` once the runs carried the lookups (web format 17), 1,500
/// against 3,000, bytes before the first keyword results and later p50 /
/// max: Kokkos 447,365 -> 434,109, 45.9 / 90.5 -> 42.2 / 79.2 KB; IPPL
/// 299,405 -> 299,554; Kokkos with IPPL 420,128 -> 424,211, 29.7 / 96.1
/// -> 25.7 / 86.7 KB. 1,000 cut later questions more but cost every
/// site's first results more (Kokkos 435,825, IPPL 302,359). Again once
/// the one-of-a-kind shards were deflated with zopfli and the rest with
/// libdeflate (web format 22), with names per 40 entities and edges per
/// 128 ends, Kokkos's first question: 1,500 306,708, 750 303,676, 400
/// 301,930, 250 302,964 bytes; the search shard, which lists the runs,
/// grows as they shrink (45.5 / 47.1 / 49.3 / 51.7 KB). 500 against 400
/// with the values below: 300,394 against 299,763.
pub const POSTINGS_PER_SHARD: usize = 400;
/// Uncompressed bytes of chunk text per text shard. A question's six
/// evidence cards usually lie in six shards, so this bounds the bytes a
/// later question costs. 32 KiB against 64 KiB, measured by `cargo xtask
/// bench site`: later questions on Kokkos p50 / p95 65 / 105 KB -> 45 / 72
/// KB, on IPPL 27 / 55 -> 24 / 39 KB. 16 KiB against 32 KiB, once names
/// moved into name shards (web format 17), on Kokkos: later questions p50
/// / max 52.6 / 107.9 KB -> 45.9 / 90.5 KB, the first results with their
/// text 511.1 -> 512.2 KB (the text directory grows, the first cards'
/// shards shrink).
pub const TEXT_SHARD_RAW_BYTES: usize = 16 * 1024;
/// Entities per name shard (consecutive files, cut after the file that
/// reaches it): a question reads the names of its candidates, which lie
/// in a few files. See [`NameShard`]. 150 against 300, measured by `cargo
/// xtask bench site` on Kokkos (16 questions): bytes before the first
/// keyword results 452,691 -> 447,364, later questions p50 53.6 -> 52.6
/// KB, max 108.3 -> 107.9 KB (a question reads 7 to 13 name shards).
/// Again at web format 22 (compression as for postings), Kokkos's first
/// question, with postings per 1,500 terms: 300 330,481, 150 319,969, 75
/// 313,289, 40 311,235, 10 310,515 bytes. Its candidates lie in about 23
/// files, each in a shard of its own at any of these sizes, so smaller
/// shards only cut bytes it does not read; 10 makes a file's names
/// (often fewer than 10 entities) nearly a shard of their own: 903 name
/// shards on Kokkos.
pub const NAME_ENTITIES_PER_SHARD: usize = 10;
/// Explicit edge ends (an edge counts once for each of the two entities
/// it joins) per edge shard: a question fetches the shards of the few
/// entities its expansion and its answer look up. Measured by `cargo xtask
/// bench site` at web format 21 against 1,024 (10 cold questions each):
/// the first question 260,715 -> 256,735 bytes on IPPL, 365,480 ->
/// 363,081 on Kokkos; p50 261,319 -> 259,102 and 340,516 -> 341,159;
/// later p50 / max 22.2 / 41.1 -> 22.7 / 39.0 KB and 42.2 / 73.5 -> 43.9 /
/// 72.6 KB (the directory grows by 160 and 527 bytes). Again at web
/// format 22 on Kokkos's first question: 512 311,235, 256 308,068, 128
/// 306,708 bytes (names per 40 entities, postings per 1,500 terms); 64
/// with names per 10 against 128 with names per 40 (postings per 400):
/// 301,930 -> 300,944 (855 edge shards on Kokkos).
pub const EDGE_ENDS_PER_SHARD: usize = 64;

/// What a shard holds.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum ShardKind {
    /// [`SearchShard`].
    Search,
    /// A [`crate::vectors::VectorIndex`] data file, read in the browser as
    /// [`crate::hnsw::StoredVectors`].
    Vectors,
    /// [`TextShard`].
    Text,
    /// [`edges::EdgeShard`]: the explicit edges that start or end in a
    /// range of entities.
    Edges,
    /// [`PostingsShard`].
    Postings,
    /// [`VectorDirectory`]: the vectors' partitions, listed in place of
    /// one vectors shard when the site ranks with `ivf_probe > 0`.
    VectorDirectory,
    /// [`PartitionShard`]: one partition's vectors, listed in the
    /// directory (not the manifest).
    Partition,
    /// [`vectors::BlockShard`]: the int8 vectors of a few chunks of one
    /// partition, listed in the partition's shard.
    Block,
    /// [`QualifiedShard`]: the qualified names chunk code writes.
    Qualified,
    /// [`TextDirectory`]: the text shards, listed there instead of in the
    /// manifest.
    TextDirectory,
    /// [`NameShard`]: the names of the entities of a range of files and of
    /// their chunks, listed in the search shard's directory.
    Names,
}

impl ShardKind {
    /// How its shards are deflated ([`shard::Packing`]).
    fn packing(self) -> shard::Packing {
        match self {
            ShardKind::Search
            | ShardKind::Qualified
            | ShardKind::TextDirectory
            | ShardKind::VectorDirectory => shard::Packing::One,
            ShardKind::Postings | ShardKind::Edges | ShardKind::Names => shard::Packing::Many,
            ShardKind::Vectors | ShardKind::Text | ShardKind::Partition | ShardKind::Block => {
                shard::Packing::Bulk
            }
        }
    }

    fn tag(self) -> u8 {
        match self {
            ShardKind::Search => 1,
            ShardKind::Vectors => 2,
            ShardKind::Text => 3,
            ShardKind::Postings => 4,
            ShardKind::VectorDirectory => 5,
            ShardKind::Partition => 6,
            ShardKind::Block => 7,
            ShardKind::Qualified => 8,
            ShardKind::TextDirectory => 9,
            ShardKind::Edges => 10,
            ShardKind::Names => 11,
        }
    }

    /// Stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            ShardKind::Search => "search",
            ShardKind::Vectors => "vectors",
            ShardKind::Text => "text",
            ShardKind::Postings => "postings",
            ShardKind::VectorDirectory => "vectordir",
            ShardKind::Partition => "partition",
            ShardKind::Block => "vecblock",
            ShardKind::Qualified => "qualified",
            ShardKind::TextDirectory => "textdir",
            ShardKind::Edges => "edges",
            ShardKind::Names => "names",
        }
    }

    /// Every kind.
    pub const ALL: [ShardKind; 11] = [
        ShardKind::Search,
        ShardKind::Postings,
        ShardKind::Names,
        ShardKind::Qualified,
        ShardKind::Edges,
        ShardKind::Vectors,
        ShardKind::VectorDirectory,
        ShardKind::Partition,
        ShardKind::Block,
        ShardKind::TextDirectory,
        ShardKind::Text,
    ];
}

/// A model file served with the site (query embedding in the browser).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ModelFile {
    /// `model` (ONNX) or `tokenizer` (tokenizer.json).
    pub role: String,
    /// Path relative to the manifest, named by content hash.
    pub name: String,
    /// Size in bytes.
    pub bytes: u64,
    /// SHA-256 (hex); equal to the embedding spec's hash of that file.
    pub sha256: String,
}

/// `codegloss.json`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct WebManifest {
    /// Always `"codegloss-web"`.
    pub format: String,
    /// [`WEB_FORMAT_VERSION`].
    pub format_version: u32,
    /// Version of the tool that wrote it.
    pub tool_version: String,
    /// Hash over every shard hash: changes exactly when the content does.
    pub build_id: String,
    /// Hash of the indexing configuration.
    pub config_hash: String,
    /// Counts of the index.
    pub counts: Counts,
    /// Embedding model of the vectors, when the index has them.
    pub embedding: Option<EmbeddingInfo>,
    /// Query-embedding model files served with the site (empty when the
    /// site ships without them: search is then keyword and structure only).
    pub model_files: Vec<ModelFile>,
    /// The shards read first or once: the search shard, the qualified
    /// names, the vectors (or their directory) and the text directory.
    /// The postings and edge shards are listed in the search shard
    /// ([`ShardDirectory`]), the text shards in the text directory, the
    /// partitions in the vector directory; a [`WebIndex`] adds each list
    /// to its copy of this one as it arrives.
    pub shards: Vec<ShardInfo>,
    /// The retrieval settings the site ranks with: the index's, or those of
    /// the configuration given to `codegloss site`, so that the browser
    /// ranks exactly like `codegloss query` on the same index.
    pub retrieval: crate::retrieve::RetrievalSettings,
}

impl WebManifest {
    /// The `format` field value.
    pub const FORMAT_NAME: &'static str = "codegloss-web";

    /// Serialise as pretty JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        to_pretty_json(self)
    }

    /// Parse and check the format name and version.
    pub fn from_json(text: &str) -> Result<Self, CoreError> {
        let format = JsonFormat {
            name: Self::FORMAT_NAME,
            version: WEB_FORMAT_VERSION,
            file: WEB_MANIFEST,
            file_in_messages: true,
        };
        from_versioned_json(text, &format, |m: &WebManifest| {
            (m.format.as_str(), m.format_version)
        })
    }

    /// The shards of one kind, in manifest order, with their positions.
    pub fn shards_of(&self, kind: ShardKind) -> impl Iterator<Item = (usize, &ShardInfo)> {
        self.shards
            .iter()
            .enumerate()
            .filter(move |(_, s)| s.kind == kind)
    }

    /// The one search shard.
    pub fn search_shard(&self) -> Result<&ShardInfo, CoreError> {
        self.shards_of(ShardKind::Search)
            .map(|(_, s)| s)
            .next()
            .ok_or_else(|| CoreError::Manifest {
                message: format!("{WEB_MANIFEST}: no search shard listed"),
            })
    }

    /// The vectors shard, when the index has vectors in one shard.
    pub fn vectors_shard(&self) -> Option<&ShardInfo> {
        self.shards_of(ShardKind::Vectors).map(|(_, s)| s).next()
    }

    /// The vector directory, when the index has partitioned vectors.
    pub fn vector_directory(&self) -> Option<&ShardInfo> {
        self.shards_of(ShardKind::VectorDirectory)
            .map(|(_, s)| s)
            .next()
    }

    /// Total bytes of the shards of one kind.
    pub fn bytes_of(&self, kind: ShardKind) -> u64 {
        self.shards_of(kind).map(|(_, s)| s.bytes).sum()
    }
}

/// Everything retrieval needs, without chunk code or gloss text.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct SearchShard {
    /// Files, entities, chunks, edges and text features, column by column.
    pub tables: Tables,
    /// Keyword field weights.
    pub weights: crate::lexical::FieldWeights,
    /// Per chunk: the keyword index's document length (weighted length ×
    /// 8) as its [`crate::lexical::coarse_code`], the byte the scores over
    /// all chunks read it through (its posting lists live in postings
    /// shards; the fine step within the code rides with the chunk's facts,
    /// in its name shard, for the scores re-ranking reads).
    ///
    /// The largest column on a large codebase with fine codes (Kokkos,
    /// 44,320 chunks: 29.1 KB deflated), and close to what those held: the
    /// codes' entropy given the entity's kind and whether the chunk is one
    /// part of several is 28.6 KB. Measured and left (`cargo xtask bench
    /// site`, Kokkos, 16 questions, one session): each chunk's length in
    /// the postings shards whose lists hold it, with only the lengths' sum
    /// here, took 32.1 KB off the search shard but added 30.1 KB to the
    /// first question's 12 postings shards (a common term's list holds
    /// most chunks): bytes before the first keyword results 386,157 ->
    /// 384,811, later questions p50 43.6 -> 52.6 KB and max 72.0 -> 100.4
    /// KB.
    pub doc_len: Vec<u8>,
    /// The postings, edge and name shards, listed here rather than in the
    /// manifest (see [`ShardDirectory`]).
    pub directory: ShardDirectory,
    /// The lookups by name every question may ask: the acronyms and the
    /// stopwords' (the others ride in the postings shards).
    pub lookups: GlobalLookups,
}

/// The text of a run of chunks: everything retrieval does not rank from
/// (code, glosses, comments, signatures), moved out of the search shard.
#[derive(Serialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct TextShard {
    /// The chunks of the run.
    pub chunks: Vec<ChunkText>,
    /// The entities whose first chunk lies in the run.
    pub entities: Vec<EntityText>,
}

/// The display-only fields of a chunk.
#[derive(Serialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct ChunkText {
    /// Chunk id.
    pub id: u32,
    /// Source text.
    pub code: String,
    /// Which lines of `code` are not the file's own text.
    pub frame: CodeFrame,
    /// Leading doc comment.
    pub leading_comment: Option<String>,
    /// Parameter list as written.
    pub parameters: String,
    /// Return type.
    pub return_type: Option<String>,
    /// Section path of documentation.
    pub section_path: Option<String>,
    /// File name with extension.
    pub file_name: String,
    /// Module (folder).
    pub module: String,
    /// First line in the file (0: the whole file). No ranking reads a
    /// chunk's lines, only what shows or quotes it (cards, an answer's
    /// context), so they arrive with its text.
    pub start_line: u32,
    /// Last line in the file.
    pub end_line: u32,
}

impl ChunkText {
    /// Move the display fields out of `c`, leaving them empty.
    fn take(c: &mut Chunk) -> Self {
        let mut text = ChunkText {
            id: c.id,
            ..ChunkText::default()
        };
        text.exchange(c);
        text
    }

    /// Put the display fields back into `c`.
    fn restore(mut self, c: &mut Chunk) {
        self.exchange(c);
    }

    /// Swap every display field with `c`'s: the one list of what a text
    /// shard carries for a chunk.
    fn exchange(&mut self, c: &mut Chunk) {
        std::mem::swap(&mut self.code, &mut c.code);
        std::mem::swap(&mut self.frame, &mut c.frame);
        std::mem::swap(&mut self.leading_comment, &mut c.leading_comment);
        std::mem::swap(&mut self.parameters, &mut c.parameters);
        std::mem::swap(&mut self.return_type, &mut c.return_type);
        std::mem::swap(&mut self.section_path, &mut c.section_path);
        std::mem::swap(&mut self.file_name, &mut c.file_name);
        std::mem::swap(&mut self.module, &mut c.module);
        std::mem::swap(&mut self.start_line, &mut c.start_line);
        std::mem::swap(&mut self.end_line, &mut c.end_line);
    }
}

/// The display-only fields of an entity.
#[derive(Serialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct EntityText {
    /// Entity id.
    pub id: u32,
    /// Gloss text.
    pub gloss: String,
    /// Doc comment.
    pub doc_comment: Option<String>,
    /// Signature as written.
    pub signature: String,
    /// Parameters.
    pub params: Vec<crate::model::Param>,
    /// Template parameters.
    pub template_params: Option<String>,
    /// Base classes.
    pub bases: Vec<String>,
    /// Return type.
    pub return_type: Option<String>,
    /// Source span (only the indexer reads it; kept for completeness).
    pub span: Option<crate::model::Span>,
    /// Section path of documentation (no ranking reads an entity's: it
    /// feeds the keyword index and the vectors, shipped already built).
    pub section_path: Option<String>,
    /// The model that wrote the gloss, if one did (shown with the gloss).
    pub gloss_model: Option<String>,
}

impl EntityText {
    /// Take the display fields out, leaving what retrieval reads.
    /// `doc_comment` goes too: retrieval reads the `documented` bit of the
    /// text features instead.
    fn take(e: &mut Entity) -> Self {
        // Concept text only feeds the keyword index and the vectors, which
        // the web layout ships already built: it is not shipped at all.
        e.concepts.clear();
        let mut text = EntityText {
            id: e.id,
            ..EntityText::default()
        };
        text.exchange(e);
        text
    }

    /// Put the display fields back into `e`.
    fn restore(mut self, e: &mut Entity) {
        self.exchange(e);
    }

    /// Swap every display field with `e`'s: the one list of what a text
    /// shard carries for an entity.
    fn exchange(&mut self, e: &mut Entity) {
        std::mem::swap(&mut self.gloss, &mut e.gloss.text);
        std::mem::swap(&mut self.doc_comment, &mut e.doc_comment);
        std::mem::swap(&mut self.signature, &mut e.signature);
        std::mem::swap(&mut self.params, &mut e.params);
        std::mem::swap(&mut self.template_params, &mut e.template_params);
        std::mem::swap(&mut self.bases, &mut e.bases);
        std::mem::swap(&mut self.return_type, &mut e.return_type);
        std::mem::swap(&mut self.span, &mut e.span);
        std::mem::swap(&mut self.section_path, &mut e.section_path);
        std::mem::swap(&mut self.gloss_model, &mut e.gloss.model);
    }
}

/// What a retrieval (or an answer's context) lacked: see
/// [`WebIndex::missing`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Missing {
    /// Positions in the manifest's shard list: postings runs, the
    /// qualified names, edge shards.
    pub shards: Vec<usize>,
    /// Partitions ([`WebIndex::partition_shard`]).
    pub partitions: Vec<usize>,
    /// Refine blocks ([`WebIndex::block_shard`]).
    pub blocks: Vec<usize>,
}

impl Missing {
    /// Whether nothing was lacking.
    pub fn is_empty(&self) -> bool {
        self.shards.is_empty() && self.partitions.is_empty() && self.blocks.is_empty()
    }
}

/// A web index being loaded: the corpus from the search shard, to which
/// text shards and the vectors are added as they arrive.
pub struct WebIndex {
    /// The manifest.
    pub manifest: WebManifest,
    /// The corpus; chunk text is present only for loaded text shards.
    pub corpus: Corpus,
    loaded: BTreeSet<usize>,
    /// The partition shards and refine blocks, once the vector directory
    /// is loaded.
    vector_shards: vectors::VectorShards,
    /// Whether the search shard left the implied edges out (else one edge
    /// shard holds the graph whole).
    edges_implied: bool,
    /// Per name shard, the entities whose names it brings, by id.
    name_rows: Vec<Vec<u32>>,
}

impl WebIndex {
    /// Open from the manifest and the search shard's bytes.
    pub fn open<'a>(
        mut manifest: WebManifest,
        search: impl Into<Fetched<'a>>,
    ) -> Result<Self, CoreError> {
        let info = manifest.search_shard()?.clone();
        let s: SearchShard = decode_shard(&info, search.into())?;
        let inconsistent = |message: String| CoreError::Inconsistent {
            file: info.name.clone(),
            message,
        };
        // The postings, name and edge shards are listed in the search shard.
        if manifest.shards.iter().any(|s| {
            matches!(
                s.kind,
                ShardKind::Postings | ShardKind::Edges | ShardKind::Names
            )
        }) {
            return Err(CoreError::Manifest {
                message: format!(
                    "{WEB_MANIFEST}: postings, name or edge shards listed beside the search shard's directory"
                ),
            });
        }
        manifest
            .shards
            .extend(s.directory.unpack().map_err(|e| e.in_file(&info.name))?);
        let t = s.tables.unpack().map_err(|e| e.in_file(&info.name))?;
        let data = IndexData {
            files: t.files,
            entities: t.entities,
            chunks: t.chunks,
            edges: t.edges,
        };
        data.check_ids()?;
        let edge_starts = edges::shard_starts(&manifest, data.entities.len(), t.edges_implied)?;
        let name_starts = names::name_starts(&manifest, data.files.len())?;
        t.features
            .check(data.chunks.len())
            .map_err(|e| e.in_file(&info.name))?;
        let n = data.chunks.len();
        if s.doc_len.len() != n {
            return Err(inconsistent(format!(
                "the keyword index does not fit the {n} chunks"
            )));
        }
        // The vocabulary and its posting lists arrive per query, in runs;
        // the qualified names with the first question that needs them.
        let runs = crate::lexical::Runs::new(postings::vocabulary_runs(&manifest)?);
        if manifest.shards_of(ShardKind::Qualified).count() != 1 {
            return Err(CoreError::Manifest {
                message: format!("{WEB_MANIFEST}: not exactly one qualified-names shard listed"),
            });
        }
        // The text shards arrive listed in the text directory.
        if manifest.shards_of(ShardKind::TextDirectory).count() != 1
            || manifest.shards_of(ShardKind::Text).next().is_some()
        {
            return Err(CoreError::Manifest {
                message: format!(
                    "{WEB_MANIFEST}: not exactly one text directory, or text shards listed beside it"
                ),
            });
        }
        let doc_len = s.doc_len.iter().map(|&c| lower_length(c)).collect();
        let lexical = LexicalIndex::in_runs(s.weights, runs, doc_len);
        let mut corpus = Corpus::with_features(data, None, lexical, t.features);
        corpus.graph = Graph::partial(&corpus.data.entities, &corpus.data.edges, edge_starts);
        // Names arrive per range of files, the lookups by name with the
        // vocabulary's runs: what the corpus built from the search shard's
        // blank names is empty until then.
        let name_ranges = crate::retrieve::names::NameRanges::new(name_starts);
        let name_rows = names::rows_by_range(&corpus.data.entities, &name_ranges);
        corpus.name_ranges = Some(name_ranges);
        corpus.lookups_in_runs = true;
        corpus.by_symbol.clear();
        corpus.by_symbol_lower.clear();
        corpus.chunks_by_symbol_lower.clear();
        corpus.callable_vocabulary.clear();
        corpus.acronyms.clear();
        let mut index = WebIndex {
            manifest,
            edges_implied: t.edges_implied,
            corpus,
            name_rows,
            loaded: BTreeSet::new(),
            vector_shards: vectors::VectorShards::default(),
        };
        index
            .add_global_lookups(&s.lookups)
            .map_err(|e| e.in_file(&info.name))?;
        Ok(index)
    }

    /// Add the vectors (semantic search).
    pub fn add_vectors<'a>(&mut self, bytes: impl Into<Fetched<'a>>) -> Result<(), CoreError> {
        let info = self
            .manifest
            .vectors_shard()
            .ok_or_else(|| CoreError::Manifest {
                message: format!("{WEB_MANIFEST}: the index has no vectors"),
            })?
            .clone();
        let v = crate::hnsw::StoredVectors::decode(&open_shard(&info, bytes)?)?;
        if v.len() != self.corpus.data.chunks.len() {
            return Err(CoreError::Inconsistent {
                file: info.name,
                message: format!(
                    "{} vectors for {} chunks",
                    v.len(),
                    self.corpus.data.chunks.len()
                ),
            });
        }
        self.corpus.chunk_vectors = v.all_vectors();
        self.corpus.partitioned = Some(crate::retrieve::PartitionedVectors::complete(
            v.ivf().clone(),
            v.hnsw_params().seed,
        ));
        self.corpus.stored_vectors = Some(v);
        Ok(())
    }

    /// The shard of `kind` whose range (terms for postings, chunks for
    /// text) holds `id`.
    fn shard_covering(&self, kind: ShardKind, id: u32) -> Option<usize> {
        self.manifest
            .shards_of(kind)
            .find(|(_, s)| {
                let range = match kind {
                    ShardKind::Postings => s.terms,
                    ShardKind::Edges => s.entities,
                    _ => s.chunks,
                };
                range.is_some_and(|[a, b]| a <= id && id <= b)
            })
            .map(|(i, _)| i)
    }

    /// What the lookups since the last call lacked (taken: a second call
    /// returns nothing). Empty: the last retrieval ran on everything it
    /// needed and ranked exactly as natively; otherwise add these
    /// ([`WebIndex::add_shard`], [`WebIndex::add_partition`],
    /// [`WebIndex::add_block`]) and retrieve again. The name shards are
    /// named only once no postings (with their lookups), partitions or
    /// blocks are lacking, and the edge shards only once nothing else is:
    /// until then the candidates whose names ranking reads, and the primary
    /// chunks whose edges expansion follows, may still change.
    pub fn missing(&self) -> Missing {
        let mut m = Missing {
            shards: self.missing_keyword_shards(),
            partitions: self.missing_partitions(),
            blocks: self.missing_blocks(),
        };
        let names = self.missing_name_shards();
        let edges = self.missing_edge_shards();
        if m.is_empty() {
            m.shards = if names.is_empty() { edges } else { names };
        }
        m
    }

    /// The manifest entry at `position`, which must be a shard of `kind`.
    fn shard_at(&self, position: usize, kind: ShardKind) -> Result<ShardInfo, CoreError> {
        self.manifest
            .shards
            .get(position)
            .filter(|s| s.kind == kind)
            .cloned()
            .ok_or_else(|| CoreError::Manifest {
                message: format!(
                    "{WEB_MANIFEST}: no {} shard at position {position}",
                    kind.as_str()
                ),
            })
    }

    /// Whether vectors are loaded (all of them, or their directory).
    pub fn has_vectors(&self) -> bool {
        self.corpus.vectors.is_some()
            || self.corpus.stored_vectors.is_some()
            || self.corpus.partitioned.is_some()
    }
}

// How the browser reads these types without serde (`crate::wire`).
crate::wire::wire_enum!(ShardKind {
    Search,
    Vectors,
    Text,
    Edges,
    Postings,
    VectorDirectory,
    Partition,
    Block,
    Qualified,
    TextDirectory,
    Names
});
crate::wire::wire_struct!(ModelFile {
    role,
    name,
    bytes,
    sha256
});
crate::wire::wire_struct!(SearchShard {
    tables,
    weights,
    doc_len,
    directory,
    lookups
});
crate::wire::wire_struct!(TextShard { chunks, entities });
crate::wire::wire_struct!(ChunkText {
    id,
    code,
    frame,
    leading_comment,
    parameters,
    return_type,
    section_path,
    file_name,
    module,
    start_line,
    end_line
});
crate::wire::wire_struct!(EntityText {
    id,
    gloss,
    doc_comment,
    signature,
    params,
    template_params,
    bases,
    return_type,
    span,
    section_path,
    gloss_model
});
