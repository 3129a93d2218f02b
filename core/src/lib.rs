//! # codegloss-core
//!
//! The code that both the offline indexer and the browser client need, and
//! nothing else. It exists so that the native CLI and the WebAssembly widget
//! run *exactly* the same index format, retrieval, ranking and prompt
//! building.
//!
//! Invariants (see `ARCHITECTURE.md`):
//! - pure: no file or network I/O, no threads, no clocks, no randomness
//!   without an explicit seed;
//! - compiles for `wasm32-unknown-unknown` and native;
//! - `ort`, `tree-sitter` and other native-only crates never enter its
//!   dependency tree.

pub mod answer;
mod bounded;
pub mod chat;
pub mod embed;
pub mod error;
pub mod format;
pub mod hnsw;
pub mod hubness;
pub mod ivf;
pub mod lexical;
pub mod lines;
pub mod model;
pub mod pq;
pub mod query;
pub mod report;
pub mod retrieve;
pub mod sort;
pub mod sse;
pub mod support;
pub mod text;
pub mod vectors;
pub mod web;
mod wire;

pub use error::CoreError;
pub use format::{
    decode_data_file, encode_data_file, DataKind, IndexData, Manifest, FORMAT_VERSION, MAGIC,
};
pub use model::*;
pub use vectors::{VectorHit, VectorIndex};
