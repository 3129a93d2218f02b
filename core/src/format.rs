//! The on-disk (and on-the-wire) index format.
//!
//! An index is a directory holding `manifest.json` and one binary data file
//! per table (`files.bin`, `entities.bin`, `chunks.bin`, `graph.bin`,
//! `lexical.bin`, and `vectors.bin` when the index carries embeddings). Each data file is a fixed header followed by a bincode payload:
//!
//! | bytes | content                                  |
//! |-------|------------------------------------------|
//! | 8     | magic `b"CGLOSSIX"`                      |
//! | 4     | `FORMAT_VERSION`, little endian          |
//! | 1     | [`DataKind`] tag                         |
//! | 3     | reserved, zero                           |
//! | 8     | payload length, little endian            |
//! | 32    | SHA-256 of the payload                   |
//! | n     | payload (bincode, standard config)       |
//!
//! The reader checks magic, version, kind, length and checksum before it
//! decodes anything, and reports each failure as a typed [`CoreError`].
//! Encoding is deterministic: the same [`IndexData`] gives the same bytes.
//!
//! This module only turns bytes into values and back; reading and writing
//! files is the caller's business.

use std::collections::BTreeMap;

use serde::{de::DeserializeOwned, Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::embed::{EmbeddingSpec, Quantization};
use crate::error::CoreError;
use crate::model::{Chunk, Edge, EdgeKind, Entity, EntityKind, SourceFile};
use crate::vectors::HnswParams;

/// Magic number at the start of every data file.
pub const MAGIC: [u8; 8] = *b"CGLOSSIX";
/// Version of the index format. Bump on any change to the serialised types
/// (4: every chunk carries its [`crate::model::CodeFrame`]; 5: the
/// vectors carry their inverted-file partitions, [`crate::ivf::Ivf`]; 6:
/// the partitions carry each chunk's radius, [`crate::hubness`]).
pub const FORMAT_VERSION: u32 = 6;
/// Size of the fixed header in bytes.
pub const HEADER_LEN: usize = 8 + 4 + 1 + 3 + 8 + 32;
/// Upper bound on a decoded payload, so that a hostile length cannot make
/// the decoder allocate without bound.
const DECODE_LIMIT: usize = 1 << 28;

/// Which table a data file holds.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum DataKind {
    /// `Vec<SourceFile>`.
    Files,
    /// `Vec<Entity>`.
    Entities,
    /// `Vec<Chunk>`.
    Chunks,
    /// `Vec<Edge>`.
    Graph,
    /// [`crate::vectors::VectorIndex`] (optional).
    Vectors,
    /// [`crate::lexical::LexicalIndex`].
    Lexical,
}

impl DataKind {
    /// The tables every index has, in file order. [`DataKind::Vectors`]
    /// is optional and listed in the manifest when present.
    pub const ALL: [DataKind; 4] = [
        DataKind::Files,
        DataKind::Entities,
        DataKind::Chunks,
        DataKind::Graph,
    ];

    fn tag(self) -> u8 {
        match self {
            DataKind::Files => 1,
            DataKind::Entities => 2,
            DataKind::Chunks => 3,
            DataKind::Graph => 4,
            DataKind::Vectors => 5,
            DataKind::Lexical => 6,
        }
    }

    fn from_tag(tag: u8) -> Option<Self> {
        DataKind::ALL
            .into_iter()
            .chain([DataKind::Vectors, DataKind::Lexical])
            .find(|k| k.tag() == tag)
    }

    /// Stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            DataKind::Files => "files",
            DataKind::Entities => "entities",
            DataKind::Chunks => "chunks",
            DataKind::Graph => "graph",
            DataKind::Vectors => "vectors",
            DataKind::Lexical => "lexical",
        }
    }

    /// File name inside an index directory.
    pub fn file_name(self) -> &'static str {
        match self {
            DataKind::Files => "files.bin",
            DataKind::Entities => "entities.bin",
            DataKind::Chunks => "chunks.bin",
            DataKind::Graph => "graph.bin",
            DataKind::Vectors => "vectors.bin",
            DataKind::Lexical => "lexical.bin",
        }
    }
}

pub(crate) fn bincode_config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<DECODE_LIMIT>()
}

/// Hex SHA-256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Check the bytes of `file` against the size and SHA-256 (hex) that a
/// manifest lists for it: [`CoreError::ChecksumMismatch`] when either
/// differs: the native data files (the web's shards list a shorter hash,
/// checked by [`verify_hashed`] too).
pub(crate) fn verify_listed(
    file: &str,
    bytes: &[u8],
    listed_bytes: u64,
    listed_sha256: &str,
) -> Result<(), CoreError> {
    verify_hashed(file, bytes, listed_bytes, listed_sha256, sha256_hex)
}

/// Check the bytes of `file` against a listed size and a listed hash
/// (hex) of them, computed by `hash`.
pub(crate) fn verify_hashed(
    file: &str,
    bytes: &[u8],
    listed_bytes: u64,
    listed_hash: &str,
    hash: fn(&[u8]) -> String,
) -> Result<(), CoreError> {
    let computed = hash(bytes);
    if listed_bytes != bytes.len() as u64 || listed_hash != computed {
        return Err(CoreError::ChecksumMismatch {
            file: file.into(),
            stored: listed_hash.into(),
            computed,
        });
    }
    Ok(())
}

/// Encode a value as a data file of the given kind.
pub fn encode_data_file<T: Serialize>(kind: DataKind, value: &T) -> Result<Vec<u8>, CoreError> {
    let payload =
        bincode::serde::encode_to_vec(value, bincode_config()).map_err(|e| CoreError::Encode {
            file: kind.file_name().to_string(),
            message: e.to_string(),
        })?;
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.push(kind.tag());
    out.extend_from_slice(&[0, 0, 0]);
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&Sha256::digest(&payload));
    out.extend_from_slice(&payload);
    Ok(out)
}

/// Check the header and checksum of a data file and decode its payload.
///
/// `file` names the data file in error messages.
pub fn decode_data_file<T: DeserializeOwned>(
    file: &str,
    expected: DataKind,
    bytes: &[u8],
) -> Result<T, CoreError> {
    let payload = data_file_payload(file, expected, bytes)?;
    let (value, used) = crate::bounded::decode(payload).map_err(|e| CoreError::Decode {
        file: file.to_string(),
        message: e.to_string(),
    })?;
    if used != payload.len() {
        return Err(CoreError::Decode {
            file: file.to_string(),
            message: format!("{} bytes left after decoding", payload.len() - used),
        });
    }
    Ok(value)
}

/// The payload of a data file whose header (magic, version, kind, length)
/// and checksum hold.
pub(crate) fn data_file_payload<'a>(
    file: &str,
    expected: DataKind,
    bytes: &'a [u8],
) -> Result<&'a [u8], CoreError> {
    let truncated = |expected_len: usize| CoreError::Truncated {
        file: file.to_string(),
        got: bytes.len() as u64,
        expected: expected_len as u64,
    };
    if bytes.len() < MAGIC.len() {
        // Too short even for the magic: report what it is not, if we can tell.
        if !MAGIC.starts_with(bytes) {
            return Err(CoreError::BadMagic {
                file: file.to_string(),
            });
        }
        return Err(truncated(HEADER_LEN));
    }
    if bytes[..8] != MAGIC {
        return Err(CoreError::BadMagic {
            file: file.to_string(),
        });
    }
    if bytes.len() < HEADER_LEN {
        return Err(truncated(HEADER_LEN));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if version != FORMAT_VERSION {
        return Err(CoreError::UnsupportedVersion {
            file: file.to_string(),
            found: version,
            expected: FORMAT_VERSION,
        });
    }
    let kind = DataKind::from_tag(bytes[12]);
    if bytes[13..16] != [0, 0, 0] {
        return Err(CoreError::Decode {
            file: file.to_string(),
            message: "reserved header bytes are not zero".into(),
        });
    }
    if kind != Some(expected) {
        return Err(CoreError::WrongKind {
            file: file.to_string(),
            found: kind.map_or_else(
                || format!("unknown (tag {})", bytes[12]),
                |k| k.as_str().into(),
            ),
            expected: expected.as_str().to_string(),
        });
    }
    let len = u64::from_le_bytes(bytes[16..24].try_into().expect("8 bytes"));
    let available = (bytes.len() - HEADER_LEN) as u64;
    if len > available {
        return Err(CoreError::Truncated {
            file: file.to_string(),
            got: bytes.len() as u64,
            expected: (HEADER_LEN as u64).saturating_add(len),
        });
    }
    if len < available {
        return Err(CoreError::TrailingBytes {
            file: file.to_string(),
            extra: available - len,
        });
    }
    let payload = &bytes[HEADER_LEN..];
    let stored = &bytes[24..56];
    let computed = Sha256::digest(payload);
    if stored != computed.as_slice() {
        return Err(CoreError::ChecksumMismatch {
            file: file.to_string(),
            stored: hex::encode(stored),
            computed: hex::encode(computed),
        });
    }
    Ok(payload)
}

/// What the manifest records about the vectors of an index: the model
/// (so that a reader with another query model refuses to search), the
/// storage, and the measured quality of the HNSW graph.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct EmbeddingInfo {
    /// The embedding model and preprocessing.
    #[serde(flatten)]
    pub spec: EmbeddingSpec,
    /// How vectors are stored.
    pub quantization: Quantization,
    /// Number of vectors (one per chunk).
    pub vectors: u64,
    /// HNSW parameters.
    pub hnsw: HnswParams,
    /// Mean recall@10 of HNSW against exact search.
    pub hnsw_recall_at_10: f64,
    /// Number of random queries the recall was measured on.
    pub hnsw_recall_queries: u32,
}

/// One data file as listed in the manifest.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct DataFileInfo {
    /// File name inside the index directory.
    pub name: String,
    /// Table kind.
    pub kind: DataKind,
    /// Size in bytes, header included.
    pub bytes: u64,
    /// SHA-256 of the whole file (hex).
    pub sha256: String,
}

/// One prompt template of the explanation stage.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct PromptInfo {
    /// Template version id (`file_level_v1`).
    pub version: String,
    /// Hash of the template text: a changed template changes every key.
    pub signature: String,
}

/// An entity whose model gloss failed twice and fell back to its
/// structural gloss.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct GlossFallback {
    /// Entity id.
    pub entity: u32,
    /// Qualified name (path for files, folder for modules).
    pub name: String,
    /// Explanation level (`symbol`, `doc`, `file`, `module`, `call_chain`).
    pub level: String,
    /// What went wrong on the last attempt.
    pub cause: String,
}

/// What the manifest records about the explanation stage ("glosses")
/// when a model backend ran. Absent for purely structural glosses.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct GlossInfo {
    /// Backend name (`openai`).
    pub backend: String,
    /// Levels explained by the model, bottom-up.
    pub levels: Vec<String>,
    /// Model id per level.
    pub models: BTreeMap<String, String>,
    /// Prompt template per mode (`general`, `file_level`, ...).
    pub prompts: BTreeMap<String, PromptInfo>,
    /// Glosses per level and `gloss_source` (`model`, `structural`,
    /// `skipped_low_information`).
    pub by_source: BTreeMap<String, BTreeMap<String, u64>>,
    /// Entities that fell back to structural glosses, with the cause.
    pub fallbacks: Vec<GlossFallback>,
}

/// Counts recorded in the manifest.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Files indexed.
    pub files: u64,
    /// Entities of all kinds.
    pub entities: u64,
    /// Chunks.
    pub chunks: u64,
    /// Edges of all kinds.
    pub edges: u64,
    /// Entities per kind name.
    pub entities_by_kind: BTreeMap<String, u64>,
    /// Edges per kind name.
    pub edges_by_kind: BTreeMap<String, u64>,
    /// Function definitions seen by the C++ parser.
    pub functions: u64,
    /// Of those, inside ERROR nodes after macro neutralisation.
    pub functions_in_error: u64,
    /// Files that produced a warning.
    pub files_with_warnings: u64,
}

/// What a JSON manifest (`manifest.json`, the web's `codegloss.json`)
/// must say about its format for [`from_versioned_json`] to accept it.
pub(crate) struct JsonFormat {
    /// The `format` field's value.
    pub(crate) name: &'static str,
    /// The `format_version` this build reads.
    pub(crate) version: u32,
    /// The file, as errors name it.
    pub(crate) file: &'static str,
    /// Whether parse and format-name messages start with `file` (not for
    /// `manifest.json`, which [`CoreError::Manifest`] names already).
    pub(crate) file_in_messages: bool,
}

/// A manifest as pretty JSON with a trailing newline.
pub(crate) fn to_pretty_json<T: Serialize>(manifest: &T) -> String {
    let mut s = serde_json::to_string_pretty(manifest).expect("manifest serialises");
    s.push('\n');
    s
}

/// Parse a JSON manifest, then check the format name and version that
/// `header` reads from it: a [`CoreError::Manifest`] for bad JSON or
/// another format, [`CoreError::UnsupportedVersion`] for another version.
pub(crate) fn from_versioned_json<T: DeserializeOwned>(
    text: &str,
    format: &JsonFormat,
    header: fn(&T) -> (&str, u32),
) -> Result<T, CoreError> {
    let prefix = if format.file_in_messages {
        format!("{}: ", format.file)
    } else {
        String::new()
    };
    let m: T = serde_json::from_str(text).map_err(|e| CoreError::Manifest {
        message: format!("{prefix}{e}"),
    })?;
    let (name, version) = header(&m);
    if name != format.name {
        return Err(CoreError::Manifest {
            message: format!("{prefix}format is {name:?}, expected {:?}", format.name),
        });
    }
    if version != format.version {
        return Err(CoreError::UnsupportedVersion {
            file: format.file.into(),
            found: version,
            expected: format.version,
        });
    }
    Ok(m)
}

/// `manifest.json`: the small, human-readable description of an index.
///
/// It holds no timestamps, so that identical input gives an identical file.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Manifest {
    /// Always `"codegloss-index"`.
    pub format: String,
    /// [`FORMAT_VERSION`] of the writer.
    pub format_version: u32,
    /// Version of the tool that wrote the index.
    pub tool_version: String,
    /// SHA-256 of the canonical configuration.
    pub config_hash: String,
    /// Counts.
    pub counts: Counts,
    /// Path → SHA-256 of every indexed source file.
    pub source_files: BTreeMap<String, String>,
    /// Embedding model facts; none for an index without vectors.
    pub embedding: Option<EmbeddingInfo>,
    /// The explanation stage, when a model wrote glosses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glosses: Option<GlossInfo>,
    /// The data files and their checksums.
    pub data_files: Vec<DataFileInfo>,
    /// The `[retrieval]` settings of the configuration the index was built
    /// with: what `query`, `eval`, `ask` and the site rank with unless a
    /// configuration given to them says otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieval: Option<crate::retrieve::RetrievalSettings>,
}

impl Manifest {
    /// The `format` field value.
    pub const FORMAT_NAME: &'static str = "codegloss-index";

    /// Serialise as pretty JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        to_pretty_json(self)
    }

    /// Parse and check the format name and version.
    pub fn from_json(text: &str) -> Result<Self, CoreError> {
        let format = JsonFormat {
            name: Self::FORMAT_NAME,
            version: FORMAT_VERSION,
            file: "manifest.json",
            file_in_messages: false,
        };
        from_versioned_json(text, &format, |m: &Manifest| {
            (m.format.as_str(), m.format_version)
        })
    }

    /// The manifest's entry for one data file. Its name comes from an
    /// untrusted file, so it must be a plain file name in the index folder
    /// (`[A-Za-z0-9._-]`, ending in `.bin`, not hidden): never a path.
    pub fn data_file(&self, kind: DataKind) -> Result<&DataFileInfo, CoreError> {
        let info = self
            .data_files
            .iter()
            .find(|d| d.kind == kind)
            .ok_or_else(|| CoreError::Inconsistent {
                file: kind.file_name().into(),
                message: "not listed in manifest.json".into(),
            })?;
        let plain = info.name.ends_with(".bin")
            && !info.name.starts_with('.')
            && info
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        if !plain {
            return Err(CoreError::Inconsistent {
                file: kind.file_name().into(),
                message: format!(
                    "manifest.json names its data file {:?}, which is not a plain file name",
                    info.name
                ),
            });
        }
        Ok(info)
    }

    /// Check one data file's bytes against the manifest entry.
    pub fn verify_data_file(&self, kind: DataKind, bytes: &[u8]) -> Result<(), CoreError> {
        let info = self.data_file(kind)?;
        verify_listed(&info.name, bytes, info.bytes, &info.sha256)
    }
}

/// Everything an index holds, decoded.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexData {
    /// Indexed files, in path order.
    pub files: Vec<SourceFile>,
    /// Entities; ids are positions.
    pub entities: Vec<Entity>,
    /// Chunks; ids are positions.
    pub chunks: Vec<Chunk>,
    /// Structure graph edges, sorted.
    pub edges: Vec<Edge>,
}

impl IndexData {
    /// Encode every table as a data file: `(kind, bytes)` in file order.
    pub fn encode(&self) -> Result<Vec<(DataKind, Vec<u8>)>, CoreError> {
        Ok(vec![
            (
                DataKind::Files,
                encode_data_file(DataKind::Files, &self.files)?,
            ),
            (
                DataKind::Entities,
                encode_data_file(DataKind::Entities, &self.entities)?,
            ),
            (
                DataKind::Chunks,
                encode_data_file(DataKind::Chunks, &self.chunks)?,
            ),
            (
                DataKind::Graph,
                encode_data_file(DataKind::Graph, &self.edges)?,
            ),
        ])
    }

    /// Decode from the four data files, checking each one and the ids
    /// that connect them.
    pub fn decode(
        files: &[u8],
        entities: &[u8],
        chunks: &[u8],
        graph: &[u8],
    ) -> Result<Self, CoreError> {
        let data = IndexData {
            files: decode_data_file(DataKind::Files.file_name(), DataKind::Files, files)?,
            entities: decode_data_file(
                DataKind::Entities.file_name(),
                DataKind::Entities,
                entities,
            )?,
            chunks: decode_data_file(DataKind::Chunks.file_name(), DataKind::Chunks, chunks)?,
            edges: decode_data_file(DataKind::Graph.file_name(), DataKind::Graph, graph)?,
        };
        data.check_ids()?;
        Ok(data)
    }

    /// Check that every id points inside its table, so that later lookups
    /// can index without panicking.
    pub fn check_ids(&self) -> Result<(), CoreError> {
        let bad = |file: DataKind, message: String| CoreError::Inconsistent {
            file: file.file_name().into(),
            message,
        };
        let (nf, ne) = (self.files.len(), self.entities.len());
        for (i, f) in self.files.iter().enumerate() {
            if f.id as usize != i
                || f.includes
                    .iter()
                    .any(|inc| inc.resolved.is_some_and(|r| r as usize >= nf))
            {
                return Err(bad(
                    DataKind::Files,
                    format!("file {i} has an out-of-range id"),
                ));
            }
        }
        for (i, e) in self.entities.iter().enumerate() {
            if e.id as usize != i
                || e.parent
                    .is_some_and(|p| p as usize >= ne || p as usize == i)
                || e.file.is_some_and(|f| f as usize >= nf)
            {
                return Err(bad(
                    DataKind::Entities,
                    format!("entity {i} has an out-of-range id"),
                ));
            }
        }
        for (i, c) in self.chunks.iter().enumerate() {
            if c.id as usize != i || c.entity as usize >= ne || c.part == 0 || c.part > c.parts {
                return Err(bad(
                    DataKind::Chunks,
                    format!("chunk {i} has an out-of-range id"),
                ));
            }
        }
        if let Some(e) = self
            .edges
            .iter()
            .find(|e| e.from as usize >= ne || e.to as usize >= ne)
        {
            return Err(bad(
                DataKind::Graph,
                format!(
                    "edge {} -> {} points outside the entity table",
                    e.from, e.to
                ),
            ));
        }
        Ok(())
    }

    /// Counts for the manifest.
    pub fn counts(&self) -> Counts {
        let mut c = Counts {
            files: self.files.len() as u64,
            entities: self.entities.len() as u64,
            chunks: self.chunks.len() as u64,
            edges: self.edges.len() as u64,
            ..Counts::default()
        };
        for e in &self.entities {
            *c.entities_by_kind
                .entry(e.kind.as_str().into())
                .or_default() += 1;
        }
        for e in &self.edges {
            *c.edges_by_kind.entry(e.kind.as_str().into()).or_default() += 1;
        }
        for f in &self.files {
            if let Some(p) = &f.parse {
                c.functions += u64::from(p.functions);
                c.functions_in_error += u64::from(p.functions_in_error);
            }
            if !f.warnings.is_empty() {
                c.files_with_warnings += 1;
            }
        }
        c
    }

    /// Entities whose name or qualified name equals `symbol`, or whose
    /// qualified name ends with `::symbol`.
    pub fn find_symbol(&self, symbol: &str) -> Vec<&Entity> {
        let suffix = format!("::{symbol}");
        self.entities
            .iter()
            .filter(|e| {
                !matches!(
                    e.kind,
                    EntityKind::File | EntityKind::Module | EntityKind::CallChain
                ) && (e.name == symbol
                    || e.qualified_name == symbol
                    || e.qualified_name.ends_with(&suffix))
            })
            .collect()
    }

    /// The file with this repository-relative path, or the only file whose
    /// path ends with `/path`.
    pub fn find_file(&self, path: &str) -> Option<&SourceFile> {
        let path = path.trim_start_matches("./");
        if let Some(f) = self.files.iter().find(|f| f.path == path) {
            return Some(f);
        }
        let suffix = format!("/{path}");
        let mut hits = self.files.iter().filter(|f| f.path.ends_with(&suffix));
        let first = hits.next()?;
        hits.next().is_none().then_some(first)
    }

    /// Outgoing edges of an entity.
    pub fn edges_from(&self, id: u32) -> impl Iterator<Item = &Edge> {
        self.edges.iter().filter(move |e| e.from == id)
    }

    /// Incoming edges of an entity.
    pub fn edges_to(&self, id: u32) -> impl Iterator<Item = &Edge> {
        self.edges.iter().filter(move |e| e.to == id)
    }

    /// Chunks of an entity.
    pub fn chunks_of(&self, id: u32) -> impl Iterator<Item = &Chunk> {
        self.chunks.iter().filter(move |c| c.entity == id)
    }

    /// The file-level entity of a file.
    pub fn file_entity(&self, file: u32) -> Option<&Entity> {
        self.entities
            .iter()
            .find(|e| e.kind == EntityKind::File && e.file == Some(file))
    }

    /// Edges of one kind, counted.
    pub fn count_edges(&self, kind: EdgeKind) -> usize {
        self.edges.iter().filter(|e| e.kind == kind).count()
    }
}

// How the web manifest's reader decodes it (`crate::wire`).
crate::wire::wire_struct!(Counts {
    files,
    entities,
    chunks,
    edges,
    entities_by_kind,
    edges_by_kind,
    functions,
    functions_in_error,
    files_with_warnings
});

#[cfg(test)]
mod tests {
    use super::*;

    /// A string as the decoder hands it over: `true` when borrowed from the
    /// payload (its length checked against the bytes there), `false` when
    /// the decoder allocated it owned, as long as its prefix said.
    struct Probe(bool);

    impl<'de> Deserialize<'de> for Probe {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl serde::de::Visitor<'_> for V {
                type Value = Probe;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("a string")
                }
                fn visit_str<E>(self, _: &str) -> Result<Probe, E> {
                    Ok(Probe(true))
                }
                fn visit_string<E>(self, _: String) -> Result<Probe, E> {
                    Ok(Probe(false))
                }
            }
            d.deserialize_string(V)
        }
    }

    #[test]
    fn strings_are_checked_against_the_payload_before_they_are_allocated() {
        // Found by `cargo xtask fuzz` (index_data): 79 bytes of entities.bin
        // announced a 100 MB string, which bincode allocated (zeroed) before
        // it found the bytes missing.
        let bytes = encode_data_file(DataKind::Files, &"x".to_string()).unwrap();
        let probe: Probe = decode_data_file("files.bin", DataKind::Files, &bytes).unwrap();
        assert!(probe.0, "the string was allocated before it was read");
        let mut payload = vec![253]; // varint: a u32 follows
        payload.extend_from_slice(&100_000_000u32.to_le_bytes());
        payload.push(b'x');
        let mut file = encode_data_file(DataKind::Files, &()).unwrap();
        file.truncate(16);
        file.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        file.extend_from_slice(&Sha256::digest(&payload));
        file.extend_from_slice(&payload);
        let err = decode_data_file::<String>("files.bin", DataKind::Files, &file).unwrap_err();
        assert!(matches!(err, CoreError::Decode { .. }), "{err}");
    }
}
