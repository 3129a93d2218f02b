//! The explanation backends: the [`GlossBackend`] trait, the `openai`
//! backend (the same transport as `codegloss ask`), and the run of a
//! level's jobs against a backend with a worker pool, one retry each,
//! every finished gloss appended to the cache at once. A failure is a
//! [`GlossError`], recorded as the entity's fallback cause.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use codegloss_core::chat::{ChatSettings, Message};
use indicatif::ProgressBar;

use super::cache::{lock, CacheEntry, GlossCache};
use super::check::check_output;
use super::ort::OrtBackend;
use super::plan::Job;
use super::{BackendKind, ExplainConfig};
use crate::error::IndexError;
use crate::llm;

/// A prompt ready to send.
#[derive(Debug, Clone)]
pub struct Prompt {
    /// System message.
    pub system: String,
    /// User message.
    pub user: String,
    /// Most tokens to generate.
    pub max_tokens: u32,
}

/// What a backend returned.
#[derive(Debug, Clone)]
pub struct Generation {
    /// Raw text.
    pub text: String,
    /// Completion tokens, when reported.
    pub completion_tokens: Option<u64>,
}

/// Why one gloss was not written; its text (a short sentence) is the
/// cause the manifest records for the entity's fallback.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GlossError {
    /// The backend's call failed: what the transport said (for the
    /// `openai` backend, without the endpoint).
    #[error("{message}")]
    Backend {
        /// What happened.
        message: String,
    },
    /// The model wrote nothing.
    #[error("empty output")]
    Empty,
    /// Too short to be an explanation.
    #[error("output too short ({chars} characters): {text:?}")]
    TooShort {
        /// Characters written.
        chars: usize,
        /// The output.
        text: String,
    },
    /// The model refused.
    #[error("refusal: {head:?}")]
    Refusal {
        /// The output's first 60 characters.
        head: String,
    },
    /// Fewer than half the characters are letters.
    #[error("garbage: fewer than half the characters are letters")]
    FewLetters,
    /// A line repeats three times or more.
    #[error("garbage: the same line repeats")]
    RepeatedLine,
    /// The run stopped (a cache write failed) before this job's turn.
    #[error("not attempted")]
    NotAttempted,
}

impl From<GlossError> for IndexError {
    fn from(e: GlossError) -> Self {
        IndexError::Explain {
            message: e.to_string(),
        }
    }
}

/// An explanation backend. `generate` says why a gloss failed as a
/// [`GlossError`] (its text is recorded in the manifest).
pub trait GlossBackend: Sync {
    /// Backend name for the manifest.
    fn name(&self) -> &'static str;
    /// Generate one gloss with `model`.
    fn generate(&self, model: &str, prompt: &Prompt) -> Result<Generation, GlossError>;
    /// Requests sent so far.
    fn requests(&self) -> u64;
    /// Prompts it generates together (1: one at a time, in parallel
    /// workers when `concurrency` allows).
    fn batch_size(&self) -> usize {
        1
    }
    /// Generate several glosses with `model`, one result per prompt in
    /// order.
    fn generate_batch(
        &self,
        model: &str,
        prompts: &[&Prompt],
    ) -> Vec<Result<Generation, GlossError>> {
        prompts.iter().map(|p| self.generate(model, p)).collect()
    }
}

/// The `openai` backend: the same transport as `codegloss ask`.
pub struct OpenAiBackend {
    settings: ChatSettings,
    requests: AtomicU64,
}

impl OpenAiBackend {
    /// A backend for the `[explain]` endpoint settings.
    pub fn new(cfg: &ExplainConfig) -> Self {
        OpenAiBackend {
            settings: ChatSettings {
                base_url: cfg.base_url.clone(),
                model: cfg.model.clone(),
                api_key: cfg.api_key.clone(),
                temperature: cfg.temperature,
                max_tokens: cfg.max_tokens,
                timeout_seconds: cfg.timeout_seconds,
                stream: false,
                seed: Some(cfg.seed),
            },
            requests: AtomicU64::new(0),
        }
    }
}

impl GlossBackend for OpenAiBackend {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn generate(&self, model: &str, prompt: &Prompt) -> Result<Generation, GlossError> {
        let settings = ChatSettings {
            model: model.to_string(),
            max_tokens: prompt.max_tokens,
            ..self.settings.clone()
        };
        let messages = [
            Message {
                role: "system".into(),
                content: prompt.system.clone(),
            },
            Message {
                role: "user".into(),
                content: prompt.user.clone(),
            },
        ];
        self.requests.fetch_add(1, Ordering::Relaxed);
        match llm::chat_with(&settings, &messages, &mut |_| {}) {
            Ok(r) => Ok(Generation {
                text: r.text,
                completion_tokens: r.completion_tokens,
            }),
            Err(IndexError::Llm { message, .. }) => Err(GlossError::Backend { message }),
            Err(other) => Err(GlossError::Backend {
                message: other.to_string(),
            }),
        }
    }

    fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}

/// The backend named by the configuration; `None` for `structural`.
pub fn backend_for(cfg: &ExplainConfig) -> Result<Option<Box<dyn GlossBackend>>, IndexError> {
    match cfg.backend {
        BackendKind::Structural => Ok(None),
        BackendKind::Openai => Ok(Some(Box::new(OpenAiBackend::new(cfg)))),
        BackendKind::Ort => Ok(Some(Box::new(OrtBackend::new(cfg)?))),
    }
}

/// Send the jobs with `concurrency` workers, or in batches for a batched
/// backend; each gets one retry. A finished gloss goes to the cache at
/// once.
pub(super) fn run_jobs(
    jobs: &[&Job],
    backend: &dyn GlossBackend,
    concurrency: usize,
    progress: &ProgressBar,
    cache: &GlossCache,
) -> Result<Vec<Result<CacheEntry, GlossError>>, IndexError> {
    if backend.batch_size() > 1 {
        return super::batched::run_batched(jobs, backend, progress, cache);
    }
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<CacheEntry, GlossError>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    let write_error: Mutex<Option<IndexError>> = Mutex::new(None);
    let tokens = AtomicU64::new(0);
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..concurrency.min(jobs.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= jobs.len() || lock(&write_error).is_some() {
                    break;
                }
                let job = jobs[i];
                let t = Instant::now();
                let outcome = attempt(backend, job).or_else(|first| {
                    log::debug!("{}: {first}; retrying once", job.key);
                    attempt(backend, job)
                });
                let outcome = outcome.map(|(text, completion_tokens)| {
                    entry_for(job, text, completion_tokens, t.elapsed().as_secs_f64())
                });
                if let Ok(entry) = &outcome {
                    if let Err(e) = cache.append(entry) {
                        *lock(&write_error) = Some(e);
                    }
                    let all =
                        tokens.fetch_add(entry.completion_tokens.unwrap_or(0), Ordering::Relaxed);
                    let secs = started.elapsed().as_secs_f64().max(1e-3);
                    progress.set_message(format!(
                        "explaining {} ({:.1} tok/s)",
                        job.level.as_str(),
                        (all + entry.completion_tokens.unwrap_or(0)) as f64 / secs
                    ));
                }
                lock(&results)[i] = Some(outcome);
                progress.inc(1);
            });
        }
    });
    if let Some(e) = write_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    Ok(results
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .map(|r| r.unwrap_or(Err(GlossError::NotAttempted)))
        .collect())
}

/// The cache entry of a finished gloss.
pub(super) fn entry_for(
    job: &Job,
    text: String,
    completion_tokens: Option<u64>,
    seconds: f64,
) -> CacheEntry {
    CacheEntry {
        key: job.key.clone(),
        level: job.level.as_str().to_string(),
        mode: job.mode.as_str().to_string(),
        signature: job.mode.template().signature(),
        model: job.model.clone(),
        entity: job.entity.to_string(),
        text,
        completion_tokens,
        seconds: Some(seconds),
    }
}

fn attempt(backend: &dyn GlossBackend, job: &Job) -> Result<(String, Option<u64>), GlossError> {
    let g = backend.generate(&job.model, &job.prompt)?;
    let text = check_output(&g.text)?;
    Ok((text, g.completion_tokens))
}
