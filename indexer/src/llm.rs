//! The native transport to an OpenAI-compatible chat-completions endpoint
//! (Ollama `/v1`, llama.cpp server, llama-cpp-python, vLLM, LM Studio).
//!
//! The protocol is shared with the browser (`codegloss_core::chat`: the
//! request body, the stream folded line by line by `ChatStream`, the
//! typed errors; lines cut by `codegloss_core::sse`); this module only
//! moves bytes over HTTP with `ureq`. It streams (server-sent events) and
//! asks again without streaming when the server refuses to stream. Every
//! failure is an [`IndexError::Llm`] that names the endpoint and says what
//! happened.

use std::io::Read;
use std::time::Duration;

pub use codegloss_core::chat::ChatResult;
use codegloss_core::chat::{
    parse_completion, ChatError, ChatSettings, ChatStream, Message, ANSWER_CONTEXT_TOKENS,
    ANSWER_EVIDENCE_TOKENS,
};
use codegloss_core::sse::SseLines;
use serde::{Deserialize, Serialize};

use crate::error::IndexError;

/// Answer model settings (`[answer]` in `codegloss.toml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AnswerConfig {
    /// Base URL of the OpenAI-compatible API, up to `/v1`.
    pub base_url: String,
    /// Model name sent with each request.
    pub model: String,
    /// API key (sent as a bearer token), if the server wants one.
    pub api_key: Option<String>,
    /// Sampling temperature.
    pub temperature: f32,
    /// Most tokens to generate.
    pub max_tokens: u32,
    /// Seconds before a request is abandoned (whole request, streaming included).
    pub timeout_seconds: u64,
    /// Stream the answer (server-sent events).
    pub stream: bool,
    /// Sampling seed sent with each request, so that an answer depends
    /// only on its prompt.
    pub seed: u64,
    /// Budget in tokens of the context the model reads (its prompt).
    pub context_tokens: usize,
    /// Budget in tokens of the evidence the answer shows and checks its
    /// citations against, and that the code-written lead quotes; the
    /// model reads the part of it that fits `context_tokens`. Never less
    /// than `context_tokens`.
    pub evidence_tokens: usize,
    /// The answer model's `tokenizer.json` (Hugging Face format). When
    /// given, the context budget is counted with it; otherwise with a
    /// conservative estimate (characters / 3).
    pub tokenizer: Option<std::path::PathBuf>,
}

/// The defaults are core's ([`ChatSettings::default`]), which the browser
/// worker uses too.
impl Default for AnswerConfig {
    fn default() -> Self {
        let d = ChatSettings::default();
        AnswerConfig {
            base_url: d.base_url,
            model: d.model,
            api_key: d.api_key,
            temperature: d.temperature,
            max_tokens: d.max_tokens,
            timeout_seconds: d.timeout_seconds,
            stream: d.stream,
            seed: d.seed.unwrap_or_default(),
            context_tokens: ANSWER_CONTEXT_TOKENS,
            evidence_tokens: ANSWER_EVIDENCE_TOKENS,
            tokenizer: None,
        }
    }
}

impl AnswerConfig {
    /// The prompt's and the evidence's budgets.
    pub fn budget(&self) -> codegloss_core::answer::Budget {
        codegloss_core::answer::Budget {
            prompt: self.context_tokens,
            evidence: self.evidence_tokens,
        }
    }

    /// The settings of the call.
    pub fn chat_settings(&self) -> ChatSettings {
        ChatSettings {
            base_url: self.base_url.clone(),
            model: self.model.clone(),
            api_key: self.api_key.clone(),
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            timeout_seconds: self.timeout_seconds,
            stream: self.stream,
            seed: Some(self.seed),
        }
    }
}

/// Counts the tokens of a text.
pub type TokenCounter = Box<dyn Fn(&str) -> usize>;

/// How context tokens are counted: with the answer model's tokenizer when
/// `tokenizer` names one, else with the conservative estimate.
pub fn token_counter(cfg: &AnswerConfig) -> Result<TokenCounter, IndexError> {
    match &cfg.tokenizer {
        None => Ok(Box::new(codegloss_core::text::estimate_tokens)),
        Some(path) => {
            let tok = tokenizers::Tokenizer::from_file(path).map_err(|e| IndexError::Model {
                path: path.clone(),
                message: format!("cannot load the answer model's tokenizer: {e}"),
            })?;
            Ok(Box::new(move |text: &str| {
                tok.encode(text, false).map_or_else(
                    |_| codegloss_core::text::estimate_tokens(text),
                    |enc| enc.get_ids().len(),
                )
            }))
        }
    }
}

/// Why one request failed: what the protocol says, or what the
/// connection said (described for the reader).
enum Failure {
    Protocol(ChatError),
    Transport(String),
}

impl From<ChatError> for Failure {
    fn from(e: ChatError) -> Self {
        Failure::Protocol(e)
    }
}

impl From<codegloss_core::sse::LineTooLong> for Failure {
    fn from(e: codegloss_core::sse::LineTooLong) -> Self {
        Failure::Protocol(e.into())
    }
}

impl Failure {
    fn into_error(self, s: &ChatSettings) -> IndexError {
        IndexError::Llm {
            url: s.base_url.clone(),
            message: match self {
                Failure::Protocol(e) => e.to_string(),
                Failure::Transport(m) => m,
            },
        }
    }
}

fn agent(s: &ChatSettings) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(s.timeout_seconds.max(1))))
        .timeout_connect(Some(Duration::from_secs(10)))
        .http_status_as_error(false)
        .build()
        .into()
}

fn describe(e: &ureq::Error, s: &ChatSettings) -> String {
    match e {
        ureq::Error::Timeout(_) => format!("no complete answer within {} s (timeout_seconds)", s.timeout_seconds),
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            "connection refused: is the answer server running? (for example `ollama serve`, `llama-server`, or `cargo xtask llm-server`)".into()
        }
        ureq::Error::ConnectionFailed => "cannot connect: is the answer server running?".into(),
        ureq::Error::HostNotFound => "host not found".into(),
        other => other.to_string(),
    }
}

/// Send a chat completion; stream deltas to `on_delta` when streaming.
pub fn chat(
    cfg: &AnswerConfig,
    messages: &[Message],
    on_delta: &mut dyn FnMut(&str),
) -> Result<ChatResult, IndexError> {
    chat_with(&cfg.chat_settings(), messages, on_delta)
}

/// [`chat`] with the call's settings alone (the explanation stage's).
pub fn chat_with(
    s: &ChatSettings,
    messages: &[Message],
    on_delta: &mut dyn FnMut(&str),
) -> Result<ChatResult, IndexError> {
    if s.stream {
        match chat_once(s, messages, true, on_delta) {
            Err(Failure::Protocol(refused @ ChatError::StreamRefused { .. })) => {
                log::warn!("{refused}; retrying without streaming");
            }
            other => return other.map_err(|f| f.into_error(s)),
        }
    }
    chat_once(s, messages, false, on_delta).map_err(|f| f.into_error(s))
}

fn chat_once(
    s: &ChatSettings,
    messages: &[Message],
    stream: bool,
    on_delta: &mut dyn FnMut(&str),
) -> Result<ChatResult, Failure> {
    let url = s.url();
    let body = s.request_body(messages, stream);
    let mut req = agent(s)
        .post(&url)
        .header("Content-Type", "application/json");
    if let Some(key) = s.api_key.as_deref().filter(|k| !k.is_empty()) {
        req = req.header("Authorization", &format!("Bearer {key}"));
    }
    let mut resp = req
        .send(body.to_string())
        .map_err(|e| Failure::Transport(describe(&e, s)))?;
    let status = resp.status().as_u16();
    if status != 200 {
        let text = resp.body_mut().read_to_string().unwrap_or_default();
        return Err(ChatError::for_status(stream, status, &url, &text).into());
    }
    let is_sse = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"));
    if !stream || !is_sse {
        let text = resp
            .body_mut()
            .read_to_string()
            .map_err(|e| Failure::Transport(describe(&e, s)))?;
        let c = parse_completion(&text)?;
        on_delta(&c.text);
        return Ok(c.into());
    }
    let mut body = resp.body_mut().as_reader();
    let mut answer = ChatStream::new();
    let mut lines = SseLines::new();
    let mut buf = vec![0u8; 16 * 1024];
    'stream: loop {
        let n = match body.read(&mut buf) {
            Ok(0) => {
                if let Some(last) = std::mem::take(&mut lines).finish() {
                    if let Some(d) = answer.feed(&last)? {
                        on_delta(&d);
                    }
                }
                break;
            }
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(answer.broke_off(Some(e.to_string())).into()),
        };
        for line in lines.push(&buf[..n])? {
            if let Some(d) = answer.feed(&line)? {
                on_delta(&d);
            }
            // The stream has said all it will.
            if answer.is_complete() {
                break 'stream;
            }
        }
    }
    Ok(answer.finish()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Serve these whole responses on loopback, one connection each, in
    /// order; the base URL.
    fn responses(responses: Vec<Vec<u8>>) -> String {
        responses_seen(responses).0
    }

    /// [`responses`], and each request as the server read it.
    fn responses_seen(responses: Vec<Vec<u8>>) -> (String, std::sync::mpsc::Receiver<String>) {
        let (seen, requests) = std::sync::mpsc::channel();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().expect("address").port();
        std::thread::spawn(move || {
            for response in responses {
                let (mut conn, _) = listener.accept().expect("accept");
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                // Headers, then as much of the body as Content-Length says.
                while let Ok(n) = conn.read(&mut buf) {
                    request.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&request).to_lowercase();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let len = text
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        if request.len() >= end + 4 + len {
                            break;
                        }
                    }
                    if n == 0 {
                        break;
                    }
                }
                let _ = seen.send(String::from_utf8_lossy(&request).into_owned());
                // The client may hang up early; that is what is being tested.
                let _ = conn.write_all(&response);
            }
        });
        (format!("http://127.0.0.1:{port}/v1"), requests)
    }

    /// Serve one streamed response with this body on loopback; the base URL.
    fn one_response(body: Vec<u8>) -> String {
        let mut response =
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                .to_vec();
        response.extend(body);
        responses(vec![response])
    }

    fn config(base_url: String) -> AnswerConfig {
        AnswerConfig {
            base_url,
            timeout_seconds: 30,
            ..AnswerConfig::default()
        }
    }

    #[test]
    fn a_streamed_answer_is_read_line_by_line() {
        let body = b"data: {\"choices\":[{\"delta\":{\"content\":\"Hal\"}}]}\r\n\r\n: ping\ndata: {\"choices\":[{\"delta\":{\"content\":\"o\"}}]}\n\ndata: [DONE]".to_vec();
        let mut seen = String::new();
        let r = chat(&config(one_response(body)), &[], &mut |d| seen.push_str(d)).unwrap();
        assert_eq!(
            (r.text.as_str(), seen.as_str(), r.streamed),
            ("Halo", "Halo", true)
        );
    }

    #[test]
    fn each_request_carries_the_configured_seed() {
        let body = r#"{"choices":[{"message":{"content":"x"}}]}"#;
        let ok = || {
            format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).into_bytes()
        };
        let (url, requests) = responses_seen(vec![ok(), ok()]);
        let sent = |cfg: &AnswerConfig| {
            chat(cfg, &[], &mut |_| {}).unwrap();
            let request = requests.recv().unwrap();
            let json = &request[request.find("\r\n\r\n").unwrap() + 4..];
            serde_json::from_str::<serde_json::Value>(json).unwrap()["seed"].clone()
        };
        let cfg = AnswerConfig {
            stream: false,
            ..config(url)
        };
        assert_eq!(sent(&cfg), 0);
        assert_eq!(sent(&AnswerConfig { seed: 7, ..cfg }), 7);
    }

    #[test]
    fn a_refusal_to_stream_is_asked_again_without_streaming() {
        let refusal = "streaming is not supported";
        let first = format!("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{refusal}", refusal.len());
        let body = r#"{"choices":[{"message":{"content":"plain"}}],"usage":{"prompt_tokens":4,"completion_tokens":1}}"#;
        let second = format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
        let url = responses(vec![first.into_bytes(), second.into_bytes()]);
        let mut seen = String::new();
        let r = chat(&config(url), &[], &mut |d| seen.push_str(d)).unwrap();
        assert_eq!(
            (r.text.as_str(), seen.as_str(), r.streamed, r.prompt_tokens),
            ("plain", "plain", false, Some(4))
        );
        // Without streaming there is no second try: the status is the error.
        let first = format!(
            "HTTP/1.1 400 Bad Request\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{refusal}",
            refusal.len()
        );
        let cfg = AnswerConfig {
            stream: false,
            ..config(responses(vec![first.into_bytes()]))
        };
        let e = chat(&cfg, &[], &mut |_| {}).unwrap_err().to_string();
        assert!(e.contains("HTTP 400 from") && e.contains(refusal), "{e}");
    }

    #[test]
    fn an_endless_line_is_an_error_not_an_endless_buffer() {
        // A 2 MiB comment line: the reader used to hold any line whole.
        let mut body = b": ".to_vec();
        body.extend(std::iter::repeat_n(b'x', 2 << 20));
        body.extend_from_slice(b"\ndata: [DONE]\n\n");
        let e = chat(&config(one_response(body)), &[], &mut |_| {}).unwrap_err();
        assert!(e.to_string().contains("without a newline"), "{e}");
    }

    #[test]
    fn an_answer_that_loops_is_cut_and_the_stream_left() {
        // A server that says one thing, then loops until the reader leaves.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().expect("accept");
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let delta = |text: &str| {
                let event = serde_json::json!({"choices": [{"delta": {"content": text}}]});
                format!("data: {event}\n\n")
            };
            let head =
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
            let mut out = format!(
                "{head}{}",
                delta("The halo is filled by `fillHalo` [2].\n\n")
            );
            let block = "- [3] src/Halo.cpp:10-20 sends each face to its neighbour, then waits.\n";
            let mut sent = 0usize;
            // Written until the reader has gone (or far past any answer).
            while sent < 10_000_000 {
                out.push_str(&delta(block));
                if conn
                    .write_all(out.as_bytes())
                    .and_then(|_| conn.flush())
                    .is_err()
                {
                    return sent;
                }
                sent += out.len();
                out.clear();
            }
            sent
        });
        let mut seen = String::new();
        let r = chat(&config(url), &[], &mut |d| seen.push_str(d)).unwrap();
        assert!(r.cut_repetition);
        assert_eq!(
            r.text,
            "The halo is filled by `fillHalo` [2].\n\n- [3] src/Halo.cpp:10-20 sends each face to its neighbour, then waits."
        );
        assert!(seen.starts_with(&r.text));
        let sent = server.join().expect("server");
        assert!(sent < 10_000_000, "the reader kept reading");
    }
}
