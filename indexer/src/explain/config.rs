//! `[explain]` in `codegloss.toml`: which backend writes glosses, at which
//! levels (core's [`Level`], the one level vocabulary), with which model
//! per level, in which order under a cap, and what becomes of the
//! structural gloss when a model gloss arrives.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use codegloss_core::chat::{DEFAULT_BASE_URL, DEFAULT_MODEL};
use serde::{Deserialize, Serialize};

use super::Level;
use crate::config::Device;

/// Prompts per `ort` batch: on 2 CPU cores with Qwen2.5-Coder-1.5B, 4
/// (measured in the closing note of issue 20).
pub const DEFAULT_BATCH_SIZE: usize = 4;

/// Which explanation backend writes glosses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    /// Deterministic glosses from the structure graph (no model).
    #[default]
    Structural,
    /// Any OpenAI-compatible chat-completions endpoint (Ollama, llama.cpp
    /// server, llama-cpp-python, vLLM).
    Openai,
    /// An ONNX decoder run in-process through ONNX Runtime, batched
    /// ([`crate::generate`]); `model` names a decoder `cargo xtask models`
    /// converted (`qwen-coder-1.5b`, `smollm2`), or `onnx_dir` a folder.
    Ort,
}

/// Order in which entities are chosen when `max_entities` caps the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// Public headers and documented API first, then implementation, docs,
    /// examples, tests and build files.
    #[default]
    PublicApiFirst,
    /// Entity order (path order).
    Path,
}

/// What becomes of the structural gloss when a model gloss arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Combine {
    /// The model gloss replaces it.
    #[default]
    Replace,
    /// The model gloss comes first, the structural facts follow.
    AppendFacts,
}

/// `[explain]` in `codegloss.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExplainConfig {
    /// `structural` (default), `openai` or `ort`.
    pub backend: BackendKind,
    /// Levels the model explains (`symbol`, `doc`, `call_chain`, `file`,
    /// `module`); the others keep structural glosses.
    pub levels: Vec<Level>,
    /// Base URL of the OpenAI-compatible API, up to `/v1`.
    pub base_url: String,
    /// API key (bearer token), if the server wants one.
    pub api_key: Option<String>,
    /// Model for every level without an entry in `models`.
    pub model: String,
    /// Model per level, for example `{ file = "qwen2.5-coder:7b" }`.
    pub models: BTreeMap<Level, String>,
    /// Requests in flight at once (raise it for vLLM or a cluster).
    pub concurrency: usize,
    /// Sampling temperature.
    pub temperature: f32,
    /// Most tokens per gloss.
    pub max_tokens: u32,
    /// Seconds before one request is abandoned.
    pub timeout_seconds: u64,
    /// Explain at most this many entities (chosen by `priority`).
    pub max_entities: Option<usize>,
    /// Which entities come first under `max_entities`.
    pub priority: Priority,
    /// Replace the structural gloss, or keep its facts after the model's.
    pub combine: Combine,
    /// Cache file (default: `gloss-cache.jsonl` in the index directory).
    pub cache: Option<PathBuf>,
    /// Most characters of code, or of lower-level glosses, in one prompt.
    pub max_input_chars: usize,
    /// `ort`: nucleus sampling mass when `temperature` > 0.
    pub top_p: f32,
    /// Seed of the sampler. `ort`: each prompt's stream is derived from it
    /// and the prompt, so a gloss does not depend on its batch; `openai`:
    /// sent with each request, so a gloss does not depend on the requests
    /// before it.
    pub seed: u64,
    /// `ort`: a folder with `model.onnx`, `tokenizer.json` and
    /// `generation.json`, used for every level instead of `model`.
    pub onnx_dir: Option<PathBuf>,
    /// `ort`: prompts generated together in one batch.
    pub batch_size: usize,
    /// `ort`: inference threads (0: every core).
    pub threads: usize,
    /// `ort`: `auto` (CUDA when the build and the library have it), `cpu`
    /// or `cuda`.
    pub device: Device,
}

/// The decoder `ort` uses when `model` is left at the endpoint default.
pub const DEFAULT_ORT_MODEL: &str = "qwen-coder-1.5b";

impl Default for ExplainConfig {
    fn default() -> Self {
        ExplainConfig {
            backend: BackendKind::Structural,
            levels: vec![Level::File, Level::Module],
            base_url: DEFAULT_BASE_URL.into(),
            api_key: None,
            model: DEFAULT_MODEL.into(),
            models: BTreeMap::new(),
            concurrency: 1,
            temperature: 0.0,
            max_tokens: 200,
            timeout_seconds: 300,
            max_entities: None,
            priority: Priority::PublicApiFirst,
            combine: Combine::Replace,
            cache: None,
            max_input_chars: 3000,
            top_p: 1.0,
            seed: 0,
            onnx_dir: None,
            batch_size: DEFAULT_BATCH_SIZE,
            threads: 0,
            device: Device::Auto,
        }
    }
}

impl ExplainConfig {
    /// Model id for a level (for `ort` the endpoint default `local` means
    /// [`DEFAULT_ORT_MODEL`]).
    pub fn model_for(&self, level: Level) -> &str {
        let m = self.models.get(&level).unwrap_or(&self.model).as_str();
        if self.backend == BackendKind::Ort && m == DEFAULT_MODEL {
            DEFAULT_ORT_MODEL
        } else {
            m
        }
    }

    /// The settings that decide what is generated (what the config hash
    /// sees): endpoint, key, concurrency, timeout and cache path are left out.
    pub fn canonical(&self) -> ExplainConfig {
        ExplainConfig {
            base_url: String::new(),
            api_key: None,
            concurrency: 1,
            timeout_seconds: 0,
            cache: None,
            batch_size: DEFAULT_BATCH_SIZE,
            threads: 0,
            device: Device::Auto,
            ..self.clone()
        }
    }

    /// Cache path for an index written to `out`.
    pub fn cache_path(&self, out: &Path) -> PathBuf {
        self.cache
            .clone()
            .unwrap_or_else(|| out.join("gloss-cache.jsonl"))
    }

    /// The gloss stored for a model text.
    pub(super) fn combined(&self, text: String, structural: &str) -> String {
        match self.combine {
            Combine::Replace => text,
            Combine::AppendFacts => format!("{text}\n\nFacts: {structural}"),
        }
    }

    /// The configured levels, bottom-up.
    pub(super) fn run_levels(&self) -> Vec<Level> {
        Level::BOTTOM_UP
            .into_iter()
            .filter(|l| self.levels.contains(l))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::backend_for;
    use super::*;
    use codegloss_core::EntityKind;

    #[test]
    fn levels_and_config() {
        assert_eq!(EntityKind::Method.level(), Level::Symbol);
        assert_eq!(EntityKind::CallChain.level(), Level::CallChain);
        let c: ExplainConfig = toml::from_str(
            "backend = \"openai\"\nlevels = [\"file\", \"module\"]\nmodels = { module = \"big\" }\nmax_entities = 5\n",
        )
        .unwrap();
        assert_eq!(c.backend, BackendKind::Openai);
        assert_eq!(c.model_for(Level::Module), "big");
        assert_eq!(c.model_for(Level::File), "local");
        assert_eq!(c.max_entities, Some(5));
        assert!(toml::from_str::<ExplainConfig>("levels = [\"files\"]").is_err());
        assert_eq!(
            c.canonical(),
            ExplainConfig {
                base_url: "elsewhere".into(),
                concurrency: 8,
                ..c.clone()
            }
            .canonical()
        );
        let ort = ExplainConfig {
            backend: BackendKind::Ort,
            ..ExplainConfig::default()
        };
        assert_eq!(ort.model_for(Level::File), DEFAULT_ORT_MODEL);
        assert_eq!(
            ort.canonical(),
            ExplainConfig {
                batch_size: 16,
                threads: 3,
                ..ort.clone()
            }
            .canonical(),
            "batching and threads do not decide the text"
        );
        assert!(backend_for(&ExplainConfig::default()).unwrap().is_none());
    }
}
