//! The static site's build and browser-test tools: the wasm client built
//! with wasm-bindgen-cli (the version that matches the `wasm-bindgen`
//! crate in Cargo.lock, installed once under `~/.cache/codegloss/tools`),
//! the widget files copied next to it, and the browser test dependencies
//! (Debian's chromium, `playwright-core` from npm, cached under
//! `~/.cache/codegloss/npm`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use std::collections::BTreeMap;

use codegloss_core::report::{p50_p95, EvalReport};

use crate::{cargo, ensure_wasm_target, run};

/// The crates compiled to wasm32 for the site: the search module, the
/// answer module and the query encoder (`cargo xtask ci` lints them for
/// wasm32 too).
pub const WASM_CRATES: [&str; 3] = [
    "codegloss-wasm",
    "codegloss-wasm-answer",
    "codegloss-wasm-embed",
];

/// npm packages, pinned: the browser runtime of the query-embedding model
/// (served from the site itself, never a CDN), the minifier of the
/// widget's files, and the browser-test driver.
const NPM_PACKAGES: [(&str, &str); 3] = [
    ("onnxruntime-web", "1.30.0"),
    ("esbuild", "0.28.2"),
    ("playwright-core", "1.65.1"),
];

/// The onnxruntime-web files the worker loads: the ES module of the
/// WebAssembly-only build, and the wasm binary with its loader.
const ORT_FILES: [&str; 3] = [
    "ort.wasm.min.mjs",
    "ort-wasm-simd-threaded.mjs",
    "ort-wasm-simd-threaded.wasm",
];

fn cache_dir() -> Result<PathBuf> {
    let home = std::env::var_os("HOME").context("HOME is not set")?;
    Ok(PathBuf::from(home).join(".cache/codegloss"))
}

/// The `wasm-bindgen` version locked in Cargo.lock.
fn locked_wasm_bindgen(root: &Path) -> Result<String> {
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).context("reading Cargo.lock")?;
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line == "name = \"wasm-bindgen\"" {
            if let Some(v) = lines
                .next()
                .and_then(|l| l.strip_prefix("version = \""))
                .and_then(|l| l.strip_suffix('"'))
            {
                return Ok(v.to_string());
            }
        }
    }
    bail!("Cargo.lock has no wasm-bindgen package")
}

/// wasm-bindgen-cli of the locked version, installed once.
fn wasm_bindgen_cli(root: &Path) -> Result<PathBuf> {
    let version = locked_wasm_bindgen(root)?;
    let tools = cache_dir()?.join("tools");
    let bin = tools.join("bin/wasm-bindgen");
    let installed = Command::new(&bin)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if installed.as_deref() != Some(&format!("wasm-bindgen {version}")) {
        eprintln!("installing wasm-bindgen-cli {version} (once; a few minutes)");
        run(cargo()
            .args([
                "install",
                "wasm-bindgen-cli",
                "--version",
                &version,
                "--root",
            ])
            .arg(&tools))?;
    }
    Ok(bin)
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::copy(from, to)
        .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    Ok(())
}

/// Build `target/site-assets`: `index.html` and `codegloss/` (widget,
/// worker, wasm module and its glue). Returns the folder.
pub fn assets(root: &Path) -> Result<PathBuf> {
    ensure_wasm_target()?;
    let wasm_bindgen = wasm_bindgen_cli(root)?;
    run(cargo()
        .args(["build", "--locked", "--profile", "wasm-release"])
        .args(WASM_CRATES.iter().flat_map(|c| ["-p", c]))
        .args(["--target", "wasm32-unknown-unknown"]))?;
    let out = root.join("target/site-assets");
    // The search module; the answer module, loaded at the first answer;
    // the query encoder, loaded with semantic search.
    let modules = [
        ("codegloss_wasm", "pkg"),
        ("codegloss_wasm_answer", "answer"),
        ("codegloss_wasm_embed", "embed"),
    ];
    for (name, dir) in modules {
        run(Command::new(&wasm_bindgen)
            // Names help only a debugger; without them the module is a
            // quarter smaller, and it is on the path to the first result.
            .args(["--target", "web", "--no-typescript"])
            .args(["--remove-name-section", "--remove-producers-section"])
            .arg("--out-dir")
            .arg(out.join("codegloss").join(dir))
            .arg(
                root.join("target/wasm32-unknown-unknown/wasm-release")
                    .join(format!("{name}.wasm")),
            ))?;
    }
    deflate_search_module(&out.join("codegloss/pkg"))?;
    let npm = npm_packages()?;
    for f in ORT_FILES {
        copy(
            &npm.join("node_modules/onnxruntime-web/dist").join(f),
            &out.join("codegloss/ort").join(f),
        )?;
    }
    // The widget and the worker, each bundled with the modules it imports
    // (the worker with the search module's wasm-bindgen glue), and the
    // stylesheets of the widget and the landing page. One
    // file each, minified, since they are on the path to the first
    // results: 16 modules and stylesheets came in three waves of requests
    // (a module's imports are known only once it arrives), 31,422 bytes
    // with their headers; measured by `cargo xtask bench site`. Each has a
    // linked source map that only a debugger fetches.
    let site = root.join("site");
    // Only what this build writes: a module an older build copied alone
    // would otherwise be published with every site.
    for entry in std::fs::read_dir(out.join("codegloss"))
        .into_iter()
        .flatten()
    {
        let path = entry?.path();
        if path.is_file() {
            std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        }
    }
    // Bundled from a copy of `site/` that holds the glue where the
    // worker imports it (`./pkg/`), as in the assets.
    let stage = root.join("target/site-stage");
    if stage.exists() {
        std::fs::remove_dir_all(&stage).context("clearing target/site-stage")?;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&site)
        .context("reading site/")?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    files.sort();
    let is = |p: &Path, ext: &str| p.extension().is_some_and(|x| x == ext);
    for path in files.iter().filter(|p| is(p, "js")) {
        copy(path, &stage.join(path.file_name().expect("a file")))?;
    }
    // The search module's wasm-bindgen glue, which the worker bundles.
    let glue = out.join("codegloss/pkg/codegloss_wasm.js");
    copy(&glue, &stage.join("pkg/codegloss_wasm.js"))?;
    // The answer panel is a bundle of its own, which the widget imports at
    // the first question (2.0 KB gzipped that a reader who only searches
    // never fetches).
    let entries = [
        stage.join("widget.js"),
        stage.join("worker.js"),
        stage.join("answer-view.js"),
    ];
    bundle(&npm, &entries, &out.join("codegloss"))?;
    files.retain(|p| is(p, "css"));
    minify(&npm, &files, &out.join("codegloss"), false)?;
    // The other modules' wasm-bindgen glue, in its folder (the search
    // module's is in the worker, and not shipped apart).
    std::fs::remove_file(&glue).with_context(|| format!("removing {}", glue.display()))?;
    // (and the source map an older build minified it with, if any)
    let map = glue.with_extension("js.map");
    match std::fs::remove_file(&map) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("removing {}", map.display()));
        }
        _ => {}
    }
    for (name, dir) in modules.into_iter().filter(|&(_, dir)| dir != "pkg") {
        let dir = out.join("codegloss").join(dir);
        minify(&npm, &[dir.join(format!("{name}.js"))], &dir, true)?;
    }
    copy(&root.join("site/index.html"), &out.join("index.html"))?;
    Ok(out)
}

/// The search module deflated with zopfli (as core deflates the
/// one-of-a-kind shards, `web::deflate_once`) in place of the module
/// (`codegloss_wasm_bg.wasm.deflate`), which the worker inflates with
/// `DecompressionStream` as it streams in: it is fetched before the first
/// results, and its size then does not hang on the host's compression.
/// Measured on this build: 517,181 bytes; miniz level 9 179,826; served
/// gzipped by `codegloss serve` 180,913; zopfli 170,893.
fn deflate_search_module(pkg: &Path) -> Result<()> {
    let wasm = pkg.join("codegloss_wasm_bg.wasm");
    let bytes = std::fs::read(&wasm).with_context(|| format!("reading {}", wasm.display()))?;
    let bytes = without_custom_sections(&bytes)
        .with_context(|| format!("reading the sections of {}", wasm.display()))?;
    let packed = codegloss_core::web::deflate_once(&bytes);
    let out = pkg.join("codegloss_wasm_bg.wasm.deflate");
    std::fs::write(&out, &packed).with_context(|| format!("writing {}", out.display()))?;
    std::fs::remove_file(&wasm).with_context(|| format!("removing {}", wasm.display()))
}

/// A wasm module without its custom sections (id 0): engines ignore them,
/// and after wasm-bindgen's `--remove-name-section` and
/// `--remove-producers-section` what is left is the linker's
/// `target_features` (148 bytes of the search module, which is on the path
/// to the first results).
fn without_custom_sections(wasm: &[u8]) -> Result<Vec<u8>> {
    use wasmparser::{Encoding, Parser, Payload};
    let mut module = wasm_encoder::Module::new();
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload.context("not a well-formed wasm module")?;
        match &payload {
            Payload::Version { encoding, .. } if *encoding != Encoding::Module => {
                bail!("a wasm component, not a module")
            }
            Payload::CustomSection(_) => {}
            _ => {
                if let Some((id, range)) = payload.as_section() {
                    // The code section is announced before its bodies are
                    // read: its range may run past a truncated module.
                    let data = wasm.get(range.clone()).with_context(|| {
                        format!("section {id} at bytes {range:?} runs past the end")
                    })?;
                    module.section(&wasm_encoder::RawSection { id, data });
                }
            }
        }
    }
    Ok(module.finish())
}

/// Bundle each of `entries` with the modules it imports into `out` (same
/// names), minified, with esbuild (the worker names its wasm module's URL
/// itself, so the wasm-bindgen glue bundles too).
fn bundle(npm: &Path, entries: &[PathBuf], out: &Path) -> Result<()> {
    run(esbuild(npm, entries, out).args(["--bundle", "--format=esm"]))
}

/// esbuild from npm minifying `files` into `out`, with linked source maps.
fn esbuild(npm: &Path, files: &[PathBuf], out: &Path) -> Command {
    let mut cmd = Command::new(npm.join("node_modules/.bin/esbuild"));
    cmd.args(files)
        .args([
            "--minify",
            "--charset=utf8",
            "--sourcemap",
            "--log-level=warning",
        ])
        .arg(format!("--outdir={}", out.display()));
    cmd
}

/// Minify `files` into `out` (same names) with esbuild, without bundling:
/// imports stay as written. `in_place` overwrites files already in `out`.
fn minify(npm: &Path, files: &[PathBuf], out: &Path, in_place: bool) -> Result<()> {
    let mut cmd = esbuild(npm, files, out);
    if in_place {
        cmd.arg("--allow-overwrite");
    }
    run(&mut cmd)
}

/// Install what the browser tests need: Debian's chromium (when missing)
/// and the pinned npm packages. Returns the npm folder (holding
/// `node_modules`).
pub fn browser_test_deps() -> Result<PathBuf> {
    install_chromium()?;
    npm_packages()
}

fn install_chromium() -> Result<()> {
    if !Path::new("/usr/bin/chromium").exists() {
        eprintln!("installing Debian's chromium for the browser tests");
        let apt = |args: &[&str]| {
            run(Command::new("apt-get")
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive"))
        };
        if apt(&["install", "-y", "-q", "chromium"]).is_err() {
            apt(&["update", "-q"])?;
            apt(&["install", "-y", "-q", "chromium"])?;
        }
    }
    Ok(())
}

/// The pinned npm packages, installed once under `~/.cache/codegloss/npm`.
fn npm_packages() -> Result<PathBuf> {
    npm_install(&NPM_PACKAGES)
}

/// Install pinned npm packages (name, version) under
/// `~/.cache/codegloss/npm` where that version is not there yet.
pub fn npm_install(packages: &[(&str, &str)]) -> Result<PathBuf> {
    let npm_dir = cache_dir()?.join("npm");
    std::fs::create_dir_all(&npm_dir)?;
    let missing: Vec<String> = packages
        .iter()
        .filter(|(name, version)| {
            let manifest = npm_dir.join("node_modules").join(name).join("package.json");
            let found = std::fs::read_to_string(manifest)
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .and_then(|v| v["version"].as_str().map(str::to_string));
            found.as_deref() != Some(*version)
        })
        .map(|(name, version)| format!("{name}@{version}"))
        .collect();
    if !missing.is_empty() {
        if !npm_dir.join("package.json").exists() {
            std::fs::write(
                npm_dir.join("package.json"),
                "{\"name\": \"codegloss-test-deps\", \"private\": true}\n",
            )?;
        }
        run(Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&npm_dir)
            .args(&missing))?;
    }
    Ok(npm_dir)
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| {
            let p = e.path();
            if p.is_dir() {
                dir_bytes(&p)
            } else {
                e.metadata().map_or(0, |m| m.len())
            }
        })
        .sum()
}

/// One question ranked in the browser by `tests/browser/bench.mjs`, in the
/// native rows' names, so that the two compare field by field.
#[derive(serde::Deserialize)]
struct BrowserRow {
    /// Retrieval time in the worker.
    latency_ms: f64,
    /// The ranked chunks with their roles, as `codegloss eval` lists them.
    chunks: Vec<(u32, String)>,
}

/// `cargo xtask bench site`: write the site of an index, serve it, run
/// `tests/browser/bench.mjs` in headless Chromium, run the native
/// retrieval on the same questions in the same run, and compare. `COLD=n`
/// in the environment sets how many questions are also asked each as a
/// cold visitor's first (default 10).
pub fn bench(root: &Path, index: &Path, questions: &Path, json: &Path) -> Result<()> {
    use std::io::{BufRead, BufReader};
    let assets = assets(root)?;
    let npm = browser_test_deps()?;
    run(cargo().args(["build", "--release", "--locked", "-p", "codegloss-indexer"]))?;
    let bin = root.join("target/release/codegloss");
    let work = root.join("target/bench/site-work");
    let site = work.join("site");
    std::fs::create_dir_all(&work)?;
    run(Command::new(&bin)
        .arg("site")
        .arg(index)
        .arg("--out")
        .arg(&site)
        .arg("--assets")
        .arg(&assets))?;
    let qs: Vec<serde_json::Value> = std::fs::read_to_string(questions)
        .with_context(|| format!("reading {}", questions.display()))?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let texts: Vec<&str> = qs.iter().filter_map(|q| q["question"].as_str()).collect();
    let qfile = work.join("questions.json");
    std::fs::write(&qfile, serde_json::to_string(&texts)?)?;
    // Native retrieval first, on an idle machine (no browser running).
    let mut native: BTreeMap<&str, EvalReport> = BTreeMap::new();
    for (name, extra) in [("keyword", Some("--no-vectors")), ("hybrid", None)] {
        let out = work.join(format!("native-{name}.json"));
        run(Command::new(&bin)
            .arg("eval")
            .arg(index)
            .arg("--questions")
            .arg(questions)
            .arg("--json")
            .arg(&out)
            .args(extra))?;
        native.insert(name, crate::read_eval_report(&out)?);
    }
    let mut server = Command::new(&bin)
        .arg("serve")
        .arg(&site)
        .args(["--port", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let mut url = String::new();
    BufReader::new(server.stdout.take().context("serve stdout")?).read_line(&mut url)?;
    let browser_json = work.join("browser.json");
    let status = Command::new("node")
        .arg(root.join("tests/browser/bench.mjs"))
        .env("CODEGLOSS_NPM", &npm)
        .env("SITE_URL", url.trim())
        .env("QUESTIONS", &qfile)
        .env("OUT", &browser_json)
        .status();
    let _ = server.kill();
    let _ = server.wait();
    if !status?.success() {
        bail!("tests/browser/bench.mjs failed");
    }
    let browser: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&browser_json)?)?;
    // Same-run comparison: latency ratio and parity per mode.
    let mut modes = serde_json::Map::new();
    for name in ["keyword", "hybrid"] {
        let b = &browser[name];
        let n = &native[name];
        let brows: Vec<BrowserRow> = serde_json::from_value(b["rows"].clone())
            .with_context(|| format!("browser rows of {name}"))?;
        let nat: Vec<f64> = n.questions.iter().map(|r| r.latency_ms).collect();
        let wasm: Vec<f64> = brows.iter().map(|r| r.latency_ms).collect();
        let pairs = || n.questions.iter().zip(&brows);
        let same = pairs().filter(|(a, b)| a.chunks == b.chunks).count();
        let differing: Vec<&str> = pairs()
            .filter(|(a, b)| a.chunks != b.chunks)
            .map(|(a, _)| a.id.as_str())
            .collect();
        let (np50, np95) = p50_p95(&nat);
        let (wp50, wp95) = p50_p95(&wasm);
        modes.insert(
            name.into(),
            serde_json::json!({
                "questions": brows.len(),
                "parity_identical_context": same,
                "parity_differing_ids": differing,
                "native_ms": {"p50": np50, "p95": np95},
                "wasm_ms": {"p50": wp50, "p95": wp95},
                "ratio_wasm_over_native": {"p50": wp50 / np50.max(1e-9), "p95": wp95 / np95.max(1e-9)},
                "browser_embed_ms": b["embed_ms"],
            }),
        );
    }
    let summary = serde_json::json!({
        "index": index,
        "site_bytes": dir_bytes(&site),
        "site_index_bytes": dir_bytes(&site.join("index/shards")),
        "bytes_before_first_keyword_results": browser["bytes_before_first_keyword_results"],
        "bytes_first_keyword_results_with_text": browser["bytes_first_keyword_results_with_text"],
        "worker_bytes_first_keyword_results_with_text": browser["worker_bytes_first_keyword_results_with_text"],
        "worker_bytes_first_keyword_results": browser["worker_bytes_first_keyword_results"],
        "worker_bytes_first_semantic_results": browser["worker_bytes_first_semantic_results"],
        "cold_first_keyword_bytes": browser["cold_first_keyword_bytes"],
        "later_query_bytes": browser["later_query_bytes"],
        "later_queries": browser["later_queries"],
        "cold_first_results_ms": browser["cold_first_results_ms"],
        "warm_first_results_ms": browser["warm_first_results_ms"],
        "first_keyword_requests": browser["first_keyword_requests"],
        "semantic_requests": browser["semantic_requests"],
        "semantic_loaded": browser["semantic_loaded"],
        "modes": modes,
    });
    if let Some(dir) = json.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(json, serde_json::to_string_pretty(&summary)?)?;
    let mut brief = summary.clone();
    for k in ["first_keyword_requests", "semantic_requests"] {
        brief.as_object_mut().map(|o| o.remove(k));
    }
    brief["cold_first_keyword_bytes"]
        .as_object_mut()
        .map(|o| o.remove("questions"));
    for m in ["keyword", "hybrid"] {
        brief["modes"][m]
            .as_object_mut()
            .map(|o| o.remove("parity_differing_ids"));
    }
    println!("{}", serde_json::to_string_pretty(&brief)?);
    eprintln!("results written to {}", json.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::without_custom_sections;

    #[test]
    fn custom_sections_leave_and_the_rest_stays_byte_for_byte() {
        let head = b"\0asm\x01\0\0\0";
        // A type section (id 1), a custom section (id 0, size 300: a
        // two-byte size), a function section (id 3) and its code section
        // (id 10: one empty body).
        let mut custom = vec![0u8, 0xac, 0x02, 4];
        custom.extend_from_slice(b"name");
        custom.extend(std::iter::repeat_n(7u8, 295));
        let types = [1u8, 4, 1, 0x60, 0, 0];
        let funcs = [3u8, 2, 1, 0];
        let code = [10u8, 4, 1, 2, 0, 0x0b];
        let module: Vec<u8> = [&head[..], &types, &custom, &funcs, &code].concat();
        let expected: Vec<u8> = [&head[..], &types, &funcs, &code].concat();
        assert_eq!(without_custom_sections(&module).unwrap(), expected);
        // Truncated or foreign input is an error, not a panic.
        assert!(without_custom_sections(&module[..module.len() - 1]).is_err());
        assert!(without_custom_sections(b"not wasm").is_err());
        assert!(without_custom_sections(&[&head[..], &[1u8, 0x80, 0x80]].concat()).is_err());
    }
}
