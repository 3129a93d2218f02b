//! The static site: `codegloss index --site` / `codegloss site` write an
//! index in core's web layout next to the widget, the worker and the wasm
//! module (`codegloss serve`, in `serve.rs`, serves such a folder on
//! loopback).
//!
//! The site needs no server of ours: any static host works. Shards are
//! named by content hash (or by their directory's key and place) and
//! served as immutable; the manifest
//! (`index/codegloss.json`) is revalidated on every load.

pub mod serve;

use std::path::{Path, PathBuf};

use codegloss_core::web::{
    build_site_index, ModelFile, ShardInfo, ShardKind, WebManifest, SHARD_HASH_BYTES, WEB_MANIFEST,
    WEB_MANIFEST_BIN,
};

use crate::embed::ModelFiles;
use crate::error::IndexError;
use crate::store;

/// The site's Content-Security-Policy as one line of text, in the site folder.
pub const POLICY_FILE: &str = "codegloss/content-security-policy.txt";

/// Marker in the landing page that codegloss wrote it (and may replace it).
const GENERATOR_MARK: &str = r#"<meta name="generator" content="codegloss">"#;

/// What a site write produced.
#[derive(Debug, Clone)]
pub struct SiteReport {
    /// The web manifest written.
    pub manifest: WebManifest,
    /// The postings and edge shards its search shard lists.
    pub listed: Vec<ShardInfo>,
    /// The text shards its text directory lists.
    pub text: Vec<ShardInfo>,
    /// Bytes of every file in the site folder codegloss wrote.
    pub total_bytes: u64,
    /// Shards written (not already present).
    pub shards_written: usize,
    /// Stale shards removed.
    pub shards_removed: usize,
    /// Why the site has no query-embedding model (semantic search off in
    /// the browser), when it has none.
    pub no_model: Option<String>,
}

/// The site's Content-Security-Policy: everything from the site's own
/// origin, no inline script or style, wasm compilation allowed, and
/// connections to the site itself, to answer models on this computer
/// (`localhost` and `127.0.0.1`, any port, http or https) and to the extra
/// origins given (`[site] answer_origins`). `codegloss serve` sends it as a
/// header; the site writer puts it in the landing page as a `<meta>` for
/// other static hosts (a `<meta>` policy does not reach the Web Worker, so
/// the worker checks answer endpoints against it itself).
///
/// The IPv6 loopback `[::1]` cannot be allowed: a policy's source grammar
/// has no IPv6 hosts (Chromium ignores such a source with an error). An
/// extra origin that is not a plain source expression (a space, `;`, `,`
/// or a quote in it) is left out, so that no configuration can add a
/// directive.
pub fn content_security_policy(extra_connect: &[String]) -> String {
    let mut connect: Vec<String> = [
        "'self'",
        "http://localhost:*",
        "http://127.0.0.1:*",
        "https://localhost:*",
        "https://127.0.0.1:*",
    ]
    .map(String::from)
    .to_vec();
    for origin in extra_connect {
        let plain = !origin.is_empty()
            && !origin
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || ";,'\"".contains(c));
        if plain && !connect.contains(origin) {
            connect.push(origin.clone());
        }
    }
    format!(
        "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; \
         style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'self'; \
         form-action 'self'; connect-src {}",
        connect.join(" ")
    )
}

/// The landing page: `template` with the site's policy in a
/// `<meta http-equiv="Content-Security-Policy">` right after its `<meta
/// charset>` (a `<meta>` policy governs only what the page loads after it).
fn landing_page(template: &str, policy: &str) -> String {
    let escaped = policy
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let meta = format!("<meta http-equiv=\"Content-Security-Policy\" content=\"{escaped}\">");
    let lower = template.to_ascii_lowercase();
    let after = |tag: &str| {
        let start = lower.find(tag)?;
        Some(start + lower[start..].find('>')? + 1)
    };
    match after("<meta charset").or_else(|| after("<head")) {
        Some(at) => {
            // The indentation of the line the tag is on.
            let line = &template[template[..at].rfind('\n').map_or(0, |i| i + 1)..at];
            let indent: String = line.chars().take_while(|c| c.is_whitespace()).collect();
            format!("{}\n{indent}{meta}{}", &template[..at], &template[at..])
        }
        None => format!("{meta}\n{template}"),
    }
}

/// Where the built widget assets are: `explicit`, else
/// `$CODEGLOSS_SITE_ASSETS`, else `site-assets` next to or above the
/// running executable (`target/site-assets` for a cargo build).
pub fn find_assets(explicit: Option<&Path>) -> Result<PathBuf, IndexError> {
    let mut tried = Vec::new();
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = explicit {
        candidates.push(p.to_path_buf());
    } else {
        if let Some(p) = std::env::var_os("CODEGLOSS_SITE_ASSETS") {
            candidates.push(PathBuf::from(p));
        }
        if let Ok(exe) = std::env::current_exe() {
            if let Some(dir) = exe.parent() {
                candidates.push(dir.join("site-assets"));
                if let Some(up) = dir.parent() {
                    candidates.push(up.join("site-assets"));
                }
            }
        }
    }
    for c in candidates {
        if c.join("codegloss/worker.js").is_file()
            && c.join("codegloss/pkg/codegloss_wasm_bg.wasm.deflate")
                .is_file()
            && c.join("codegloss/answer/codegloss_wasm_answer_bg.wasm")
                .is_file()
        {
            return Ok(c);
        }
        tried.push(c.display().to_string());
    }
    Err(IndexError::Site {
        message: format!(
            "the widget assets (widget, worker, wasm module) were not found (looked in: {}); build them with `cargo xtask site-assets`, or pass --assets",
            tried.join(", ")
        ),
    })
}

fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<bool, IndexError> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| IndexError::io(dir, e))?;
    }
    // Write to a temporary name, then rename: a reader never sees half a file.
    let tmp = path.with_extension("tmp-write");
    std::fs::write(&tmp, bytes).map_err(|e| IndexError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| IndexError::io(path, e))?;
    Ok(true)
}

/// Copy the tree `from` into `to`, adding each file's path below `to`
/// (`/`-separated, after `prefix`) to `written`.
fn copy_tree(
    from: &Path,
    to: &Path,
    prefix: &str,
    total: &mut u64,
    written: &mut Vec<String>,
) -> Result<(), IndexError> {
    let entries = std::fs::read_dir(from).map_err(|e| IndexError::io(from, e))?;
    let mut entries: Vec<_> = entries
        .collect::<Result<_, _>>()
        .map_err(|e| IndexError::io(from, e))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let src = entry.path();
        let dst = to.join(entry.file_name());
        let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
        if src.is_dir() {
            copy_tree(&src, &dst, &format!("{name}/"), total, written)?;
        } else {
            let bytes = std::fs::read(&src).map_err(|e| IndexError::io(&src, e))?;
            *total += bytes.len() as u64;
            write_if_changed(&dst, &bytes)?;
            written.push(name);
        }
    }
    Ok(())
}

/// The list of the widget files the last write copied into `codegloss/`,
/// one path below it per line.
const ASSET_LIST: &str = "codegloss/.assets";

/// Remove the widget files that the last write copied (its
/// [`ASSET_LIST`]) and this one did not (`written`), then list these:
/// a newer widget's modules replace an older one's without leaving them
/// behind, and a file codegloss never wrote is never touched (a site
/// written before the list existed keeps its old files). Returns how many
/// were removed.
fn remove_stale_assets(site_dir: &Path, written: &[String]) -> Result<usize, IndexError> {
    let list = site_dir.join(ASSET_LIST);
    let keep: std::collections::BTreeSet<&str> = written.iter().map(String::as_str).collect();
    let mut removed = 0;
    if let Ok(old) = std::fs::read_to_string(&list) {
        // Only plain relative paths: a damaged list names nothing outside.
        let plain = |name: &str| {
            !name.is_empty()
                && Path::new(name)
                    .components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)))
        };
        for name in old.lines().filter(|n| plain(n) && !keep.contains(n)) {
            let path = site_dir.join("codegloss").join(name);
            if path.is_file() {
                std::fs::remove_file(&path).map_err(|e| IndexError::io(&path, e))?;
                removed += 1;
            }
        }
    }
    let mut text = written.join("\n");
    text.push('\n');
    write_if_changed(&list, text.as_bytes())?;
    Ok(removed)
}

fn is_shard_name(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".bin") else {
        return false;
    };
    let Some((kind, hash)) = stem.rsplit_once('-') else {
        return false;
    };
    let hex = |h: &str, lengths: &[usize]| {
        lengths.contains(&h.len()) && h.bytes().all(|b| b.is_ascii_hexdigit())
    };
    let is_kind = |k: &str| ShardKind::ALL.iter().any(|x| x.as_str() == k);
    // A [`ShardHash`](codegloss_core::web::ShardHash) names shards since web
    // format 9 (128 bits until format 18); older sites named them by the
    // whole SHA-256. Since format 22 a directory's shards are named by its
    // key and their place (`<kind>-<key>-<place>`).
    if is_kind(kind) {
        return hex(hash, &[2 * SHARD_HASH_BYTES, 32, 64]);
    }
    let place = hash;
    let Some((kind, key)) = kind.rsplit_once('-') else {
        return false;
    };
    is_kind(kind)
        && hex(key, &[2 * SHARD_HASH_BYTES])
        && !place.is_empty()
        && place.bytes().all(|b| b.is_ascii_digit())
}

/// Write the static site for the index in `index_dir` into `site_dir`.
///
/// Layout: `index.html` (only when absent or written by codegloss before),
/// `codegloss/` (widget, worker, wasm; what an older write copied there
/// and this one does not is removed, by the list `codegloss/.assets`),
/// `index/codegloss.json` and
/// `index/shards/*`. Shards already present are kept; shards of an older
/// build are removed (only files named like shards). Deterministic.
/// `model` is the query-embedding model to ship (the index's own files,
/// checked against its embedding spec): when it is `Err` (the reason it
/// could not be found), the site is written without it and search in the browser is keyword and structure
/// only. `answer_origins` are the origins besides this computer that the
/// landing page's Content-Security-Policy lets the widget call for answers
/// (`[site] answer_origins`).
pub fn write_site(
    index_dir: &Path,
    site_dir: &Path,
    assets: &Path,
    model: Result<&ModelFiles, &IndexError>,
    retrieval: Option<&codegloss_core::retrieve::RetrievalSettings>,
    answer_origins: &[String],
) -> Result<SiteReport, IndexError> {
    let (mut manifest, data) = store::read_index(index_dir)?;
    // A configuration given to `site` with a `[retrieval]` section wins
    // over the settings the index was built with.
    if let Some(r) = retrieval {
        manifest.retrieval = Some(r.clone());
    }
    let lexical = store::read_lexical(index_dir, &manifest)?;
    let vectors = store::read_vectors(index_dir, &manifest)?;
    let mut site =
        build_site_index(&manifest, &data, &lexical, vectors.as_ref()).map_err(|source| {
            IndexError::Index {
                path: index_dir.to_path_buf(),
                source,
            }
        })?;
    let mut total = 0u64;
    // The query-embedding model, named by content hash.
    let no_model = match (&manifest.embedding, model) {
        (None, _) => Some("the index has no vectors".to_string()),
        (Some(_), Err(why)) => Some(why.to_string()),
        (Some(info), Ok(files)) => {
            if files.model_sha256 != info.spec.model_sha256
                || files.tokenizer_sha256 != info.spec.tokenizer_sha256
            {
                Some(format!(
                    "the embedding model files ({}) are not the ones the index was built with",
                    files.model.display()
                ))
            } else {
                for (role, path, sha, ext) in [
                    ("model", &files.model, &files.model_sha256, "onnx"),
                    (
                        "tokenizer",
                        &files.tokenizer,
                        &files.tokenizer_sha256,
                        "json",
                    ),
                ] {
                    let bytes = std::fs::read(path).map_err(|e| IndexError::io(path, e))?;
                    let name = format!("model/{sha}.{ext}");
                    write_if_changed(&site_dir.join("index").join(&name), &bytes)?;
                    total += bytes.len() as u64;
                    site.manifest.model_files.push(ModelFile {
                        role: role.into(),
                        name,
                        bytes: bytes.len() as u64,
                        sha256: sha.clone(),
                    });
                }
                None
            }
        }
    };
    // Widget assets, in place of those an older write copied.
    let mut written = Vec::new();
    copy_tree(
        &assets.join("codegloss"),
        &site_dir.join("codegloss"),
        "",
        &mut total,
        &mut written,
    )?;
    let stale = remove_stale_assets(site_dir, &written)?;
    if stale > 0 {
        log::info!("removed {stale} widget files an older write left");
    }
    let template = std::fs::read_to_string(assets.join("index.html"))
        .map_err(|e| IndexError::io(assets.join("index.html"), e))?;
    let policy = content_security_policy(answer_origins);
    let page = landing_page(&template, &policy).into_bytes();
    // The policy on its own too: `codegloss serve` sends it as a header
    // when the landing page is the maintainer's own, without the `<meta>`.
    let policy_path = site_dir.join(POLICY_FILE);
    write_if_changed(&policy_path, format!("{policy}\n").as_bytes())?;
    total += policy.len() as u64 + 1;
    let page_path = site_dir.join("index.html");
    match std::fs::read_to_string(&page_path) {
        Ok(old) if !old.contains(GENERATOR_MARK) => {
            log::warn!(
                "{} was not written by codegloss; left as it is",
                page_path.display()
            );
        }
        _ => {
            write_if_changed(&page_path, &page)?;
        }
    }
    total += page.len() as u64;
    // Index.
    let index_out = site_dir.join("index");
    let mut shards_written = 0;
    for (name, bytes) in &site.files {
        total += bytes.len() as u64;
        let path = index_out.join(name);
        if !path.is_file() {
            shards_written += 1;
        }
        write_if_changed(&path, bytes)?;
    }
    // The manifests last, so a reader never sees one that lists a shard
    // not written yet: the binary form the browser reads, the JSON form
    // for people and tools.
    let binary_path = index_out.join(WEB_MANIFEST_BIN);
    let binary = site
        .manifest
        .to_binary()
        .map_err(|source| IndexError::Index {
            path: binary_path.clone(),
            source,
        })?;
    total += binary.len() as u64;
    write_if_changed(&binary_path, &binary)?;
    let text = site.manifest.to_json();
    total += text.len() as u64;
    write_if_changed(&index_out.join(WEB_MANIFEST), text.as_bytes())?;
    // Remove shards of older builds.
    let keep: std::collections::BTreeSet<&str> =
        site.files.iter().map(|(n, _)| n.as_str()).collect();
    let mut shards_removed = 0;
    let shard_dir = index_out.join("shards");
    if let Ok(entries) = std::fs::read_dir(&shard_dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if is_shard_name(&name) && !keep.contains(format!("shards/{name}").as_str()) {
                std::fs::remove_file(entry.path()).map_err(|e| IndexError::io(entry.path(), e))?;
                shards_removed += 1;
            }
        }
    }
    Ok(SiteReport {
        manifest: site.manifest,
        listed: site.listed,
        text: site.text,
        total_bytes: total,
        shards_written,
        shards_removed,
        no_model,
    })
}

/// One line per shard kind: count and bytes.
pub fn describe(report: &SiteReport) -> String {
    let m = &report.manifest;
    let parts: Vec<String> = ShardKind::ALL
        .iter()
        .filter_map(|&k| {
            let listed = |list: &[ShardInfo]| {
                let of_kind = list.iter().filter(|s| s.kind == k);
                (
                    of_kind.clone().count(),
                    of_kind.map(|s| s.bytes).sum::<u64>(),
                )
            };
            let (n, bytes) = match k {
                ShardKind::Text => listed(&report.text),
                ShardKind::Postings | ShardKind::Edges | ShardKind::Names => listed(&report.listed),
                _ => (m.shards_of(k).count(), m.bytes_of(k)),
            };
            (n > 0).then(|| format!("{} {} ({} KiB)", n, k.as_str(), bytes / 1024))
        })
        .collect();
    let model = match &report.no_model {
        None => "query-embedding model included (semantic search in the browser)".to_string(),
        Some(why) => format!(
            "no query-embedding model ({why}): the browser searches by keyword and structure"
        ),
    };
    let mut out = format!(
        "site: {} KiB in all; shards: {}; {} new, {} stale removed; {model}",
        report.total_bytes / 1024,
        parts.join(", "),
        report.shards_written,
        report.shards_removed
    );
    if let Some(hint) = partition_hint(m.vectors_shard().map(|v| v.bytes)) {
        out.push('\n');
        out.push_str(&hint);
    }
    out
}

/// Above this, a single vectors shard is worth partitioning.
const LARGE_VECTORS_SHARD: u64 = 8 << 20;

/// A hint for a site whose semantic search fetches one large vectors shard
/// (`single_shard_bytes`) whole: partitions cost a question a few hundred
/// KB instead.
fn partition_hint(single_shard_bytes: Option<u64>) -> Option<String> {
    let bytes = single_shard_bytes.filter(|&b| b > LARGE_VECTORS_SHARD)?;
    Some(format!(
        "note: semantic search in the browser fetches the whole vectors shard ({} MiB) on its first question; \
         with `[retrieval] ivf_probe = N` it fetches only the N partitions nearest to each question \
         (choose N with `codegloss partitions <index> --questions <file>`: on a 44k-chunk codebase, \
         probe 128 found 0.95 of the exact top 10 for about 400 KB a question)",
        bytes >> 20
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_single_vectors_shard_gets_a_partitioning_hint() {
        assert_eq!(partition_hint(Some(4 << 20)), None);
        // Partitioned (no single shard) or no vectors: no hint.
        assert_eq!(partition_hint(None), None);
        let hint = partition_hint(Some(24 << 20)).unwrap();
        assert!(
            hint.contains("(24 MiB)") && hint.contains("ivf_probe"),
            "{hint}"
        );
    }

    #[test]
    fn the_policy_allows_the_site_loopback_and_listed_origins_only() {
        let p = content_security_policy(&[
            "https://llm.example.org".into(),
            "https://x; script-src *".into(),
        ]);
        assert!(p.starts_with("default-src 'self';"), "{p}");
        // No inline script or style anywhere, no eval (wasm compilation only).
        let words: Vec<&str> = p.split([' ', ';']).collect();
        assert!(!words.contains(&"'unsafe-inline'"), "{p}");
        assert!(!words.contains(&"'unsafe-eval'"), "{p}");
        let connect = p
            .split(';')
            .find(|d| d.trim().starts_with("connect-src"))
            .unwrap();
        let sources: Vec<&str> = connect.split_whitespace().skip(1).collect();
        assert_eq!(
            sources,
            [
                "'self'",
                "http://localhost:*",
                "http://127.0.0.1:*",
                "https://localhost:*",
                "https://127.0.0.1:*",
                "https://llm.example.org"
            ]
        );
        assert_eq!(p.matches("script-src").count(), 1, "{p}");
    }

    #[test]
    fn the_landing_page_carries_the_policy_after_its_charset() {
        let page = landing_page(
            "<html>\n  <head>\n    <meta charset=\"utf-8\">\n    <script type=\"module\" src=\"x.js\"></script>\n",
            "default-src 'self'; a \"b\" <c> &d",
        );
        assert_eq!(
            page,
            "<html>\n  <head>\n    <meta charset=\"utf-8\">\n    <meta http-equiv=\"Content-Security-Policy\" \
             content=\"default-src 'self'; a &quot;b&quot; &lt;c&gt; &amp;d\">\n    <script type=\"module\" src=\"x.js\"></script>\n"
        );
        assert!(landing_page("<p>no head</p>", "x").starts_with("<meta http-equiv"));
    }

    #[test]
    fn shard_names() {
        let h = "a".repeat(64);
        assert!(is_shard_name(&format!("text-{h}.bin")));
        assert!(is_shard_name("names-0123456789abcdef-17.bin"));
        assert!(!is_shard_name("names-0123456789abcdef-x7.bin"));
        assert!(!is_shard_name("notes-0123456789abcdef-7.bin"));
        assert!(!is_shard_name("notes.bin"));
        assert!(!is_shard_name(&format!("text-{h}.json")));
    }
}
