//! The `ort` explanation backend: glosses from an ONNX decoder run in
//! this process ([`crate::generate`]), a batch of prompts at a time, with
//! the same prompts, checks, cache and manifest records as the `openai`
//! backend. The decoder of a model is loaded on first use and kept while
//! the next batch asks for the same model.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use codegloss_core::chat::Message;
use sha2::{Digest, Sha256};

use super::backend::{Generation, GlossBackend, GlossError, Prompt};
use super::cache::lock;
use super::ExplainConfig;
use crate::embed::onnxruntime_library;
use crate::error::IndexError;
use crate::generate::{Decoder, DecoderFiles, Sampling};

/// The decoder of the model the last batch asked for, or why it could
/// not be loaded (so that later batches fail at once, with the same cause).
enum Loaded {
    Ready(String, Box<Decoder>),
    Failed(String, GlossError),
}

/// Glosses from an in-process ONNX decoder.
pub struct OrtBackend {
    cfg: ExplainConfig,
    /// The ONNX Runtime library, resolved (and checked) once.
    lib: PathBuf,
    loaded: Mutex<Option<Loaded>>,
    requests: AtomicU64,
}

impl OrtBackend {
    /// A backend for `[explain]`; the decoder loads on the first batch.
    /// The ONNX Runtime library must be there already.
    pub fn new(cfg: &ExplainConfig) -> Result<Self, IndexError> {
        Ok(OrtBackend {
            cfg: cfg.clone(),
            lib: onnxruntime_library(None)?,
            loaded: Mutex::new(None),
            requests: AtomicU64::new(0),
        })
    }

    /// Load the decoder of `model` (or `onnx_dir`).
    pub fn load(&self, model: &str) -> Result<Decoder, IndexError> {
        let files = match &self.cfg.onnx_dir {
            Some(dir) => DecoderFiles::in_dir(dir, &self.lib, &[])?,
            None => DecoderFiles::installed(model, &self.lib)?,
        };
        Decoder::load(&files, self.cfg.threads, self.cfg.device)
    }

    /// The sampler seed of one prompt: the configured seed and the prompt.
    fn seed(&self, prompt: &Prompt) -> u64 {
        let mut h = Sha256::new();
        h.update(self.cfg.seed.to_le_bytes());
        h.update(prompt.system.as_bytes());
        h.update([0]);
        h.update(prompt.user.as_bytes());
        let d = h.finalize();
        u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
    }
}

fn backend_error(e: impl std::fmt::Display) -> GlossError {
    GlossError::Backend {
        message: e.to_string(),
    }
}

impl GlossBackend for OrtBackend {
    fn name(&self) -> &'static str {
        "ort"
    }

    fn generate(&self, model: &str, prompt: &Prompt) -> Result<Generation, GlossError> {
        self.generate_batch(model, &[prompt])
            .pop()
            .unwrap_or(Err(GlossError::NotAttempted))
    }

    fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    fn batch_size(&self) -> usize {
        self.cfg.batch_size.max(1)
    }

    fn generate_batch(
        &self,
        model: &str,
        prompts: &[&Prompt],
    ) -> Vec<Result<Generation, GlossError>> {
        self.requests
            .fetch_add(prompts.len() as u64, Ordering::Relaxed);
        let mut slot = lock(&self.loaded);
        let current = match slot.as_ref() {
            Some(Loaded::Ready(m, _) | Loaded::Failed(m, _)) => m == model,
            None => false,
        };
        if !current {
            *slot = None;
            *slot = Some(match self.load(model) {
                Ok(d) => Loaded::Ready(model.to_string(), Box::new(d)),
                Err(e) => Loaded::Failed(model.to_string(), backend_error(e)),
            });
        }
        let decoder = match slot.as_mut() {
            Some(Loaded::Ready(_, d)) => d,
            Some(Loaded::Failed(_, e)) => return prompts.iter().map(|_| Err(e.clone())).collect(),
            None => {
                return prompts
                    .iter()
                    .map(|_| Err(GlossError::NotAttempted))
                    .collect()
            }
        };
        // Prompts that do not tokenise fail alone; the rest run together.
        let mut out: Vec<Option<Result<Generation, GlossError>>> =
            prompts.iter().map(|_| None).collect();
        let mut ids = Vec::new();
        let mut rows = Vec::new();
        for (i, p) in prompts.iter().enumerate() {
            let messages = [
                Message {
                    role: "system".into(),
                    content: p.system.clone(),
                },
                Message {
                    role: "user".into(),
                    content: p.user.clone(),
                },
            ];
            match decoder.chat_ids(&messages) {
                Ok(t) => {
                    ids.push(t);
                    rows.push(i);
                }
                Err(e) => out[i] = Some(Err(backend_error(e))),
            }
        }
        let max_new: Vec<usize> = rows
            .iter()
            .map(|&i| prompts[i].max_tokens as usize)
            .collect();
        let seeds: Vec<u64> = rows.iter().map(|&i| self.seed(prompts[i])).collect();
        let sampling = Sampling {
            temperature: self.cfg.temperature,
            top_p: self.cfg.top_p,
        };
        match decoder.generate_batch(&ids, &max_new, sampling, &seeds) {
            Ok(gens) => {
                for (&i, g) in rows.iter().zip(gens) {
                    out[i] = Some(Ok(Generation {
                        completion_tokens: Some(g.ids.len() as u64),
                        text: g.text,
                    }));
                }
            }
            Err(e) => {
                let message = e.to_string();
                for &i in &rows {
                    out[i] = Some(Err(GlossError::Backend {
                        message: message.clone(),
                    }));
                }
            }
        }
        out.into_iter()
            .map(|r| r.unwrap_or(Err(GlossError::NotAttempted)))
            .collect()
    }
}
