//! An in-process decoder on ONNX Runtime (through `ort`, `load-dynamic`,
//! as the embedder): the explanation stage's `ort` backend.
//!
//! The model is a decoder-only ONNX graph that `cargo xtask models`
//! converts from a pinned GGUF file (`models/convert/gguf_to_onnx.py`):
//! MatMulNBits weights, GroupQueryAttention with the rotary embedding
//! inside and a key/value cache as inputs and outputs. Beside it lie the
//! `tokenizer.json` built from the GGUF vocabulary and merges, and
//! `generation.json` (architecture numbers, stop tokens, chat template).
//!
//! - [`DecoderFiles`] resolves and verifies the three files;
//! - [`Decoder`] holds the session, the tokenizer and the template;
//!   `run.rs` is the batched generation loop (prefill, then one token per
//!   step with the cache), `sample.rs` the token choice, `template.rs` the
//!   chat template.

mod run;
mod sample;
mod template;

use std::path::{Path, PathBuf};

use codegloss_core::chat::Message;
use ort::session::Session;
use ort::value::Tensor;
use serde::Deserialize;
use tokenizers::Tokenizer;

pub use run::{Finish, Generated};
pub use sample::{argmax, Sampler, Sampling};
pub use template::{ChatTemplate, TemplateError};

use crate::config::Device;
use crate::embed::{environment, load_tokenizer, model_err, select_device, sha256_file, Backend};
use crate::error::IndexError;

/// The version of the converter's graph interface this loop drives.
pub const CONVERTER_VERSION: u32 = 1;

/// `generation.json`, written by the converter.
#[derive(Debug, Clone, Deserialize)]
pub struct GenerationConfig {
    /// Graph interface version.
    pub converter_version: u32,
    /// `llama` or `qwen2`.
    pub architecture: String,
    /// The model's name in its metadata.
    #[serde(default)]
    pub name: String,
    /// Decoder layers.
    pub layers: usize,
    /// Key/value heads.
    pub kv_heads: usize,
    /// Width of one head.
    pub head_dim: usize,
    /// Vocabulary size.
    pub vocab: usize,
    /// Longest sequence the rotary tables cover.
    pub max_positions: usize,
    /// Rotary base.
    pub rope_theta: f64,
    /// The Jinja chat template.
    pub chat_template: String,
    /// Beginning-of-sequence token text, if any.
    #[serde(default)]
    pub bos_token: Option<String>,
    /// Its id.
    #[serde(default)]
    pub bos_token_id: Option<u32>,
    /// End-of-sequence token text.
    #[serde(default)]
    pub eos_token: Option<String>,
    /// Whether a prompt starts with the BOS token.
    #[serde(default)]
    pub add_bos_token: bool,
    /// Tokens that end a generation.
    pub stop_token_ids: Vec<u32>,
    /// Filler of padded positions.
    pub pad_token_id: u32,
}

/// The files of a converted decoder, resolved and checked.
#[derive(Debug, Clone)]
pub struct DecoderFiles {
    /// The folder holding them.
    pub dir: PathBuf,
    /// `model.onnx` (its weights in `model.onnx.data` beside it).
    pub model: PathBuf,
    /// `tokenizer.json`.
    pub tokenizer: PathBuf,
    /// `generation.json`.
    pub generation: PathBuf,
    /// The ONNX Runtime library.
    pub onnxruntime: PathBuf,
}

const INSTALL_HINT: &str = "run `cargo xtask models --group smollm2-onnx` (or `--group qwen-coder-1.5b-onnx`), or set explain.onnx_dir to a folder with model.onnx, tokenizer.json and generation.json";

impl DecoderFiles {
    /// The files in `dir`; `expected` maps file names to the sha256 the
    /// model manifest records (checked when given).
    pub fn in_dir(
        dir: &Path,
        onnxruntime: &Path,
        expected: &[(String, String)],
    ) -> Result<DecoderFiles, IndexError> {
        let files = DecoderFiles {
            dir: dir.to_path_buf(),
            model: dir.join("model.onnx"),
            tokenizer: dir.join("tokenizer.json"),
            generation: dir.join("generation.json"),
            onnxruntime: onnxruntime.to_path_buf(),
        };
        for p in [&files.model, &files.tokenizer, &files.generation] {
            if !p.is_file() {
                return Err(IndexError::Model {
                    path: p.clone(),
                    message: format!("decoder file not found; {INSTALL_HINT}"),
                });
            }
        }
        for (name, want) in expected {
            let p = dir.join(name);
            let got = sha256_file(&p)?;
            if !got.eq_ignore_ascii_case(want) {
                return Err(IndexError::Model {
                    path: p,
                    message: format!("sha256 mismatch: expected {want}, found {got}; delete the folder and run `cargo xtask models` again"),
                });
            }
        }
        Ok(files)
    }
}

#[derive(Deserialize)]
struct Conversion {
    name: String,
    dest: String,
    outputs: std::collections::BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct Conversions {
    #[serde(default)]
    conversions: Vec<Conversion>,
}

/// The decoder names `cargo xtask models` can convert (`models/manifest.json`).
pub fn installable() -> Vec<String> {
    serde_json::from_str::<Conversions>(crate::embed::MODELS_MANIFEST)
        .map(|c| c.conversions.into_iter().map(|c| c.name).collect())
        .unwrap_or_default()
}

impl DecoderFiles {
    /// The installed decoder `name` (a conversion of the model manifest),
    /// every file checked against its recorded sha256.
    pub fn installed(name: &str, onnxruntime: &Path) -> Result<DecoderFiles, IndexError> {
        let manifest = Path::new("models/manifest.json");
        let all: Conversions = serde_json::from_str(crate::embed::MODELS_MANIFEST)
            .map_err(|e| model_err(manifest, "built-in model manifest", e))?;
        let Some(c) = all.conversions.into_iter().find(|c| c.name == name) else {
            return Err(model_err(
                manifest,
                "unknown decoder",
                format!(
                    "`{name}` is not one of {}; set explain.onnx_dir for another converted model",
                    installable().join(", ")
                ),
            ));
        };
        let cache = crate::embed::cache_dir().ok_or_else(|| {
            model_err(
                Path::new("~/.cache/codegloss"),
                "no model cache",
                "neither CODEGLOSS_CACHE nor HOME is set",
            )
        })?;
        let expected: Vec<(String, String)> = c.outputs.into_iter().collect();
        DecoderFiles::in_dir(&cache.join("models").join(c.dest), onnxruntime, &expected)
    }
}

/// A loaded decoder.
pub struct Decoder {
    session: Session,
    tokenizer: Tokenizer,
    config: GenerationConfig,
    template: ChatTemplate,
    backend: Backend,
    cos: Tensor<f32>,
    sin: Tensor<f32>,
    path: PathBuf,
}

fn gen_err(path: &Path, e: impl std::fmt::Display) -> IndexError {
    IndexError::Model {
        path: path.to_path_buf(),
        message: format!("generation failed: {e}"),
    }
}

impl Decoder {
    /// Load the decoder with `threads` intra-op threads (0: every core) on
    /// `device`, with the embedder's fallback rules.
    pub fn load(files: &DecoderFiles, threads: usize, device: Device) -> Result<Self, IndexError> {
        let g = &files.generation;
        let text = std::fs::read_to_string(g).map_err(|e| IndexError::io(g, e))?;
        let config: GenerationConfig = serde_json::from_str(&text)
            .map_err(|e| model_err(g, "cannot read generation.json", e))?;
        if config.converter_version != CONVERTER_VERSION {
            return Err(model_err(
                g,
                "unsupported decoder",
                format!(
                    "converter version {} (this codegloss drives version {CONVERTER_VERSION}); run `cargo xtask models` again",
                    config.converter_version
                ),
            ));
        }
        let tokenizer = load_tokenizer(&files.tokenizer)?;
        let template = ChatTemplate::new(
            &config.chat_template,
            config.bos_token.as_deref().unwrap_or(""),
            config.eos_token.as_deref().unwrap_or(""),
        )
        .map_err(|e| model_err(g, "unusable chat template", e))?;
        let env = environment(&files.onnxruntime)?;
        let threads = if threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            threads
        };
        let m = &files.model;
        let builder = Session::builder(env)
            .map_err(|e| model_err(m, "cannot create an ONNX session", e))?
            .with_intra_threads(threads)
            .map_err(|e| model_err(m, "cannot set threads", e))?;
        let (mut builder, backend) =
            select_device(builder, device, &files.onnxruntime, threads, "generating")?;
        let session = builder
            .commit_from_file(m)
            .map_err(|e| model_err(m, "cannot load the ONNX decoder", e))?;
        for required in [
            "input_ids",
            "seqlens_k",
            "total_sequence_length",
            "last_index",
        ] {
            if !session.inputs().iter().any(|i| i.name() == required) {
                return Err(model_err(
                    m,
                    "unsupported decoder",
                    format!("it has no `{required}` input"),
                ));
            }
        }
        let (cos, sin) = rotary_tables(&config).map_err(|e| gen_err(m, e))?;
        Ok(Decoder {
            session,
            tokenizer,
            config,
            template,
            backend,
            cos,
            sin,
            path: m.clone(),
        })
    }

    /// What the session runs on.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The settings the converter wrote.
    pub fn config(&self) -> &GenerationConfig {
        &self.config
    }

    /// The chat prompt text of `messages`.
    pub fn chat_text(&self, messages: &[Message]) -> Result<String, IndexError> {
        self.template
            .render(messages)
            .map_err(|e| model_err(&self.path, "chat template", e))
    }

    /// Token ids of a prompt text; special-token text (`<|im_start|>`)
    /// becomes its token, as llama.cpp's servers parse prompts.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, IndexError> {
        let enc = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| gen_err(&self.path, e))?;
        let mut ids = enc.get_ids().to_vec();
        if self.config.add_bos_token {
            if let Some(bos) = self.config.bos_token_id {
                ids.insert(0, bos);
            }
        }
        Ok(ids)
    }

    /// The text of generated ids, special tokens left out.
    pub fn decode(&self, ids: &[u32]) -> Result<String, IndexError> {
        self.tokenizer
            .decode(ids, true)
            .map_err(|e| gen_err(&self.path, e))
    }

    /// The token ids of a chat.
    pub fn chat_ids(&self, messages: &[Message]) -> Result<Vec<u32>, IndexError> {
        self.encode(&self.chat_text(messages)?)
    }
}

/// cos and sin of position * theta^(-2i/d), [positions, d/2].
fn rotary_tables(c: &GenerationConfig) -> Result<(Tensor<f32>, Tensor<f32>), ort::Error> {
    let half = c.head_dim / 2;
    let n = c.max_positions;
    let mut cos = Vec::with_capacity(n * half);
    let mut sin = Vec::with_capacity(n * half);
    let inv: Vec<f64> = (0..half)
        .map(|i| 1.0 / c.rope_theta.powf((2 * i) as f64 / c.head_dim as f64))
        .collect();
    for p in 0..n {
        for f in &inv {
            let a = p as f64 * f;
            cos.push(a.cos() as f32);
            sin.push(a.sin() as f32);
        }
    }
    let shape = [n as i64, half as i64];
    Ok((
        Tensor::from_array((shape, cos))?,
        Tensor::from_array((shape, sin))?,
    ))
}
