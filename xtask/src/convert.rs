//! The converted models of `models/manifest.json` (`conversions`): a
//! decoder-only ONNX model, its tokenizer and its generation settings,
//! written by `models/convert/gguf_to_onnx.py` from a GGUF file the
//! manifest already pins, in a virtual environment of pinned wheels
//! (`models/convert/requirements.txt`, cached under `<cache>/wheels/convert`).
//! The output is deterministic; every file is checked by sha256 and a
//! conversion whose output differs is refused and removed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use crate::models::{cache_dir, sha256_file};

/// One conversion of the manifest.
#[derive(Debug, Deserialize)]
pub struct Conversion {
    /// Short id.
    pub id: String,
    /// Group that installs it.
    pub group: String,
    /// The manifest file (GGUF) it converts.
    pub from: String,
    /// Folder under `<cache>/models`.
    pub dest: String,
    /// File name to sha256.
    pub outputs: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct Manifest {
    #[serde(default)]
    conversions: Vec<Conversion>,
}

/// The conversions of the manifest.
pub fn conversions(root: &Path) -> Result<Vec<Conversion>> {
    let path = root.join("models/manifest.json");
    let text = std::fs::read_to_string(&path)?;
    Ok(serde_json::from_str::<Manifest>(&text)
        .with_context(|| format!("parsing {}", path.display()))?
        .conversions)
}

fn outputs_ok(dir: &Path, c: &Conversion) -> Result<bool> {
    for (name, want) in &c.outputs {
        let p = dir.join(name);
        if !p.is_file() || &sha256_file(&p)? != want {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The converter's Python, its pinned requirements installed once.
fn converter_python(root: &Path, cache: &Path) -> Result<PathBuf> {
    let venv = cache.join("convert-venv");
    let python = venv.join("bin/python");
    let reqs = root.join("models/convert/requirements.txt");
    let stamp = venv.join("requirements.sha256");
    let want = sha256_file(&reqs)?;
    if python.is_file() && std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == want) {
        return Ok(python);
    }
    let wheels = cache.join("wheels/convert");
    std::fs::create_dir_all(&wheels)?;
    eprintln!(
        "models: creating {} (pinned gguf, onnx, numpy)",
        venv.display()
    );
    let _ = std::fs::remove_dir_all(&venv);
    crate::run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    crate::run(
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "download",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(["--only-binary", ":all:", "--no-deps", "-d"])
            .arg(&wheels)
            .arg("-r")
            .arg(&reqs),
    )?;
    crate::run(
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(["--no-index", "--no-deps", "--find-links"])
            .arg(&wheels)
            .arg("-r")
            .arg(&reqs),
    )?;
    std::fs::write(&stamp, format!("{want}\n"))?;
    Ok(python)
}

/// Convert (or check) every conversion of `groups`, whose GGUF files
/// `gguf_paths` maps by manifest id; return the output folders.
pub fn install(
    root: &Path,
    groups: &[&str],
    gguf_paths: &BTreeMap<String, PathBuf>,
) -> Result<Vec<PathBuf>> {
    let cache = cache_dir()?;
    let mut dirs = Vec::new();
    for c in conversions(root)? {
        if !groups.contains(&c.group.as_str()) {
            continue;
        }
        let dest = cache.join("models").join(&c.dest);
        if outputs_ok(&dest, &c)? {
            eprintln!("models: {} ok ({})", c.id, dest.display());
            dirs.push(dest);
            continue;
        }
        let gguf = gguf_paths
            .get(&c.from)
            .with_context(|| format!("{}: its source {} is not installed", c.id, c.from))?;
        let python = converter_python(root, &cache)?;
        let tmp = dest.with_extension("partial");
        let _ = std::fs::remove_dir_all(&tmp);
        eprintln!("models: converting {} to ONNX ({})", gguf.display(), c.id);
        crate::run(
            Command::new(&python)
                .arg(root.join("models/convert/gguf_to_onnx.py"))
                .arg(gguf)
                .arg(&tmp),
        )?;
        if !outputs_ok(&tmp, &c)? {
            let got: Vec<String> = c
                .outputs
                .keys()
                .map(|n| {
                    let h = sha256_file(&tmp.join(n)).unwrap_or_else(|_| "missing".into());
                    format!("{n} {h}")
                })
                .collect();
            let _ = std::fs::remove_dir_all(&tmp);
            bail!(
                "{}: the conversion's output does not match models/manifest.json ({}); refusing to use it",
                c.id,
                got.join(", ")
            );
        }
        let _ = std::fs::remove_dir_all(&dest);
        std::fs::rename(&tmp, &dest)?;
        eprintln!("models: {} installed ({})", c.id, dest.display());
        dirs.push(dest);
    }
    Ok(dirs)
}
