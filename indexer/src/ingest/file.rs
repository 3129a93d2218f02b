//! One file of the repository from its bytes to what the build needs:
//! read with the walker's checks, then parsed (C++ into entities with the
//! repository's macros neutralised, documentation into sections), with
//! the file's warnings (Trojan Source controls, lossy UTF-8, parse
//! quality). The build runs this for every file in parallel, in two
//! phases, because the repository's macros must be known before any file
//! is parsed.

use codegloss_core::text::file_name;
use codegloss_core::Language;

use crate::config::Config;
use crate::error::Warning;
use crate::ingest::bidi;
use crate::ingest::cpp::{self, ParsedCpp};
use crate::ingest::docs::{self, DocSection};
use crate::ingest::macros::RepoMacros;
use crate::ingest::walk::{self, FileEntry, Loaded};

pub(crate) enum Parsed {
    Cpp(ParsedCpp),
    Doc(Vec<DocSection>),
}

pub(crate) struct FileResult {
    pub(crate) entry: FileEntry,
    pub(crate) text: String,
    pub(crate) sha256: String,
    pub(crate) bytes: u64,
    pub(crate) parsed: Parsed,
    pub(crate) warnings: Vec<Warning>,
}

fn warn(path: &str, line: Option<u32>, message: impl Into<String>) -> Warning {
    Warning {
        path: path.to_string(),
        line,
        message: message.into(),
    }
}

/// Read one file (the walker's size, binary and UTF-8 checks).
pub(crate) fn load(entry: FileEntry, cfg: &Config) -> Result<(FileEntry, Loaded), Warning> {
    let loaded = walk::load(&entry, &cfg.files)?
        .ok_or_else(|| warn(&entry.rel_path, None, "skipped: nothing to read"))?;
    Ok((entry, loaded))
}

/// Parse one loaded file: C++ into entities (with the repository's macros
/// neutralised), documentation into sections; its warnings.
pub(crate) fn process(
    entry: FileEntry,
    loaded: Loaded,
    cfg: &Config,
    repo_macros: &RepoMacros,
) -> FileResult {
    let mut warnings = bidi::warnings(&entry.rel_path, &loaded.text);
    if loaded.lossy_utf8 {
        warnings.push(warn(
            &entry.rel_path,
            None,
            "invalid UTF-8: decoded lossily (bad bytes shown as U+FFFD)",
        ));
    }
    let parsed = match entry.language {
        Language::Cpp => match cpp::parse_cpp_with(&loaded.text, &cfg.parse, repo_macros) {
            Ok(p) => {
                if p.stats.functions_in_error > 0 {
                    let lines: Vec<String> =
                        p.error_lines.iter().take(5).map(u32::to_string).collect();
                    warnings.push(warn(
                        &entry.rel_path,
                        p.error_lines.first().copied(),
                        format!(
                            "{} of {} function bodies lie inside tree-sitter ERROR nodes (ERROR at lines {})",
                            p.stats.functions_in_error,
                            p.stats.functions,
                            lines.join(", ")
                        ),
                    ));
                }
                Parsed::Cpp(p)
            }
            Err(e) => {
                warnings.push(warn(
                    &entry.rel_path,
                    None,
                    format!("C++ parse failed, indexed as a file only: {e}"),
                ));
                Parsed::Cpp(ParsedCpp::default())
            }
        },
        lang => Parsed::Doc(docs::split_doc(
            file_name(&entry.rel_path),
            lang,
            &loaded.text,
            cfg.chunk.doc_max_tokens,
        )),
    };
    FileResult {
        entry,
        text: loaded.text,
        sha256: loaded.sha256,
        bytes: loaded.bytes,
        parsed,
        warnings,
    }
}
