//! The HTTP of `codegloss serve`: request heads (parsed by `httparse`,
//! bodies refused), `Range` values, and replies written out with their
//! status line and headers.

use std::sync::Arc;

/// What a `Range` header asks of a body of a given length.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum RangeAsk {
    /// First and last byte, inclusive.
    Bytes(usize, usize),
    /// No byte of the body is in the range: 416.
    Unsatisfiable,
    /// Not a single byte range we serve (other units, several ranges,
    /// malformed): the whole body, as RFC 9110 allows.
    Ignore,
}

pub(super) fn byte_range(value: &str, len: usize) -> RangeAsk {
    let Some(spec) = value.trim().strip_prefix("bytes=") else {
        return RangeAsk::Ignore;
    };
    if spec.contains(',') {
        return RangeAsk::Ignore;
    }
    let Some((a, b)) = spec.trim().split_once('-') else {
        return RangeAsk::Ignore;
    };
    let (a, b) = (a.trim(), b.trim());
    let parse = |s: &str| s.parse::<usize>().ok();
    match (a.is_empty(), b.is_empty()) {
        // The last n bytes.
        (true, false) => match parse(b) {
            Some(0) => RangeAsk::Unsatisfiable,
            Some(n) if len > 0 => RangeAsk::Bytes(len.saturating_sub(n), len - 1),
            Some(_) => RangeAsk::Unsatisfiable,
            None => RangeAsk::Ignore,
        },
        (false, _) => {
            let Some(first) = parse(a) else {
                return RangeAsk::Ignore;
            };
            let last = if b.is_empty() {
                Some(usize::MAX)
            } else {
                parse(b)
            };
            match last {
                None => RangeAsk::Ignore,
                Some(last) if last < first => RangeAsk::Ignore,
                Some(_) if first >= len => RangeAsk::Unsatisfiable,
                Some(last) => RangeAsk::Bytes(first, last.min(len - 1)),
            }
        }
        (true, true) => RangeAsk::Ignore,
    }
}

/// One parsed request head.
pub(super) struct Head {
    pub(super) method: String,
    pub(super) path: String,
    pub(super) host: Option<String>,
    pub(super) keep_alive: bool,
    pub(super) gzip: bool,
    pub(super) if_none_match: Option<String>,
    pub(super) range: Option<String>,
    pub(super) if_range: Option<String>,
    /// Bytes of the head (what follows belongs to the next request).
    pub(super) len: usize,
}

/// Why a request head is refused (answered 400 with this text).
#[derive(Debug)]
pub(super) struct BadRequest(pub(super) String);

impl std::fmt::Display for BadRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A request head: none while it is incomplete.
pub(super) fn parse_head(buf: &[u8]) -> Result<Option<Head>, BadRequest> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(BadRequest(format!("bad request: {e}"))),
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
        return Err(BadRequest("requests with a body are not served".into()));
    }
    Ok(Some(Head {
        method: req.method.unwrap_or("").to_string(),
        path: req.path.unwrap_or("/").to_string(),
        host: value("Host"),
        keep_alive: if req.version == Some(0) {
            connection.contains("keep-alive")
        } else {
            !connection.contains("close")
        },
        gzip: value("Accept-Encoding").is_some_and(|v| v.contains("gzip")),
        if_none_match: value("If-None-Match"),
        range: value("Range"),
        if_range: value("If-Range"),
        len,
    }))
}

/// A reply body: owned, shared with the gzip cache, or none.
pub(super) enum Body {
    Empty,
    Owned(Vec<u8>),
    Shared(Arc<Vec<u8>>),
}

impl Body {
    fn as_slice(&self) -> &[u8] {
        match self {
            Body::Empty => &[],
            Body::Owned(b) => b,
            Body::Shared(b) => b,
        }
    }
}

/// A response of `codegloss serve`.
pub(super) struct Reply {
    pub(super) status: u16,
    pub(super) headers: Vec<(&'static str, String)>,
    pub(super) body: Body,
}

impl Reply {
    pub(super) fn text(status: u16, text: &str) -> Self {
        Reply {
            status,
            headers: vec![("Content-Type", "text/plain; charset=utf-8".into())],
            body: Body::Owned(text.as_bytes().to_vec()),
        }
    }

    pub(super) fn bytes(&self, head_only: bool, keep_alive: bool) -> Vec<u8> {
        let reason = match self.status {
            200 => "OK",
            206 => "Partial Content",
            304 => "Not Modified",
            400 => "Bad Request",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Method Not Allowed",
            408 => "Request Timeout",
            416 => "Range Not Satisfiable",
            431 => "Request Header Fields Too Large",
            503 => "Service Unavailable",
            _ => "Internal Server Error",
        };
        let mut out = format!("HTTP/1.1 {} {reason}\r\n", self.status);
        for (k, v) in &self.headers {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        let body = self.body.as_slice();
        if self.status != 304 {
            out.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        out.push_str(if keep_alive {
            "Connection: keep-alive\r\n\r\n"
        } else {
            "Connection: close\r\n\r\n"
        });
        let mut bytes = out.into_bytes();
        if !head_only && self.status != 304 {
            bytes.extend_from_slice(body);
        }
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_heads() {
        let h =
            parse_head(b"GET /a.js HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip, br\r\n\r\nGET")
                .unwrap()
                .unwrap();
        assert_eq!((h.method.as_str(), h.path.as_str()), ("GET", "/a.js"));
        assert!(h.keep_alive && h.gzip && h.if_none_match.is_none());
        assert_eq!(h.host.as_deref(), Some("x"));
        assert_eq!(h.len, 58);
        assert!(parse_head(b"GET / HTTP/1.1\r\nHost").unwrap().is_none());
        let h = parse_head(b"GET / HTTP/1.0\r\n\r\n").unwrap().unwrap();
        assert!(!h.keep_alive);
        let h = parse_head(b"GET / HTTP/1.1\r\nConnection: close\r\nIf-None-Match: \"a\"\r\nRange: bytes=0-1\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(!h.keep_alive);
        assert_eq!(h.if_none_match.as_deref(), Some("\"a\""));
        assert_eq!(h.range.as_deref(), Some("bytes=0-1"));
        assert!(parse_head(b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello").is_err());
        assert!(parse_head(b"\x01\x02 nonsense\r\n\r\n").is_err());
    }

    #[test]
    fn byte_ranges() {
        use RangeAsk::*;
        assert_eq!(byte_range("bytes=0-9", 100), Bytes(0, 9));
        assert_eq!(byte_range("bytes=90-", 100), Bytes(90, 99));
        assert_eq!(byte_range("bytes=-10", 100), Bytes(90, 99));
        assert_eq!(byte_range("bytes=-500", 100), Bytes(0, 99));
        assert_eq!(byte_range("bytes=50-500", 100), Bytes(50, 99));
        assert_eq!(byte_range("bytes=100-", 100), Unsatisfiable);
        assert_eq!(byte_range("bytes=-0", 100), Unsatisfiable);
        assert_eq!(byte_range("bytes=0-", 0), Unsatisfiable);
        assert_eq!(byte_range("bytes=9-1", 100), Ignore);
        assert_eq!(byte_range("bytes=0-1,5-6", 100), Ignore);
        assert_eq!(byte_range("items=0-1", 100), Ignore);
        assert_eq!(byte_range("bytes=x-1", 100), Ignore);
    }
}
