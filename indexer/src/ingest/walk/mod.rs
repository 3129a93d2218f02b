//! Finding the repository files to index and loading their text.
//!
//! The walk decides what the index covers: it honours `.gitignore` (even
//! without a `.git` folder) and the configured exclude patterns, skips
//! hidden files, classifies each file by name into a parser family
//! ([`Language`]) and role ([`SourceType`]), and assigns a project scope
//! from path conventions. Nothing here stops the run for one bad file:
//! unreadable entries, symbolic link loops, oversized and binary files
//! become [`Warning`]s and the walk goes on. The output is sorted, so two
//! walks of the same tree give the same index.

//!
//! Classification by path (language, role, scope) lives in [`classify`].

mod classify;

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use codegloss_core::text::folder_of;
use codegloss_core::{Language, Scope, SourceType};
use ignore::overrides::OverrideBuilder;
use ignore::WalkBuilder;

use crate::config::FilesConfig;
use crate::{Config, IndexError, Warning};

pub use classify::{classify, scope_of};

/// A file of the repository that will be indexed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// Repository-relative path with `/` separators, no leading `./`.
    pub rel_path: String,
    /// Path on disk (the root as given, joined with the relative path).
    pub abs_path: PathBuf,
    /// Parser family.
    pub language: Language,
    /// The role of the file.
    pub source_type: SourceType,
    /// Project scope from path conventions.
    pub scope: Scope,
    /// Parent folder of `rel_path`, `.` for the root.
    pub module: String,
    /// Size in bytes at walk time.
    pub size: u64,
}

/// The result of a walk: files to index, sorted by path, and the problems
/// met on the way.
#[derive(Debug, Clone, Default)]
pub struct Walked {
    /// Files to index, sorted by `rel_path` (byte order).
    pub files: Vec<FileEntry>,
    /// Skipped files and unreadable entries, sorted by path.
    pub warnings: Vec<Warning>,
}

/// The content of a file, ready for parsing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    /// The text, without a UTF-8 byte order mark; invalid UTF-8 sequences
    /// are replaced by U+FFFD.
    pub text: String,
    /// SHA-256 of the raw bytes (hex).
    pub sha256: String,
    /// Size of the raw bytes.
    pub bytes: u64,
    /// The file was not valid UTF-8 and was decoded lossily; the caller
    /// records a warning.
    pub lossy_utf8: bool,
}

/// Bytes of the start of a file searched for a NUL byte to detect binary
/// files.
const BINARY_PROBE: usize = 8 * 1024;

/// Walk the repository at `root` and list the files to index.
///
/// Honours `.gitignore`, `.ignore` and git excludes when
/// `files.respect_gitignore` is set (without needing a `.git` folder; the
/// user's global git excludes are not read, so that the result does not
/// depend on the machine), skips hidden files and folders, and the
/// `files.exclude` patterns (gitignore syntax, relative to the root).
/// Symbolic links are followed; links that leave the repository are
/// skipped, loops are reported; both become warnings. Files over
/// `files.max_file_bytes` are skipped with a warning.
///
/// Fails only when `root` is not a directory or an exclude pattern is
/// invalid.
pub fn walk(root: &Path, cfg: &Config) -> Result<Walked, IndexError> {
    if !root.is_dir() {
        return Err(IndexError::NotADirectory {
            path: root.to_path_buf(),
        });
    }
    let canonical_root = root.canonicalize().map_err(|e| IndexError::io(root, e))?;

    let mut overrides = OverrideBuilder::new(root);
    for pattern in &cfg.files.exclude {
        let negated = format!("!{pattern}");
        overrides.add(&negated).map_err(|e| IndexError::Walk {
            path: root.to_path_buf(),
            message: format!("invalid files.exclude pattern {pattern:?}: {e}"),
        })?;
    }
    let overrides = overrides.build().map_err(|e| IndexError::Walk {
        path: root.to_path_buf(),
        message: format!("invalid files.exclude patterns: {e}"),
    })?;

    // Symbolic links that lead out of the repository: pruned by the filter,
    // reported after the walk.
    let outside: Arc<Mutex<Vec<(PathBuf, PathBuf)>>> = Arc::default();
    let respect = cfg.files.respect_gitignore;
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(true)
        .git_ignore(respect)
        .git_exclude(respect)
        .ignore(respect)
        .git_global(false)
        .require_git(false)
        .follow_links(true)
        .overrides(overrides);
    {
        let outside = Arc::clone(&outside);
        let canonical_root = canonical_root.clone();
        builder.filter_entry(move |entry| {
            if entry.depth() > 0 && entry.file_name() == ".git" {
                return false;
            }
            if !entry.path_is_symlink() {
                return true;
            }
            match entry.path().canonicalize() {
                Ok(target) if !target.starts_with(&canonical_root) => {
                    let mut list = outside.lock().unwrap_or_else(|p| p.into_inner());
                    list.push((entry.path().to_path_buf(), target));
                    false
                }
                // Inside, or dangling (the walker reports that one).
                _ => true,
            }
        });
    }

    let mut files = Vec::new();
    let mut warnings = Vec::new();
    for result in builder.build() {
        let entry = match result {
            Ok(entry) => entry,
            Err(err) => {
                warnings.push(walk_warning(root, &err));
                continue;
            }
        };
        if let Some(err) = entry.error() {
            // A partly unreadable ignore file: the entry is still usable.
            warnings.push(walk_warning(root, err));
        }
        if entry.depth() == 0 || !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        let Some(rel_path) = relative_path(root, path) else {
            warnings.push(Warning {
                path: path.to_string_lossy().into_owned(),
                line: None,
                message: "skipped: the path is not valid UTF-8".to_string(),
            });
            continue;
        };
        let Some((language, source_type)) = classify(&rel_path, &cfg.files) else {
            continue;
        };
        let size = match entry.metadata() {
            Ok(meta) => meta.len(),
            Err(err) => {
                warnings.push(Warning {
                    path: rel_path,
                    line: None,
                    message: format!("skipped: cannot read metadata: {err}"),
                });
                continue;
            }
        };
        if let Err(w) = within_limit(&rel_path, size, cfg.files.max_file_bytes) {
            warnings.push(w);
            continue;
        }
        let scope = scope_of(&rel_path, source_type, &cfg.scopes);
        let module = folder_of(&rel_path).to_string();
        files.push(FileEntry {
            abs_path: path.to_path_buf(),
            rel_path,
            language,
            source_type,
            scope,
            module,
            size,
        });
    }

    let outside = std::mem::take(&mut *outside.lock().unwrap_or_else(|p| p.into_inner()));
    for (link, target) in outside {
        warnings.push(Warning {
            path: relative_path(root, &link).unwrap_or_else(|| link.to_string_lossy().into_owned()),
            line: None,
            message: format!(
                "skipped: symbolic link points outside the repository (to {})",
                target.display()
            ),
        });
    }

    files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    warnings.sort_by(|a, b| (&a.path, &a.message).cmp(&(&b.path, &b.message)));
    Ok(Walked { files, warnings })
}

/// `path` relative to `root`, with `/` separators; `None` when it is not
/// valid UTF-8.
fn relative_path(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let mut parts = Vec::new();
    for component in rel.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str()?),
            Component::CurDir => {}
            // Absolute or parent components cannot come from a walk under
            // `root`; keep them visible rather than guess.
            other => parts.push(other.as_os_str().to_str()?),
        }
    }
    Some(parts.join("/"))
}

/// Turn a walk error into a warning on the path it names.
fn walk_warning(root: &Path, err: &ignore::Error) -> Warning {
    let path = error_path(err)
        .map(|p| relative_path(root, p).unwrap_or_else(|| p.to_string_lossy().into_owned()))
        .unwrap_or_else(|| ".".to_string());
    let message = match err {
        ignore::Error::WithDepth { err, .. } if matches!(**err, ignore::Error::Loop { .. }) => {
            format!("skipped: symbolic link loop: {err}")
        }
        ignore::Error::Loop { .. } => format!("skipped: symbolic link loop: {err}"),
        _ => format!("skipped: {err}"),
    };
    Warning {
        path,
        line: None,
        message,
    }
}

fn error_path(err: &ignore::Error) -> Option<&Path> {
    match err {
        ignore::Error::WithPath { path, .. } => Some(path),
        ignore::Error::Loop { child, .. } => Some(child),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        ignore::Error::Partial(errs) => errs.iter().find_map(error_path),
        _ => None,
    }
}

/// `Ok` when `size` is within `files.max_file_bytes`; else the warning
/// that skips the file at `path`.
fn within_limit(path: &str, size: u64, limit: u64) -> Result<(), Warning> {
    if size <= limit {
        return Ok(());
    }
    Err(Warning {
        path: path.to_string(),
        line: None,
        message: format!(
            "skipped: {} is over the {} limit (files.max_file_bytes)",
            human_size(size),
            human_size(limit)
        ),
    })
}

/// `512 B`, `3.5 KiB`, `5.0 MiB`, `1.2 GiB`.
fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    // Display only: the precision of f64 is ample.
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// Read a walked file.
///
/// Returns a [`Warning`] (the file is skipped) when it cannot be read, has
/// grown over `files.max_file_bytes` since the walk, or is binary (a NUL
/// byte in its first 8 KiB). Invalid UTF-8 is decoded lossily and flagged
/// in [`Loaded::lossy_utf8`]; a UTF-8 byte order mark is dropped from the
/// text (the hash covers the raw bytes). Empty files load as empty text;
/// the `Ok(None)` case is currently never produced.
pub fn load(entry: &FileEntry, cfg: &FilesConfig) -> Result<Option<Loaded>, Warning> {
    let warn = |message: String| Warning {
        path: entry.rel_path.clone(),
        line: None,
        message,
    };
    let size = std::fs::metadata(&entry.abs_path)
        .map_err(|e| warn(format!("skipped: cannot read: {e}")))?
        .len();
    within_limit(&entry.rel_path, size, cfg.max_file_bytes)?;
    let raw =
        std::fs::read(&entry.abs_path).map_err(|e| warn(format!("skipped: cannot read: {e}")))?;
    let bytes = raw.len() as u64;
    within_limit(&entry.rel_path, bytes, cfg.max_file_bytes)?;
    if raw[..raw.len().min(BINARY_PROBE)].contains(&0) {
        return Err(warn(
            "skipped: binary file (NUL byte in the first 8 KiB)".to_string(),
        ));
    }
    let sha256 = codegloss_core::format::sha256_hex(&raw);
    let body = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&raw);
    let (text, lossy_utf8) = match std::str::from_utf8(body) {
        Ok(text) => (text.to_string(), false),
        Err(_) => (String::from_utf8_lossy(body).into_owned(), true),
    };
    Ok(Some(Loaded {
        text,
        sha256,
        bytes,
        lossy_utf8,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn write(root: &Path, rel: &str, content: &[u8]) {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(path, content).unwrap();
    }

    fn paths(walked: &Walked) -> Vec<&str> {
        walked.files.iter().map(|f| f.rel_path.as_str()).collect()
    }

    #[test]
    fn walk_respects_gitignore_without_git_and_sorts() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, ".gitignore", b"build/\n*.gen.h\n");
        write(root, "src/b.cpp", b"int b;");
        write(root, "src/a.h", b"int a;");
        write(root, "src/x.gen.h", b"generated");
        write(root, "build/out.cpp", b"int o;");
        write(root, ".hidden/h.cpp", b"int h;");
        write(root, "README.md", b"# Hi\n");
        write(root, "Zeta.md", b"# Z\n");
        write(root, "CMakeLists.txt", b"project(x)\n");
        write(root, "tool.py", b"print()\n");
        let walked = walk(root, &Config::default()).unwrap();
        assert_eq!(
            paths(&walked),
            vec![
                "CMakeLists.txt",
                "README.md",
                "Zeta.md",
                "src/a.h",
                "src/b.cpp"
            ]
        );
        assert!(walked.warnings.is_empty(), "{:?}", walked.warnings);
        let a = &walked.files[3];
        assert_eq!(a.module, "src");
        assert_eq!(a.language, Language::Cpp);
        assert_eq!(a.source_type, SourceType::Header);
        assert_eq!(a.scope, Scope::Source);
        assert_eq!(a.size, 6);
        assert_eq!(a.abs_path, root.join("src/a.h"));
        assert_eq!(walked.files[1].module, ".");

        // Switching gitignore off brings the ignored files back.
        let mut cfg = Config::default();
        cfg.files.respect_gitignore = false;
        let walked = walk(root, &cfg).unwrap();
        assert!(paths(&walked).contains(&"build/out.cpp"));
        assert!(paths(&walked).contains(&"src/x.gen.h"));
        assert!(!paths(&walked).contains(&".hidden/h.cpp"));
    }

    #[test]
    fn walk_applies_exclude_patterns() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "src/a.cpp", b"");
        write(root, "third_party/lib/x.h", b"");
        write(root, "src/old/y.h", b"");
        write(root, "src/z.md", b"");
        let mut cfg = Config::default();
        cfg.files.exclude = vec![
            "third_party/".to_string(),
            "src/old".to_string(),
            "*.md".to_string(),
        ];
        let walked = walk(root, &cfg).unwrap();
        assert_eq!(paths(&walked), vec!["src/a.cpp"]);

        cfg.files.exclude = vec!["[".to_string()];
        assert!(matches!(walk(root, &cfg), Err(IndexError::Walk { .. })));
    }

    #[test]
    fn walk_rejects_missing_root() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope");
        assert!(matches!(
            walk(&missing, &Config::default()),
            Err(IndexError::NotADirectory { .. })
        ));
        let file = dir.path().join("f.txt");
        fs::write(&file, "x").unwrap();
        assert!(matches!(
            walk(&file, &Config::default()),
            Err(IndexError::NotADirectory { .. })
        ));
    }

    #[test]
    fn oversize_files_are_skipped_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "big.cpp", &vec![b'x'; 3000]);
        write(root, "small.cpp", b"int x;");
        let mut cfg = Config::default();
        cfg.files.max_file_bytes = 2048;
        let walked = walk(root, &cfg).unwrap();
        assert_eq!(paths(&walked), vec!["small.cpp"]);
        assert_eq!(walked.warnings.len(), 1);
        let w = &walked.warnings[0];
        assert_eq!(w.path, "big.cpp");
        assert_eq!(
            w.message,
            "skipped: 2.9 KiB is over the 2.0 KiB limit (files.max_file_bytes)"
        );
        assert_eq!(human_size(5 * 1024 * 1024), "5.0 MiB");
        assert_eq!(human_size(10), "10 B");

        // The file grew after the walk.
        let entry = walked.files[0].clone();
        fs::write(root.join("small.cpp"), vec![b'y'; 4096]).unwrap();
        let err = load(&entry, &cfg.files).unwrap_err();
        assert!(err.message.contains("over the 2.0 KiB limit"), "{err}");
    }

    fn entry_for(root: &Path, rel: &str) -> FileEntry {
        let (language, source_type) = classify(rel, &FilesConfig::default()).unwrap();
        FileEntry {
            rel_path: rel.to_string(),
            abs_path: root.join(rel),
            language,
            source_type,
            scope: Scope::Source,
            module: ".".to_string(),
            size: 0,
        }
    }

    #[test]
    fn load_text_binary_bom_and_invalid_utf8() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let cfg = FilesConfig::default();

        write(root, "a.h", b"int a;\n");
        let loaded = load(&entry_for(root, "a.h"), &cfg).unwrap().unwrap();
        assert_eq!(loaded.text, "int a;\n");
        assert_eq!(loaded.bytes, 7);
        assert!(!loaded.lossy_utf8);
        assert_eq!(
            loaded.sha256,
            codegloss_core::format::sha256_hex(b"int a;\n")
        );

        write(root, "bom.md", b"\xEF\xBB\xBF# T\n");
        let loaded = load(&entry_for(root, "bom.md"), &cfg).unwrap().unwrap();
        assert_eq!(loaded.text, "# T\n");
        assert_eq!(loaded.bytes, 7);
        assert_eq!(
            loaded.sha256,
            codegloss_core::format::sha256_hex(b"\xEF\xBB\xBF# T\n")
        );

        write(root, "bin.cpp", b"MZ\0\0\x01\x02");
        let err = load(&entry_for(root, "bin.cpp"), &cfg).unwrap_err();
        assert_eq!(err.path, "bin.cpp");
        assert!(err.message.contains("binary"), "{err}");

        write(root, "latin1.txt", b"caf\xE9 au lait\n");
        let loaded = load(&entry_for(root, "latin1.txt"), &cfg).unwrap().unwrap();
        assert!(loaded.lossy_utf8);
        assert_eq!(loaded.text, "caf\u{FFFD} au lait\n");

        write(root, "empty.txt", b"");
        let loaded = load(&entry_for(root, "empty.txt"), &cfg).unwrap().unwrap();
        assert_eq!(loaded.text, "");
        assert_eq!(loaded.bytes, 0);

        let err = load(&entry_for(root, "missing.cpp"), &cfg).unwrap_err();
        assert!(err.message.starts_with("skipped: cannot read"), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn symlink_loop_terminates_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "src/a.cpp", b"int a;");
        std::os::unix::fs::symlink(root.join("src"), root.join("src/loop")).unwrap();
        let walked = walk(root, &Config::default()).unwrap();
        assert_eq!(paths(&walked), vec!["src/a.cpp"]);
        assert_eq!(walked.warnings.len(), 1, "{:?}", walked.warnings);
        assert_eq!(walked.warnings[0].path, "src/loop");
        assert!(
            walked.warnings[0].message.contains("loop"),
            "{}",
            walked.warnings[0]
        );
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_inside_are_kept_and_outside_are_skipped() {
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), "ext/secret.h", b"int s;");
        write(outside.path(), "lone.h", b"int l;");
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "src/a.h", b"int a;");
        std::os::unix::fs::symlink(root.join("src/a.h"), root.join("src/alias.h")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("ext"), root.join("ext")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("lone.h"), root.join("lone.h")).unwrap();
        std::os::unix::fs::symlink(root.join("nowhere.h"), root.join("dangling.h")).unwrap();
        let walked = walk(root, &Config::default()).unwrap();
        assert_eq!(paths(&walked), vec!["src/a.h", "src/alias.h"]);
        let warned: Vec<&str> = walked.warnings.iter().map(|w| w.path.as_str()).collect();
        assert_eq!(
            warned,
            vec!["dangling.h", "ext", "lone.h"],
            "{:?}",
            walked.warnings
        );
        assert!(walked.warnings[1]
            .message
            .contains("outside the repository"));
    }
}
