//! Shared helpers for the integration tests in `tests/tests/`.
//!
//! The tests run the real indexer over `tests/fixtures/sci-demo`, a small
//! scientific C++ project written for this purpose, and over bad inputs
//! made in temporary directories.

use std::path::PathBuf;

/// Path of the fixture repository.
pub fn fixture_repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/sci-demo")
}
