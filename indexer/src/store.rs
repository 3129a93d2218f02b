//! Reading and writing an index directory.
//!
//! The format itself (bytes ↔ values) lives in `codegloss-core`; this
//! module only moves those bytes to and from disk.
//!
//! Writes never leave a half-written index behind, even when the process
//! is killed at any point: data files are named by their content
//! (`chunks-<sha256 prefix>.bin`), written to a temporary name, synced
//! and renamed into place; `manifest.json`, which names them, is renamed
//! over the old one last, and only then are the files no manifest names
//! removed. Until that rename the old manifest and every file it names
//! are untouched, so a reader sees either the old index or the new one.
//! One writer at a time: [`lock_index_dir`].

use std::path::{Path, PathBuf};

use codegloss_core::format::{sha256_hex, DataFileInfo, EmbeddingInfo, GlossInfo};
use codegloss_core::lexical::{FieldWeights, LexicalIndex};
use codegloss_core::retrieve::Corpus;
use codegloss_core::{DataKind, IndexData, Manifest, VectorIndex, FORMAT_VERSION};

use crate::error::IndexError;

/// Name of the manifest file.
pub const MANIFEST: &str = "manifest.json";

/// Name of the lock file of an index folder.
pub const LOCK: &str = ".codegloss-index.lock";

/// An index folder held by one writer; released on drop (and by the
/// system when the process ends, however it ends).
#[derive(Debug)]
pub struct IndexLock {
    _file: std::fs::File,
}

/// Take the index folder `dir` (created when missing) for writing. A second
/// `codegloss index` into the same folder is refused while the first runs.
pub fn lock_index_dir(dir: &Path) -> Result<IndexLock, IndexError> {
    std::fs::create_dir_all(dir).map_err(|e| IndexError::io(dir, e))?;
    let path = dir.join(LOCK);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| IndexError::io(&path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(IndexLock { _file: file }),
        Err(std::fs::TryLockError::WouldBlock) => Err(IndexError::Locked {
            path: dir.to_path_buf(),
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(IndexError::io(&path, e)),
    }
}

fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), IndexError> {
    use std::io::Write;
    let tmp = dir.join(format!(".{name}.tmp"));
    let dst = dir.join(name);
    let mut f = std::fs::File::create(&tmp).map_err(|e| IndexError::io(&tmp, e))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| IndexError::io(&tmp, e))?;
    std::fs::rename(&tmp, &dst).map_err(|e| IndexError::io(&dst, e))
}

/// The content-named file of one data file: `<kind>-<16 hex of sha256>.bin`.
fn data_file_name(kind: DataKind, sha256: &str) -> String {
    let stem = kind.file_name().trim_end_matches(".bin");
    format!("{stem}-{}.bin", &sha256[..16.min(sha256.len())])
}

/// Whether a file in an index folder is a data file of some generation
/// (content-named, or the fixed name of format 3 and before) or a
/// temporary file left by an interrupted write.
fn is_data_file(name: &str) -> bool {
    if name.starts_with('.') && name.ends_with(".tmp") {
        return true;
    }
    DataKind::ALL
        .iter()
        .chain([DataKind::Vectors, DataKind::Lexical].iter())
        .any(|k| {
            let fixed = k.file_name();
            let stem = fixed.trim_end_matches(".bin");
            name == fixed
                || name
                    .strip_prefix(stem)
                    .and_then(|r| r.strip_prefix('-'))
                    .and_then(|r| r.strip_suffix(".bin"))
                    .is_some_and(|h| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        })
}

/// Remove the data files of earlier generations (those `manifest` does
/// not name) and temporary files of interrupted writes.
fn remove_stale(dir: &Path, manifest: &Manifest) -> Result<(), IndexError> {
    let entries = std::fs::read_dir(dir).map_err(|e| IndexError::io(dir, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let current = manifest.data_files.iter().any(|d| d.name == name);
        if !current && is_data_file(name) && entry.path().is_file() {
            let path = entry.path();
            std::fs::remove_file(&path).map_err(|e| IndexError::io(&path, e))?;
        }
    }
    Ok(())
}

/// Build the manifest for `data` (and its vectors, when there are any)
/// and write everything to `dir`. Data files of an earlier run are
/// removed once the new manifest is in place.
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
        let sha256 = sha256_hex(bytes);
        let name = data_file_name(*kind, &sha256);
        write_atomic(dir, &name, bytes)?;
        data_files.push(DataFileInfo {
            name,
            kind: *kind,
            bytes: bytes.len() as u64,
            sha256,
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
    remove_stale(dir, &manifest)?;
    Ok(manifest)
}

/// Read one data file and check it against its manifest entry.
fn read_verified(dir: &Path, manifest: &Manifest, kind: DataKind) -> Result<Vec<u8>, IndexError> {
    let path = data_path(dir, manifest, kind)?;
    let bytes = std::fs::read(&path).map_err(|e| IndexError::io(&path, e))?;
    manifest
        .verify_data_file(kind, &bytes)
        .map_err(|source| IndexError::Index { path, source })?;
    Ok(bytes)
}

/// Where the manifest says one data file is.
pub fn data_path(dir: &Path, manifest: &Manifest, kind: DataKind) -> Result<PathBuf, IndexError> {
    let info = manifest
        .data_file(kind)
        .map_err(|source| IndexError::Index {
            path: dir.join(MANIFEST),
            source,
        })?;
    Ok(dir.join(&info.name))
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
    let path = data_path(dir, manifest, DataKind::Vectors)?;
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
    let path = data_path(dir, manifest, DataKind::Lexical)?;
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
