//! # codegloss-wasm
//!
//! The browser side of codegloss. It will wrap `codegloss-core` with
//! wasm-bindgen so that a static page loads the index and runs the same
//! retrieval as the native CLI (the WebAssembly-client issue fills it).
//! For now it only proves that `core` links into a wasm32 crate.

pub use codegloss_core::FORMAT_VERSION;
