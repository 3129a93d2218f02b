//! Reading and writing an index directory.
//!
//! The format itself (bytes ↔ values) lives in `codegloss-core`; this
//! module only moves those bytes to and from disk. Writes never leave a
//! half-written index behind: every file is written to a temporary name
//! and renamed into place, data files first and `manifest.json` last, so a
//! reader sees either the old index or the new one.

use std::path::{Path, PathBuf};

use codegloss_core::format::{sha256_hex, DataFileInfo, EmbeddingInfo, GlossInfo};
use codegloss_core::lexical::{FieldWeights, LexicalIndex};
use codegloss_core::retrieve::Corpus;
use codegloss_core::{DataKind, IndexData, Manifest, VectorIndex, FORMAT_VERSION};

use crate::error::IndexError;

/// Name of the manifest file.
pub const MANIFEST: &str = "manifest.json";

fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), IndexError> {
    let tmp = dir.join(format!(".{name}.tmp"));
    let dst = dir.join(name);
    std::fs::write(&tmp, bytes).map_err(|e| IndexError::io(&tmp, e))?;
    std::fs::rename(&tmp, &dst).map_err(|e| IndexError::io(&dst, e))
}

/// Build the manifest for `data` (and its vectors, when there are any)
/// and write everything to `dir`. A `vectors.bin` left from an earlier
/// run is removed when the new index has no vectors.
pub fn write_index(
    dir: &Path,
    data: &IndexData,
    vectors: Option<(&VectorIndex, &EmbeddingInfo)>,
    config_hash: &str,
) -> Result<Manifest, IndexError> {
    write_index_with_glosses(dir, data, vectors, None, config_hash, None)
}

/// [`write_index`], recording the explanation stage and the retrieval
/// settings of the configuration in the manifest.
pub fn write_index_with_glosses(
    dir: &Path,
    data: &IndexData,
    vectors: Option<(&VectorIndex, &EmbeddingInfo)>,
    glosses: Option<&GlossInfo>,
    config_hash: &str,
    retrieval: Option<&codegloss_core::retrieve::RetrievalSettings>,
) -> Result<Manifest, IndexError> {
    std::fs::create_dir_all(dir).map_err(|e| IndexError::io(dir, e))?;
    let index_err = |source| IndexError::Index {
        path: dir.to_path_buf(),
        source,
    };
    let mut encoded = data.encode().map_err(index_err)?;
    let lexical = LexicalIndex::build(data, FieldWeights::default());
    encoded.push((DataKind::Lexical, lexical.encode().map_err(index_err)?));
    if let Some((v, _)) = vectors {
        encoded.push((DataKind::Vectors, v.encode().map_err(index_err)?));
    }
    let mut data_files = Vec::new();
    for (kind, bytes) in &encoded {
        write_atomic(dir, kind.file_name(), bytes)?;
        data_files.push(DataFileInfo {
            name: kind.file_name().to_string(),
            kind: *kind,
            bytes: bytes.len() as u64,
            sha256: sha256_hex(bytes),
        });
    }
    let manifest = Manifest {
        format: Manifest::FORMAT_NAME.to_string(),
        format_version: FORMAT_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        config_hash: config_hash.to_string(),
        counts: data.counts(),
        source_files: data
            .files
            .iter()
            .map(|f| (f.path.clone(), f.sha256.clone()))
            .collect(),
        embedding: vectors.map(|(_, info)| info.clone()),
        glosses: glosses.cloned(),
        data_files,
        retrieval: retrieval.cloned(),
    };
    write_atomic(dir, MANIFEST, manifest.to_json().as_bytes())?;
    if vectors.is_none() {
        let stale = dir.join(DataKind::Vectors.file_name());
        if stale.exists() {
            std::fs::remove_file(&stale).map_err(|e| IndexError::io(&stale, e))?;
        }
    }
    Ok(manifest)
}

/// Read one data file and check it against its manifest entry.
fn read_verified(dir: &Path, manifest: &Manifest, kind: DataKind) -> Result<Vec<u8>, IndexError> {
    let path: PathBuf = dir.join(kind.file_name());
    let bytes = std::fs::read(&path).map_err(|e| IndexError::io(&path, e))?;
    manifest
        .verify_data_file(kind, &bytes)
        .map_err(|source| IndexError::Index { path, source })?;
    Ok(bytes)
}

/// Read and check an index directory.
pub fn read_index(dir: &Path) -> Result<(Manifest, IndexData), IndexError> {
    let mpath = dir.join(MANIFEST);
    let text = std::fs::read_to_string(&mpath).map_err(|e| IndexError::io(&mpath, e))?;
    let manifest = Manifest::from_json(&text).map_err(|source| IndexError::Index {
        path: mpath.clone(),
        source,
    })?;
    let mut blobs: Vec<Vec<u8>> = Vec::new();
    for kind in DataKind::ALL {
        blobs.push(read_verified(dir, &manifest, kind)?);
    }
    let data = IndexData::decode(&blobs[0], &blobs[1], &blobs[2], &blobs[3]).map_err(|source| {
        IndexError::Index {
            path: dir.to_path_buf(),
            source,
        }
    })?;
    Ok((manifest, data))
}

/// Read and check the vectors of an index, when its manifest lists them.
pub fn read_vectors(dir: &Path, manifest: &Manifest) -> Result<Option<VectorIndex>, IndexError> {
    if !manifest
        .data_files
        .iter()
        .any(|d| d.kind == DataKind::Vectors)
    {
        return Ok(None);
    }
    let path = dir.join(DataKind::Vectors.file_name());
    let bytes = read_verified(dir, manifest, DataKind::Vectors)?;
    let err = |source| IndexError::Index {
        path: path.clone(),
        source,
    };
    let v = VectorIndex::decode(&bytes).map_err(err)?;
    let info = manifest.embedding.as_ref();
    if info.map(|i| &i.spec) != Some(&v.spec) || v.len() as u64 != manifest.counts.chunks {
        return Err(err(codegloss_core::CoreError::Inconsistent {
            file: DataKind::Vectors.file_name().into(),
            message: "vectors do not match the manifest's embedding section or chunk count".into(),
        }));
    }
    Ok(Some(v))
}

/// The vectors of a previous index in `dir`, for reuse, or none when there
/// is no readable previous index (a damaged one is logged and ignored:
/// everything is recomputed).
pub fn previous_vectors(dir: &Path) -> Option<VectorIndex> {
    let text = std::fs::read_to_string(dir.join(MANIFEST)).ok()?;
    let manifest = match Manifest::from_json(&text) {
        Ok(m) => m,
        Err(e) => {
            log::info!("previous index in {} not reusable: {e}", dir.display());
            return None;
        }
    };
    match read_vectors(dir, &manifest) {
        Ok(v) => v,
        Err(e) => {
            log::warn!("previous vectors not reusable, recomputing: {e}");
            None
        }
    }
}

/// Read and check the keyword index of an index directory.
pub fn read_lexical(dir: &Path, manifest: &Manifest) -> Result<LexicalIndex, IndexError> {
    let path = dir.join(DataKind::Lexical.file_name());
    let bytes = read_verified(dir, manifest, DataKind::Lexical)?;
    LexicalIndex::decode(&bytes, manifest.counts.chunks as usize)
        .map_err(|source| IndexError::Index { path, source })
}

/// Load everything retrieval needs from an index directory.
pub fn load_corpus(dir: &Path) -> Result<(Manifest, Corpus), IndexError> {
    let (manifest, data) = read_index(dir)?;
    let vectors = read_vectors(dir, &manifest)?;
    let lexical = read_lexical(dir, &manifest)?;
    Ok((manifest, Corpus::new(data, vectors, lexical)))
}
