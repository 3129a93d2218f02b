//! libFuzzer entry point of the `docs` target; the harness is
//! `codegloss_fuzz::docs` (see `src/lib.rs`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| codegloss_fuzz::docs(data));
