//! `codegloss serve`: a small static file server for a site folder on
//! loopback (ES modules, `fetch` and wasm do not work from `file://`).
//! It is a reader's local server, so it is hardened as one: it serves only
//! files whose resolved path stays inside the site folder, bounds what a
//! slow or idle client can hold, and sets the site's Content-Security-Policy.

use std::net::{IpAddr, SocketAddr};
use std::path::{Component, Path, PathBuf};

use codegloss_core::web::WEB_MANIFEST;

use crate::error::IndexError;

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
}
