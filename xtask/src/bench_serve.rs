//! `cargo xtask bench serve`: the load figure of `codegloss serve`.
//!
//! A reader's browser opens several connections at once and fetches the
//! landing page, the manifest, the shards and the multi-megabyte runtime
//! files. This starts `codegloss serve` on a site written from the bundled
//! fixture, and, as the baseline in the same run, Python's threaded
//! `http.server` on the same folder, both on loopback; then it drives each
//! with `autocannon` (pinned, from npm, cached) at a fixed number of
//! connections for a fixed time per file and reports requests per second,
//! p50/p99 latency and errors, with serve's ratio to the baseline.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::{cargo, root, run, site};

/// The load tool, pinned.
const AUTOCANNON: (&str, &str) = ("autocannon", "9.0.0");

/// Settings of one run.
pub struct Options<'a> {
    /// Connections held open at once.
    pub connections: usize,
    /// Seconds per file and server.
    pub seconds: u64,
    /// Where the results JSON goes.
    pub json: &'a Path,
}

/// A server process, killed on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn bench(o: &Options) -> Result<()> {
    let npm = site::npm_install(&[AUTOCANNON])?;
    let tool = npm.join("node_modules/autocannon/autocannon.js");
    let assets = site::assets(&root())?;
    run(cargo().args(["build", "--release", "--quiet", "-p", "codegloss-indexer"]))?;
    let exe = root().join("target/release/codegloss");
    let work = root().join("target/bench/serve");
    let site_dir = work.join("site");
    run(Command::new(&exe)
        .arg("index")
        .arg(root().join("tests/fixtures/sci-demo"))
        .arg("--out")
        .arg(work.join("index"))
        .arg("--site")
        .arg(&site_dir)
        .arg("--assets")
        .arg(&assets)
        .arg("--quiet"))?;
    let files = files_to_load(&site_dir)?;

    let mut serve_cmd = Command::new(&exe);
    serve_cmd.args(["serve", "--port", "0"]).arg(&site_dir);
    let (serve, serve_url) = start(serve_cmd)?;
    let mut python = Command::new("python3");
    python.args(["-u", "-c", PYTHON_SERVER]).arg(&site_dir);
    let (baseline, baseline_url) = start(python)?;

    let mut rows = Vec::new();
    for (label, path, gzip, connections) in &files {
        let connections = (*connections).min(o.connections);
        let ours = load(&tool, &format!("{serve_url}{path}"), *gzip, connections, o)?;
        let base = load(
            &tool,
            &format!("{baseline_url}{path}"),
            *gzip,
            connections,
            o,
        )?;
        rows.push(json!({
            "file": label, "path": path, "gzip": gzip, "connections": connections,
            "serve": ours, "python_http_server": base,
            "rps_ratio": ratio(&ours["rps"], &base["rps"]),
            "p99_ratio": ratio(&ours["p99_ms"], &base["p99_ms"]),
        }));
    }
    drop((serve, baseline));
    let out = json!({
        "connections": o.connections,
        "seconds_per_run": o.seconds,
        "tool": format!("{}@{}", AUTOCANNON.0, AUTOCANNON.1),
        "baseline": "python3 http.server (ThreadingHTTPServer), same folder, same run",
        "rows": rows,
    });
    println!(
        "{:<24} {:>10} {:>9} {:>9} {:>7} | {:>10} {:>9} | {:>6} {:>6}",
        "file (connections)",
        "serve r/s",
        "p50 ms",
        "p99 ms",
        "errors",
        "base r/s",
        "p99 ms",
        "r/s x",
        "p99 x"
    );
    for r in out["rows"].as_array().into_iter().flatten() {
        let f = |v: &Value| v.as_f64().map_or("-".into(), |x| format!("{x:.1}"));
        println!(
            "{:<24} {:>10} {:>9} {:>9} {:>7} | {:>10} {:>9} | {:>6} {:>6}",
            format!(
                "{} ({})",
                r["file"].as_str().unwrap_or(""),
                r["connections"]
            ),
            f(&r["serve"]["rps"]),
            f(&r["serve"]["p50_ms"]),
            f(&r["serve"]["p99_ms"]),
            f(&r["serve"]["errors"]),
            f(&r["python_http_server"]["rps"]),
            f(&r["python_http_server"]["p99_ms"]),
            r["rps_ratio"]
                .as_f64()
                .map_or("-".into(), |x| format!("{x:.2}")),
            r["p99_ratio"]
                .as_f64()
                .map_or("-".into(), |x| format!("{x:.2}")),
        );
    }
    if let Some(dir) = o.json.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(o.json, serde_json::to_string_pretty(&out)? + "\n")?;
    eprintln!("results written to {}", o.json.display());
    Ok(())
}

/// The Python baseline: a threaded static server on loopback, port 0,
/// printing its URL like `codegloss serve`.
const PYTHON_SERVER: &str = r#"
import functools, http.server, sys
class Quiet(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
h = functools.partial(Quiet, directory=sys.argv[1])
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
print(f"http://127.0.0.1:{s.server_address[1]}/", flush=True)
s.serve_forever()
"#;

/// Start a server that prints its URL as its first stdout line.
fn start(mut cmd: Command) -> Result<(Running, String)> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {cmd:?}"))?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().context("server stdout")?).read_line(&mut line)?;
    let url = line.trim().trim_end_matches('/').to_string();
    if !url.starts_with("http://127.0.0.1:") {
        bail!("{cmd:?} printed {line:?}, not its URL");
    }
    Ok((Running(child), url))
}

/// The files a reader's first visit loads, by kind: (label, URL path,
/// gzip, most connections). The 14 MB runtime is loaded by fewer
/// connections at once: 100 of them would ask 1.4 GB per round.
fn files_to_load(site_dir: &Path) -> Result<Vec<(String, String, bool, usize)>> {
    let mut out = vec![
        ("landing page".into(), "/".into(), true, usize::MAX),
        (
            "manifest".into(),
            "/index/codegloss.bin".into(),
            false,
            usize::MAX,
        ),
    ];
    let shards = site_dir.join("index/shards");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&shards)
        .with_context(|| format!("reading {}", shards.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    names.sort();
    if let Some(name) = names
        .iter()
        .filter_map(|p| p.file_name()?.to_str())
        .find(|n| n.starts_with("search-"))
    {
        out.push((
            "search shard".into(),
            format!("/index/shards/{name}"),
            false,
            usize::MAX,
        ));
    }
    let runtime = site_dir.join("codegloss/ort/ort-wasm-simd-threaded.wasm");
    if runtime.is_file() {
        out.push((
            "ONNX runtime (wasm)".into(),
            "/codegloss/ort/ort-wasm-simd-threaded.wasm".into(),
            true,
            10,
        ));
    }
    Ok(out)
}

/// One autocannon run: requests per second, latency percentiles, errors.
fn load(tool: &Path, url: &str, gzip: bool, connections: usize, o: &Options) -> Result<Value> {
    let mut cmd = Command::new("node");
    cmd.arg(tool)
        .args(["--json", "--connections"])
        .arg(connections.to_string())
        .arg("--duration")
        .arg(o.seconds.to_string())
        .args(["--timeout", "10"]);
    if gzip {
        cmd.args(["--headers", "accept-encoding=gzip"]);
    }
    cmd.arg(url);
    eprintln!(
        "+ autocannon {url} ({connections} connections, {} s)",
        o.seconds
    );
    let out = cmd.output().context("running autocannon")?;
    if !out.status.success() {
        bail!(
            "autocannon failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let v: Value = serde_json::from_slice(&out.stdout).context("autocannon's JSON")?;
    Ok(json!({
        "rps": v["requests"]["average"],
        "requests": v["requests"]["total"],
        "p50_ms": v["latency"]["p50"],
        "p99_ms": v["latency"]["p99"],
        "errors": v["errors"].as_f64().unwrap_or(0.0) + v["timeouts"].as_f64().unwrap_or(0.0),
        "non_2xx": v["non2xx"],
        "bytes_per_s": v["throughput"]["average"],
    }))
}

fn ratio(a: &Value, b: &Value) -> Value {
    match (a.as_f64(), b.as_f64()) {
        (Some(a), Some(b)) if b > 0.0 => json!(a / b),
        _ => Value::Null,
    }
}
