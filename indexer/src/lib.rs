//! # codegloss-indexer
//!
//! The offline half of codegloss. It does the expensive work once: walk a
//! repository, parse C++ and documentation into entities, build the
//! structure graph, write glosses, embed every chunk (ONNX Runtime through
//! `ort`), and save a static index in the format defined by
//! `codegloss-core`.
//!
//! Native only: it may use tree-sitter, the file system and threads.

pub mod bidi;
pub mod build;
pub mod chunk;
pub mod concepts;
pub mod config;
pub mod cpp;
pub mod docs;
pub mod embed;
pub mod error;
pub mod eval;
pub mod explain;
pub mod gloss;
pub mod llm;
pub mod macros;
pub mod serve;
pub mod site;
pub mod store;
pub mod vectorize;
pub mod walk;

pub use config::Config;
pub use error::{IndexError, Warning};
