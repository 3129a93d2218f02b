//! The architecture's invariants, checked: what ARCHITECTURE.md promises
//! about `core` and about the code map fails a test when the code stops
//! keeping it.
//!
//! - (a) core's dependency closure has no native-only or I/O crate
//!   (`cargo metadata`, normal dependencies for the host and wasm32);
//! - (b) `core/src` uses no file system, network, threads or clocks
//!   (outside its `#[cfg(test)]` modules);
//! - (c) ARCHITECTURE.md names every module file of the library crates,
//!   and every `*.rs` / `*.js` file it names exists;
//! - (d) no source file (Rust, the site's scripts, the browser tests)
//!   passes 800 lines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is in the workspace")
        .to_path_buf()
}

/// Crates that must never enter core's dependency tree: native inference,
/// parsing, file walking, networking, async runtimes, terminals.
const FORBIDDEN_IN_CORE: &[&str] = &[
    "ort",
    "ort-sys",
    "tokenizers",
    "tree-sitter",
    "tree-sitter-cpp",
    "ignore",
    "walkdir",
    "ureq",
    "reqwest",
    "hyper",
    "tokio",
    "mio",
    "httparse",
    "indicatif",
    "clap",
    "tempfile",
    "memmap2",
    "flate2",
];

/// The most lines a source file may have (ARCHITECTURE.md: one concern each).
const MAX_LINES: usize = 800;

/// Normal (non-dev, non-build) dependency closure of a package.
fn closure(meta: &serde_json::Value, package: &str) -> BTreeSet<String> {
    let nodes = meta["resolve"]["nodes"].as_array().expect("resolve nodes");
    let by_id: BTreeMap<&str, &serde_json::Value> = nodes
        .iter()
        .map(|n| (n["id"].as_str().unwrap_or(""), n))
        .collect();
    let name_of = |id: &str| -> String {
        meta["packages"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["id"].as_str() == Some(id))
            .and_then(|p| p["name"].as_str())
            .unwrap_or(id)
            .to_string()
    };
    let start = meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"].as_str() == Some(package))
        .and_then(|p| p["id"].as_str())
        .expect("package in metadata");
    let mut seen = BTreeSet::new();
    let mut todo = vec![start.to_string()];
    while let Some(id) = todo.pop() {
        if !seen.insert(id.clone()) {
            continue;
        }
        let Some(node) = by_id.get(id.as_str()) else {
            continue;
        };
        for dep in node["deps"].as_array().into_iter().flatten() {
            let normal = dep["dep_kinds"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|k| k["kind"].is_null());
            if normal {
                if let Some(pkg) = dep["pkg"].as_str() {
                    todo.push(pkg.to_string());
                }
            }
        }
    }
    seen.iter().map(|id| name_of(id)).collect()
}

#[test]
fn core_depends_on_no_io_or_native_crate() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    for target in [None, Some("wasm32-unknown-unknown")] {
        let mut cmd = Command::new(&cargo);
        cmd.args(["metadata", "--format-version", "1", "--locked"])
            .current_dir(root());
        if let Some(t) = target {
            cmd.args(["--filter-platform", t]);
        }
        let out = cmd.output().expect("running cargo metadata");
        assert!(
            out.status.success(),
            "cargo metadata: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let deps = closure(&meta, "codegloss-core");
        let bad: Vec<&String> = deps
            .iter()
            .filter(|d| FORBIDDEN_IN_CORE.contains(&d.as_str()))
            .collect();
        assert!(
            bad.is_empty(),
            "core ({target:?}) depends on {bad:?}; it must stay pure (ARCHITECTURE.md)"
        );
        assert!(deps.contains("serde") && deps.len() > 5, "{deps:?}");
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if p.file_name()
                .is_some_and(|n| n == "target" || n == "artifacts")
            {
                continue;
            }
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every Rust file of the crates (build outputs excluded).
fn workspace_rust_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in [
        "core",
        "indexer",
        "wasm-client",
        "wasm-answer",
        "wasm-embed",
        "tests",
        "xtask",
        "fuzz",
    ] {
        let d = root().join(dir);
        if d.is_dir() {
            rust_files(&d, &mut files);
        }
    }
    files
}

#[test]
fn core_uses_no_file_system_network_threads_or_clocks() {
    let mut files = Vec::new();
    rust_files(&root().join("core/src"), &mut files);
    assert!(files.len() > 10);
    let forbidden = [
        "std::fs",
        "std::net",
        "std::thread",
        "std::time::Instant",
        "std::time::SystemTime",
        "Instant::now",
        "SystemTime::now",
        "std::process",
        "std::env",
        "rayon::",
        "thread_rng",
    ];
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        // Unit tests run natively and may time themselves; the library may not.
        for (n, line) in text
            .lines()
            .enumerate()
            .take_while(|(_, l)| l.trim() != "#[cfg(test)]")
        {
            let code = line.split("//").next().unwrap_or("");
            for word in forbidden {
                if code.contains(word) {
                    found.push(format!(
                        "{}:{}: {word}",
                        f.strip_prefix(root()).unwrap().display(),
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "core must stay pure:\n{}",
        found.join("\n")
    );
}

/// Module files of the library crates and the site scripts, relative to the root.
fn module_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in [
        "core/src",
        "indexer/src",
        "wasm-client/src",
        "wasm-answer/src",
        "wasm-embed/src",
    ] {
        let d = root().join(dir);
        if d.is_dir() {
            rust_files(&d, &mut files);
        }
    }
    let mut js: Vec<PathBuf> = std::fs::read_dir(root().join("site"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "js"))
        .collect();
    js.sort();
    files.extend(js);
    files
        .into_iter()
        .map(|p| p.strip_prefix(root()).unwrap().to_path_buf())
        .collect()
}

#[test]
fn the_code_map_names_every_module_and_only_modules_that_exist() {
    let map = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    // (c1) every module is named: by its file name (`serve.rs`), its
    // module name in backticks (`serve`), or its folder (`retrieve/`).
    let mut missing = Vec::new();
    for f in module_files() {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
        if ["lib.rs", "main.rs", "mod.rs"].contains(&name.as_str()) {
            continue;
        }
        let folder = f
            .parent()
            .and_then(|p| p.file_name())
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let named = map.contains(&format!("`{name}`"))
            || map.contains(&format!("`{stem}`"))
            || map.contains(&format!("{folder}/{name}"))
            || map.contains(&format!("{folder}/{stem}"))
            || map.contains(&format!("{folder}/{{")) && map.contains(&format!("{stem},"))
            || map.contains(&name);
        if !named {
            missing.push(f.display().to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md does not name these modules:\n{}",
        missing.join("\n")
    );
    // (c2) every `x.rs` / `x.js` it names exists somewhere in the tree.
    let all: BTreeSet<String> = {
        let files = workspace_rust_files();
        files
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .chain(
                module_files()
                    .iter()
                    .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned())),
            )
            .chain(
                std::fs::read_dir(root().join("tests/browser"))
                    .unwrap()
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned()),
            )
            .collect()
    };
    let mut unknown = Vec::new();
    for word in map.split(|c: char| c == '`' || c.is_whitespace() || c == '(' || c == ')') {
        let word = word.trim_matches(|c: char| ",.;:".contains(c));
        let base = word.rsplit('/').next().unwrap_or(word);
        let is_file = (base.ends_with(".rs") || base.ends_with(".js") || base.ends_with(".mjs"))
            && base.len() > 3
            && base
                .trim_end_matches(".rs")
                .trim_end_matches(".mjs")
                .trim_end_matches(".js")
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if is_file && !all.contains(base) {
            unknown.push(word.to_string());
        }
    }
    unknown.sort();
    unknown.dedup();
    assert!(
        unknown.is_empty(),
        "ARCHITECTURE.md names files that do not exist: {unknown:?}"
    );
}

#[test]
fn no_source_file_passes_800_lines() {
    let mut files = workspace_rust_files();
    for dir in ["site", "tests/browser"] {
        for e in std::fs::read_dir(root().join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "js" || x == "mjs") {
                files.push(p);
            }
        }
    }
    let mut over = Vec::new();
    for f in files {
        let rel = f
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel.contains("/target/") || rel.contains("/snapshots/") {
            continue;
        }
        let lines = std::fs::read_to_string(&f).unwrap().lines().count();
        if lines > MAX_LINES {
            over.push(format!("{rel}: {lines} lines (at most {MAX_LINES})"));
        }
    }
    assert!(
        over.is_empty(),
        "split these files by concern (ARCHITECTURE.md):\n{}",
        over.join("\n")
    );
}
