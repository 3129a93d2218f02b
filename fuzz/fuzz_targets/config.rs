//! libFuzzer entry point of the `config` target; the harness is
//! `codegloss_fuzz::config` (see `src/lib.rs`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| codegloss_fuzz::config(data));
