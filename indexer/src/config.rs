//! `codegloss.toml`: every knob of the indexer, with defaults that work on
//! an unknown C++ codebase.
//!
//! All sections are optional; unknown keys are rejected so that a typo is
//! an error rather than a silently ignored setting. The canonical JSON form
//! of the configuration is hashed into the manifest.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use codegloss_core::embed::{Pooling, Quantization};
use codegloss_core::retrieve::RetrievalSettings;

use serde::{Deserialize, Serialize};

use crate::error::IndexError;
use crate::ingest::macros::GrammarRewrite;

/// The whole indexer configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Which files to read.
    pub files: FilesConfig,
    /// Path conventions for scopes.
    pub scopes: ScopeConfig,
    /// C++ parsing.
    pub parse: ParseConfig,
    /// Chunking budgets.
    pub chunk: ChunkConfig,
    /// Embedding model and vector index.
    pub embedding: EmbeddingConfig,
    /// Concept text from the repository's own words (embedded and indexed).
    pub concepts: crate::ingest::concepts::ConceptsConfig,
    /// Online retrieval (used by `query` and `eval`; the browser reads the
    /// same values from the manifest).
    pub retrieval: RetrievalSettings,
    /// The answer model (used by `ask` and `eval --answer`).
    pub answer: crate::llm::AnswerConfig,
    /// Model-written glosses (`structural` by default: no model needed).
    pub explain: crate::explain::ExplainConfig,
    /// The static site (`codegloss site`, `index --site`). Left out of the
    /// canonical form when empty, so that it changes no configuration hash.
    #[serde(skip_serializing_if = "SiteConfig::is_empty")]
    pub site: SiteConfig,
    /// Whether the file had a `[retrieval]` section. Without one, commands
    /// that read an index rank with the settings recorded in it.
    #[serde(skip)]
    pub retrieval_given: bool,
}

/// The static site's settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct SiteConfig {
    /// Origins besides this computer (`localhost`, `127.0.0.1`, any port)
    /// that the site's Content-Security-Policy lets the widget call for
    /// answers, e.g. `["https://llm.example.org"]`: a scheme (`http` or
    /// `https`), a host (`*.` may start it) and an optional port (`*`: any);
    /// no path.
    pub answer_origins: Vec<String>,
}

impl SiteConfig {
    fn is_empty(&self) -> bool {
        self.answer_origins.is_empty()
    }
}

/// `origin` in the lower-case form a Content-Security-Policy source takes,
/// or why it is not an origin the site can allow.
fn normalize_origin(origin: &str) -> Result<String, IndexError> {
    let bad = |why: &str| {
        Err(IndexError::ConfigText {
            message: format!(
                "[site] answer_origins: {origin:?} {why} (expected an origin such as \"https://llm.example.org\" or \"http://gpu-box:8080\")"
            ),
        })
    };
    let lower = origin.trim().to_ascii_lowercase();
    let Some((scheme, rest)) = lower.split_once("://") else {
        return bad("has no scheme");
    };
    if scheme != "http" && scheme != "https" {
        return bad("is not http or https");
    }
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (rest, None),
    };
    let labels = host.strip_prefix("*.").unwrap_or(host);
    let label_ok = |l: &str| {
        !l.is_empty()
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    if labels.is_empty() || !labels.split('.').all(label_ok) {
        return bad("has no valid host name (no path, no IPv6 address: a policy cannot name one)");
    }
    if let Some(p) = port {
        if p != "*" && !p.parse::<u16>().is_ok_and(|n| n > 0) {
            return bad("has an invalid port");
        }
    }
    Ok(format!("{scheme}://{rest}"))
}

/// Which files are indexed and how they are classified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FilesConfig {
    /// Extensions (without dot) parsed as C++ headers.
    pub header_extensions: Vec<String>,
    /// Extensions parsed as C++ implementation files.
    pub implementation_extensions: Vec<String>,
    /// Extensions parsed as CUDA.
    pub cuda_extensions: Vec<String>,
    /// Extensions read as Markdown.
    pub markdown_extensions: Vec<String>,
    /// Extensions read as reStructuredText.
    pub rst_extensions: Vec<String>,
    /// Extensions read as plain text.
    pub text_extensions: Vec<String>,
    /// Exact file names treated as build files.
    pub build_file_names: Vec<String>,
    /// Extensions treated as build files.
    pub build_extensions: Vec<String>,
    /// Files larger than this are skipped with a warning.
    pub max_file_bytes: u64,
    /// Honour `.gitignore`, `.ignore` and git excludes.
    pub respect_gitignore: bool,
    /// Extra gitignore-style patterns to exclude.
    pub exclude: Vec<String>,
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_string()).collect()
}

impl Default for FilesConfig {
    fn default() -> Self {
        FilesConfig {
            header_extensions: strings(&["h", "hpp", "hh", "hxx", "inl"]),
            implementation_extensions: strings(&["cpp", "cc", "cxx"]),
            cuda_extensions: strings(&["cu", "cuh"]),
            markdown_extensions: strings(&["md", "markdown"]),
            rst_extensions: strings(&["rst"]),
            text_extensions: strings(&["txt"]),
            build_file_names: strings(&["CMakeLists.txt"]),
            build_extensions: strings(&["cmake"]),
            max_file_bytes: 1024 * 1024,
            respect_gitignore: true,
            exclude: Vec::new(),
        }
    }
}

/// Path conventions that mark a file's scope. A file is in a scope when any
/// folder of its path equals (case-insensitively) one of the names; the
/// first matching folder from the root wins, tests before examples.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScopeConfig {
    /// Folder names of tests.
    pub test_dirs: Vec<String>,
    /// Folder names of examples.
    pub example_dirs: Vec<String>,
    /// Folder names of documentation.
    pub docs_dirs: Vec<String>,
    /// Folder names of build machinery.
    pub build_dirs: Vec<String>,
}

impl Default for ScopeConfig {
    fn default() -> Self {
        ScopeConfig {
            test_dirs: strings(&[
                "test",
                "tests",
                "unit_tests",
                "unittests",
                "testing",
                "testsuite",
            ]),
            example_dirs: strings(&[
                "example",
                "examples",
                "tutorial",
                "tutorials",
                "demo",
                "demos",
                "samples",
            ]),
            docs_dirs: strings(&["doc", "docs", "documentation", "manual"]),
            build_dirs: strings(&["cmake", "ci", ".github"]),
        }
    }
}

/// C++ parsing knobs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ParseConfig {
    /// Attribute-like macros that are blanked (replaced by spaces of equal
    /// length) before parsing. A trailing `*` matches any suffix.
    pub attribute_macros: Vec<String>,
    /// Macros replaced by a same-length-or-shorter C++ text (padded with
    /// spaces), for macros that stand for syntax, such as lambda captures.
    pub macro_replacements: BTreeMap<String, String>,
    /// Also blank ALL_CAPS identifiers, and reserved ones (`__` and a
    /// letter), that stand directly before a declaration and cause an
    /// ERROR node.
    pub generic_caps_rule: bool,
    /// Rewrites of valid C++ that the grammar cannot read, left out. Not
    /// a setting: `codegloss macros` leaves each out in turn to measure
    /// it.
    #[serde(skip)]
    pub grammar_rewrites_off: BTreeSet<GrammarRewrite>,
}

impl Default for ParseConfig {
    fn default() -> Self {
        ParseConfig {
            // Compiler extensions only: a project's own macros come from
            // its `#define`s (`ingest::macros::defines`), and the macros of
            // libraries it uses but does not contain from the ALL_CAPS
            // rule; a configuration may name more.
            attribute_macros: strings(&[
                "__host__",
                "__device__",
                "__global__",
                "__forceinline__",
                "__noinline__",
                "__launch_bounds__",
                "__restrict__",
                "__inline__",
            ]),
            macro_replacements: BTreeMap::new(),
            generic_caps_rule: true,
            grammar_rewrites_off: BTreeSet::new(),
        }
    }
}

/// Chunking budgets, in estimated tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChunkConfig {
    /// Code chunks over this are split on statement boundaries.
    pub max_tokens: usize,
    /// Documentation sections over this are split into `title_1`, `title_2`, ...
    pub doc_max_tokens: usize,
}

impl Default for ChunkConfig {
    fn default() -> Self {
        ChunkConfig {
            max_tokens: 400,
            doc_max_tokens: 400,
        }
    }
}

/// Where inference runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Device {
    /// CUDA when the ONNX Runtime library has it, else CPU (logged).
    #[default]
    Auto,
    /// CPU only.
    Cpu,
    /// CUDA; an error when it cannot be used.
    Cuda,
}

/// The embedding model and the vector index built from it. The default is
/// the bundled all-MiniLM-L6-v2 int8 export that `cargo xtask models`
/// installs; any ONNX sentence-embedding model with a `tokenizer.json` can
/// be named instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbeddingConfig {
    /// Compute embeddings. Off gives an index without vectors (keyword and
    /// structure retrieval only).
    pub enabled: bool,
    /// Model id recorded in the index; a query model must carry the same.
    pub model_id: String,
    /// ONNX model file (default: the installed MiniLM in the model cache).
    pub model: Option<PathBuf>,
    /// `tokenizer.json` of the model (default: the installed MiniLM one).
    pub tokenizer: Option<PathBuf>,
    /// Expected SHA-256 of the model file, checked before use. Known for
    /// the default model.
    pub model_sha256: Option<String>,
    /// ONNX Runtime shared library (default: the installed one, or
    /// `ORT_DYLIB_PATH`).
    pub onnxruntime: Option<PathBuf>,
    /// `mean` or `cls`.
    pub pooling: Pooling,
    /// L2-normalise vectors.
    pub normalize: bool,
    /// The model's real token limit (special tokens included). MiniLM was
    /// trained to 256 even though its tokenizer.json pads to 128.
    pub max_length: usize,
    /// Text put before every query (for example `search_query: ` for nomic).
    pub query_prefix: String,
    /// Text put before every document (for example `search_document: `).
    pub document_prefix: String,
    /// Texts per inference batch.
    pub batch_size: usize,
    /// ONNX Runtime intra-op threads (0: one per core).
    pub threads: usize,
    /// `auto`, `cpu` or `cuda`.
    pub device: Device,
    /// `int8` (one byte per dimension and a scale per vector) or `f32`.
    pub quantization: Quantization,
    /// HNSW candidate list while building.
    pub hnsw_ef_construction: usize,
    /// HNSW candidate list while searching.
    pub hnsw_ef_search: usize,
    /// Random queries on which HNSW recall against exact search is measured.
    pub recall_queries: usize,
    /// Vectors per inverted-file partition (k-means over the vectors): the
    /// unit a browser fetches for semantic search under `[retrieval]
    /// ivf_probe`.
    pub ivf_partition_size: usize,
}

/// Id of the default embedding model.
pub const DEFAULT_MODEL_ID: &str = "all-MiniLM-L6-v2-int8";

impl Default for EmbeddingConfig {
    fn default() -> Self {
        EmbeddingConfig {
            enabled: true,
            model_id: DEFAULT_MODEL_ID.to_string(),
            model: None,
            tokenizer: None,
            model_sha256: None,
            onnxruntime: None,
            pooling: Pooling::Mean,
            normalize: true,
            max_length: 256,
            query_prefix: String::new(),
            document_prefix: String::new(),
            batch_size: 16,
            threads: 0,
            device: Device::Auto,
            quantization: Quantization::Int8,
            hnsw_ef_construction: 100,
            hnsw_ef_search: 100,
            recall_queries: 200,
            ivf_partition_size: codegloss_core::ivf::DEFAULT_PARTITION_SIZE,
        }
    }
}

impl Config {
    /// Read a configuration file.
    pub fn load(path: &Path) -> Result<Self, IndexError> {
        let text = std::fs::read_to_string(path).map_err(|e| IndexError::io(path, e))?;
        Self::parse(&text).map_err(|e| match e {
            IndexError::ConfigText { message } => IndexError::Config {
                path: path.to_path_buf(),
                message,
            },
            other => other,
        })
    }

    /// Parse configuration text. Fails with [`IndexError::ConfigText`].
    pub fn parse(text: &str) -> Result<Self, IndexError> {
        let toml_error = |e: toml::de::Error| IndexError::ConfigText {
            message: e.to_string(),
        };
        let mut cfg: Config = toml::from_str(text).map_err(toml_error)?;
        let table: toml::Table = text.parse().map_err(toml_error)?;
        cfg.retrieval_given = table.contains_key("retrieval");
        cfg.site.answer_origins = cfg
            .site
            .answer_origins
            .iter()
            .map(|o| normalize_origin(o))
            .collect::<Result<_, _>>()?;
        Ok(cfg)
    }

    /// The retrieval settings for an index: this configuration's when it
    /// has a `[retrieval]` section, else the ones the index was built with
    /// (the defaults for an index that recorded none).
    pub fn retrieval_for(&self, manifest: &codegloss_core::Manifest) -> RetrievalSettings {
        if self.retrieval_given {
            self.retrieval.clone()
        } else {
            manifest.retrieval.clone().unwrap_or_default()
        }
    }

    /// SHA-256 of the canonical JSON form, recorded in the manifest.
    /// Machine-specific paths and the thread count are left out (the model
    /// files are identified by their SHA-256 in the manifest instead), so
    /// the same settings give the same hash on every machine.
    pub fn hash(&self) -> String {
        let mut canonical = self.clone();
        canonical.embedding.model = None;
        canonical.embedding.tokenizer = None;
        canonical.embedding.onnxruntime = None;
        canonical.embedding.threads = 0;
        canonical.embedding.device = Device::Auto;
        // Retrieval settings do not change the index content.
        canonical.retrieval = RetrievalSettings::default();
        canonical.answer = crate::llm::AnswerConfig::default();
        // Nor do the site's settings.
        canonical.site = SiteConfig::default();
        // Endpoint, key, concurrency, timeout and cache path do not change
        // what is generated.
        canonical.explain = canonical.explain.canonical();
        let json = serde_json::to_string(&canonical).expect("config serialises");
        codegloss_core::format::sha256_hex(json.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_gives_defaults() {
        assert_eq!(Config::parse("").unwrap(), Config::default());
    }

    #[test]
    fn partial_sections_keep_other_defaults() {
        let c = Config::parse("[chunk]\nmax_tokens = 200\n[files]\nmax_file_bytes = 10\n").unwrap();
        assert_eq!(c.chunk.max_tokens, 200);
        assert_eq!(c.chunk.doc_max_tokens, 400);
        assert_eq!(c.files.max_file_bytes, 10);
        assert_eq!(
            c.files.header_extensions,
            FilesConfig::default().header_extensions
        );
    }

    #[test]
    fn retrieval_and_embedding_sections_parse() {
        let c = Config::parse(
            "[retrieval]\nk = 5\nfusion = \"rrf\"\n[embedding]\npooling = \"cls\"\nquantization = \"f32\"\n",
        )
        .unwrap();
        assert_eq!(c.retrieval.k, 5);
        assert_eq!(c.retrieval.fusion, codegloss_core::retrieve::Fusion::Rrf);
        assert_eq!(c.retrieval.candidate_k, 20);
        assert_eq!(c.embedding.pooling, Pooling::Cls);
        assert_eq!(c.embedding.quantization, Quantization::F32);
        assert!(Config::parse("[retrieval]\nk_typo = 1\n").is_err());
        // Machine paths and retrieval settings do not change the hash.
        let mut d = Config::default();
        d.embedding.model = Some("/somewhere/model.onnx".into());
        d.retrieval.k = 3;
        assert_eq!(d.hash(), Config::default().hash());
    }

    #[test]
    fn site_answer_origins_parse_and_are_checked() {
        let c = Config::parse(
            "[site]\nanswer_origins = [\"HTTPS://LLM.Example.org/\", \"http://gpu-box:8080\", \"https://*.example.net:*\"]\n",
        )
        .unwrap();
        assert_eq!(
            c.site.answer_origins,
            [
                "https://llm.example.org",
                "http://gpu-box:8080",
                "https://*.example.net:*"
            ]
        );
        // The site's settings do not change the hash.
        assert_eq!(c.hash(), Config::default().hash());
        for bad in [
            "llm.example.org",
            "ftp://llm.example.org",
            "https://llm.example.org/v1",
            "https://llm.example.org:99999",
            "https://[::1]:8080",
            "https://a b",
            "https://x; script-src *",
            "https://",
        ] {
            let err = Config::parse(&format!("[site]\nanswer_origins = [{bad:?}]\n")).unwrap_err();
            assert!(err.to_string().contains("answer_origins"), "{bad}: {err}");
        }
        assert!(Config::parse("[site]\nanswer_origin = []\n").is_err());
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let err = Config::parse("[chunk]\nmax_tokenz = 1\n").unwrap_err();
        assert!(err.to_string().contains("max_tokenz"), "{err}");
    }

    #[test]
    fn hash_changes_with_settings() {
        let a = Config::default();
        let mut b = Config::default();
        b.chunk.max_tokens = 123;
        assert_ne!(a.hash(), b.hash());
        assert_eq!(a.hash(), Config::default().hash());
    }
}
