//! # codegloss-indexer
//!
//! The offline half of codegloss. It does the expensive work once: walk a
//! repository, parse C++ and documentation into entities, build the
//! structure graph, write glosses, embed every chunk (ONNX Runtime through
//! `ort`), and save a static index in the format defined by
//! `codegloss-core`.
//!
//! Native only: it may use tree-sitter, the file system and threads.

pub mod config;
pub mod embed;
pub mod error;
pub mod eval;
pub mod explain;
pub mod generate;
pub mod ingest;
pub mod llm;
pub mod site;
pub mod store;

pub use config::Config;
pub use error::{IndexError, Warning};
