//! Reading a chat-completions response: one server-sent-event line at a
//! time ([`parse_sse_line`], folded by [`ChatStream`] into the answer
//! text, its usage and whether the stream has finished), or one plain JSON
//! body ([`parse_completion`]). The lines are cut by
//! [`crate::sse::SseLines`]; the transports feed them here.

use super::repeat::{cut_answer, repetition_cut};
use super::{ChatError, ChatResult};

/// One event of a streamed chat completion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamEvent {
    /// More answer text.
    Delta(String),
    /// The stream is finished (`data: [DONE]` or a finish reason).
    Done,
    /// Token usage reported by the server.
    Usage {
        /// Prompt tokens.
        prompt: u64,
        /// Completion tokens.
        completion: u64,
    },
    /// Nothing to act on (comments, keep-alives, role-only deltas).
    Skip,
}

/// Parse one line of a server-sent-event stream of
/// `/v1/chat/completions` (`data: {...}`).
pub fn parse_sse_line(line: &str) -> Result<StreamEvent, ChatError> {
    let line = line.trim_end_matches('\r');
    let Some(data) = line.strip_prefix("data:") else {
        return Ok(StreamEvent::Skip);
    };
    let data = data.trim();
    if data == "[DONE]" {
        return Ok(StreamEvent::Done);
    }
    if data.is_empty() {
        return Ok(StreamEvent::Skip);
    }
    let v: serde_json::Value = serde_json::from_str(data)
        .map_err(|e| ChatError::Malformed(format!("{e}: {}", shorten(data))))?;
    if let Some(err) = v.get("error") {
        return Err(ChatError::Server(error_text(err)));
    }
    if let Some(u) = v.get("usage").filter(|u| !u.is_null()) {
        if v["choices"].as_array().is_none_or(|c| c.is_empty()) {
            return Ok(StreamEvent::Usage {
                prompt: u["prompt_tokens"].as_u64().unwrap_or(0),
                completion: u["completion_tokens"].as_u64().unwrap_or(0),
            });
        }
    }
    let choice = v
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| ChatError::Malformed(format!("no choices: {}", shorten(data))))?;
    if let Some(text) = choice["delta"]["content"].as_str() {
        if !text.is_empty() {
            return Ok(StreamEvent::Delta(text.to_string()));
        }
    }
    if choice["finish_reason"].is_string() {
        return Ok(StreamEvent::Done);
    }
    Ok(StreamEvent::Skip)
}

/// A streamed answer as its lines arrive: feed each line to
/// [`ChatStream::feed`], hand each delta it returns to the reader, and
/// [`ChatStream::finish`] when the body ends (or once
/// [`ChatStream::is_complete`]).
#[derive(Clone, Debug, Default)]
pub struct ChatStream {
    text: String,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    done: bool,
    /// Set when the answer began to repeat itself: the text is cut and the
    /// stream has said all it should.
    cut_repetition: bool,
}

impl ChatStream {
    /// A stream before its first line.
    pub fn new() -> Self {
        Self::default()
    }

    /// Take one line (without its newline); the text it adds, if any.
    pub fn feed(&mut self, line: &str) -> Result<Option<String>, ChatError> {
        match parse_sse_line(line)? {
            StreamEvent::Delta(_) if self.cut_repetition => {}
            StreamEvent::Delta(d) => {
                let before = self.text.len();
                self.text.push_str(&d);
                let Some(cut) = repetition_cut(&self.text) else {
                    return Ok(Some(d));
                };
                // The reader already has what came before this delta; the
                // final text ([`ChatStream::finish`]) drops the copy.
                self.cut_repetition = true;
                self.done = true;
                let fresh = self.text.get(before..cut.max(before)).unwrap_or_default();
                let fresh = (!fresh.is_empty()).then(|| fresh.to_string());
                self.text = cut_answer(&self.text, cut);
                return Ok(fresh);
            }
            StreamEvent::Usage { prompt, completion } => {
                self.prompt_tokens = Some(prompt);
                self.completion_tokens = Some(completion);
            }
            StreamEvent::Done => self.done = true,
            StreamEvent::Skip => {}
        }
        Ok(None)
    }

    /// Whether the stream has said all it will: finished, and its usage
    /// reported.
    pub fn is_complete(&self) -> bool {
        self.done && (self.prompt_tokens.is_some() || self.cut_repetition)
    }

    /// Whether the answer began to repeat itself, so the stream should be
    /// closed now (the server stops generating when the reader leaves).
    pub fn cut_repetition(&self) -> bool {
        self.cut_repetition
    }

    /// The error for a body that broke off now, with the transport's cause.
    pub fn broke_off(&self, cause: Option<String>) -> ChatError {
        ChatError::BrokeOff {
            chars: self.text.len(),
            cause,
        }
    }

    /// The answer once the body has ended: an error when the stream
    /// neither finished nor sent any text.
    pub fn finish(self) -> Result<ChatResult, ChatError> {
        if !self.done && self.text.is_empty() {
            return Err(ChatError::EmptyStream);
        }
        Ok(ChatResult {
            text: self.text,
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            streamed: true,
            cut_repetition: self.cut_repetition,
        })
    }
}

/// A non-streamed completion: text and token usage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    /// Answer text.
    pub text: String,
    /// Prompt tokens, when reported.
    pub prompt_tokens: Option<u64>,
    /// Completion tokens, when reported.
    pub completion_tokens: Option<u64>,
}

/// Parse a non-streamed `/v1/chat/completions` response body.
pub fn parse_completion(body: &str) -> Result<Completion, ChatError> {
    let v: serde_json::Value = serde_json::from_str(body)
        .map_err(|e| ChatError::Malformed(format!("{e}: {}", shorten(body))))?;
    if let Some(err) = v.get("error") {
        return Err(ChatError::Server(error_text(err)));
    }
    let text = v["choices"][0]["message"]["content"]
        .as_str()
        .ok_or_else(|| ChatError::Malformed(format!("no message content: {}", shorten(body))))?;
    Ok(Completion {
        text: text.to_string(),
        prompt_tokens: v["usage"]["prompt_tokens"].as_u64(),
        completion_tokens: v["usage"]["completion_tokens"].as_u64(),
    })
}

fn error_text(err: &serde_json::Value) -> String {
    err.get("message")
        .and_then(|m| m.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| err.to_string())
}

fn shorten(s: &str) -> String {
    let t: String = s.chars().take(160).collect();
    if t.len() < s.len() {
        format!("{t}...")
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_lines_parse_and_fail_clearly() {
        assert_eq!(
            parse_sse_line(r#"data: {"choices":[{"delta":{"content":"Hi"}}]}"#).unwrap(),
            StreamEvent::Delta("Hi".into())
        );
        assert_eq!(parse_sse_line("data: [DONE]").unwrap(), StreamEvent::Done);
        assert_eq!(parse_sse_line(": keep-alive").unwrap(), StreamEvent::Skip);
        assert_eq!(
            parse_sse_line(r#"data: {"choices":[{"delta":{},"finish_reason":"stop"}]}"#).unwrap(),
            StreamEvent::Done
        );
        assert_eq!(
            parse_sse_line(
                r#"data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#
            )
            .unwrap(),
            StreamEvent::Usage {
                prompt: 5,
                completion: 2
            }
        );
        let err = parse_sse_line("data: {not json").unwrap_err();
        assert!(
            err.to_string().contains("malformed streaming data"),
            "{err}"
        );
        let err = parse_sse_line(r#"data: {"error":{"message":"model not loaded"}}"#).unwrap_err();
        assert!(err.to_string().contains("model not loaded"));
        let c = parse_completion(
            r#"{"choices":[{"message":{"content":"ok [1]"}}],"usage":{"prompt_tokens":10,"completion_tokens":3}}"#,
        )
        .unwrap();
        assert_eq!(c.text, "ok [1]");
        assert_eq!((c.prompt_tokens, c.completion_tokens), (Some(10), Some(3)));
        assert!(parse_completion("<html>").is_err());
    }

    #[test]
    fn a_stream_folds_into_its_text_usage_and_end() {
        let mut s = ChatStream::new();
        let lines = [
            r#"data: {"choices":[{"delta":{"role":"assistant"}}]}"#,
            r#"data: {"choices":[{"delta":{"content":"Ha"}}]}"#,
            ": ping",
            r#"data: {"choices":[{"delta":{"content":"lo"},"finish_reason":null}]}"#,
            r#"data: {"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
        ];
        let deltas: Vec<Option<String>> = lines.iter().map(|l| s.feed(l).unwrap()).collect();
        assert_eq!(
            deltas,
            [None, Some("Ha".into()), None, Some("lo".into()), None]
        );
        assert!(!s.is_complete(), "finished, but the usage is still to come");
        s.feed(r#"data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2}}"#)
            .unwrap();
        assert!(s.is_complete());
        assert_eq!(
            s.finish().unwrap(),
            ChatResult {
                text: "Halo".into(),
                prompt_tokens: Some(7),
                completion_tokens: Some(2),
                streamed: true,
                cut_repetition: false,
            }
        );
        assert_eq!(ChatStream::new().finish(), Err(ChatError::EmptyStream));
        let mut done = ChatStream::new();
        done.feed("data: [DONE]").unwrap();
        assert_eq!(done.finish().unwrap().text, "");
        assert!(matches!(
            ChatStream::new().feed("data: {oops"),
            Err(ChatError::Malformed(_))
        ));
    }

    #[test]
    fn a_stream_that_loops_stops_where_the_copy_begins() {
        let said =
            "The halo is filled by `fillHalo` [2], which sends each face to its neighbour.\n\n";
        let block = "- [3] src/Halo.cpp:10-20\n```cpp\nvoid fillHalo() {\n    send(left);\n    receive(right);\n}\n```\n";
        let text = format!("{said}{}", block.repeat(6));
        let mut s = ChatStream::new();
        let mut shown = String::new();
        let mut fed = 0;
        for line in text.split_inclusive('\n') {
            let event = serde_json::json!({"choices": [{"delta": {"content": line}}]});
            if let Some(d) = s.feed(&format!("data: {event}")).unwrap() {
                shown.push_str(&d);
            }
            fed += line.len();
            if s.is_complete() {
                break;
            }
        }
        assert!(s.cut_repetition() && s.is_complete());
        // Seen within the third copy: a window's worth after the loop began.
        assert!(
            fed <= said.len() + 3 * block.len(),
            "stopped after {fed} bytes"
        );
        // Later deltas are ignored; the answer keeps one copy.
        assert_eq!(
            s.feed(r#"data: {"choices":[{"delta":{"content":"more"}}]}"#)
                .unwrap(),
            None
        );
        let r = s.finish().unwrap();
        assert!(r.cut_repetition);
        assert_eq!(r.text, format!("{said}{block}").trim_end());
        assert!(shown.starts_with(&r.text));
        // A whole completion gets the same cut.
        let whole: ChatResult = parse_completion(
            &serde_json::json!({"choices": [{"message": {"content": text}}]}).to_string(),
        )
        .unwrap()
        .into();
        assert_eq!((whole.text, whole.cut_repetition), (r.text, true));
    }
}
