//! libFuzzer entry point of the `sse` target; the harness is
//! `codegloss_fuzz::sse` (see `src/lib.rs`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| codegloss_fuzz::sse(data));
