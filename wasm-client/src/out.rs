//! The replies the engine hands the worker, as typed records that
//! `serde_json` writes directly.
//!
//! It exists because building the replies as `serde_json::Value`s (the
//! `json!` macro) put a second serializer, a map type and its B-tree code
//! into the search module, which the browser fetches before its first
//! results. The field names are the worker's contract (`site/worker.js`
//! reads them by name; their order does not matter to it).

use codegloss_core::answer::Context;
use codegloss_core::model::CodeFrame;
use codegloss_core::retrieve::ChunkRow;
use codegloss_core::web::{ModelFile, ShardInfo};
use serde::Serialize;

/// `value` as JSON text. The records here hold strings, numbers, booleans,
/// lists and core's records, none a map with non-string keys, so writing
/// them cannot fail.
pub fn json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("the engine's replies are plain records")
}

/// A file the manifest lists, as the worker checks it on arrival.
#[derive(Serialize)]
pub struct FileRef<'a> {
    pub name: &'a str,
    pub bytes: u64,
    pub sha256: &'a str,
}

/// `manifestFiles`: the search shard's path and every file the manifest
/// lists.
#[derive(Serialize)]
pub struct Listing<'a> {
    pub search: &'a str,
    pub files: Vec<FileRef<'a>>,
}

/// The index's counts, as the page shows them.
#[derive(Serialize)]
pub struct Counts {
    pub files: u64,
    pub entities: u64,
    pub chunks: u64,
    pub edges: u64,
}

/// What the worker needs of the embedding spec.
#[derive(Serialize)]
pub struct Embedding<'a> {
    pub model_id: &'a str,
    pub dimension: u32,
    pub model_sha256: &'a str,
    pub tokenizer_sha256: &'a str,
    pub max_length: u32,
    pub query_prefix: &'a str,
}

/// `info`: facts for the page.
#[derive(Serialize)]
pub struct Info<'a> {
    pub build_id: &'a str,
    pub tool_version: &'a str,
    pub counts: Counts,
    pub embedding: Option<Embedding<'a>>,
    pub model_files: &'a [ModelFile],
    pub vectors: Option<&'a ShardInfo>,
    pub vector_directory: Option<&'a ShardInfo>,
    pub text_shards: usize,
    pub has_vectors: bool,
}

/// A shard to fetch, check and hand back, with what the engine calls it:
/// its manifest `position`, its `partition` or its refine `block` (one of
/// the three).
#[derive(Serialize)]
pub struct Listed<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<usize>,
    pub name: &'a str,
    pub bytes: u64,
    pub sha256: &'a str,
    /// The shard ends with its seal under the key `sha256`.
    pub sealed: bool,
}

impl<'a> Listed<'a> {
    /// A shard with no id yet.
    pub fn of(s: &'a ShardInfo) -> Self {
        Listed {
            position: None,
            partition: None,
            block: None,
            name: &s.name,
            bytes: s.bytes,
            sha256: &s.sha256,
            sealed: s.sealed,
        }
    }
}

/// What to fetch before a search's result is final.
#[derive(Serialize)]
pub struct Need<'a> {
    pub need_shards: Vec<Listed<'a>>,
    pub need_partitions: Vec<Listed<'a>>,
    pub need_blocks: Vec<Listed<'a>>,
}

/// A search's result.
#[derive(Serialize)]
pub struct Found<'a> {
    pub question: &'a str,
    pub intent: &'a str,
    pub semantic: bool,
    pub files: Vec<&'a str>,
    pub chunks: Vec<ChunkRow<'a>>,
    pub missing: Vec<Listed<'a>>,
}

/// An evidence card.
#[derive(Serialize)]
pub struct Card<'a> {
    pub n: usize,
    pub chunk: u32,
    pub role: &'a str,
    pub symbol: &'a str,
    pub qualified_name: &'a str,
    pub kind: &'a str,
    pub path: &'a str,
    pub start_line: Option<u32>,
    pub end_line: Option<u32>,
    pub language: &'a str,
    pub gloss: &'a str,
    pub code: &'a str,
    pub frame: &'a CodeFrame,
    pub score: f32,
}

/// The chunks whose text an answer context needs first.
#[derive(Serialize)]
pub struct NeedText {
    pub need_text: Vec<u32>,
}

/// An answer context.
#[derive(Serialize)]
pub struct AnswerContext<'a> {
    pub question: &'a str,
    pub context: &'a Context,
}
