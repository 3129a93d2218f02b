//! Cutting a server-sent-event byte stream into lines, for both answer
//! transports (the native `llm` module and the browser's `transport`), so
//! that both frame a stream the same way and neither trusts the server
//! with its memory or time.
//!
//! It exists because the answer server is outside codegloss: a line is
//! held only until its newline arrives, and never past
//! [`MAX_LINE_BYTES`] (a longer line is an error, not an ever-growing
//! buffer); each byte is scanned for a newline once and moved once, so a
//! stream of many lines in one chunk, or one line in many chunks, costs
//! time linear in its length. The lines themselves are parsed by
//! [`crate::chat::ChatStream`].

use thiserror::Error;

/// The longest line (newline excluded) a stream may send: event lines are
/// one small JSON object each.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// A line went on past [`MAX_LINE_BYTES`] without a newline.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
#[error("the server sent a line of more than {limit} bytes without a newline")]
pub struct LineTooLong {
    /// The limit, [`MAX_LINE_BYTES`].
    pub limit: usize,
}

/// The lines of a stream as its bytes arrive.
#[derive(Clone, Debug, Default)]
pub struct SseLines {
    /// Bytes of the line not finished yet.
    pending: Vec<u8>,
}

impl SseLines {
    /// A splitter at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add the next bytes of the stream; returns the lines they complete,
    /// without the `\n` or `\r\n` that ends them, invalid UTF-8 replaced
    /// by U+FFFD.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<String>, LineTooLong> {
        let mut lines = Vec::new();
        let mut rest = bytes;
        while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
            let (head, tail) = (&rest[..nl], &rest[nl + 1..]);
            let line = if self.pending.is_empty() {
                head
            } else {
                self.check(head.len())?;
                self.pending.extend_from_slice(head);
                &self.pending[..]
            };
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.len() > MAX_LINE_BYTES {
                return Err(too_long());
            }
            lines.push(String::from_utf8_lossy(line).into_owned());
            self.pending.clear();
            rest = tail;
        }
        self.check(rest.len())?;
        self.pending.extend_from_slice(rest);
        Ok(lines)
    }

    /// The unfinished last line when the stream ends, if any.
    pub fn finish(self) -> Option<String> {
        let line = self.pending.strip_suffix(b"\r").unwrap_or(&self.pending);
        (!line.is_empty()).then(|| String::from_utf8_lossy(line).into_owned())
    }

    /// Fail before the pending line would pass the limit (a trailing `\r`
    /// may still be cut, hence the one byte of slack).
    fn check(&self, more: usize) -> Result<(), LineTooLong> {
        if self.pending.len().saturating_add(more) > MAX_LINE_BYTES + 1 {
            return Err(too_long());
        }
        Ok(())
    }
}

fn too_long() -> LineTooLong {
    LineTooLong {
        limit: MAX_LINE_BYTES,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(chunks: &[&[u8]]) -> Result<(Vec<String>, Option<String>), LineTooLong> {
        let mut s = SseLines::new();
        let mut out = Vec::new();
        for c in chunks {
            out.extend(s.push(c)?);
        }
        Ok((out, s.finish()))
    }

    #[test]
    fn lines_are_the_same_however_the_bytes_are_cut() {
        let stream = b"data: {\"a\":1}\r\n\r\n: keep-alive\ndata: [DONE]\nrest\r";
        let whole = all(&[stream]).unwrap();
        assert_eq!(
            whole,
            (
                vec![
                    "data: {\"a\":1}".to_string(),
                    String::new(),
                    ": keep-alive".into(),
                    "data: [DONE]".into()
                ],
                Some("rest".into())
            )
        );
        for cut in 0..stream.len() {
            let (a, b) = stream.split_at(cut);
            assert_eq!(all(&[a, b]).unwrap(), whole, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(all(&bytes).unwrap(), whole);
        assert_eq!(all(&[b"\xff\n"]).unwrap().0, vec!["\u{fffd}".to_string()]);
    }

    #[test]
    fn a_line_longer_than_the_limit_is_an_error_in_one_chunk_or_many() {
        let long = vec![b'x'; MAX_LINE_BYTES + 2];
        assert_eq!(all(&[&long]), Err(too_long()));
        let pieces: Vec<&[u8]> = long.chunks(4096).collect();
        assert_eq!(all(&pieces), Err(too_long()));
        let mut line = long.clone();
        line.push(b'\n');
        assert_eq!(all(&[&line]), Err(too_long()));
        // At the limit it is still a line, with or without `\r`.
        let mut ok = vec![b'y'; MAX_LINE_BYTES];
        ok.extend_from_slice(b"\r\n");
        let pieces: Vec<&[u8]> = ok.chunks(1000).collect();
        assert_eq!(all(&pieces).unwrap().0[0].len(), MAX_LINE_BYTES);
    }

    #[test]
    fn many_lines_in_one_chunk_take_linear_time() {
        // 4 MiB of short lines in one chunk: each byte is scanned and moved
        // once (the browser's former loop drained the buffer per line, which
        // is quadratic: minutes here).
        let stream = b"data: x\n".repeat(1 << 19);
        let started = std::time::Instant::now();
        let mut s = SseLines::new();
        assert_eq!(s.push(&stream).unwrap().len(), 1 << 19);
        assert!(started.elapsed().as_secs() < 20);
    }
}
