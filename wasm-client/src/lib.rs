//! # codegloss-wasm
//!
//! The browser side of codegloss: wasm-bindgen over `codegloss-core`, so
//! that a static page runs the same retrieval, context building and prompt
//! as the native CLI. So far it provides the answer transport (`fetch`
//! with streaming server-sent events, through web-sys); loading the index
//! and the widget come with the WebAssembly-client issue.

pub use codegloss_core::FORMAT_VERSION;

pub mod transport;
