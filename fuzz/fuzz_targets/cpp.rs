//! libFuzzer entry point of the `cpp` target; the harness is
//! `codegloss_fuzz::cpp` (see `src/lib.rs`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| codegloss_fuzz::cpp(data));
