//! The one error type of `codegloss-core`.
//!
//! Every failure to read an index is a typed value with enough context
//! (which data file, what was expected) for a user to act on it; the reader
//! never panics on bad bytes.

use thiserror::Error;

/// Errors raised by the pure core.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum CoreError {
    /// The file is shorter than the fixed header, or shorter than the
    /// payload length the header announces.
    #[error("{file}: truncated index data ({got} bytes, expected at least {expected})")]
    Truncated {
        /// Data file name (for example `entities.bin`).
        file: String,
        /// Bytes present.
        got: u64,
        /// Bytes required.
        expected: u64,
    },
    /// The first bytes are not the codegloss magic number.
    #[error("{file}: not a codegloss index file (bad magic number)")]
    BadMagic {
        /// Data file name.
        file: String,
    },
    /// Written by an incompatible version of the index format.
    #[error("{file}: index format version {found} is not supported (this build reads version {expected}); re-run `codegloss index`")]
    UnsupportedVersion {
        /// Data file name.
        file: String,
        /// Version found in the file.
        found: u32,
        /// Version this build understands.
        expected: u32,
    },
    /// The file holds another kind of data than the one requested.
    #[error("{file}: holds {found} data, expected {expected}")]
    WrongKind {
        /// Data file name.
        file: String,
        /// Kind found in the header.
        found: String,
        /// Kind requested by the caller.
        expected: String,
    },
    /// The payload does not match its recorded checksum.
    #[error("{file}: checksum mismatch (stored {stored}, computed {computed}); the index is corrupt, re-run `codegloss index`")]
    ChecksumMismatch {
        /// Data file name.
        file: String,
        /// Checksum stored in the header (hex).
        stored: String,
        /// Checksum of the bytes present (hex).
        computed: String,
    },
    /// Extra bytes after the announced payload.
    #[error("{file}: {extra} unexpected trailing bytes after the payload")]
    TrailingBytes {
        /// Data file name.
        file: String,
        /// Number of unexpected bytes.
        extra: u64,
    },
    /// The checksum matched but the payload could not be decoded.
    #[error("{file}: cannot decode payload: {message}")]
    Decode {
        /// Data file name.
        file: String,
        /// Decoder message.
        message: String,
    },
    /// The payload could not be encoded.
    #[error("cannot encode {file}: {message}")]
    Encode {
        /// Data file name.
        file: String,
        /// Encoder message.
        message: String,
    },
    /// The manifest is not valid JSON of the expected shape.
    #[error("manifest.json: {message}")]
    Manifest {
        /// Parser message.
        message: String,
    },
    /// The manifest and a data file disagree.
    #[error("{file}: {message}")]
    Inconsistent {
        /// Data file name.
        file: String,
        /// What disagrees.
        message: String,
    },
    /// The query side uses another embedding model or preprocessing than
    /// the one the index was built with.
    #[error("the index was embedded with {field} = {index:?} but the query model has {query:?}; use the same embedding model (or re-index)")]
    ModelMismatch {
        /// The first field that differs.
        field: String,
        /// Value recorded in the index.
        index: String,
        /// Value of the query model.
        query: String,
    },
    /// Rows or columns of a table that do not fit together, found by the
    /// table's own check (the search shard's columns, the text features, an
    /// HNSW graph), which does not know the file that holds the table; the
    /// reader reports it through [`CoreError::in_file`] as
    /// [`CoreError::Inconsistent`] of that file.
    #[error("{message}")]
    Malformed {
        /// What does not fit (which table, row or column).
        message: String,
    },
    /// Retrieval settings that do not parse (an unknown key, a wrong type).
    #[error("retrieval settings: {message}")]
    Settings {
        /// What is wrong.
        message: String,
    },
}

impl CoreError {
    /// A [`CoreError::Malformed`] table.
    pub(crate) fn malformed(message: impl Into<String>) -> Self {
        CoreError::Malformed {
            message: message.into(),
        }
    }

    /// This error with the data file or shard that holds the table named:
    /// a [`CoreError::Malformed`] table becomes [`CoreError::Inconsistent`]
    /// of `file` with the same message; any other error is returned as is.
    pub fn in_file(self, file: &str) -> Self {
        match self {
            CoreError::Malformed { message } => CoreError::Inconsistent {
                file: file.into(),
                message,
            },
            other => other,
        }
    }
}
