//! `cargo xtask fuzz [--seconds N] [--target name]`: run the libFuzzer
//! targets of `fuzz/` (every decoder of untrusted bytes: index files, web
//! manifest and shards, configuration, server-sent events, the C++ and
//! documentation parsers) for a fixed time each, from the seed corpus in
//! `fuzz/corpus/<target>/`.
//!
//! It exists so that fuzzing is one command on a fresh machine, and part of
//! `cargo xtask ci`. cargo-fuzz (pinned, installed once under
//! `~/.cache/codegloss/tools`) builds the targets without a sanitizer
//! (`-s none`): the code is safe Rust, overflow checks and debug
//! assertions stay on, allocation is bounded by the harness's own counting
//! allocator (`fuzz/src/alloc.rs`), and without a sanitizer the build
//! needs no nightly toolchain and runs several times faster. Hangs are
//! caught by libFuzzer's `-timeout`, runaway C allocations by
//! `-rss_limit_mb`. New corpus entries go to `fuzz/target/corpus/` (kept
//! from run to run; `ci` starts afresh), never into the committed seeds;
//! crashes are written to `fuzz/artifacts/`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

/// The cargo-fuzz release installed and used.
const CARGO_FUZZ_VERSION: &str = "0.13.2";

/// Every target with its largest input in bytes (`-max_len`): room for the
/// fixture's data files and shards where the seeds are those.
pub const TARGETS: [(&str, usize); 8] = [
    ("index_data", 128 << 10),
    ("index_manifest", 64 << 10),
    ("web_manifest", 64 << 10),
    ("web_shard", 128 << 10),
    ("config", 16 << 10),
    ("sse", 64 << 10),
    ("cpp", 64 << 10),
    ("docs", 64 << 10),
];

/// Seconds one input may take before libFuzzer calls it a hang.
const UNIT_TIMEOUT_S: u32 = 10;
/// Resident memory at which libFuzzer calls it an out-of-memory crash.
const RSS_LIMIT_MB: u32 = 2048;

/// What to run.
pub struct Options<'a> {
    /// Seconds per target.
    pub seconds: u64,
    /// One target instead of all.
    pub target: Option<&'a str>,
    /// Start from the seeds alone, in a new working corpus (what `ci`
    /// does, so its time does not grow with earlier runs' corpora), instead
    /// of adding to the one earlier runs left in `fuzz/target/corpus/`.
    pub fresh: bool,
}

fn tools_dir() -> Result<PathBuf> {
    let home = std::env::var_os("HOME").context("HOME is not set")?;
    Ok(PathBuf::from(home).join(".cache/codegloss/tools"))
}

/// cargo-fuzz of the pinned version, installed once.
fn cargo_fuzz() -> Result<PathBuf> {
    let tools = tools_dir()?;
    let bin = tools.join("bin/cargo-fuzz");
    let installed = Command::new(&bin)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if installed.as_deref() != Some(&format!("cargo-fuzz {CARGO_FUZZ_VERSION}")) {
        eprintln!("installing cargo-fuzz {CARGO_FUZZ_VERSION} (once; a few minutes)");
        crate::run(
            crate::cargo()
                .args([
                    "install",
                    "cargo-fuzz",
                    "--locked",
                    "--version",
                    CARGO_FUZZ_VERSION,
                    "--root",
                ])
                .arg(&tools),
        )?;
    }
    Ok(bin)
}

/// `cargo-fuzz fuzz <subcommand>` with the build options every call shares
/// (the same flags each time, so the build is reused).
fn fuzz_command(bin: &Path, root: &Path, subcommand: &str) -> Command {
    let mut cmd = Command::new(bin);
    cmd.args(["fuzz", subcommand, "-O", "-a", "-s", "none"])
        .current_dir(root);
    cmd
}

/// Run the targets (all, or `opts.target`) for `opts.seconds` each.
pub fn fuzz(root: &Path, opts: &Options) -> Result<()> {
    let targets: Vec<(&str, usize)> = match opts.target {
        None => TARGETS.to_vec(),
        Some(name) => match TARGETS.iter().find(|(t, _)| *t == name) {
            Some(&t) => vec![t],
            None => bail!(
                "no fuzz target {name:?}; the targets are {}",
                TARGETS.map(|(t, _)| t).join(", ")
            ),
        },
    };
    let bin = cargo_fuzz()?;
    let started = Instant::now();
    let mut build = fuzz_command(&bin, root, "build");
    if let [(one, _)] = targets[..] {
        build.arg(one);
    }
    crate::run(&mut build)?;
    eprintln!("fuzz: built in {:.0} s", started.elapsed().as_secs_f64());
    let logs = root.join("fuzz/target/logs");
    std::fs::create_dir_all(&logs)?;
    for (target, max_len) in targets {
        let work = if opts.fresh {
            let work = root.join("fuzz/target/fresh-corpus").join(target);
            if work.exists() {
                std::fs::remove_dir_all(&work)?;
            }
            work
        } else {
            root.join("fuzz/target/corpus").join(target)
        };
        std::fs::create_dir_all(&work)?;
        let seeds = root.join("fuzz/corpus").join(target);
        let log = logs.join(format!("{target}.log"));
        let mut cmd = fuzz_command(&bin, root, "run");
        cmd.arg(target)
            .arg(&work)
            .arg(&seeds)
            .arg("--")
            .arg(format!("-max_total_time={}", opts.seconds))
            .arg(format!("-max_len={max_len}"))
            .arg(format!("-timeout={UNIT_TIMEOUT_S}"))
            .arg(format!("-rss_limit_mb={RSS_LIMIT_MB}"))
            .arg("-print_final_stats=1")
            .stderr(std::fs::File::create(&log)?)
            .stdout(std::process::Stdio::null());
        eprintln!("+ {cmd:?}");
        let status = cmd.status().with_context(|| format!("starting {cmd:?}"))?;
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if !status.success() {
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            for line in tail.into_iter().rev() {
                eprintln!("  {line}");
            }
            bail!(
                "fuzz target {target} failed ({status}); the input is in fuzz/artifacts/{target}/, the log in {}",
                log.display()
            );
        }
        let stat = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        eprintln!(
            "fuzz {target}: {} runs in {} s ({}/s), {} new inputs, peak RSS {} MB",
            stat("stat::number_of_executed_units:"),
            opts.seconds,
            stat("stat::average_exec_per_sec:"),
            stat("stat::new_units_added:"),
            stat("stat::peak_rss_mb:"),
        );
    }
    eprintln!(
        "fuzz: no crash, hang or over-allocation ({:.0} s in all)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fuzz_binary_is_a_target_and_has_seeds() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let manifest = std::fs::read_to_string(root.join("fuzz/Cargo.toml")).unwrap();
        let bins: Vec<&str> = manifest
            .lines()
            .filter_map(|l| l.strip_prefix("name = \""))
            .filter_map(|l| l.strip_suffix('"'))
            .filter(|n| *n != "codegloss-fuzz")
            .collect();
        assert_eq!(bins, TARGETS.map(|(t, _)| t));
        for (t, _) in TARGETS {
            let seeds = std::fs::read_dir(root.join("fuzz/corpus").join(t)).unwrap();
            assert!(seeds.count() > 0, "{t} has no seeds");
        }
    }
}
