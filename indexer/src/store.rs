//! Reading and writing an index directory.
//!
//! The format itself (bytes ↔ values) lives in `codegloss-core`; this
//! module only moves those bytes to and from disk. Writes never leave a
//! half-written index behind: every file is written to a temporary name
//! and renamed into place, data files first and `manifest.json` last, so a
//! reader sees either the old index or the new one.

use std::path::{Path, PathBuf};

use codegloss_core::format::{sha256_hex, DataFileInfo, EmbeddingInfo};
use codegloss_core::{DataKind, IndexData, Manifest, FORMAT_VERSION};

use crate::error::IndexError;

/// Name of the manifest file.
pub const MANIFEST: &str = "manifest.json";

fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), IndexError> {
    let tmp = dir.join(format!(".{name}.tmp"));
    let dst = dir.join(name);
    std::fs::write(&tmp, bytes).map_err(|e| IndexError::io(&tmp, e))?;
    std::fs::rename(&tmp, &dst).map_err(|e| IndexError::io(&dst, e))
}

/// Build the manifest for `data` and write everything to `dir`.
pub fn write_index(
    dir: &Path,
    data: &IndexData,
    config_hash: &str,
) -> Result<Manifest, IndexError> {
    std::fs::create_dir_all(dir).map_err(|e| IndexError::io(dir, e))?;
    let encoded = data.encode().map_err(|source| IndexError::Index {
        path: dir.to_path_buf(),
        source,
    })?;
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
        embedding: EmbeddingInfo::default(),
        data_files,
    };
    write_atomic(dir, MANIFEST, manifest.to_json().as_bytes())?;
    Ok(manifest)
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
        let path: PathBuf = dir.join(kind.file_name());
        let bytes = std::fs::read(&path).map_err(|e| IndexError::io(&path, e))?;
        manifest
            .verify_data_file(kind, &bytes)
            .map_err(|source| IndexError::Index {
                path: path.clone(),
                source,
            })?;
        blobs.push(bytes);
    }
    let data = IndexData::decode(&blobs[0], &blobs[1], &blobs[2], &blobs[3]).map_err(|source| {
        IndexError::Index {
            path: dir.to_path_buf(),
            source,
        }
    })?;
    Ok((manifest, data))
}
