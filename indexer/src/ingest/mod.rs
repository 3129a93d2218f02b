//! Ingestion: from a repository on disk to the index's entities, chunks
//! and structure graph, before anything is embedded or explained.
//!
//! The data flows through the modules in this order: [`walk`] finds the
//! files (and refuses binary, huge and non-UTF-8 ones), [`file`] reads
//! and parses each one, [`macros`] neutralises the macros that break a
//! C++ parse (the repository's own `#define`s first), [`cpp`] and [`docs`]
//! parse code and documentation into entities, [`chunk`] cuts them into
//! retrievable chunks, [`gloss`] writes the structural glosses,
//! [`concepts`] gathers the repository's own words about each entity,
//! [`bidi`] warns of Trojan Source controls, and [`build`] runs them all
//! and links the structure graph.

pub mod bidi;
pub mod build;
pub mod chunk;
pub mod concepts;
pub mod cpp;
pub mod docs;
pub mod file;
pub mod gloss;
pub mod macro_report;
pub mod macros;
pub mod walk;
