//! The static site: `codegloss index --site` / `codegloss site` write an
//! index in core's web layout next to the widget, the worker and the wasm
//! module; `codegloss serve` serves such a folder on loopback (ES modules,
//! `fetch` and wasm do not work from `file://`).
//!
//! The site needs no server of ours: any static host works. Shards are
//! named by content hash and served as immutable; the manifest
//! (`index/codegloss.json`) is revalidated on every load.

use std::net::{IpAddr, SocketAddr};
use std::path::{Component, Path, PathBuf};

use codegloss_core::web::{build_site_index, ModelFile, ShardKind, WebManifest, WEB_MANIFEST};

use crate::embed::ModelFiles;
use crate::error::IndexError;
use crate::store;

/// Marker in the landing page that codegloss wrote it (and may replace it).
const GENERATOR_MARK: &str = r#"<meta name="generator" content="codegloss">"#;

/// What a site write produced.
#[derive(Debug, Clone)]
pub struct SiteReport {
    /// The web manifest written.
    pub manifest: WebManifest,
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
            && c.join("codegloss/pkg/codegloss_wasm_bg.wasm").is_file()
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

fn copy_tree(from: &Path, to: &Path, total: &mut u64) -> Result<(), IndexError> {
    let entries = std::fs::read_dir(from).map_err(|e| IndexError::io(from, e))?;
    let mut entries: Vec<_> = entries
        .collect::<Result<_, _>>()
        .map_err(|e| IndexError::io(from, e))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let src = entry.path();
        let dst = to.join(entry.file_name());
        if src.is_dir() {
            copy_tree(&src, &dst, total)?;
        } else {
            let bytes = std::fs::read(&src).map_err(|e| IndexError::io(&src, e))?;
            *total += bytes.len() as u64;
            write_if_changed(&dst, &bytes)?;
        }
    }
    Ok(())
}

fn is_shard_name(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".bin") else {
        return false;
    };
    let Some((kind, hash)) = stem.rsplit_once('-') else {
        return false;
    };
    ["search", "vectors", "text", "postings"].contains(&kind)
        && hash.len() == 64
        && hash.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Write the static site for the index in `index_dir` into `site_dir`.
///
/// Layout: `index.html` (only when absent or written by codegloss before),
/// `codegloss/` (widget, worker, wasm), `index/codegloss.json` and
/// `index/shards/*`. Shards already present are kept; shards of an older
/// build are removed (only files named like shards). Deterministic.
/// `model` is the query-embedding model to ship (the index's own files,
/// checked against its embedding spec): when it is `Err`, the site is
/// written without it and search in the browser is keyword and structure
/// only.
pub fn write_site(
    index_dir: &Path,
    site_dir: &Path,
    assets: &Path,
    model: Result<&ModelFiles, String>,
    retrieval: Option<&codegloss_core::retrieve::RetrievalSettings>,
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
        (Some(_), Err(why)) => Some(why),
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
    // Widget assets.
    copy_tree(
        &assets.join("codegloss"),
        &site_dir.join("codegloss"),
        &mut total,
    )?;
    let page = std::fs::read(assets.join("index.html"))
        .map_err(|e| IndexError::io(assets.join("index.html"), e))?;
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
        total_bytes: total,
        shards_written,
        shards_removed,
        no_model,
    })
}

/// One line per shard kind: count and bytes.
pub fn describe(report: &SiteReport) -> String {
    let m = &report.manifest;
    let kinds = [
        ShardKind::Search,
        ShardKind::Postings,
        ShardKind::Vectors,
        ShardKind::Text,
    ];
    let parts: Vec<String> = kinds
        .iter()
        .filter_map(|&k| {
            let n = m.shards_of(k).count();
            (n > 0).then(|| format!("{} {} ({} KiB)", n, k.as_str(), m.bytes_of(k) / 1024))
        })
        .collect();
    let model = match &report.no_model {
        None => "query-embedding model included (semantic search in the browser)".to_string(),
        Some(why) => format!(
            "no query-embedding model ({why}): the browser searches by keyword and structure"
        ),
    };
    format!(
        "site: {} KiB in all; shards: {}; {} new, {} stale removed; {model}",
        report.total_bytes / 1024,
        parts.join(", "),
        report.shards_written,
        report.shards_removed
    )
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "wasm" => "application/wasm",
        "png" => "image/png",
        "svg" => "image/svg+xml",
        "onnx" | "bin" => "application/octet-stream",
        _ => "application/octet-stream",
    }
}

/// Resolve a request path inside `root`, refusing anything that leaves it.
fn resolve(root: &Path, url: &str) -> Option<PathBuf> {
    let path = url.split(['?', '#']).next().unwrap_or("");
    let decoded = percent_decode(path)?;
    let mut out = root.to_path_buf();
    for c in Path::new(decoded.trim_start_matches('/')).components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            _ => return None,
        }
    }
    if out.is_dir() {
        out.push("index.html");
    }
    Some(out)
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).expect("writing to memory");
    e.finish().expect("writing to memory")
}

/// Serve a site folder over HTTP until the process ends. Compressible
/// files are gzipped when the client accepts it (as static hosts do);
/// shards are already compressed. Logs one line per request to stderr.
///
/// Each connection has its own thread and keeps alive (HTTP/1.1), as a
/// browser expects of a static host. It does not use `tiny_http`, which
/// this once did: under load, Chromium now and then left a request queued
/// on its connections for minutes (the semantic-search files, in the
/// browser tests), with one server thread or several.
pub fn serve(root: &Path, host: IpAddr, port: u16) -> Result<(), IndexError> {
    let root = root.canonicalize().map_err(|e| IndexError::io(root, e))?;
    if !root.join("index").join(WEB_MANIFEST).is_file() {
        return Err(IndexError::Site {
            message: format!(
                "{} is not a codegloss site (no index/{WEB_MANIFEST}); write one with `codegloss index <repo> --out <index> --site <dir>`",
                root.display()
            ),
        });
    }
    let addr = SocketAddr::new(host, port);
    let listener = std::net::TcpListener::bind(addr).map_err(|e| IndexError::Site {
        message: format!("cannot listen on {addr}: {e}"),
    })?;
    let local = listener
        .local_addr()
        .map_or_else(|_| addr.to_string(), |a| a.to_string());
    eprintln!(
        "serving {} on http://{local}/ (Ctrl-C stops)",
        root.display()
    );
    // The URL on stdout, for scripts that start the server.
    println!("http://{local}/");
    let open = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        if open.load(std::sync::atomic::Ordering::Relaxed) >= MAX_CONNECTIONS {
            // Dropping it closes it; the browser retries.
            continue;
        }
        open.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (root, open) = (root.clone(), open.clone());
        std::thread::spawn(move || {
            if let Err(e) = connection(&root, stream) {
                log::debug!("connection ended: {e}");
            }
            open.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        });
    }
    Ok(())
}

/// Connections served at once by `codegloss serve`.
const MAX_CONNECTIONS: usize = 64;
/// Largest request head accepted.
const MAX_HEAD: usize = 32 * 1024;

/// One parsed request head.
struct Head {
    method: String,
    path: String,
    keep_alive: bool,
    gzip: bool,
    if_none_match: Option<String>,
    /// Bytes of the head (what follows belongs to the next request).
    len: usize,
}

fn parse_head(buf: &[u8]) -> Result<Option<Head>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("bad request: {e}")),
    };
    let value = |name: &str| {
        req.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).into_owned())
    };
    let connection = value("Connection").unwrap_or_default().to_ascii_lowercase();
    if value("Content-Length").is_some_and(|v| v.trim() != "0")
        || value("Transfer-Encoding").is_some()
    {
        return Err("requests with a body are not served".into());
    }
    Ok(Some(Head {
        method: req.method.unwrap_or("").to_string(),
        path: req.path.unwrap_or("/").to_string(),
        keep_alive: if req.version == Some(0) {
            connection.contains("keep-alive")
        } else {
            !connection.contains("close")
        },
        gzip: value("Accept-Encoding").is_some_and(|v| v.contains("gzip")),
        if_none_match: value("If-None-Match"),
        len,
    }))
}

/// Serve the requests of one connection until it closes or idles out.
fn connection(root: &Path, mut stream: std::net::TcpStream) -> std::io::Result<()> {
    use std::io::{Read, Write};
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30)))?;
    stream.set_nodelay(true)?;
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let head = loop {
            match parse_head(&buf) {
                Ok(Some(head)) => break head,
                Ok(None) if buf.len() < MAX_HEAD => {}
                Ok(None) | Err(_) => {
                    let why = parse_head(&buf)
                        .err()
                        .unwrap_or_else(|| "head too large".into());
                    let reply = Reply::text(400, &why);
                    stream.write_all(&reply.bytes(false, false))?;
                    return Ok(());
                }
            }
            let n = stream.read(&mut chunk)?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        buf.drain(..head.len);
        let reply = answer(root, &head);
        eprintln!("{} {} {}", head.method, head.path, reply.status);
        stream.write_all(&reply.bytes(head.method == "HEAD", head.keep_alive))?;
        stream.flush()?;
        if !head.keep_alive {
            return Ok(());
        }
    }
}

/// A response of `codegloss serve`.
struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn text(status: u16, text: &str) -> Self {
        Reply {
            status,
            headers: vec![("Content-Type", "text/plain; charset=utf-8".into())],
            body: text.as_bytes().to_vec(),
        }
    }

    fn bytes(&self, head_only: bool, keep_alive: bool) -> Vec<u8> {
        let reason = match self.status {
            200 => "OK",
            304 => "Not Modified",
            400 => "Bad Request",
            404 => "Not Found",
            405 => "Method Not Allowed",
            _ => "Internal Server Error",
        };
        let mut out = format!("HTTP/1.1 {} {reason}\r\n", self.status);
        for (k, v) in &self.headers {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        if self.status != 304 {
            out.push_str(&format!("Content-Length: {}\r\n", self.body.len()));
        }
        out.push_str(if keep_alive {
            "Connection: keep-alive\r\n\r\n"
        } else {
            "Connection: close\r\n\r\n"
        });
        let mut bytes = out.into_bytes();
        if !head_only && self.status != 304 {
            bytes.extend_from_slice(&self.body);
        }
        bytes
    }
}

/// The reply to one request.
fn answer(root: &Path, head: &Head) -> Reply {
    if head.method != "GET" && head.method != "HEAD" {
        return Reply::text(405, "method not allowed");
    }
    let Some(path) = resolve(root, &head.path).filter(|p| p.is_file()) else {
        return Reply::text(404, "not found");
    };
    let tag = etag(&path);
    if let (Some(tag), Some(wanted)) = (&tag, &head.if_none_match) {
        if wanted.split(',').any(|v| v.trim() == tag) {
            return Reply {
                status: 304,
                headers: vec![("ETag", tag.clone())],
                body: Vec::new(),
            };
        }
    }
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => return Reply::text(500, &format!("cannot read: {e}")),
    };
    let ctype = content_type(&path);
    let immutable = path.to_string_lossy().contains("/index/shards/");
    let compressible = !immutable
        && (ctype.starts_with("text/")
            || ctype == "application/json"
            || ctype == "application/wasm");
    let mut headers = vec![
        ("Content-Type", ctype.to_string()),
        (
            "Cache-Control",
            if immutable {
                "public, max-age=31536000, immutable"
            } else {
                "no-cache"
            }
            .to_string(),
        ),
    ];
    let body = if compressible && head.gzip {
        headers.push(("Content-Encoding", "gzip".into()));
        headers.push(("Vary", "Accept-Encoding".into()));
        gzip(&bytes)
    } else {
        bytes
    };
    if let Some(tag) = tag {
        headers.push(("ETag", tag));
    }
    Reply {
        status: 200,
        headers,
        body,
    }
}

/// A validator for revalidation (`no-cache` files): size and modification time.
fn etag(path: &Path) -> Option<String> {
    let m = std::fs::metadata(path).ok()?;
    let t = m
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some(format!("\"{:x}-{:x}\"", m.len(), t.as_nanos()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_stays_inside_the_root() {
        let root = Path::new("/srv/site");
        assert_eq!(
            resolve(root, "/index/codegloss.json?x=1"),
            Some(PathBuf::from("/srv/site/index/codegloss.json"))
        );
        assert_eq!(resolve(root, "/../etc/passwd"), None);
        assert_eq!(resolve(root, "/%2e%2e/etc/passwd"), None);
        assert_eq!(
            resolve(root, "/a%20b.js"),
            Some(PathBuf::from("/srv/site/a b.js"))
        );
    }

    #[test]
    fn request_heads() {
        let h =
            parse_head(b"GET /a.js HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip, br\r\n\r\nGET")
                .unwrap()
                .unwrap();
        assert_eq!((h.method.as_str(), h.path.as_str()), ("GET", "/a.js"));
        assert!(h.keep_alive && h.gzip && h.if_none_match.is_none());
        assert_eq!(h.len, 58);
        assert!(parse_head(b"GET / HTTP/1.1\r\nHost").unwrap().is_none());
        let h = parse_head(b"GET / HTTP/1.0\r\n\r\n").unwrap().unwrap();
        assert!(!h.keep_alive);
        let h = parse_head(b"GET / HTTP/1.1\r\nConnection: close\r\nIf-None-Match: \"a\"\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(!h.keep_alive);
        assert_eq!(h.if_none_match.as_deref(), Some("\"a\""));
        assert!(parse_head(b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello").is_err());
        assert!(parse_head(b"\x01\x02 nonsense\r\n\r\n").is_err());
    }

    #[test]
    fn shard_names() {
        let h = "a".repeat(64);
        assert!(is_shard_name(&format!("text-{h}.bin")));
        assert!(!is_shard_name("notes.bin"));
        assert!(!is_shard_name(&format!("text-{h}.json")));
    }
}
