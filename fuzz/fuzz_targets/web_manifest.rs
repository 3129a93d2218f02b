//! libFuzzer entry point of the `web_manifest` target; the harness is
//! `codegloss_fuzz::web_manifest` (see `src/lib.rs`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| codegloss_fuzz::web_manifest(data));
