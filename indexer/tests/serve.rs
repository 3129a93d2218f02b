//! `codegloss serve` as an attacker and a crowd meet it: the real binary
//! on loopback, driven over raw TCP. Symbolic links out of the site, a
//! foreign `Host`, connections that hold slots without asking anything,
//! ranges, the Content-Security-Policy header.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `codegloss serve`, killed on drop.
struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A minimal site folder: serve needs only `index/codegloss.json`.
fn site(dir: &Path) {
    std::fs::create_dir_all(dir.join("index/shards")).unwrap();
    std::fs::write(dir.join("index/codegloss.json"), "{\"format\":\"test\"}").unwrap();
    std::fs::write(
        dir.join("index.html"),
        "<!doctype html><title>t</title><p>hello</p>\n".repeat(20),
    )
    .unwrap();
    std::fs::write(dir.join("data.txt"), "0123456789").unwrap();
}

fn start(dir: &Path) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_codegloss"))
        .args(["serve", "--port", "0"])
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    assert!(!addr.is_empty(), "serve printed no URL");
    Server { child, addr }
}

/// Status line, head and body of one request (sent with `Connection: close`).
fn request(addr: &str, head: &str) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let Some(split) = text.find("\r\n\r\n") else {
        return (0, text, Vec::new());
    };
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text[..split].to_string(), out[split + 4..].to_vec())
}

fn get(addr: &str, path: &str, extra: &str) -> (u16, String, Vec<u8>) {
    request(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{extra}Connection: close\r\n\r\n"),
    )
}

#[test]
fn serves_nothing_outside_the_site_folder() {
    let dir = tempfile::tempdir().unwrap();
    site(dir.path());
    std::os::unix::fs::symlink("/etc/passwd", dir.path().join("passwd")).unwrap();
    std::os::unix::fs::symlink("/", dir.path().join("rootdir")).unwrap();
    std::os::unix::fs::symlink("..", dir.path().join("up")).unwrap();
    let server = start(dir.path());
    for path in [
        "/passwd",
        "/rootdir/etc/passwd",
        "/rootdir/proc/self/environ",
        "/up/",
        "/../etc/passwd",
        "/%2e%2e/etc/passwd",
    ] {
        let (status, _, body) = get(&server.addr, path, "");
        assert_eq!(status, 404, "{path}: {}", String::from_utf8_lossy(&body));
    }
    let (status, _, body) = get(&server.addr, "/data.txt", "");
    assert_eq!((status, body.as_slice()), (200, &b"0123456789"[..]));
}

#[test]
fn answers_only_requests_to_localhost() {
    let dir = tempfile::tempdir().unwrap();
    site(dir.path());
    let server = start(dir.path());
    let port = server.addr.rsplit(':').next().unwrap();
    for host in [
        "localhost".to_string(),
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
    ] {
        let head = format!("GET /data.txt HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        assert_eq!(request(&server.addr, &head).0, 200, "{host}");
    }
    // A page on another site, through a name rebound to 127.0.0.1.
    let head = format!(
        "GET /data.txt HTTP/1.1\r\nHost: attacker.example:{port}\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(request(&server.addr, &head).0, 403);
}

#[test]
fn idle_and_slow_connections_do_not_lock_out_a_new_client() {
    let dir = tempfile::tempdir().unwrap();
    site(dir.path());
    let server = start(dir.path());
    let mut held = Vec::new();
    // More connections than the server has slots: some say nothing, some
    // send half a head, some keep alive after one request.
    for i in 0..300 {
        let mut s = TcpStream::connect(&server.addr).unwrap();
        match i % 3 {
            0 => {}
            1 => s
                .write_all(b"GET /data.txt HTTP/1.1\r\nHost: localhost\r\n")
                .unwrap(),
            _ => {
                s.write_all(b"GET /data.txt HTTP/1.1\r\nHost: localhost\r\n\r\n")
                    .unwrap();
            }
        }
        held.push(s);
    }
    std::thread::sleep(Duration::from_millis(300));
    for _ in 0..5 {
        let (status, head, body) = get(&server.addr, "/data.txt", "");
        assert_eq!(status, 200, "a new client got: {head:?}");
        assert_eq!(body, b"0123456789");
    }
    drop(held);
}

#[test]
fn ranges_policy_and_compression() {
    let dir = tempfile::tempdir().unwrap();
    site(dir.path());
    let server = start(dir.path());
    let (status, head, body) = get(&server.addr, "/data.txt", "Range: bytes=2-5\r\n");
    assert_eq!(status, 206, "{head}");
    assert_eq!(body, b"2345");
    assert!(head.contains("Content-Range: bytes 2-5/10"), "{head}");
    let (status, _, body) = get(&server.addr, "/data.txt", "Range: bytes=-3\r\n");
    assert_eq!((status, body.as_slice()), (206, &b"789"[..]));
    let (status, head, _) = get(&server.addr, "/data.txt", "Range: bytes=10-\r\n");
    assert_eq!(status, 416, "{head}");
    assert!(head.contains("Content-Range: bytes */10"), "{head}");

    // A page carries the policy; without a policy in the landing page,
    // the default one.
    let (status, head, _) = get(&server.addr, "/", "Accept-Encoding: gzip\r\n");
    assert_eq!(status, 200);
    let policy = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Security-Policy: "))
        .unwrap_or_else(|| panic!("no policy header: {head}"));
    assert!(policy.contains("default-src 'self'"), "{policy}");
    assert!(!policy.contains("unsafe-inline"), "{policy}");
    assert!(head.contains("Content-Encoding: gzip"), "{head}");
    // Data that no browser runs or shows as a page (shards, the manifest)
    // goes without it, never without `nosniff`.
    for path in ["/data.txt", "/index/codegloss.json"] {
        let (status, head, _) = get(&server.addr, path, "");
        assert_eq!(status, 200, "{head}");
        assert!(!head.contains("Content-Security-Policy"), "{head}");
        assert!(head.contains("X-Content-Type-Options: nosniff"), "{head}");
    }
    let (status, head, _) = get(&server.addr, "/missing.bin", "");
    assert_eq!(status, 404, "{head}");
    assert!(head.contains("Content-Security-Policy"), "an error: {head}");
    // The same compressed bytes twice (compressed once, kept).
    let (_, head2, body2) = get(&server.addr, "/", "Accept-Encoding: gzip\r\n");
    let (_, _, body1) = get(&server.addr, "/", "Accept-Encoding: gzip\r\n");
    assert_eq!(body1, body2);
    let etag = |h: &str| {
        h.lines()
            .find_map(|l| l.strip_prefix("ETag: "))
            .map(str::to_string)
    };
    let gz_tag = etag(&head2).unwrap();
    let (_, plain_head, _) = get(&server.addr, "/", "");
    assert_ne!(
        Some(gz_tag.clone()),
        etag(&plain_head),
        "variants share a tag"
    );
    let (status, _, _) = get(
        &server.addr,
        "/",
        &format!("Accept-Encoding: gzip\r\nIf-None-Match: {gz_tag}\r\n"),
    );
    assert_eq!(status, 304);
}

#[test]
fn the_landing_pages_policy_is_the_header() {
    let dir = tempfile::tempdir().unwrap();
    site(dir.path());
    std::fs::write(
        dir.path().join("index.html"),
        "<head><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'self'; connect-src 'self' https://llm.example.org\"></head>",
    )
    .unwrap();
    let server = start(dir.path());
    let (_, head, _) = get(&server.addr, "/", "");
    assert!(
        head.contains(
            "Content-Security-Policy: default-src 'self'; connect-src 'self' https://llm.example.org"
        ),
        "{head}"
    );
}

#[test]
fn a_maintainers_own_landing_page_gets_the_written_policy() {
    let dir = tempfile::tempdir().unwrap();
    site(dir.path());
    std::fs::create_dir_all(dir.path().join("codegloss")).unwrap();
    std::fs::write(
        dir.path().join("codegloss/content-security-policy.txt"),
        "default-src 'self'; connect-src 'self' https://answers.example.org\n",
    )
    .unwrap();
    let server = start(dir.path());
    let (_, head, _) = get(&server.addr, "/", "");
    assert!(
        head.contains(
            "Content-Security-Policy: default-src 'self'; connect-src 'self' https://answers.example.org\r\n"
        ),
        "{head}"
    );
}
