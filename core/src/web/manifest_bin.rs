//! The web manifest in binary form, `codegloss.bin`: the same
//! [`WebManifest`] as `codegloss.json`, in the shard envelope (magic,
//! [`WEB_FORMAT_VERSION`], a tag of its own, a deflated bincode payload)
//! followed by the [`ShardHash`] of everything before it.
//!
//! It exists because the browser's search module is part of the bytes
//! before the first results, and reading JSON cost it a JSON parser and a
//! second, map-shaped decoder for every manifest type: about 18 KB of the
//! gzipped module, more than the manifest itself. The browser reads this
//! form with the bincode decoder it already has for the shards; the JSON
//! form stays for people and tools (and `codegloss serve`'s site check).
//!
//! Bincode writes fields in order and cannot skip one or flatten one into
//! a map, so the embedding spec, which the JSON forms flatten into the
//! embedding facts, goes through a plain record here (and [`ShardInfo`]
//! writes every field). No host lists the binary
//! manifest's hash (it is the file that lists the others), so it carries
//! its own: a truncated or damaged copy is refused with a typed error.

use serde::Serialize;

use super::shard::{
    append_trailer, check_trailer, decode_payload, open_envelope, wrap_envelope, Fetched, Packing,
};
use super::{ModelFile, ShardInfo, WebManifest, WEB_FORMAT_VERSION};
use crate::embed::{EmbeddingSpec, Quantization};
use crate::error::CoreError;
use crate::format::{bincode_config, Counts, EmbeddingInfo};
use crate::retrieve::RetrievalSettings;
use crate::vectors::HnswParams;

/// File name of the binary manifest, beside [`super::WEB_MANIFEST`].
pub const WEB_MANIFEST_BIN: &str = "codegloss.bin";
/// The envelope tag of the binary manifest: no [`super::ShardKind`] uses it.
const MANIFEST_TAG: u8 = 0xFF;

/// [`WebManifest`], field for field.
#[derive(Serialize)]
struct Record {
    format: String,
    format_version: u32,
    tool_version: String,
    build_id: String,
    config_hash: String,
    counts: Counts,
    embedding: Option<EmbeddingRecord>,
    model_files: Vec<ModelFile>,
    shards: Vec<ShardInfo>,
    retrieval: RetrievalSettings,
}

/// [`EmbeddingInfo`], with its spec as a field.
#[derive(Serialize)]
struct EmbeddingRecord {
    spec: EmbeddingSpec,
    quantization: Quantization,
    vectors: u64,
    hnsw: HnswParams,
    hnsw_recall_at_10: f64,
    hnsw_recall_queries: u32,
}

impl WebManifest {
    /// The binary form, `codegloss.bin`.
    pub fn to_binary(&self) -> Result<Vec<u8>, CoreError> {
        let m = self.clone();
        let record = Record {
            format: m.format,
            format_version: m.format_version,
            tool_version: m.tool_version,
            build_id: m.build_id,
            config_hash: m.config_hash,
            counts: m.counts,
            embedding: m.embedding.map(|e| EmbeddingRecord {
                spec: e.spec,
                quantization: e.quantization,
                vectors: e.vectors,
                hnsw: e.hnsw,
                hnsw_recall_at_10: e.hnsw_recall_at_10,
                hnsw_recall_queries: e.hnsw_recall_queries,
            }),
            model_files: m.model_files,
            shards: m.shards,
            retrieval: m.retrieval,
        };
        let payload = bincode::serde::encode_to_vec(&record, bincode_config()).map_err(|e| {
            CoreError::Encode {
                file: WEB_MANIFEST_BIN.into(),
                message: e.to_string(),
            }
        })?;
        let mut out = wrap_envelope(MANIFEST_TAG, &payload, Packing::One);
        append_trailer(&mut out, &[]);
        Ok(out)
    }

    /// Read the binary form: its own hash, the envelope, the payload, then
    /// the format name and version, as [`WebManifest::from_json`] checks.
    pub fn from_binary<'a>(manifest: impl Into<Fetched<'a>>) -> Result<Self, CoreError> {
        let Fetched { bytes, inflated } = manifest.into();
        let file = WEB_MANIFEST_BIN;
        let body = check_trailer(file, bytes, &[])?;
        let payload = open_envelope(
            file,
            MANIFEST_TAG,
            "manifest",
            Fetched {
                bytes: body,
                inflated,
            },
        )?;
        let r: Record = decode_payload(file, &payload)?;
        if r.format != Self::FORMAT_NAME {
            return Err(CoreError::Manifest {
                message: format!(
                    "{file}: format {:?} is not {:?}",
                    r.format,
                    Self::FORMAT_NAME
                ),
            });
        }
        if r.format_version != WEB_FORMAT_VERSION {
            return Err(CoreError::UnsupportedVersion {
                file: file.into(),
                found: r.format_version,
                expected: WEB_FORMAT_VERSION,
            });
        }
        Ok(WebManifest {
            format: r.format,
            format_version: r.format_version,
            tool_version: r.tool_version,
            build_id: r.build_id,
            config_hash: r.config_hash,
            counts: r.counts,
            embedding: r.embedding.map(|e| EmbeddingInfo {
                spec: e.spec,
                quantization: e.quantization,
                vectors: e.vectors,
                hnsw: e.hnsw,
                hnsw_recall_at_10: e.hnsw_recall_at_10,
                hnsw_recall_queries: e.hnsw_recall_queries,
            }),
            model_files: r.model_files,
            shards: r.shards,
            retrieval: r.retrieval,
        })
    }
}

// How the browser reads these types without serde (`crate::wire`).
crate::wire::wire_struct!(Record {
    format,
    format_version,
    tool_version,
    build_id,
    config_hash,
    counts,
    embedding,
    model_files,
    shards,
    retrieval
});
crate::wire::wire_struct!(EmbeddingRecord {
    spec,
    quantization,
    vectors,
    hnsw,
    hnsw_recall_at_10,
    hnsw_recall_queries
});

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> WebManifest {
        let text = include_str!("../../tests/golden/web/codegloss.json");
        WebManifest::from_json(text).expect("golden manifest")
    }

    #[test]
    fn round_trips_and_is_deterministic() {
        // With and without vectors, partitioned or not.
        let ivf = include_str!("../../tests/golden/web-ivf/codegloss.json");
        let ivf = WebManifest::from_json(ivf).expect("golden manifest");
        assert!(ivf.embedding.is_some());
        for m in [manifest(), ivf] {
            let bin = m.to_binary().unwrap();
            assert_eq!(bin, m.to_binary().unwrap());
            assert_eq!(WebManifest::from_binary(&bin).unwrap(), m);
        }
    }

    #[test]
    fn rejects_damage_with_typed_errors() {
        let bin = manifest().to_binary().unwrap();
        for cut in [0, 5, bin.len() / 2, bin.len() - 1] {
            let err = WebManifest::from_binary(&bin[..cut]).unwrap_err();
            assert!(
                matches!(
                    err,
                    CoreError::Truncated { .. } | CoreError::ChecksumMismatch { .. }
                ),
                "{cut}: {err}"
            );
        }
        for at in [0, 9, 12, bin.len() / 2, bin.len() - 1] {
            let mut bad = bin.clone();
            bad[at] ^= 0x40;
            let err = WebManifest::from_binary(&bad).unwrap_err();
            assert!(
                matches!(err, CoreError::ChecksumMismatch { .. }),
                "{at}: {err}"
            );
        }
        // A well-hashed file of another kind or version is refused too.
        let mut shard = wrap_envelope(1, b"x", Packing::Bulk);
        append_trailer(&mut shard, &[]);
        let err = WebManifest::from_binary(&shard).unwrap_err();
        assert!(matches!(err, CoreError::WrongKind { .. }), "{err}");
    }

    #[test]
    fn refuses_another_format_name() {
        let mut m = manifest();
        m.format = "something-else".into();
        let err = WebManifest::from_binary(&m.to_binary().unwrap()).unwrap_err();
        assert!(matches!(err, CoreError::Manifest { .. }), "{err}");
    }
}
