//! libFuzzer entry point of the `web_shard` target; the harness is
//! `codegloss_fuzz::web_shard` (see `src/lib.rs`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| codegloss_fuzz::web_shard(data));
