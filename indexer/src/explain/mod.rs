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
//!
//! The stage's parts: `config` (`[explain]`), `select` (which entities,
//! in which order and batches), `plan` (each entity's prompt and cache
//! key, and the dry run), `backend` (the backends and the run of a
//! level's jobs), `batched` (the run of a batched backend's jobs), `ort`
//! (the in-process decoder backend), `check` (what an output must be to
//! become a gloss),
//! `prompts` (the templates) and `cache`; this module runs the levels
//! bottom-up and writes the report.

mod backend;
mod batched;
pub mod cache;
mod check;
mod config;
mod ort;
mod plan;
pub mod prompts;
mod select;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

use codegloss_core::format::{GlossFallback, GlossInfo};
use codegloss_core::{GlossSource, IndexData};
use indicatif::ProgressBar;

use crate::error::IndexError;
use crate::ingest::gloss::Adjacency;
use backend::run_jobs;
use cache::{CacheEntry, GlossCache};
use plan::Job;
use prompts::Mode;
use select::{batches, input_digests, select};

pub use backend::{backend_for, Generation, GlossBackend, GlossError, OpenAiBackend, Prompt};
pub use check::check_output;
/// An explanation level: core's one level vocabulary.
pub use codegloss_core::EntityLevel as Level;
pub use config::{
    BackendKind, Combine, ExplainConfig, Priority, DEFAULT_BATCH_SIZE, DEFAULT_ORT_MODEL,
};
pub use ort::OrtBackend;
pub use plan::{plan, PlannedPrompt};

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
    let levels = cfg.run_levels();
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
                .map(|&id| Job::new(data, &adj, &structural, &digests, repo, cfg, id, *level))
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
                        cause: cause.to_string(),
                    }),
                }
            }
            for (id, (text, model)) in results {
                let e = &mut data.entities[id as usize];
                e.gloss.text = cfg.combined(text, &structural[id as usize]);
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

fn used_modes(levels: &[Level]) -> Vec<Mode> {
    let mut modes = Vec::new();
    for l in levels {
        match l {
            Level::Symbol | Level::DocumentationSection => modes.push(Mode::General),
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
        let level = e.kind.level();
        if levels.contains(&level) {
            *out.entry(level.as_str().to_string())
                .or_default()
                .entry(e.gloss.source.as_str().to_string())
                .or_default() += 1;
        }
    }
    out
}
