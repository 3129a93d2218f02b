//! The report formats that tools exchange: `codegloss eval --json` ([`eval`])
//! and `codegloss index --json` ([`index`]). One set of serde types, written
//! by the CLI and read back by `eval --answer` when it resumes, by `eval
//! --score`, by the `cargo xtask bench ...` tables and by the browser
//! benchmark's comparison, so that no reader looks fields up by string.

pub mod eval;
pub mod index;

pub use eval::*;
pub use index::*;
