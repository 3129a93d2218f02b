//! The chat-completions protocol that both answer transports speak (the
//! native `llm` module over `ureq`, the browser's `transport` over
//! `fetch`): the settings of a call and their defaults, the request body,
//! the result, the typed errors, the reading of a response (streamed
//! server-sent-event lines through [`ChatStream`], or one JSON body) and
//! the one prompt-template type that answers and explanations share
//! ([`PromptTemplate`]).
//!
//! It exists so that the transports only move bytes: what a line of a
//! stream means, when a stream has said all it will, when an empty stream
//! is an error and what a server's refusal to stream looks like are
//! decided here, once, for both. It is pure (no I/O).

use serde::{Deserialize, Serialize};

mod repeat;
mod stream;
mod template;

pub use repeat::{cut_answer, repetition_cut, REPEAT_WINDOW};
pub use stream::{parse_completion, parse_sse_line, ChatStream, Completion, StreamEvent};
pub use template::{PromptTemplate, Signing};

/// A chat message.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// Text.
    pub content: String,
}

/// The endpoint both the answer and the explanation calls default to.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8080/v1";

/// The model name both calls default to (a local server serves one model).
pub const DEFAULT_MODEL: &str = "local";

/// The prompt's context budget (tokens) of an answer by default: 550
/// estimated tokens, about 480 of a code model's, so that the prompt with
/// its system message stays near 800. On a CPU the prompt is most of an
/// answer's time (on 2 AVX2 cores Qwen2.5-Coder-1.5B reads about 30
/// tokens a second and writes about 11), and a small local model states
/// more of less text when that text is the question's evidence
/// (`crate::answer`). The evidence the answer shows, and the lead code
/// writes from it, keep a larger budget ([`ANSWER_EVIDENCE_TOKENS`]).
/// Measured on the first benchmark codebase's dev questions with that
/// model and CPU (nugget recall, p50 latency): both budgets 1,200: 0.480,
/// 52.7 s; both 700: 0.360, 30.7 s; a prompt of 700 within 1,200 of
/// evidence: 0.464, 32.7 s; of 550: 0.436, 28.5 s. A faster server (a
/// GPU, or a CPU that reads prompts faster) can afford a larger prompt.
pub const ANSWER_CONTEXT_TOKENS: usize = 550;

/// The evidence budget (tokens) of an answer by default: the fact sheet
/// and excerpts that the answer's code-written lead quotes and that its
/// citations and support are checked against (`crate::answer::Budget`).
/// It costs no model time.
pub const ANSWER_EVIDENCE_TOKENS: usize = 1200;

/// The sampling seed an answer request carries by default (the OpenAI
/// `seed` field, which llama.cpp, vLLM and Ollama honour). With a fixed
/// seed, an answer depends only on its prompt: the same question over the
/// same index gets the same answer, whatever was asked before (a server
/// that is sent no seed may derive each request's from the last one's,
/// as llama-cpp-python's does).
pub const ANSWER_SEED: u32 = 0;

/// The settings of one chat-completions call. [`Default`] holds the
/// answer defaults, the one source of them for the CLI's `[answer]` and
/// the browser worker ([`ChatSettings::answer_defaults_json`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ChatSettings {
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
    /// Sampling seed sent with each request, if any ([`ANSWER_SEED`] by
    /// default).
    pub seed: Option<u64>,
}

impl Default for ChatSettings {
    fn default() -> Self {
        ChatSettings {
            base_url: DEFAULT_BASE_URL.into(),
            model: DEFAULT_MODEL.into(),
            api_key: None,
            temperature: 0.1,
            max_tokens: 512,
            timeout_seconds: 300,
            stream: true,
            seed: Some(u64::from(ANSWER_SEED)),
        }
    }
}

impl ChatSettings {
    /// The answer defaults a page needs, JSON: `{temperature, max_tokens,
    /// timeout_ms, stream, context_tokens, evidence_tokens, seed}`.
    pub fn answer_defaults_json() -> serde_json::Value {
        let d = ChatSettings::default();
        serde_json::json!({
            "temperature": d.temperature,
            "max_tokens": d.max_tokens,
            "timeout_ms": d.timeout_seconds * 1000,
            "stream": d.stream,
            "context_tokens": ANSWER_CONTEXT_TOKENS,
            "evidence_tokens": ANSWER_EVIDENCE_TOKENS,
            "seed": ANSWER_SEED,
        })
    }

    /// The URL of the chat-completions endpoint.
    pub fn url(&self) -> String {
        completions_url(&self.base_url)
    }

    /// The request body of a call with these settings.
    pub fn request_body(&self, messages: &[Message], stream: bool) -> serde_json::Value {
        request_body(
            &self.model,
            messages,
            self.temperature,
            self.max_tokens,
            self.seed,
            stream,
        )
    }
}

/// What the server returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChatResult {
    /// The answer text.
    pub text: String,
    /// Prompt tokens, when the server reported them.
    pub prompt_tokens: Option<u64>,
    /// Completion tokens, when the server reported them.
    pub completion_tokens: Option<u64>,
    /// Whether the answer arrived as a stream.
    pub streamed: bool,
    /// Whether the model began to repeat itself and the answer was cut
    /// where the copy began ([`repetition_cut`]); a stream stops there.
    pub cut_repetition: bool,
}

impl From<Completion> for ChatResult {
    fn from(c: Completion) -> Self {
        let cut = repeat::first_repetition(&c.text);
        ChatResult {
            text: match cut {
                Some(at) => cut_answer(&c.text, at),
                None => c.text,
            },
            prompt_tokens: c.prompt_tokens,
            completion_tokens: c.completion_tokens,
            streamed: false,
            cut_repetition: cut.is_some(),
        }
    }
}

/// Why a chat call failed, as far as the protocol can tell (a transport
/// adds its own causes: unreachable, timeout, cancelled).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChatError {
    /// A `data:` line or a body that is not valid JSON of the expected shape.
    #[error("malformed streaming data from the answer server: {0}")]
    Malformed(String),
    /// The server reported an error object.
    #[error("the answer server reported an error: {0}")]
    Server(String),
    /// A stream line went on past its limit.
    #[error(transparent)]
    LineTooLong(#[from] crate::sse::LineTooLong),
    /// The server does not stream: it answered a streamed request with a
    /// client error that mentions streaming. The native transport asks
    /// again without streaming.
    #[error("stream refused (HTTP {status}: {excerpt})")]
    StreamRefused {
        /// HTTP status.
        status: u16,
        /// The start of the response body.
        excerpt: String,
    },
    /// Any other status than 200.
    #[error("HTTP {status} from {url}: {excerpt}")]
    Http {
        /// HTTP status.
        status: u16,
        /// The URL asked.
        url: String,
        /// The start of the response body.
        excerpt: String,
    },
    /// The stream ended before it said anything.
    #[error("the answer stream ended without any data")]
    EmptyStream,
    /// Reading the stream failed part way.
    #[error("the answer stream broke off after {chars} characters{}", cause.as_ref().map(|c| format!(": {c}")).unwrap_or_default())]
    BrokeOff {
        /// Bytes of answer text received before.
        chars: usize,
        /// What the transport said, when it said something.
        cause: Option<String>,
    },
}

/// The start of a response body that an error shows (300 characters).
pub fn excerpt(body: &str) -> String {
    body.chars().take(300).collect()
}

impl ChatError {
    /// The error for a response with status `status` (not 200) and this
    /// body: a refusal to stream when the request streamed and the server
    /// said so (400, 422 or 501 with "stream" in the body), else
    /// [`ChatError::Http`].
    pub fn for_status(streamed: bool, status: u16, url: &str, body: &str) -> ChatError {
        let excerpt = excerpt(body);
        if streamed
            && matches!(status, 400 | 422 | 501)
            && excerpt.to_lowercase().contains("stream")
        {
            return ChatError::StreamRefused { status, excerpt };
        }
        ChatError::Http {
            status,
            url: url.to_string(),
            excerpt,
        }
    }
}

/// The chat-completions endpoint under a base URL (up to `/v1`).
pub fn completions_url(base_url: &str) -> String {
    format!("{}/chat/completions", base_url.trim_end_matches('/'))
}

/// The request body for `/v1/chat/completions` (`seed` only when given).
pub fn request_body(
    model: &str,
    messages: &[Message],
    temperature: f32,
    max_tokens: u32,
    seed: Option<u64>,
    stream: bool,
) -> serde_json::Value {
    let mut body = serde_json::json!({
        "model": model,
        "messages": messages,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "stream": stream,
    });
    if let Some(seed) = seed {
        body["seed"] = seed.into();
    }
    if stream {
        body["stream_options"] = serde_json::json!({"include_usage": true});
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_errors_tell_a_refusal_to_stream_from_other_failures() {
        let refused = ChatError::for_status(true, 400, "u", "streaming is not supported");
        assert_eq!(
            refused.to_string(),
            "stream refused (HTTP 400: streaming is not supported)"
        );
        assert!(matches!(
            ChatError::for_status(false, 400, "u", "stream"),
            ChatError::Http { .. }
        ));
        assert_eq!(
            ChatError::for_status(true, 404, "http://x/v1/chat/completions", "no").to_string(),
            "HTTP 404 from http://x/v1/chat/completions: no"
        );
        let broke = ChatError::BrokeOff {
            chars: 3,
            cause: Some("reset".into()),
        };
        assert_eq!(
            broke.to_string(),
            "the answer stream broke off after 3 characters: reset"
        );
        let broke = ChatError::BrokeOff {
            chars: 3,
            cause: None,
        };
        assert_eq!(
            broke.to_string(),
            "the answer stream broke off after 3 characters"
        );
    }

    #[test]
    fn answer_defaults_are_those_of_the_settings() {
        let d = ChatSettings::answer_defaults_json();
        assert_eq!(d["max_tokens"], 512);
        assert_eq!(d["timeout_ms"], 300_000);
        assert_eq!(d["context_tokens"], 550);
        assert_eq!(d["evidence_tokens"], 1200);
        assert_eq!(d["stream"], true);
        assert_eq!(d["seed"], 0);
        // The worker hands the temperature back as an f32: the same 0.1.
        assert_eq!(d["temperature"].as_f64().map(|t| t as f32), Some(0.1));
        let body = ChatSettings::default().request_body(&[], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["seed"], 0);
        let unseeded = ChatSettings {
            seed: None,
            ..ChatSettings::default()
        };
        assert!(unseeded.request_body(&[], false).get("seed").is_none());
    }
}
