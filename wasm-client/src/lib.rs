//! # codegloss-wasm
//!
//! The browser side of codegloss: wasm-bindgen over `codegloss-core`, so
//! that a static page runs the same retrieval, context building and prompt
//! as the native CLI:
//! - [`engine`]: opens the web layout of an index (core's `web` module),
//!   runs retrieval, builds the evidence cards and the prompt;
//! - `out`: its replies to the worker, as typed records.
//!
//! The call to the answer model and the check of its citations live in
//! `codegloss-wasm-answer`, a module the worker loads only when a reader
//! asks for an answer; the query encoder in `codegloss-wasm-embed`, loaded
//! with semantic search.
//!
//! It runs in a Web Worker (`site/worker.js`), which fetches the shards;
//! a panic becomes a readable console message through the panic hook
//! installed at start.

pub use codegloss_core::FORMAT_VERSION;

pub mod engine;
mod out;

use wasm_bindgen::prelude::*;

/// Install the panic hook, so that a bug shows as a readable message in
/// the console instead of an opaque `unreachable` trap. Called by the
/// module's start function.
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
}
