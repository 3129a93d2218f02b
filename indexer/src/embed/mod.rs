//! The embedding stage (paper section 3.2.5) on ONNX Runtime through `ort`.
//!
//! One [`Embedder`] holds an ONNX session and its tokenizer and turns texts
//! into vectors: tokenise, sort by length, batch with padding to the
//! longest in the batch, run, pool (attention-masked mean or CLS) and
//! L2-normalise. Document texts come from [`codegloss_core::embed::DocPrompt`]
//! and queries from [`codegloss_core::embed::query_prompt`], so the native
//! CLI and the browser embed the same text for the same question.
//!
//! The ONNX Runtime shared library is loaded at run time (`load-dynamic`);
//! `cargo xtask models` installs it and the default model, and every file
//! with a known SHA-256 is checked before use.

pub mod vectorize;

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use codegloss_core::embed::{query_prompt, DocPrompt, EmbeddingSpec, PROMPT_FORMAT_VERSION};
use indicatif::ProgressBar;
use ort::session::{Session, SessionInputValue};
use ort::value::Tensor;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use crate::config::{Device, EmbeddingConfig, DEFAULT_MODEL_ID};
use crate::error::IndexError;

/// The model manifest of the repository (`models/manifest.json`), built in
/// so that the CLI can verify the files `cargo xtask models` installed.
pub(crate) const MODELS_MANIFEST: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../models/manifest.json"
));

#[derive(Deserialize)]
struct ManifestFile {
    id: String,
    dest: String,
    sha256: String,
}

#[derive(Deserialize)]
struct ModelsManifest {
    files: Vec<ManifestFile>,
}

fn manifest_entry(id: &str) -> Option<(String, String)> {
    let m: ModelsManifest = serde_json::from_str(MODELS_MANIFEST).ok()?;
    m.files
        .into_iter()
        .find(|f| f.id == id)
        .map(|f| (f.dest, f.sha256))
}

/// The model cache: `$CODEGLOSS_CACHE`, else `~/.cache/codegloss`.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CODEGLOSS_CACHE") {
        return Some(PathBuf::from(dir));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/codegloss"))
}

/// The files an embedder needs, resolved and verified.
#[derive(Debug, Clone)]
pub struct ModelFiles {
    /// ONNX model.
    pub model: PathBuf,
    /// `tokenizer.json`.
    pub tokenizer: PathBuf,
    /// ONNX Runtime shared library.
    pub onnxruntime: PathBuf,
    /// SHA-256 of the model file.
    pub model_sha256: String,
    /// SHA-256 of the tokenizer file.
    pub tokenizer_sha256: String,
}

/// SHA-256 of a file, read in pieces (a decoder's weights are 1.5 GB).
pub(crate) fn sha256_file(path: &Path) -> Result<String, IndexError> {
    let mut file = std::fs::File::open(path).map_err(|e| IndexError::io(path, e))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(|e| IndexError::io(path, e))?;
    Ok(hex::encode(hasher.finalize()))
}

const INSTALL_HINT: &str = "run `cargo xtask models` to install the default models, set the path in the [embedding] section of codegloss.toml, or index with `--no-embed`";

/// Resolve a file: the configured path, else the default in the cache
/// (manifest id), checking existence and (when known) its SHA-256.
fn resolve(
    configured: Option<&Path>,
    default_id: Option<&str>,
    expected: Option<&str>,
    what: &str,
) -> Result<(PathBuf, String), IndexError> {
    let (path, known_sha) = match (configured, default_id) {
        (Some(p), _) => (p.to_path_buf(), None),
        (None, Some(id)) => {
            let (dest, sha) = manifest_entry(id).ok_or_else(|| IndexError::Model {
                path: PathBuf::from("models/manifest.json"),
                message: format!("no entry `{id}` in the built-in model manifest"),
            })?;
            let dir = cache_dir().ok_or_else(|| IndexError::Model {
                path: PathBuf::from("~/.cache/codegloss"),
                message: format!("neither CODEGLOSS_CACHE nor HOME is set; {INSTALL_HINT}"),
            })?;
            (dir.join("models").join(dest), Some(sha))
        }
        (None, None) => {
            return Err(IndexError::Model {
                path: PathBuf::from("codegloss.toml"),
                message: format!(
                    "embedding.{what} must be set for a model other than {DEFAULT_MODEL_ID}"
                ),
            })
        }
    };
    if !path.is_file() {
        return Err(IndexError::Model {
            path,
            message: format!("{what} file not found; {INSTALL_HINT}"),
        });
    }
    let sha = sha256_file(&path)?;
    if let Some(want) = expected.or(known_sha.as_deref()) {
        if !want.eq_ignore_ascii_case(&sha) {
            return Err(IndexError::Model {
                path,
                message: format!(
                    "{what} sha256 mismatch: expected {want}, found {sha}; the file is damaged or a different version; delete it and run `cargo xtask models`"
                ),
            });
        }
    }
    Ok((path, sha))
}

/// The ONNX Runtime library: the configured path, else `ORT_DYLIB_PATH`,
/// else the one `cargo xtask models` installed (sha256-checked).
pub fn onnxruntime_library(configured: Option<&Path>) -> Result<PathBuf, IndexError> {
    let ort_env = std::env::var_os("ORT_DYLIB_PATH").map(PathBuf::from);
    let (path, _) = resolve(
        configured.or(ort_env.as_deref()),
        Some("onnxruntime"),
        None,
        "onnxruntime",
    )?;
    Ok(path)
}

impl ModelFiles {
    /// Resolve and verify the files named by the configuration.
    pub fn resolve(cfg: &EmbeddingConfig) -> Result<Self, IndexError> {
        let default = cfg.model_id == DEFAULT_MODEL_ID;
        let (model, model_sha256) = resolve(
            cfg.model.as_deref(),
            default.then_some("minilm-model"),
            cfg.model_sha256.as_deref(),
            "model",
        )?;
        let (tokenizer, tokenizer_sha256) = resolve(
            cfg.tokenizer.as_deref(),
            default.then_some("minilm-tokenizer"),
            None,
            "tokenizer",
        )?;
        let onnxruntime = onnxruntime_library(cfg.onnxruntime.as_deref())?;
        Ok(ModelFiles {
            model,
            tokenizer,
            onnxruntime,
            model_sha256,
            tokenizer_sha256,
        })
    }
}

static ENVIRONMENT: OnceLock<Result<(PathBuf, ort::environment::Environment), String>> =
    OnceLock::new();

/// The process-wide ONNX Runtime environment, loaded once from `lib`.
pub(crate) fn environment(
    lib: &Path,
) -> Result<&'static ort::environment::Environment, IndexError> {
    let entry = ENVIRONMENT.get_or_init(|| {
        let env = ort::init_from(lib)
            .map_err(|e| e.to_string())?
            .with_name("codegloss")
            .with_telemetry(false)
            .build()
            .map_err(|e| e.to_string())?;
        Ok((lib.to_path_buf(), env))
    });
    match entry {
        Ok((loaded, env)) => {
            if loaded != lib {
                log::warn!(
                    "ONNX Runtime already loaded from {}; ignoring {}",
                    loaded.display(),
                    lib.display()
                );
            }
            Ok(env)
        }
        Err(message) => Err(IndexError::Model {
            path: lib.to_path_buf(),
            message: format!("cannot load ONNX Runtime: {message}"),
        }),
    }
}

/// What a session runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// CPU execution provider.
    Cpu,
    /// CUDA execution provider.
    Cuda,
}

/// One tokenised text.
#[derive(Debug, Clone)]
pub struct Tokens {
    ids: Vec<i64>,
    type_ids: Vec<i64>,
}

impl Tokens {
    /// Number of tokens, special tokens included.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there are no tokens.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// A padded batch ready for the session.
pub struct Batch {
    /// Positions of the texts in the caller's list.
    pub positions: Vec<usize>,
    rows: usize,
    cols: usize,
    ids: Vec<i64>,
    mask: Vec<i64>,
    type_ids: Vec<i64>,
}

/// An ONNX sentence-embedding model with its tokenizer.
pub struct Embedder {
    session: Session,
    tokenizer: Tokenizer,
    counter: Tokenizer,
    spec: EmbeddingSpec,
    batch_size: usize,
    input_names: Vec<String>,
    output: String,
    backend: Backend,
}

/// Register CUDA when asked for and possible; say which device is used.
#[cfg(feature = "cuda")]
pub(crate) fn select_device(
    mut builder: ort::session::builder::SessionBuilder,
    device: Device,
    lib: &Path,
    threads: usize,
    what: &str,
) -> Result<(ort::session::builder::SessionBuilder, Backend), IndexError> {
    use ort::ep::ExecutionProvider as _;
    if device == Device::Cpu {
        log::info!("{what} on CPU with {threads} threads (device = \"cpu\")");
        return Ok((builder, Backend::Cpu));
    }
    if ort::ep::CUDA::is_available().unwrap_or(false) {
        match ort::ep::CUDA::default().register(&mut builder) {
            Ok(()) => {
                log::info!("{what} on CUDA");
                return Ok((builder, Backend::Cuda));
            }
            Err(e) if device == Device::Cuda => {
                return Err(model_err(lib, "cannot use the CUDA execution provider", e))
            }
            Err(e) => log::warn!(
                "CUDA execution provider failed ({e}); {what} on CPU with {threads} threads"
            ),
        }
    } else if device == Device::Cuda {
        return Err(model_err(
            lib,
            "device = \"cuda\"",
            "this ONNX Runtime library has no CUDA execution provider; point embedding.onnxruntime at libonnxruntime.so from the onnxruntime-gpu wheel",
        ));
    } else {
        log::warn!(
            "no CUDA execution provider in {}; {what} on CPU with {threads} threads",
            lib.display()
        );
    }
    Ok((builder, Backend::Cpu))
}

/// Without the `cuda` feature only the CPU is available.
#[cfg(not(feature = "cuda"))]
pub(crate) fn select_device(
    builder: ort::session::builder::SessionBuilder,
    device: Device,
    lib: &Path,
    threads: usize,
    what: &str,
) -> Result<(ort::session::builder::SessionBuilder, Backend), IndexError> {
    match device {
        Device::Cuda => Err(model_err(
            lib,
            "device = \"cuda\"",
            "this codegloss was built without the `cuda` feature; rebuild with `--features cuda`",
        )),
        Device::Auto => {
            log::info!("built without the `cuda` feature; {what} on CPU with {threads} threads");
            Ok((builder, Backend::Cpu))
        }
        Device::Cpu => Ok((builder, Backend::Cpu)),
    }
}

/// A `tokenizer.json` without padding or truncation (texts are counted
/// and cut by the caller).
pub(crate) fn load_tokenizer(t: &Path) -> Result<Tokenizer, IndexError> {
    let mut tokenizer =
        Tokenizer::from_file(t).map_err(|e| model_err(t, "cannot load the tokenizer", e))?;
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(None)
        .map_err(|e| model_err(t, "tokenizer", e))?;
    Ok(tokenizer)
}

pub(crate) fn model_err(path: &Path, what: &str, e: impl std::fmt::Display) -> IndexError {
    IndexError::Model {
        path: path.to_path_buf(),
        message: format!("{what}: {e}"),
    }
}

impl Embedder {
    /// Load the model named by the configuration.
    pub fn new(cfg: &EmbeddingConfig) -> Result<Self, IndexError> {
        let files = ModelFiles::resolve(cfg)?;
        Self::from_files(cfg, &files)
    }

    /// Load from resolved files.
    pub fn from_files(cfg: &EmbeddingConfig, files: &ModelFiles) -> Result<Self, IndexError> {
        let env = environment(&files.onnxruntime)?;
        let threads = if cfg.threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            cfg.threads
        };
        let m = &files.model;
        let builder = Session::builder(env)
            .map_err(|e| model_err(m, "cannot create an ONNX session", e))?
            .with_intra_threads(threads)
            .map_err(|e| model_err(m, "cannot set threads", e))?;
        let (builder, backend) = select_device(
            builder,
            cfg.device,
            &files.onnxruntime,
            threads,
            "embedding",
        )?;
        let mut builder = builder;
        let session = builder
            .commit_from_file(m)
            .map_err(|e| model_err(m, "cannot load the ONNX model", e))?;
        let input_names: Vec<String> = session
            .inputs()
            .iter()
            .map(|o| o.name().to_string())
            .collect();
        for required in ["input_ids", "attention_mask"] {
            if !input_names.iter().any(|n| n == required) {
                return Err(model_err(
                    m,
                    "unsupported model",
                    format!(
                        "it has no `{required}` input (inputs: {})",
                        input_names.join(", ")
                    ),
                ));
            }
        }
        let outputs: Vec<String> = session
            .outputs()
            .iter()
            .map(|o| o.name().to_string())
            .collect();
        let output = [
            "last_hidden_state",
            "token_embeddings",
            "sentence_embedding",
        ]
        .iter()
        .find(|n| outputs.iter().any(|o| o == *n))
        .map(|s| (*s).to_string())
        .or_else(|| outputs.first().cloned())
        .ok_or_else(|| model_err(m, "unsupported model", "it has no outputs"))?;
        let t = &files.tokenizer;
        let counter = load_tokenizer(t)?;
        let mut tokenizer = counter.clone();
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: cfg.max_length,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|e| model_err(t, "tokenizer", e))?;
        let mut embedder = Embedder {
            session,
            tokenizer,
            counter,
            spec: EmbeddingSpec {
                model_id: cfg.model_id.clone(),
                model_sha256: files.model_sha256.clone(),
                tokenizer_sha256: files.tokenizer_sha256.clone(),
                dimension: 0,
                pooling: cfg.pooling,
                normalize: cfg.normalize,
                max_length: cfg.max_length as u32,
                prompt_format_version: PROMPT_FORMAT_VERSION,
                query_prefix: cfg.query_prefix.clone(),
                document_prefix: cfg.document_prefix.clone(),
            },
            batch_size: cfg.batch_size.max(1),
            input_names,
            output,
            backend,
        };
        let probe = embedder.embed_texts(&["dimension probe".to_string()], None)?;
        embedder.spec.dimension = probe[0].len() as u32;
        Ok(embedder)
    }

    /// The model description recorded in the index.
    pub fn spec(&self) -> &EmbeddingSpec {
        &self.spec
    }

    /// Where inference runs.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    fn tok_err(e: impl std::fmt::Display) -> IndexError {
        IndexError::Embed {
            message: format!("tokenizer: {e}"),
        }
    }

    /// Tokens of a text, special tokens included, without truncation.
    pub fn count_tokens(&self, text: &str) -> Result<usize, IndexError> {
        Ok(self
            .counter
            .encode(text, true)
            .map_err(Self::tok_err)?
            .len())
    }

    /// Byte offset in `text` of the end of its first `n` tokens (no special
    /// tokens counted), or the text length when it has fewer.
    fn byte_after_tokens(&self, text: &str, n: usize) -> Result<usize, IndexError> {
        let enc = self.counter.encode(text, false).map_err(Self::tok_err)?;
        let offsets = enc.get_offsets();
        if n >= offsets.len() {
            return Ok(text.len());
        }
        Ok(if n == 0 { 0 } else { offsets[n - 1].1 })
    }

    /// The document text for a chunk prompt, within the model's token limit:
    /// the header fields stay whole; the explanation shrinks first (down to
    /// a quarter of the free budget), then the code.
    pub fn fit_document(&self, prompt: &DocPrompt) -> Result<String, IndexError> {
        let full = prompt.full();
        let max = self.spec.max_length as usize;
        if self.count_tokens(&full)? <= max {
            return Ok(full);
        }
        let base = self.count_tokens(&prompt.render(0, 0))?;
        let free = max.saturating_sub(base);
        if free == 0 {
            return Ok(prompt.render(0, 0));
        }
        let expl_tokens = self.count_tokens(&prompt.explanation)?.saturating_sub(2);
        let code_tokens = self.count_tokens(&prompt.code)?.saturating_sub(2);
        let keep_expl = expl_tokens.min(free.saturating_sub(code_tokens).max(free / 4));
        let mut keep_code = free.saturating_sub(keep_expl).min(code_tokens);
        let expl_bytes = self.byte_after_tokens(&prompt.explanation, keep_expl)?;
        // Token boundaries can merge differently once cut; back off a little
        // until the text fits, then let the tokenizer's truncation finish.
        for _ in 0..4 {
            let code_bytes = self.byte_after_tokens(&prompt.code, keep_code)?;
            let text = prompt.render(expl_bytes, code_bytes);
            if self.count_tokens(&text)? <= max || keep_code == 0 {
                return Ok(text);
            }
            keep_code = keep_code.saturating_sub(4);
        }
        let code_bytes = self.byte_after_tokens(&prompt.code, keep_code)?;
        Ok(prompt.render(expl_bytes, code_bytes))
    }

    /// Embed a question through the query prompt of Listing 9.
    pub fn embed_query(&mut self, question: &str) -> Result<Vec<f32>, IndexError> {
        let text = query_prompt(question, &self.spec.query_prefix);
        Ok(self.embed_texts(&[text], None)?.remove(0))
    }

    /// Tokenise texts (truncated at the model's limit).
    pub fn tokenize(&self, texts: &[String]) -> Result<Vec<Tokens>, IndexError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.iter().map(String::as_str).collect::<Vec<_>>(), true)
            .map_err(Self::tok_err)?;
        Ok(encodings
            .into_iter()
            .map(|e| Tokens {
                ids: e.get_ids().iter().map(|&x| i64::from(x)).collect(),
                type_ids: e.get_type_ids().iter().map(|&x| i64::from(x)).collect(),
            })
            .collect())
    }

    /// Group tokenised texts into batches of similar length, each padded to
    /// its longest member. Order: shortest first; ties by position.
    pub fn batches(&self, tokens: &[Tokens]) -> Vec<Batch> {
        let mut order: Vec<usize> = (0..tokens.len()).collect();
        order.sort_by_key(|&i| (tokens[i].len(), i));
        order
            .chunks(self.batch_size)
            .map(|positions| {
                let rows = positions.len();
                let cols = positions
                    .iter()
                    .map(|&i| tokens[i].len())
                    .max()
                    .unwrap_or(0)
                    .max(1);
                let mut ids = vec![0i64; rows * cols];
                let mut mask = vec![0i64; rows * cols];
                let mut type_ids = vec![0i64; rows * cols];
                for (r, &i) in positions.iter().enumerate() {
                    let t = &tokens[i];
                    ids[r * cols..r * cols + t.len()].copy_from_slice(&t.ids);
                    type_ids[r * cols..r * cols + t.len()].copy_from_slice(&t.type_ids);
                    mask[r * cols..r * cols + t.len()].fill(1);
                }
                Batch {
                    positions: positions.to_vec(),
                    rows,
                    cols,
                    ids,
                    mask,
                    type_ids,
                }
            })
            .collect()
    }

    /// Run the session on one batch and return the raw output (shape and
    /// data). This is the "bare session" the benchmark compares against.
    pub fn run_raw(&mut self, batch: &Batch) -> Result<(Vec<i64>, Vec<f32>), IndexError> {
        let shape = [batch.rows as i64, batch.cols as i64];
        let err = |e: ort::Error| IndexError::Embed {
            message: format!("inference failed: {e}"),
        };
        let mut inputs: Vec<(Cow<'_, str>, SessionInputValue<'_>)> = Vec::with_capacity(3);
        for name in &self.input_names {
            let data = match name.as_str() {
                "input_ids" => batch.ids.clone(),
                "attention_mask" => batch.mask.clone(),
                "token_type_ids" => batch.type_ids.clone(),
                other => {
                    return Err(IndexError::Embed {
                        message: format!("the model wants an input `{other}` that codegloss does not know how to fill"),
                    })
                }
            };
            let t = Tensor::from_array((shape, data)).map_err(err)?;
            inputs.push((Cow::Owned(name.clone()), t.into()));
        }
        let outputs = self.session.run(inputs).map_err(err)?;
        let value = outputs.get(&self.output).ok_or_else(|| IndexError::Embed {
            message: format!("the model produced no `{}` output", self.output),
        })?;
        let (shape, data) = value.try_extract_tensor::<f32>().map_err(err)?;
        Ok((shape.to_vec(), data.to_vec()))
    }

    /// Pool and normalise a batch's raw output into one vector per row.
    fn pool(
        &self,
        batch: &Batch,
        shape: &[i64],
        data: &[f32],
    ) -> Result<Vec<Vec<f32>>, IndexError> {
        codegloss_core::embed::pool_output(
            self.spec.pooling,
            self.spec.normalize,
            shape,
            data,
            batch.rows,
            batch.cols,
            &batch.mask,
        )
        .map_err(|message| IndexError::Embed { message })
    }

    /// Embed texts as they are (no prompt building), in the given order.
    pub fn embed_texts(
        &mut self,
        texts: &[String],
        progress: Option<&ProgressBar>,
    ) -> Result<Vec<Vec<f32>>, IndexError> {
        let tokens = self.tokenize(texts)?;
        let batches = self.batches(&tokens);
        let mut out = vec![Vec::new(); texts.len()];
        for batch in &batches {
            let (shape, data) = self.run_raw(batch)?;
            let vectors = self.pool(batch, &shape, &data)?;
            for (&pos, v) in batch.positions.iter().zip(vectors) {
                out[pos] = v;
            }
            if let Some(pb) = progress {
                pb.inc(batch.rows as u64);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_manifest_names_the_default_files() {
        for id in ["onnxruntime", "minilm-model", "minilm-tokenizer"] {
            let (dest, sha) = manifest_entry(id).expect(id);
            assert!(!dest.is_empty());
            assert_eq!(sha.len(), 64);
        }
    }

    #[test]
    fn missing_model_file_says_what_to_run() {
        let cfg = EmbeddingConfig {
            model: Some(PathBuf::from("/nonexistent/model.onnx")),
            ..EmbeddingConfig::default()
        };
        let err = ModelFiles::resolve(&cfg).unwrap_err().to_string();
        assert!(err.contains("/nonexistent/model.onnx"), "{err}");
        assert!(err.contains("cargo xtask models"), "{err}");
    }

    #[test]
    fn other_models_need_their_paths() {
        let cfg = EmbeddingConfig {
            model_id: "nomic-embed-text".into(),
            ..EmbeddingConfig::default()
        };
        let err = ModelFiles::resolve(&cfg).unwrap_err().to_string();
        assert!(err.contains("embedding.model must be set"), "{err}");
    }

    #[test]
    fn wrong_checksum_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("model.onnx");
        std::fs::write(&p, b"not a model").unwrap();
        let cfg = EmbeddingConfig {
            model: Some(p),
            model_sha256: Some("00".repeat(32)),
            ..EmbeddingConfig::default()
        };
        let err = ModelFiles::resolve(&cfg).unwrap_err().to_string();
        assert!(err.contains("sha256 mismatch"), "{err}");
    }
}
