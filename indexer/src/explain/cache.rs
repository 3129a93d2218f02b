//! The gloss cache: one JSON line per generated gloss, keyed by the hash
//! of everything that went into it (prompt signature, model id, rendered
//! prompt, input digest).
//!
//! It is append-only while a run goes on: every gloss is written and
//! flushed the moment it arrives, so an interrupted run loses nothing it
//! finished. A broken last line (the process died mid-write) is skipped
//! on the next load. At the end of a complete run the file is rewritten
//! atomically, sorted by key, keeping the entries this run used and those
//! of levels it did not run, so it does not grow without bound.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::error::IndexError;

/// One cached gloss.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheEntry {
    /// Hex key (see module docs).
    pub key: String,
    /// Explanation level (`file`, `module`, ...).
    pub level: String,
    /// Prompt mode.
    pub mode: String,
    /// Prompt template signature.
    pub signature: String,
    /// Model id.
    pub model: String,
    /// Entity it was written for (informational; the key decides reuse).
    pub entity: String,
    /// The gloss.
    pub text: String,
    /// Completion tokens, when the server reported them.
    pub completion_tokens: Option<u64>,
    /// Seconds the generation took (retry included).
    #[serde(default)]
    pub seconds: Option<f64>,
}

/// The cache file and its in-memory map.
pub struct GlossCache {
    path: PathBuf,
    entries: HashMap<String, CacheEntry>,
    used: Mutex<BTreeSet<String>>,
    writer: Mutex<Option<std::fs::File>>,
    /// Lines that could not be read on load.
    pub skipped_lines: usize,
}

impl GlossCache {
    /// Load `path` (a missing file is an empty cache).
    pub fn open(path: &Path) -> Result<Self, IndexError> {
        let mut entries = HashMap::new();
        let mut skipped_lines = 0;
        match std::fs::File::open(path) {
            Ok(f) => {
                for line in std::io::BufReader::new(f).lines() {
                    let line = line.map_err(|e| IndexError::io(path, e))?;
                    if line.trim().is_empty() {
                        continue;
                    }
                    match serde_json::from_str::<CacheEntry>(&line) {
                        Ok(e) => {
                            entries.insert(e.key.clone(), e);
                        }
                        Err(_) => skipped_lines += 1,
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(IndexError::io(path, e)),
        }
        if skipped_lines > 0 {
            log::warn!(
                "{}: skipped {skipped_lines} unreadable cache lines (an interrupted write?)",
                path.display()
            );
        }
        Ok(GlossCache {
            path: path.to_path_buf(),
            entries,
            used: Mutex::new(BTreeSet::new()),
            writer: Mutex::new(None),
            skipped_lines,
        })
    }

    /// Where the cache lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of entries loaded.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing was loaded.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// A cached gloss; marks it used.
    pub fn get(&self, key: &str) -> Option<&CacheEntry> {
        let e = self.entries.get(key)?;
        lock(&self.used).insert(key.to_string());
        Some(e)
    }

    /// Append a new gloss to the file and flush it.
    pub fn append(&self, entry: &CacheEntry) -> Result<(), IndexError> {
        let mut line = serde_json::to_string(entry).expect("cache entry serialises");
        line.push('\n');
        let mut w = lock(&self.writer);
        if w.is_none() {
            if let Some(dir) = self.path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| IndexError::io(dir, e))?;
            }
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .map_err(|e| IndexError::io(&self.path, e))?;
            // A run killed mid-write left half a line: end it, so the
            // first new entry is not glued to it and lost as well.
            if !ends_with_newline(&self.path).map_err(|e| IndexError::io(&self.path, e))? {
                f.write_all(b"\n")
                    .map_err(|e| IndexError::io(&self.path, e))?;
            }
            *w = Some(f);
        }
        let f = w.as_mut().expect("opened above");
        f.write_all(line.as_bytes())
            .and_then(|()| f.flush())
            .map_err(|e| IndexError::io(&self.path, e))?;
        lock(&self.used).insert(entry.key.clone());
        Ok(())
    }

    /// Rewrite the file atomically: the entries used in this run, plus
    /// loaded entries of levels not in `run_levels`. Returns the new size
    /// in bytes.
    pub fn compact(self, run_levels: &[&str], fresh: &[CacheEntry]) -> Result<u64, IndexError> {
        *lock(&self.writer) = None;
        let used = self.used.into_inner().unwrap_or_else(|p| p.into_inner());
        let mut keep: BTreeMap<String, CacheEntry> = BTreeMap::new();
        for (k, e) in self.entries {
            if used.contains(&k) || !run_levels.contains(&e.level.as_str()) {
                keep.insert(k, e);
            }
        }
        for e in fresh {
            keep.insert(e.key.clone(), e.clone());
        }
        if keep.is_empty() && !self.path.exists() {
            return Ok(0);
        }
        let mut text = String::new();
        for e in keep.values() {
            text.push_str(&serde_json::to_string(e).expect("cache entry serialises"));
            text.push('\n');
        }
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| IndexError::io(dir, e))?;
        }
        let tmp = self.path.with_extension("jsonl.tmp");
        std::fs::write(&tmp, text.as_bytes()).map_err(|e| IndexError::io(&tmp, e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| IndexError::io(&self.path, e))?;
        Ok(text.len() as u64)
    }
}

/// Whether a file is empty or ends with a line break.
fn ends_with_newline(path: &Path) -> std::io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    if f.metadata()?.len() == 0 {
        return Ok(true);
    }
    f.seek(SeekFrom::End(-1))?;
    let mut last = [0u8; 1];
    f.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

/// Lock a mutex; a panicked holder leaves data that is still usable here.
pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, level: &str) -> CacheEntry {
        CacheEntry {
            key: key.into(),
            level: level.into(),
            mode: "file_level".into(),
            signature: "s".into(),
            model: "m".into(),
            entity: "e".into(),
            text: format!("text {key}"),
            completion_tokens: Some(3),
            seconds: Some(1.5),
        }
    }

    #[test]
    fn append_survives_a_broken_last_line_and_compacts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gloss-cache.jsonl");
        let c = GlossCache::open(&path).unwrap();
        assert!(c.is_empty());
        c.append(&entry("a", "file")).unwrap();
        c.append(&entry("b", "module")).unwrap();
        drop(c);
        // An interrupted write leaves half a line.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"{\"key\":\"c\",\"lev").unwrap();
        drop(f);
        let c = GlossCache::open(&path).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c.skipped_lines, 1);
        assert_eq!(c.get("a").unwrap().text, "text a");
        // The next run's first gloss is not lost with the broken line.
        c.append(&entry("e", "file")).unwrap();
        let reread = GlossCache::open(&path).unwrap();
        assert_eq!(reread.len(), 3, "{:?}", std::fs::read_to_string(&path));
        assert_eq!(reread.skipped_lines, 1);
        // Only `file` ran: `a` was used, `b` belongs to a level not run.
        c.compact(&["file"], &[entry("d", "file")]).unwrap();
        let c = GlossCache::open(&path).unwrap();
        let mut keys: Vec<&str> = c.entries.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["a", "b", "d"]);
        assert_eq!(c.skipped_lines, 0);
    }
}
