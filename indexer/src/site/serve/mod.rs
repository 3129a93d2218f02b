//! `codegloss serve`: a small static file server for a site folder on
//! loopback (ES modules, `fetch` and wasm do not work from `file://`).
//!
//! It is a reader's local server, so it is hardened as one:
//! - it serves only regular files whose resolved path (symbolic links
//!   followed) stays inside the canonical site folder;
//! - it answers only requests whose `Host` is a loopback name when it
//!   listens on loopback (a page on another site cannot reach it through
//!   DNS rebinding);
//! - a slow or idle client cannot hold a slot: a request head must arrive
//!   within [`HEAD_TIMEOUT`], an idle keep-alive connection is closed after
//!   [`IDLE_TIMEOUT`], and at [`MAX_CONNECTIONS`] the longest-idle
//!   connection is closed to make room; a new client that still finds no
//!   room gets a 503, never silence;
//! - it sends the site's Content-Security-Policy (and `Referrer-Policy`)
//!   with every reply a browser may run or show as a page: pages, scripts
//!   (a worker takes its policy from its script's reply), images and
//!   errors; and `X-Content-Type-Options: nosniff` with every reply. The
//!   shards, the wasm modules, the manifest and the stylesheets go without
//!   the policy, which no browser applies to them: it was 330 bytes of
//!   each of the 40-odd replies before a large index's first results.
//!
//! Compressible files are gzipped once per version and kept in memory;
//! `Range` requests are honoured on the file's own bytes.
//!
//! Each connection has its own thread and keeps alive (HTTP/1.1), as a
//! browser expects of a static host. It does not use `tiny_http`, which
//! this once did: under load, Chromium now and then left a request queued
//! on its connections for minutes (the semantic-search files, in the
//! browser tests), with one server thread or several.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use codegloss_core::web::WEB_MANIFEST;

use crate::error::IndexError;
use crate::site::content_security_policy;

mod http;

use http::{byte_range, parse_head, Body, Head, RangeAsk, Reply};

/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 256;
/// Time a client has to send a whole request head, from its first byte.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Time an open connection may wait for its next request.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(15);
/// Largest request head accepted.
const MAX_HEAD: usize = 32 * 1024;
/// Largest total of gzipped bodies kept in memory.
const GZIP_CACHE_BYTES: usize = 64 << 20;

/// Serve a site folder over HTTP until the process ends. Logs one line
/// per request to stderr; prints the URL on stdout.
pub fn serve(root: &Path, host: IpAddr, port: u16) -> Result<(), IndexError> {
    let server = Arc::new(Server::new(root, host)?);
    let addr = SocketAddr::new(host, port);
    let listener = std::net::TcpListener::bind(addr).map_err(|e| IndexError::Site {
        message: format!("cannot listen on {addr}: {e}"),
    })?;
    let local = listener
        .local_addr()
        .map_or_else(|_| addr.to_string(), |a| a.to_string());
    eprintln!(
        "serving {} on http://{local}/ (Ctrl-C stops)",
        server.root.display()
    );
    // The URL on stdout, for scripts that start the server.
    println!("http://{local}/");
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let Some(id) = server.admit(&stream) else {
            refuse(stream);
            continue;
        };
        let server = server.clone();
        std::thread::spawn(move || {
            if let Err(e) = server.connection(id, stream) {
                log::debug!("connection ended: {e}");
            }
            server.leave(id);
        });
    }
    Ok(())
}

/// Answer a client for which there is no room with a 503, without
/// waiting on it (the reply fits in the socket's send buffer).
fn refuse(mut stream: TcpStream) {
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let mut reply = Reply::text(503, "the server is busy; try again");
    reply.headers.push(("Retry-After", "1".into()));
    let _ = stream.write_all(&reply.bytes(false, false));
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

/// What one open connection is doing, for the choice of whom to close.
struct Slot {
    /// A handle to close it from outside its thread.
    stream: TcpStream,
    /// Since when it has been waiting on the client; `None` while a reply
    /// is being written.
    waiting_since: Option<Instant>,
}

/// The state shared by all connection threads.
struct Server {
    root: PathBuf,
    csp: String,
    /// `Host` values answered; empty: any (not listening on loopback).
    hosts: Vec<String>,
    slots: Mutex<(u64, HashMap<u64, Slot>)>,
    /// Gzipped bodies by path, with the validator of the version they are of.
    gzipped: Mutex<GzipCache>,
}

/// Gzipped bodies by path, each with the validator of its version.
#[derive(Default)]
struct GzipCache {
    bytes: usize,
    entries: HashMap<PathBuf, (String, GzipCell)>,
}

/// One file version's gzipped body, filled by the first request for it.
type GzipCell = Arc<OnceLock<Result<Arc<Vec<u8>>, String>>>;

impl Server {
    fn new(root: &Path, host: IpAddr) -> Result<Self, IndexError> {
        let root = root.canonicalize().map_err(|e| IndexError::io(root, e))?;
        if !root.join("index").join(WEB_MANIFEST).is_file() {
            return Err(IndexError::Site {
                message: format!(
                    "{} is not a codegloss site (no index/{WEB_MANIFEST}); write one with `codegloss index <repo> --out <index> --site <dir>`",
                    root.display()
                ),
            });
        }
        let csp = site_policy(&root);
        let hosts = if host.is_loopback() {
            let mut h: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
                .iter()
                .map(|s| (*s).to_string())
                .collect();
            h.push(match host {
                IpAddr::V4(a) => a.to_string(),
                IpAddr::V6(a) => format!("[{a}]"),
            });
            h
        } else {
            Vec::new()
        };
        Ok(Server {
            root,
            csp,
            hosts,
            slots: Mutex::new((0, HashMap::new())),
            gzipped: Mutex::new(GzipCache::default()),
        })
    }

    /// Take a slot for a new connection, closing the longest-waiting
    /// connection when all are taken. `None` when every connection is
    /// writing a reply.
    fn admit(&self, stream: &TcpStream) -> Option<u64> {
        let handle = stream.try_clone().ok()?;
        let mut guard = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        let (next, slots) = &mut *guard;
        if slots.len() >= MAX_CONNECTIONS {
            let oldest = slots
                .iter()
                .filter_map(|(id, s)| s.waiting_since.map(|t| (t, *id)))
                .min()
                .map(|(_, id)| id)?;
            if let Some(slot) = slots.remove(&oldest) {
                // Its thread sees the end of its stream and stops.
                let _ = slot.stream.shutdown(std::net::Shutdown::Both);
            }
        }
        *next += 1;
        slots.insert(
            *next,
            Slot {
                stream: handle,
                waiting_since: Some(Instant::now()),
            },
        );
        Some(*next)
    }

    fn leave(&self, id: u64) {
        let mut guard = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        guard.1.remove(&id);
    }

    /// Mark a connection as waiting on its client (`true`) or replying.
    fn set_waiting(&self, id: u64, waiting: bool) {
        let mut guard = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = guard.1.get_mut(&id) {
            slot.waiting_since = waiting.then(Instant::now);
        }
    }

    /// Serve the requests of one connection until it closes, idles out or
    /// is closed to make room.
    fn connection(&self, id: u64, mut stream: TcpStream) -> std::io::Result<()> {
        stream.set_nodelay(true)?;
        stream.set_write_timeout(Some(IDLE_TIMEOUT))?;
        let mut buf: Vec<u8> = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            self.set_waiting(id, true);
            // The head's clock starts with its first byte (or now, when
            // bytes of it are already here).
            let mut started = (!buf.is_empty()).then(Instant::now);
            let head = loop {
                match parse_head(&buf) {
                    Ok(Some(head)) => break head,
                    Ok(None) if buf.len() < MAX_HEAD => {}
                    Ok(None) => return self.reject(&mut stream, 431, "request head too large"),
                    Err(why) => return self.reject(&mut stream, 400, &why.0),
                }
                let wait = match started {
                    None => IDLE_TIMEOUT,
                    Some(t) => match HEAD_TIMEOUT.checked_sub(t.elapsed()) {
                        Some(left) if !left.is_zero() => left,
                        _ => return self.reject(&mut stream, 408, "request head too slow"),
                    },
                };
                stream.set_read_timeout(Some(wait))?;
                let n = match stream.read(&mut chunk) {
                    Ok(n) => n,
                    Err(e) if is_timeout(&e) && started.is_some() => {
                        return self.reject(&mut stream, 408, "request head too slow")
                    }
                    Err(e) => return Err(e),
                };
                if n == 0 {
                    return Ok(());
                }
                started.get_or_insert_with(Instant::now);
                buf.extend_from_slice(&chunk[..n]);
            };
            buf.drain(..head.len);
            self.set_waiting(id, false);
            let reply = self.answer(&head);
            eprintln!("{} {} {}", head.method, head.path, reply.status);
            stream.write_all(&reply.bytes(head.method == "HEAD", head.keep_alive))?;
            stream.flush()?;
            if !head.keep_alive {
                return Ok(());
            }
        }
    }

    fn reject(&self, stream: &mut TcpStream, status: u16, why: &str) -> std::io::Result<()> {
        let reply = self.with_policy(Reply::text(status, why));
        stream.write_all(&reply.bytes(false, false))
    }

    fn with_policy(&self, mut reply: Reply) -> Reply {
        let inert = reply.status < 400
            && reply
                .headers
                .iter()
                .any(|(k, v)| *k == "Content-Type" && INERT.iter().any(|t| v.starts_with(t)));
        if !inert {
            reply
                .headers
                .push(("Content-Security-Policy", self.csp.clone()));
            reply
                .headers
                .push(("Referrer-Policy", "no-referrer".into()));
        }
        reply
            .headers
            .push(("X-Content-Type-Options", "nosniff".into()));
        reply
    }

    /// The reply to one request.
    fn answer(&self, head: &Head) -> Reply {
        self.with_policy(self.answer_bare(head))
    }

    fn answer_bare(&self, head: &Head) -> Reply {
        if head.method != "GET" && head.method != "HEAD" {
            return Reply::text(405, "method not allowed");
        }
        if !self.hosts.is_empty() {
            let host = head.host.as_deref().map(host_name);
            // HTTP/1.0 clients may send no Host; a browser always does.
            if host.is_some_and(|h| !self.hosts.iter().any(|a| a.eq_ignore_ascii_case(h))) {
                return Reply::text(403, "this server answers only requests to localhost");
            }
        }
        let Some(path) = resolve(&self.root, &head.path) else {
            return Reply::text(404, "not found");
        };
        let meta = match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => m,
            _ => return Reply::text(404, "not found"),
        };
        let tag = etag(&meta);
        let ctype = content_type(&path);
        let immutable = path.starts_with(self.root.join("index").join("shards"));
        let compressible = !immutable
            && (ctype.starts_with("text/")
                || ctype == "application/json"
                || ctype == "application/wasm");
        // A range is of the file's own bytes, so it is served as they are.
        let gzip = compressible && head.gzip && head.range.is_none();
        let tag = tag.map(|t| {
            if gzip {
                format!("{t}-gz\"")
            } else {
                format!("{t}\"")
            }
        });
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
            ("Accept-Ranges", "bytes".to_string()),
        ];
        if compressible {
            headers.push(("Vary", "Accept-Encoding".into()));
        }
        if let Some(tag) = &tag {
            headers.push(("ETag", tag.clone()));
            if let Some(wanted) = &head.if_none_match {
                if wanted
                    .split(',')
                    .any(|v| v.trim() == tag || v.trim() == "*")
                {
                    return Reply {
                        status: 304,
                        headers,
                        body: Body::Empty,
                    };
                }
            }
        }
        if gzip {
            return match self.gzipped(&path, tag.as_deref().unwrap_or("")) {
                Ok(body) => {
                    headers.push(("Content-Encoding", "gzip".into()));
                    Reply {
                        status: 200,
                        headers,
                        body: Body::Shared(body),
                    }
                }
                Err(e) => Reply::text(500, &format!("cannot read: {e}")),
            };
        }
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) => return Reply::text(500, &format!("cannot read: {e}")),
        };
        // `If-Range` with another version: the whole file.
        let range = head
            .range
            .as_deref()
            .filter(|_| head.if_range.is_none() || head.if_range == tag);
        match range.map(|r| byte_range(r, bytes.len())) {
            None | Some(RangeAsk::Ignore) => Reply {
                status: 200,
                headers,
                body: Body::Owned(bytes),
            },
            Some(RangeAsk::Unsatisfiable) => {
                let mut r = Reply::text(416, "range not satisfiable");
                r.headers
                    .push(("Content-Range", format!("bytes */{}", bytes.len())));
                r
            }
            Some(RangeAsk::Bytes(a, b)) => {
                headers.push(("Content-Range", format!("bytes {a}-{b}/{}", bytes.len())));
                Reply {
                    status: 206,
                    headers,
                    body: Body::Owned(bytes[a..=b].to_vec()),
                }
            }
        }
    }

    /// The gzipped body of a file, compressed once per version: the first
    /// request compresses it, those that come meanwhile wait for that one.
    fn gzipped(&self, path: &Path, tag: &str) -> std::io::Result<Arc<Vec<u8>>> {
        let cell = {
            let mut cache = self.gzipped.lock().unwrap_or_else(PoisonError::into_inner);
            match cache.entries.get(path) {
                Some((t, cell)) if t == tag => cell.clone(),
                _ => {
                    if cache.bytes > GZIP_CACHE_BYTES {
                        cache.entries.clear();
                        cache.bytes = 0;
                    }
                    let cell = Arc::new(OnceLock::new());
                    cache
                        .entries
                        .insert(path.to_path_buf(), (tag.to_string(), cell.clone()));
                    cell
                }
            }
        };
        let body = cell.get_or_init(|| {
            let body = std::fs::read(path).map(|b| Arc::new(gzip(&b)));
            if let Ok(b) = &body {
                let mut cache = self.gzipped.lock().unwrap_or_else(PoisonError::into_inner);
                cache.bytes += b.len();
            }
            body.map_err(|e| e.to_string())
        });
        match body {
            Ok(b) => Ok(b.clone()),
            Err(e) => {
                // Not kept: the next request tries again.
                let mut cache = self.gzipped.lock().unwrap_or_else(PoisonError::into_inner);
                cache.entries.remove(path);
                Err(std::io::Error::other(e.clone()))
            }
        }
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// The site's policy: the one its landing page declares (the site writer
/// puts the configured policy there), else the one the site writer wrote
/// beside the widget (a maintainer's own landing page), else the default.
fn site_policy(root: &Path) -> String {
    let written = || {
        let text = std::fs::read_to_string(root.join(crate::site::POLICY_FILE)).ok()?;
        let line = text.trim();
        (!line.is_empty() && line.chars().all(|c| (' '..='~').contains(&c)))
            .then(|| line.to_string())
    };
    std::fs::read_to_string(root.join("index.html"))
        .ok()
        .and_then(|page| meta_policy(&page))
        .or_else(written)
        .unwrap_or_else(|| content_security_policy(&[]))
}

/// The `content` of a `<meta http-equiv="Content-Security-Policy">`.
fn meta_policy(page: &str) -> Option<String> {
    let lower = page.to_ascii_lowercase();
    let at = lower.find("http-equiv=\"content-security-policy\"")?;
    let tag_start = lower[..at].rfind('<')?;
    let tag_end = at + lower[at..].find('>')?;
    let tag = &page[tag_start..tag_end];
    let c = tag.to_ascii_lowercase().find("content=\"")? + "content=\"".len();
    let end = c + tag[c..].find('"')?;
    let policy = tag[c..end].replace("&#39;", "'").replace("&quot;", "\"");
    let policy = policy.replace("&amp;", "&");
    // A header value is one line of visible characters.
    (!policy.is_empty() && policy.chars().all(|ch| (' '..='~').contains(&ch))).then_some(policy)
}

/// The host name of a `Host` header value, without the port.
fn host_name(value: &str) -> &str {
    let v = value.trim();
    if v.starts_with('[') {
        return v.find(']').map_or(v, |i| &v[..=i]);
    }
    v.rsplit_once(':').map_or(v, |(h, _)| h)
}

/// Content types that a browser neither runs nor shows as a page with
/// scripts of its own: their replies need no Content-Security-Policy.
const INERT: [&str; 4] = [
    "application/octet-stream",
    "application/wasm",
    "application/json",
    "text/css",
];

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "wasm" => "application/wasm",
        "png" => "image/png",
        "svg" => "image/svg+xml",
        _ => "application/octet-stream",
    }
}

/// Resolve a request path to a file inside `root` (canonical), refusing
/// anything that leaves it: `..`, and symbolic links that point outside.
fn resolve(root: &Path, url: &str) -> Option<PathBuf> {
    let path = url.split(['?', '#']).next().unwrap_or("");
    let decoded = percent_decode(path)?;
    if decoded.contains('\0') {
        return None;
    }
    let mut out = root.to_path_buf();
    for c in Path::new(decoded.trim_start_matches('/')).components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            _ => return None,
        }
    }
    let mut real = out.canonicalize().ok()?;
    if real.is_dir() {
        real = real.join("index.html").canonicalize().ok()?;
    }
    real.starts_with(root).then_some(real)
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
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).expect("writing to memory");
    e.finish().expect("writing to memory")
}

/// A validator for revalidation: size and modification time, without the
/// closing quote (the caller marks the gzipped variant).
fn etag(m: &std::fs::Metadata) -> Option<String> {
    let t = m
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some(format!("\"{:x}-{:x}", m.len(), t.as_nanos()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_stays_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("index")).unwrap();
        std::fs::write(root.join("index/codegloss.json"), "{}").unwrap();
        std::fs::write(root.join("a b.js"), "x").unwrap();
        std::fs::write(root.join("index.html"), "x").unwrap();
        assert_eq!(
            resolve(&root, "/index/codegloss.json?x=1"),
            Some(root.join("index/codegloss.json"))
        );
        assert_eq!(resolve(&root, "/"), Some(root.join("index.html")));
        assert_eq!(resolve(&root, "/../etc/passwd"), None);
        assert_eq!(resolve(&root, "/%2e%2e/etc/passwd"), None);
        assert_eq!(resolve(&root, "/a%20b.js"), Some(root.join("a b.js")));
        assert_eq!(resolve(&root, "/a%00b.js"), None);
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/etc/passwd", root.join("passwd")).unwrap();
            std::os::unix::fs::symlink("/", root.join("rootdir")).unwrap();
            std::os::unix::fs::symlink(root.join("a b.js"), root.join("inside.js")).unwrap();
            assert_eq!(resolve(&root, "/passwd"), None);
            assert_eq!(resolve(&root, "/rootdir/proc/self/environ"), None);
            assert_eq!(resolve(&root, "/rootdir/etc/passwd"), None);
            // A link that stays inside is served.
            assert_eq!(resolve(&root, "/inside.js"), Some(root.join("a b.js")));
        }
    }

    #[test]
    fn a_file_is_compressed_once_per_version() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("index")).unwrap();
        std::fs::write(dir.path().join("index/codegloss.json"), "{}").unwrap();
        let page = dir.path().join("page.html");
        std::fs::write(&page, "hello ".repeat(1000)).unwrap();
        let server = Server::new(dir.path(), IpAddr::from([127, 0, 0, 1])).unwrap();
        let a = server.gzipped(&page, "v1").unwrap();
        let b = server.gzipped(&page, "v1").unwrap();
        assert!(Arc::ptr_eq(&a, &b), "compressed twice");
        std::fs::write(&page, "changed ".repeat(1000)).unwrap();
        let c = server.gzipped(&page, "v2").unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        let mut text = String::new();
        flate2::read::GzDecoder::new(c.as_slice())
            .read_to_string(&mut text)
            .unwrap();
        assert!(text.starts_with("changed "));
    }

    #[test]
    fn host_names_and_policies() {
        assert_eq!(host_name("localhost:8700"), "localhost");
        assert_eq!(host_name("[::1]:8700"), "[::1]");
        assert_eq!(host_name("127.0.0.1"), "127.0.0.1");
        assert_eq!(host_name("evil.example:80"), "evil.example");
        let page = r#"<head><meta http-equiv="Content-Security-Policy" content="default-src &#39;self&#39;; connect-src &#39;self&#39; https://x.org"></head>"#;
        assert_eq!(
            meta_policy(page).as_deref(),
            Some("default-src 'self'; connect-src 'self' https://x.org")
        );
        assert_eq!(meta_policy("<html></html>"), None);
        assert_eq!(
            meta_policy("<meta http-equiv=\"Content-Security-Policy\" content=\"a\nb\">"),
            None
        );
    }
}
