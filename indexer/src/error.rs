//! The one error type of the indexer library, and the warning record for
//! problems that do not stop indexing.
//!
//! Errors stop the run and carry the path (and line where there is one).
//! Warnings are collected per file, printed, and stored in the index so
//! that nothing is lost silently.

use std::path::PathBuf;

use thiserror::Error;

/// Errors that stop an indexing or inspection run.
#[derive(Debug, Error)]
pub enum IndexError {
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Another `codegloss index` is writing the same index folder.
    #[error("{path}: another `codegloss index` is writing this index folder; wait for it to finish (or stop it) and run again")]
    Locked {
        /// The index folder.
        path: PathBuf,
    },
    /// The configuration file is invalid.
    #[error("{path}: invalid configuration: {message}")]
    Config {
        /// The configuration file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Configuration text is invalid, before it is tied to a file
    /// (`Config::parse`; `Config::load` reports [`IndexError::Config`]).
    #[error("invalid configuration: {message}")]
    ConfigText {
        /// What is wrong (the TOML error gives its line and column).
        message: String,
    },
    /// The repository root is missing or not a directory.
    #[error("{path}: not a directory")]
    NotADirectory {
        /// The path given.
        path: PathBuf,
    },
    /// Walking the repository failed.
    #[error("{path}: cannot walk repository: {message}")]
    Walk {
        /// The path involved.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The tree-sitter grammar could not be loaded (a build problem).
    #[error("cannot load the tree-sitter C++ grammar: {0}")]
    Grammar(String),
    /// tree-sitter gave no syntax tree for one file's text. Not fatal: the
    /// caller indexes the file as a file only, with a warning.
    #[error("parser returned no tree")]
    NoSyntaxTree,
    /// An embedding model file is missing, damaged or unusable.
    #[error("{path}: {message}")]
    Model {
        /// The model, tokenizer or runtime file (or the setting) involved.
        path: PathBuf,
        /// What is wrong and what to do about it.
        message: String,
    },
    /// Embedding failed while running the model.
    #[error("embedding failed: {message}")]
    Embed {
        /// What went wrong.
        message: String,
    },
    /// The answer model server failed (unreachable, HTTP error, timeout,
    /// malformed data).
    #[error("answer server {url}: {message}")]
    Llm {
        /// Base URL of the server.
        url: String,
        /// What happened.
        message: String,
    },
    /// The explanation stage cannot run as configured.
    #[error("explanation stage: {message}")]
    Explain {
        /// What is wrong.
        message: String,
    },
    /// An evaluation could not run: a bad nugget pattern, a question the
    /// retrieval refused.
    #[error("evaluation: {message}")]
    Eval {
        /// What went wrong, with the question or pattern.
        message: String,
    },
    /// The static site could not be written or served.
    #[error("site: {message}")]
    Site {
        /// What went wrong and what to do.
        message: String,
    },
    /// The index on disk could not be read.
    #[error("{path}: {source}")]
    Index {
        /// The index directory or file.
        path: PathBuf,
        /// The typed format error.
        #[source]
        source: codegloss_core::CoreError,
    },
}

impl IndexError {
    /// Wrap an I/O error with its path.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        IndexError::Io {
            path: path.into(),
            source,
        }
    }
}

/// A problem that does not stop indexing: the file is skipped or read
/// in a degraded way, and everything else goes on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Warning {
    /// Repository-relative path.
    pub path: String,
    /// 1-based line, when the problem has one.
    pub line: Option<u32>,
    /// What happened and what was done about it.
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.path, line, self.message),
            None => write!(f, "{}: {}", self.path, self.message),
        }
    }
}
