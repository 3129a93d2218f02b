//! `cargo xtask`: project automation that must work on a fresh machine.
//!
//! - `cargo xtask ci`: everything CI checks (format, lints, tests, the
//!   wasm32 build of `core`), installing what the checks need first.
//! - `cargo xtask demo`: index the bundled example repository and show
//!   what the index holds about one symbol.
//!
//! Every step is idempotent; caches live under `target/` or
//! `~/.cache/codegloss`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "xtask", about = "codegloss project automation")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Install what the tests need, then run fmt check, clippy, all tests and the wasm32 check.
    Ci,
    /// Index the bundled example (tests/fixtures/sci-demo) and inspect a symbol.
    Demo {
        /// Where to write the index.
        #[arg(long, default_value = "target/demo-index")]
        out: PathBuf,
    },
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("+ {cmd:?}");
    let status = cmd
        .current_dir(root())
        .status()
        .with_context(|| format!("starting {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn ensure_wasm_target() -> Result<()> {
    let out = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .context("running rustup (needed for the wasm32 target)")?;
    if !String::from_utf8_lossy(&out.stdout).contains("wasm32-unknown-unknown") {
        run(Command::new("rustup").args(["target", "add", "wasm32-unknown-unknown"]))?;
    }
    Ok(())
}

fn ci() -> Result<()> {
    ensure_wasm_target()?;
    run(cargo().args(["fmt", "--all", "--check"]))?;
    run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--locked",
        "--",
        "-D",
        "warnings",
    ]))?;
    run(cargo().args(["test", "--workspace", "--locked"]))?;
    run(cargo().args([
        "check",
        "--locked",
        "-p",
        "codegloss-core",
        "-p",
        "codegloss-wasm",
        "--target",
        "wasm32-unknown-unknown",
    ]))?;
    eprintln!("ci: all checks passed");
    Ok(())
}

fn demo(out: &Path) -> Result<()> {
    let out = if out.is_absolute() {
        out.to_path_buf()
    } else {
        root().join(out)
    };
    let out_s = out.to_string_lossy().into_owned();
    run(cargo().args([
        "run",
        "--release",
        "--quiet",
        "-p",
        "codegloss-indexer",
        "--bin",
        "codegloss",
        "--",
        "index",
        "tests/fixtures/sci-demo",
        "--out",
        &out_s,
    ]))?;
    run(cargo().args([
        "run",
        "--release",
        "--quiet",
        "-p",
        "codegloss-indexer",
        "--bin",
        "codegloss",
        "--",
        "inspect",
        &out_s,
        "--symbol",
        "BareField::fillHalo",
    ]))
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Cmd::Ci => ci(),
        Cmd::Demo { out } => demo(&out),
    }
}
