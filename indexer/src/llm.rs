//! The native transport to an OpenAI-compatible chat-completions endpoint
//! (Ollama `/v1`, llama.cpp server, llama-cpp-python, vLLM, LM Studio).
//!
//! Request bodies and response parsing are shared with the browser
//! (`codegloss_core::answer`); this module only moves bytes over HTTP with
//! `ureq`. It streams (server-sent events) and falls back to a plain
//! request when the server refuses to stream. Every failure is an
//! [`IndexError::Llm`] that names the endpoint and says what happened.

use std::io::BufRead;
use std::time::Duration;

use codegloss_core::answer::{
    parse_completion, parse_sse_line, request_body, Message, StreamEvent,
};
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
    /// Context budget in tokens.
    pub context_tokens: usize,
    /// The answer model's `tokenizer.json` (Hugging Face format). When
    /// given, the context budget is counted with it; otherwise with a
    /// conservative estimate (characters / 3).
    pub tokenizer: Option<std::path::PathBuf>,
}

impl Default for AnswerConfig {
    fn default() -> Self {
        AnswerConfig {
            base_url: "http://127.0.0.1:8080/v1".into(),
            model: "local".into(),
            api_key: None,
            temperature: 0.1,
            max_tokens: 512,
            timeout_seconds: 300,
            stream: true,
            context_tokens: 3000,
            tokenizer: None,
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

/// What the server returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatResult {
    /// The answer text.
    pub text: String,
    /// Prompt tokens, when the server reported them.
    pub prompt_tokens: Option<u64>,
    /// Completion tokens, when the server reported them.
    pub completion_tokens: Option<u64>,
    /// Whether the answer arrived as a stream.
    pub streamed: bool,
}

fn err(cfg: &AnswerConfig, message: impl Into<String>) -> IndexError {
    IndexError::Llm {
        url: cfg.base_url.clone(),
        message: message.into(),
    }
}

fn agent(cfg: &AnswerConfig) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(cfg.timeout_seconds.max(1))))
        .timeout_connect(Some(Duration::from_secs(10)))
        .http_status_as_error(false)
        .build()
        .into()
}

fn describe(e: &ureq::Error, cfg: &AnswerConfig) -> String {
    match e {
        ureq::Error::Timeout(_) => format!("no complete answer within {} s (timeout_seconds)", cfg.timeout_seconds),
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
    if cfg.stream {
        match chat_once(cfg, messages, true, on_delta) {
            Err(IndexError::Llm { message, .. }) if message.starts_with("stream refused") => {
                log::warn!("{message}; retrying without streaming");
            }
            other => return other,
        }
    }
    chat_once(cfg, messages, false, on_delta)
}

fn chat_once(
    cfg: &AnswerConfig,
    messages: &[Message],
    stream: bool,
    on_delta: &mut dyn FnMut(&str),
) -> Result<ChatResult, IndexError> {
    let url = format!("{}/chat/completions", cfg.base_url.trim_end_matches('/'));
    let body = request_body(
        &cfg.model,
        messages,
        cfg.temperature,
        cfg.max_tokens,
        stream,
    );
    let mut req = agent(cfg)
        .post(&url)
        .header("Content-Type", "application/json");
    if let Some(key) = cfg.api_key.as_deref().filter(|k| !k.is_empty()) {
        req = req.header("Authorization", &format!("Bearer {key}"));
    }
    let mut resp = req
        .send(body.to_string())
        .map_err(|e| err(cfg, describe(&e, cfg)))?;
    let status = resp.status().as_u16();
    if status != 200 {
        let text = resp.body_mut().read_to_string().unwrap_or_default();
        let excerpt: String = text.chars().take(300).collect();
        if stream && matches!(status, 400 | 422 | 501) && excerpt.to_lowercase().contains("stream")
        {
            return Err(err(
                cfg,
                format!("stream refused (HTTP {status}: {excerpt})"),
            ));
        }
        return Err(err(cfg, format!("HTTP {status} from {url}: {excerpt}")));
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
            .map_err(|e| err(cfg, describe(&e, cfg)))?;
        let c = parse_completion(&text).map_err(|e| err(cfg, e.to_string()))?;
        on_delta(&c.text);
        return Ok(ChatResult {
            text: c.text,
            prompt_tokens: c.prompt_tokens,
            completion_tokens: c.completion_tokens,
            streamed: false,
        });
    }
    let reader = std::io::BufReader::new(resp.body_mut().as_reader());
    let mut out = ChatResult {
        text: String::new(),
        prompt_tokens: None,
        completion_tokens: None,
        streamed: true,
    };
    let mut done = false;
    for line in reader.lines() {
        let line = line.map_err(|e| {
            err(
                cfg,
                format!(
                    "the answer stream broke off after {} characters: {e}",
                    out.text.len()
                ),
            )
        })?;
        match parse_sse_line(&line).map_err(|e| err(cfg, e.to_string()))? {
            StreamEvent::Delta(d) => {
                on_delta(&d);
                out.text.push_str(&d);
            }
            StreamEvent::Usage { prompt, completion } => {
                out.prompt_tokens = Some(prompt);
                out.completion_tokens = Some(completion);
            }
            StreamEvent::Done => done = true,
            StreamEvent::Skip => {}
        }
        if done && out.prompt_tokens.is_some() {
            break;
        }
    }
    if !done && out.text.is_empty() {
        return Err(err(cfg, "the answer stream ended without any data"));
    }
    Ok(out)
}
