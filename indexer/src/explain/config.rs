//! `[explain]` in `codegloss.toml`: which backend writes glosses, at which
//! levels (core's [`Level`], the one level vocabulary), with which model
//! per level, in which order under a cap, and what becomes of the
//! structural gloss when a model gloss arrives.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use codegloss_core::chat::{DEFAULT_BASE_URL, DEFAULT_MODEL};
use serde::{Deserialize, Serialize};

use super::Level;

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
    /// An ONNX decoder in-process (not implemented yet; the
    /// [`super::GlossBackend`] trait is its interface).
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
}

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
        }
    }
}

impl ExplainConfig {
    /// Model id for a level.
    pub fn model_for(&self, level: Level) -> &str {
        self.models.get(&level).map_or(&self.model, String::as_str)
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
        assert!(backend_for(&ExplainConfig {
            backend: BackendKind::Ort,
            ..ExplainConfig::default()
        })
        .is_err());
    }
}
