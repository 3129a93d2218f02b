//! Model-written glosses at ingestion (paper sections 3.2.4 and 3.5,
//! Table 5): the offline stage front-loads code understanding by asking an
//! explanation model to describe every selected entity, so that both the
//! embedding and the final context carry the explanation and a small
//! answer model does not have to rediscover the code.
//!
//! Indexing never depends on a model. The structural glosses
//! ([`crate::ingest::gloss`]) stay the default and the fallback: an entity whose
//! generation fails twice (timeout, HTTP error, empty, garbage or refusing
//! output) keeps its structural gloss, and the cause is recorded in the
//! manifest.
//!
//! Levels run bottom-up: symbols and documentation sections, then call
//! chains (built from the glosses of the callable and its neighbours),
//! files (from their symbols' glosses), and modules deepest first (from
//! their files' and submodules' glosses). Each gloss is keyed by a hash of
//! its rendered prompt (code, structural facts, lower-level glosses), an
//! input digest (the file's SHA-256 for files, its files' and submodules'
//! digests for modules), the prompt signature and the model id, and is
//! cached next to the index ([`cache`]). A re-index regenerates exactly
//! the glosses whose inputs changed.

pub mod cache;
pub mod prompts;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use codegloss_core::format::{sha256_hex, GlossFallback, GlossInfo};
use codegloss_core::{EdgeKind, Entity, EntityKind, GlossSource, IndexData, Scope, SourceType};
use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};

use crate::error::IndexError;
use crate::ingest::gloss::Adjacency;
use crate::llm::{self, AnswerConfig};
use cache::{lock, CacheEntry, GlossCache};
use prompts::Mode;

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
    /// [`GlossBackend`] trait is its interface).
    Ort,
}

/// An explanation level. Every entity kind belongs to exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Code symbols (functions, classes, aliases, ...).
    Symbol,
    /// Documentation sections.
    Doc,
    /// Call neighbourhoods.
    CallChain,
    /// Files.
    File,
    /// Folders.
    Module,
}

impl Level {
    /// Bottom-up order: every level only reads glosses of earlier ones.
    pub const BOTTOM_UP: [Level; 5] = [
        Level::Symbol,
        Level::Doc,
        Level::CallChain,
        Level::File,
        Level::Module,
    ];

    /// Stable name (as in `explain.levels`).
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Symbol => "symbol",
            Level::Doc => "doc",
            Level::CallChain => "call_chain",
            Level::File => "file",
            Level::Module => "module",
        }
    }

    /// The level of an entity kind.
    pub fn of(kind: EntityKind) -> Level {
        match kind {
            EntityKind::File => Level::File,
            EntityKind::Module => Level::Module,
            EntityKind::CallChain => Level::CallChain,
            EntityKind::DocSection => Level::Doc,
            _ => Level::Symbol,
        }
    }
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
            base_url: "http://127.0.0.1:8080/v1".into(),
            api_key: None,
            model: "local".into(),
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
}

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

/// An explanation backend. `generate` returns the cause of a failure as
/// a short sentence (recorded in the manifest).
pub trait GlossBackend: Sync {
    /// Backend name for the manifest.
    fn name(&self) -> &'static str;
    /// Generate one gloss with `model`.
    fn generate(&self, model: &str, prompt: &Prompt) -> Result<Generation, String>;
    /// Requests sent so far.
    fn requests(&self) -> u64;
}

/// The `openai` backend: the same transport as `codegloss ask`.
pub struct OpenAiBackend {
    cfg: AnswerConfig,
    requests: AtomicU64,
}

impl OpenAiBackend {
    /// A backend for the `[explain]` endpoint settings.
    pub fn new(cfg: &ExplainConfig) -> Self {
        OpenAiBackend {
            cfg: AnswerConfig {
                base_url: cfg.base_url.clone(),
                model: cfg.model.clone(),
                api_key: cfg.api_key.clone(),
                temperature: cfg.temperature,
                max_tokens: cfg.max_tokens,
                timeout_seconds: cfg.timeout_seconds,
                stream: false,
                context_tokens: 0,
                tokenizer: None,
            },
            requests: AtomicU64::new(0),
        }
    }
}

impl GlossBackend for OpenAiBackend {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn generate(&self, model: &str, prompt: &Prompt) -> Result<Generation, String> {
        let cfg = AnswerConfig {
            model: model.to_string(),
            max_tokens: prompt.max_tokens,
            ..self.cfg.clone()
        };
        let messages = [
            codegloss_core::answer::Message {
                role: "system".into(),
                content: prompt.system.clone(),
            },
            codegloss_core::answer::Message {
                role: "user".into(),
                content: prompt.user.clone(),
            },
        ];
        self.requests.fetch_add(1, Ordering::Relaxed);
        match llm::chat(&cfg, &messages, &mut |_| {}) {
            Ok(r) => Ok(Generation {
                text: r.text,
                completion_tokens: r.completion_tokens,
            }),
            Err(IndexError::Llm { message, .. }) => Err(message),
            Err(other) => Err(other.to_string()),
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
        BackendKind::Ort => Err(IndexError::Explain {
            message: "explain.backend = \"ort\" (an in-process ONNX decoder) is not available yet; use \"openai\" with a local server, or \"structural\"".into(),
        }),
    }
}

/// What one explanation run did.
#[derive(Debug, Clone, Default)]
pub struct ExplainReport {
    /// What the manifest records.
    pub info: GlossInfo,
    /// Requests sent to the backend (retries included).
    pub requests: u64,
    /// Glosses taken from the cache.
    pub cache_hits: usize,
    /// Glosses generated in this run: (level, entity id, name).
    pub generated: Vec<(Level, u32, String)>,
    /// Entities marked `skipped_low_information`.
    pub skipped: usize,
    /// Seconds spent waiting for the backend (wall clock).
    pub generation_seconds: f64,
    /// Completion tokens of generated glosses (as reported).
    pub completion_tokens: u64,
    /// Model glosses in the index, whether generated now or taken from the
    /// cache, and the generation seconds the cache recorded for them: the
    /// cost of the whole explanation stage across interrupted runs.
    pub total_model_glosses: usize,
    /// See `total_model_glosses`.
    pub total_generation_seconds: f64,
    /// The cache file and its size after the run.
    pub cache_path: PathBuf,
    /// Cache size in bytes after compaction.
    pub cache_bytes: u64,
}

impl ExplainReport {
    /// Generated glosses per minute of generation time.
    pub fn glosses_per_minute(&self) -> f64 {
        if self.generation_seconds > 0.0 {
            self.generated.len() as f64 * 60.0 / self.generation_seconds
        } else {
            0.0
        }
    }
}

/// Longest accepted gloss, in characters.
const MAX_GLOSS_CHARS: usize = 2400;

/// One entity to explain.
struct Job {
    entity: u32,
    level: Level,
    mode: Mode,
    model: String,
    key: String,
    prompt: Prompt,
}

/// Replace the glosses of the entities at `cfg.levels` with model glosses.
/// `repo` is the indexed repository (read for files without parsed
/// symbols); the cache is read from and written to `cache_path`.
pub fn explain(
    data: &mut IndexData,
    repo: &Path,
    cfg: &ExplainConfig,
    backend: &dyn GlossBackend,
    cache_path: &Path,
    progress: &ProgressBar,
) -> Result<ExplainReport, IndexError> {
    let cache = GlossCache::open(cache_path)?;
    let adj = Adjacency::new(data);
    let structural: Vec<String> = data.entities.iter().map(|e| e.gloss.text.clone()).collect();
    let mut report = ExplainReport {
        cache_path: cache_path.to_path_buf(),
        ..ExplainReport::default()
    };
    let levels = run_levels(cfg);
    let (candidates, skipped) = select(data, cfg, &levels, &structural, &adj);
    report.skipped = skipped;
    progress.set_length(candidates.len() as u64);
    progress.set_position(0);

    let digests = input_digests(data, &adj);
    let started = Instant::now();
    let mut fresh: Vec<CacheEntry> = Vec::new();
    let mut fallbacks: Vec<GlossFallback> = Vec::new();
    for level in &levels {
        for batch in batches(data, &candidates, *level) {
            progress.set_message(format!("explaining {}", level.as_str()));
            let jobs: Vec<Job> = batch
                .iter()
                .map(|&id| make_job(data, &adj, &structural, &digests, repo, cfg, id, *level))
                .collect();
            let mut todo: Vec<&Job> = Vec::new();
            let mut results: HashMap<u32, (String, String)> = HashMap::new();
            for job in &jobs {
                if let Some(hit) = cache.get(&job.key) {
                    results.insert(job.entity, (hit.text.clone(), job.model.clone()));
                    report.cache_hits += 1;
                    report.total_model_glosses += 1;
                    report.total_generation_seconds += hit.seconds.unwrap_or(0.0);
                    progress.inc(1);
                } else {
                    todo.push(job);
                }
            }
            let t = Instant::now();
            let outcomes = run_jobs(&todo, backend, cfg.concurrency.max(1), progress, &cache)?;
            report.generation_seconds += t.elapsed().as_secs_f64();
            for (job, outcome) in todo.iter().zip(outcomes) {
                let e = &data.entities[job.entity as usize];
                match outcome {
                    Ok(entry) => {
                        report.completion_tokens += entry.completion_tokens.unwrap_or(0);
                        report.total_model_glosses += 1;
                        report.total_generation_seconds += entry.seconds.unwrap_or(0.0);
                        report
                            .generated
                            .push((job.level, job.entity, e.qualified_name.clone()));
                        results.insert(job.entity, (entry.text.clone(), job.model.clone()));
                        fresh.push(entry);
                    }
                    Err(cause) => fallbacks.push(GlossFallback {
                        entity: job.entity,
                        name: e.qualified_name.clone(),
                        level: job.level.as_str().to_string(),
                        cause,
                    }),
                }
            }
            for (id, (text, model)) in results {
                let e = &mut data.entities[id as usize];
                e.gloss.text = combined(cfg, text, &structural[id as usize]);
                e.gloss.source = GlossSource::Model;
                e.gloss.model = Some(model);
            }
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    log::info!("explanation stage took {elapsed:.1} s");
    fallbacks.sort_by_key(|f| f.entity);
    report.requests = backend.requests();
    let level_names: Vec<&str> = levels.iter().map(|l| l.as_str()).collect();
    report.cache_bytes = cache.compact(&level_names, &fresh)?;
    report.info = GlossInfo {
        backend: backend.name().to_string(),
        levels: level_names.iter().map(|s| (*s).to_string()).collect(),
        models: levels
            .iter()
            .map(|l| (l.as_str().to_string(), cfg.model_for(*l).to_string()))
            .collect(),
        prompts: used_modes(&levels)
            .into_iter()
            .map(|m| (m.as_str().to_string(), prompts::info(m.template())))
            .collect(),
        by_source: by_source(data, &levels),
        fallbacks,
    };
    Ok(report)
}

/// The gloss stored for a model text.
fn combined(cfg: &ExplainConfig, text: String, structural: &str) -> String {
    match cfg.combine {
        Combine::Replace => text,
        Combine::AppendFacts => format!("{text}\n\nFacts: {structural}"),
    }
}

/// The configured levels, bottom-up.
fn run_levels(cfg: &ExplainConfig) -> Vec<Level> {
    Level::BOTTOM_UP
        .into_iter()
        .filter(|l| cfg.levels.contains(l))
        .collect()
}

/// Mark low-information entities at the run's levels and return the
/// candidates in priority order (capped by `max_entities`) and the number
/// of skipped entities.
fn select(
    data: &mut IndexData,
    cfg: &ExplainConfig,
    levels: &[Level],
    structural: &[String],
    adj: &Adjacency,
) -> (Vec<u32>, usize) {
    let mut candidates: Vec<u32> = Vec::new();
    let mut skipped = 0;
    for e in &mut data.entities {
        if !levels.contains(&Level::of(e.kind)) {
            continue;
        }
        if low_information(e, &structural[e.id as usize]) {
            e.gloss.source = GlossSource::SkippedLowInformation;
            e.gloss.model = None;
            skipped += 1;
        } else {
            candidates.push(e.id);
        }
    }
    // Priority order decides which entities a `max_entities` cap keeps and
    // the order of work within a level, so that an interrupted run has
    // done the most useful glosses first. The result does not depend on it.
    if cfg.priority == Priority::PublicApiFirst {
        candidates.sort_by_key(|&id| (priority_rank(data, adj, id), id));
    }
    if let Some(max) = cfg.max_entities {
        candidates.truncate(max);
    }
    (candidates, skipped)
}

/// The candidates of one level in runnable batches: one batch, except for
/// modules, which run deepest first (a module reads its submodules' glosses).
fn batches(data: &IndexData, candidates: &[u32], level: Level) -> Vec<Vec<u32>> {
    let of_level = candidates
        .iter()
        .copied()
        .filter(|&id| Level::of(data.entities[id as usize].kind) == level);
    if level != Level::Module {
        return vec![of_level.collect()];
    }
    let mut by_depth: BTreeMap<std::cmp::Reverse<usize>, Vec<u32>> = BTreeMap::new();
    for id in of_level {
        let depth = module_depth(&data.entities[id as usize].qualified_name);
        by_depth
            .entry(std::cmp::Reverse(depth))
            .or_default()
            .push(id);
    }
    by_depth.into_values().collect()
}

/// One prompt of a dry run ([`plan`]).
#[derive(Debug, Clone, Serialize)]
pub struct PlannedPrompt {
    /// Explanation level.
    pub level: String,
    /// Prompt mode.
    pub mode: String,
    /// Qualified name of the entity.
    pub entity: String,
    /// Whether the cache already holds this exact prompt's gloss.
    pub cached: bool,
    /// Estimated prompt tokens (characters / 3, system message included).
    pub estimated_tokens: usize,
    /// System message.
    pub system: String,
    /// User message.
    pub user: String,
}

/// A dry run: the prompts `explain` would send, without a backend. Lower
/// levels are shown with the glosses they have now (structural ones, or
/// cached model glosses where the cache has them), so the higher-level
/// prompts of a first run are approximations.
pub fn plan(
    data: &IndexData,
    repo: &Path,
    cfg: &ExplainConfig,
    cache_path: &Path,
) -> Result<Vec<PlannedPrompt>, IndexError> {
    let cache = GlossCache::open(cache_path)?;
    let mut data = data.clone();
    let adj = Adjacency::new(&data);
    let structural: Vec<String> = data.entities.iter().map(|e| e.gloss.text.clone()).collect();
    let levels = run_levels(cfg);
    let (candidates, _) = select(&mut data, cfg, &levels, &structural, &adj);
    let digests = input_digests(&data, &adj);
    let mut out = Vec::new();
    for level in &levels {
        for batch in batches(&data, &candidates, *level) {
            let jobs: Vec<Job> = batch
                .iter()
                .map(|&id| make_job(&data, &adj, &structural, &digests, repo, cfg, id, *level))
                .collect();
            for job in jobs {
                let hit = cache.get(&job.key).map(|h| h.text.clone());
                out.push(PlannedPrompt {
                    level: job.level.as_str().to_string(),
                    mode: job.mode.as_str().to_string(),
                    entity: data.entities[job.entity as usize].qualified_name.clone(),
                    cached: hit.is_some(),
                    estimated_tokens: codegloss_core::text::estimate_tokens(&job.prompt.system)
                        + codegloss_core::text::estimate_tokens(&job.prompt.user),
                    system: job.prompt.system,
                    user: job.prompt.user,
                });
                if let Some(text) = hit {
                    let e = &mut data.entities[job.entity as usize];
                    e.gloss.text = combined(cfg, text, &structural[job.entity as usize]);
                    e.gloss.source = GlossSource::Model;
                }
            }
        }
    }
    Ok(out)
}

fn used_modes(levels: &[Level]) -> Vec<Mode> {
    let mut modes = Vec::new();
    for l in levels {
        match l {
            Level::Symbol | Level::Doc => modes.push(Mode::General),
            Level::CallChain => modes.push(Mode::CallChain),
            Level::File => modes.extend([Mode::FileLevel, Mode::FileLevelFallback]),
            Level::Module => modes.push(Mode::ModuleLevel),
        }
    }
    modes.sort();
    modes.dedup();
    modes
}

fn by_source(data: &IndexData, levels: &[Level]) -> BTreeMap<String, BTreeMap<String, u64>> {
    let mut out: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for e in &data.entities {
        let level = Level::of(e.kind);
        if levels.contains(&level) {
            *out.entry(level.as_str().to_string())
                .or_default()
                .entry(e.gloss.source.as_str().to_string())
                .or_default() += 1;
        }
    }
    out
}

/// Send the jobs with `concurrency` workers; each gets one retry. A
/// finished gloss goes to the cache at once.
fn run_jobs(
    jobs: &[&Job],
    backend: &dyn GlossBackend,
    concurrency: usize,
    progress: &ProgressBar,
    cache: &GlossCache,
) -> Result<Vec<Result<CacheEntry, String>>, IndexError> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<CacheEntry, String>>>> =
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
                let outcome = outcome.map(|(text, completion_tokens)| CacheEntry {
                    key: job.key.clone(),
                    level: job.level.as_str().to_string(),
                    mode: job.mode.as_str().to_string(),
                    signature: job.mode.template().signature(),
                    model: job.model.clone(),
                    entity: job.entity.to_string(),
                    text,
                    completion_tokens,
                    seconds: Some(t.elapsed().as_secs_f64()),
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
        .map(|r| r.unwrap_or_else(|| Err("not attempted".into())))
        .collect())
}

fn attempt(backend: &dyn GlossBackend, job: &Job) -> Result<(String, Option<u64>), String> {
    let g = backend.generate(&job.model, &job.prompt)?;
    let text = check_output(&g.text)?;
    Ok((text, g.completion_tokens))
}

/// Clean a model output and reject empty, refusing or degenerate ones.
pub fn check_output(raw: &str) -> Result<String, String> {
    let mut text = raw.to_string();
    // Reasoning models: drop a <think> block.
    if let Some(end) = text.find("</think>") {
        text = text[end + "</think>".len()..].to_string();
    }
    let text = text.trim().trim_matches('`').trim();
    if text.is_empty() {
        return Err("empty output".into());
    }
    let chars = text.chars().count();
    if chars < 30 {
        return Err(format!("output too short ({chars} characters): {text:?}"));
    }
    let lower: String = text.chars().take(80).collect::<String>().to_lowercase();
    const REFUSALS: [&str; 8] = [
        "i'm sorry",
        "i am sorry",
        "i cannot",
        "i can't",
        "i can not",
        "as an ai",
        "i'm unable",
        "i am unable",
    ];
    if REFUSALS.iter().any(|r| lower.starts_with(r)) {
        let head: String = text.chars().take(60).collect();
        return Err(format!("refusal: {head:?}"));
    }
    let letters = text.chars().filter(|c| c.is_alphabetic()).count();
    if letters * 2 < chars {
        return Err("garbage: fewer than half the characters are letters".into());
    }
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for line in text.lines().map(str::trim).filter(|l| l.len() > 12) {
        let n = seen.entry(line).or_default();
        *n += 1;
        if *n >= 3 {
            return Err("garbage: the same line repeats".into());
        }
    }
    let mut out: String = text.chars().take(MAX_GLOSS_CHARS).collect();
    if chars > MAX_GLOSS_CHARS {
        out.push('…');
    }
    Ok(out)
}

/// Tiny declarations and trivial accessors: not worth a model call
/// (`skipped_low_information` in the paper).
fn low_information(e: &Entity, structural: &str) -> bool {
    let sig_len = e.signature.len();
    match e.kind {
        k if k.is_record() => !e.is_definition,
        EntityKind::TypeAlias | EntityKind::Enum => sig_len < 120 && e.doc_comment.is_none(),
        EntityKind::Namespace => true,
        k if k.is_callable() => {
            let lines = e
                .span
                .map_or(0, |s| s.end_line.saturating_sub(s.start_line) + 1);
            // A declaration without body that has a definition elsewhere, or
            // a one-to-three-line accessor without documentation.
            (!e.is_definition && structural.contains(" Defined at "))
                || (e.is_definition && lines <= 3 && e.doc_comment.is_none() && e.params.len() <= 1)
        }
        EntityKind::DocSection => e.span.is_some_and(|s| s.end_byte - s.start_byte < 80),
        EntityKind::File => e.span.is_some_and(|s| s.end_byte < 40),
        _ => false,
    }
}

/// Smaller ranks are explained first under `max_entities`.
fn priority_rank(data: &IndexData, adj: &Adjacency, id: u32) -> u8 {
    let e = &data.entities[id as usize];
    let file_rank = |fid: u32| {
        let f = &data.files[fid as usize];
        match (f.scope, f.source_type) {
            (Scope::Source, SourceType::Header) => 1,
            (Scope::Source, _) => 2,
            (Scope::Docs, _) => 3,
            (Scope::Example, _) => 4,
            _ => 5,
        }
    };
    match e.file {
        Some(f) => {
            let r = file_rank(f);
            if r == 1 && (e.doc_comment.is_some() || e.kind == EntityKind::File) {
                0
            } else {
                r
            }
        }
        None => {
            // Modules and call chains: the best rank among their files.
            let files: Vec<u32> = adj
                .out(id, EdgeKind::Contains)
                .iter()
                .filter_map(|c| data.entities[*c as usize].file)
                .collect();
            files.into_iter().map(file_rank).min().unwrap_or(3)
        }
    }
}

fn module_depth(path: &str) -> usize {
    if path == "." {
        0
    } else {
        path.split('/').count()
    }
}

/// Per-entity digest of inputs that a prompt may not show whole: the
/// file's SHA-256 for files, its files' and submodules' digests for
/// modules. Editing one function changes its file's digest and so every
/// module above it.
fn input_digests(data: &IndexData, adj: &Adjacency) -> Vec<String> {
    let mut out = vec![String::new(); data.entities.len()];
    for e in &data.entities {
        if e.kind == EntityKind::File {
            if let Some(f) = e.file {
                out[e.id as usize] = data.files[f as usize].sha256.clone();
            }
        }
    }
    // Modules deepest first, so submodule digests exist when a parent needs them.
    let mut modules: Vec<&Entity> = data
        .entities
        .iter()
        .filter(|e| e.kind == EntityKind::Module)
        .collect();
    modules.sort_by_key(|e| std::cmp::Reverse(module_depth(&e.qualified_name)));
    for m in modules {
        let mut parts: Vec<&str> = adj
            .out(m.id, EdgeKind::Contains)
            .iter()
            .map(|c| out[*c as usize].as_str())
            .collect();
        parts.sort_unstable();
        out[m.id as usize] = sha256_hex(parts.join("\n").as_bytes());
    }
    out
}

/// Cut `text` to at most `max` characters at a line boundary.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out = String::new();
    for line in text.lines() {
        if out.chars().count() + line.chars().count() + 1 > max {
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    if out.is_empty() {
        out = text.chars().take(max).collect();
    }
    out.push_str("[... cut ...]");
    out
}

fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        let mut s: String = flat.chars().take(max).collect();
        s.push('…');
        s
    }
}

/// Source text of an entity: its chunks' code, in part order.
fn entity_code(data: &IndexData, id: u32) -> String {
    let mut parts: Vec<&codegloss_core::Chunk> =
        data.chunks.iter().filter(|c| c.entity == id).collect();
    parts.sort_by_key(|c| c.part);
    parts
        .iter()
        .map(|c| c.code.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A list of `- name: gloss` lines from entity ids, within `budget` characters.
fn child_list(data: &IndexData, ids: &[u32], budget: usize, per_item: usize) -> String {
    let mut out = String::new();
    for (shown, &id) in ids.iter().enumerate() {
        let e = &data.entities[id as usize];
        let line = format!(
            "- {} ({}): {}\n",
            e.qualified_name,
            e.kind.as_str(),
            one_line(&e.gloss.text, per_item)
        );
        if out.len() + line.len() > budget && shown > 0 {
            out.push_str(&format!("- ... and {} more\n", ids.len() - shown));
            break;
        }
        out.push_str(&line);
    }
    if out.is_empty() {
        out.push_str("(none)\n");
    }
    out
}

#[allow(clippy::too_many_arguments)] // reason: one call site; the pieces are unrelated borrows
fn make_job(
    data: &IndexData,
    adj: &Adjacency,
    structural: &[String],
    digests: &[String],
    repo: &Path,
    cfg: &ExplainConfig,
    id: u32,
    level: Level,
) -> Job {
    let e = &data.entities[id as usize];
    let facts = &structural[id as usize];
    let budget = cfg.max_input_chars.max(500);
    let path = e
        .file
        .map(|f| data.files[f as usize].path.clone())
        .unwrap_or_else(|| e.qualified_name.clone());
    let (mode, user) = match level {
        Level::Symbol | Level::Doc => {
            let code = cut(&entity_code(data, id), budget);
            let kind = if level == Level::Doc {
                "documentation section".to_string()
            } else {
                e.kind.as_str().replace('_', " ")
            };
            (
                Mode::General,
                prompts::GENERAL.fill(&[("kind", &kind), ("facts", facts), ("code", &code)]),
            )
        }
        Level::CallChain => {
            let target = e.parent.unwrap_or(id);
            let t = &data.entities[target as usize];
            let code = cut(&entity_code(data, target), budget / 2);
            let mut neighbours: Vec<u32> = adj.inc(target, EdgeKind::Calls).to_vec();
            neighbours.extend_from_slice(adj.out(target, EdgeKind::Calls));
            let children = child_list(data, &neighbours, budget / 2, 200);
            let facts = format!(
                "{facts}\nWhat {} does: {}",
                t.qualified_name,
                one_line(&t.gloss.text, 400)
            );
            (
                Mode::CallChain,
                prompts::CALL_CHAIN.fill(&[
                    ("name", &t.qualified_name),
                    ("facts", &facts),
                    ("code", &code),
                    ("children", &children),
                ]),
            )
        }
        Level::File => {
            let fid = e.file.unwrap_or(0) as usize;
            // The file's symbols, most telling first (types, free
            // functions, sections, then members); tiny declarations are
            // left out whatever the levels.
            let mut symbols: Vec<u32> = adj.by_file[fid]
                .iter()
                .copied()
                .filter(|&c| {
                    let x = &data.entities[c as usize];
                    !matches!(
                        x.kind,
                        EntityKind::File | EntityKind::CallChain | EntityKind::Namespace
                    ) && x.gloss.source != GlossSource::SkippedLowInformation
                        && !low_information(x, &structural[c as usize])
                })
                .collect();
            symbols.sort_by_key(|&c| {
                let k = data.entities[c as usize].kind;
                let rank = if k.is_record() {
                    0
                } else if k == EntityKind::Function || k == EntityKind::DocSection {
                    1
                } else if k.is_callable() {
                    2
                } else {
                    3
                };
                (rank, c)
            });
            if symbols.is_empty() {
                let raw = read_source(repo, &data.files[fid]).unwrap_or_default();
                let code = cut(&raw, budget);
                (
                    Mode::FileLevelFallback,
                    prompts::FILE_LEVEL_FALLBACK.fill(&[
                        ("path", &path),
                        ("facts", facts),
                        ("code", &code),
                    ]),
                )
            } else {
                let children = child_list(data, &symbols, budget, 240);
                (
                    Mode::FileLevel,
                    prompts::FILE_LEVEL.fill(&[
                        ("path", &path),
                        ("facts", facts),
                        ("children", &children),
                    ]),
                )
            }
        }
        Level::Module => {
            let children: Vec<u32> = adj.out(id, EdgeKind::Contains).to_vec();
            let list = child_list(data, &children, budget, 300);
            (
                Mode::ModuleLevel,
                prompts::MODULE_LEVEL.fill(&[
                    ("path", &e.qualified_name),
                    ("facts", facts),
                    ("children", &list),
                ]),
            )
        }
    };
    let template = mode.template();
    let model = cfg.model_for(level).to_string();
    let key_input = format!(
        "{}\0{}\0{}\0{}\0{}\0{}",
        template.version_id(),
        template.signature(),
        model,
        template.system,
        user,
        digests[id as usize]
    );
    Job {
        entity: id,
        level,
        mode,
        model,
        key: sha256_hex(key_input.as_bytes())[..32].to_string(),
        prompt: Prompt {
            system: template.system.to_string(),
            user,
            max_tokens: cfg.max_tokens,
        },
    }
}

/// The file's text when it still matches the indexed bytes.
fn read_source(repo: &Path, f: &codegloss_core::SourceFile) -> Option<String> {
    let bytes = std::fs::read(repo.join(&f.path)).ok()?;
    if sha256_hex(&bytes) != f.sha256 {
        return None;
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_checked() {
        assert_eq!(check_output("  ").unwrap_err(), "empty output");
        assert!(check_output("ok")
            .unwrap_err()
            .starts_with("output too short"));
        assert!(
            check_output("I'm sorry, but I cannot help with explaining this code.")
                .unwrap_err()
                .starts_with("refusal")
        );
        assert!(check_output("{{{{ ;;;; 1234 5678 }}}} ---- ==== 0000 ))))")
            .unwrap_err()
            .starts_with("garbage"));
        let rep = "The same line again and again.\n".repeat(4);
        assert!(check_output(&rep).unwrap_err().contains("repeats"));
        let ok = check_output(
            "<think>hmm</think>\nRole: fills the halo cells of a field before a stencil.",
        )
        .unwrap();
        assert!(ok.starts_with("Role:"), "{ok}");
        let long = "word ".repeat(1000);
        assert!(check_output(&long).unwrap().chars().count() <= MAX_GLOSS_CHARS + 1);
    }

    #[test]
    fn levels_and_config() {
        assert_eq!(Level::of(EntityKind::Method), Level::Symbol);
        assert_eq!(Level::of(EntityKind::CallChain), Level::CallChain);
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

    #[test]
    fn cut_keeps_whole_lines() {
        let text = "aaaa\nbbbb\ncccc\n";
        assert_eq!(cut(text, 100), text);
        assert_eq!(cut(text, 11), "aaaa\nbbbb\n[... cut ...]");
    }
}
