//! libFuzzer entry point of the `index_data` target; the harness is
//! `codegloss_fuzz::index_data` (see `src/lib.rs`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| codegloss_fuzz::index_data(data));
