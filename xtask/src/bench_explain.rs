//! `cargo xtask bench explain`: do model-written glosses pay off, and
//! what do they cost?
//!
//! Indexes a repository twice with the release binary, once with
//! structural glosses and once with an explanation model (Qwen2.5-Coder
//! 1.5B by default) at the chosen levels, through the llama-cpp-python
//! server (`--backend openai`) or the in-process ONNX decoder converted
//! from the same GGUF file (`--backend ort`, `--batch-size`), then runs
//! the retrieval benchmark (`codegloss eval`) on both with the same
//! settings. It reports glosses per minute, completion tokens per second
//! and the peak resident memory of what generated. Resumable: glosses are cached next to the model
//! index as they arrive, so an interrupted run picks up where it stopped,
//! and the generation time the cache recorded is summed across runs. The
//! model index starts from the structural index's vectors, so only chunks
//! whose gloss changed are embedded again.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use codegloss_core::report::{IndexSummary, Metrics, Summary};
use serde::{Deserialize, Serialize};

use crate::{cargo, llm, models, root, run};

/// What `bench explain` writes: the cost of the model glosses and the
/// retrieval metrics with structural and with model glosses.
#[derive(Serialize, Deserialize)]
struct ExplainBench {
    repo: String,
    model: String,
    backend: String,
    batch_size: usize,
    levels: Vec<String>,
    max_entities: Option<usize>,
    model_glosses: usize,
    generation_seconds: f64,
    glosses_per_minute: f64,
    completion_tokens: u64,
    tokens_per_second: f64,
    /// Peak resident memory of what generated: the `codegloss index`
    /// process for `ort`, the server for `openai`.
    peak_rss_bytes: Option<u64>,
    cache_bytes: u64,
    glosses_by_source: BTreeMap<String, BTreeMap<String, u64>>,
    fallbacks: usize,
    structural: Metrics,
    model_glosses_metrics: Metrics,
}

/// Settings of one benchmark run.
pub struct Options<'a> {
    /// Repository to index.
    pub repo: &'a Path,
    /// Question file (bench format).
    pub questions: &'a Path,
    /// The model (and, for `openai`, the server to start).
    pub server: &'a llm::ServerArgs,
    /// `openai` or `ort`.
    pub backend: &'a str,
    /// Prompts per `ort` batch.
    pub batch_size: usize,
    /// `explain.levels`.
    pub levels: &'a [String],
    /// `explain.max_entities`.
    pub max_entities: Option<usize>,
    /// Results JSON.
    pub json: &'a Path,
}

pub fn bench_explain(o: &Options) -> Result<()> {
    let root = root();
    models::install(&root)?;
    run(cargo().args(["build", "--release", "-p", "codegloss-indexer"]))?;
    let bin = root.join("target/release/codegloss");
    let repo = std::fs::canonicalize(o.repo)
        .with_context(|| format!("repository {}", o.repo.display()))?;
    let questions = std::fs::canonicalize(o.questions)
        .with_context(|| format!("questions {}", o.questions.display()))?;
    let work = root.join("target/bench/explain-work");
    let structural = work.join("structural");
    // One model index (and gloss cache) per backend, model and batch
    // size, so that a run never reads another's glosses.
    let tag = match o.backend {
        "ort" => format!("ort-{}-b{}", o.server.model, o.batch_size),
        "openai" => format!("openai-{}", o.server.model),
        other => bail!("--backend {other:?}: choose openai or ort"),
    };
    let model_dir = work.join(format!("model-{tag}"));
    std::fs::create_dir_all(&model_dir)?;

    run(Command::new(&bin)
        .arg("index")
        .arg(&repo)
        .arg("--out")
        .arg(&structural)
        .arg("--quiet"))?;
    // Start the model index from the structural vectors (reused by key).
    if !model_dir.join("manifest.json").exists() {
        std::fs::create_dir_all(&model_dir)?;
        for entry in std::fs::read_dir(&structural)? {
            let name = entry?.file_name();
            let n = name.to_string_lossy();
            if n == "manifest.json" || (n.starts_with("vectors") && n.ends_with(".bin")) {
                std::fs::copy(structural.join(&name), model_dir.join(&name))?;
            }
        }
    }

    let levels: Vec<String> = o.levels.iter().map(|l| format!("{l:?}")).collect();
    let endpoint = if o.backend == "ort" {
        models::install_groups(&root, &[&format!("{}-onnx", o.server.model)])?;
        format!(
            "backend = \"ort\"\nbatch_size = {}\nthreads = {}\n",
            o.batch_size, o.server.threads
        )
    } else {
        let url = llm::start(&root, &o.server.model, o.server.port, o.server.threads)?;
        format!("backend = \"openai\"\nbase_url = \"{url}\"\ntimeout_seconds = 600\n")
    };
    let mut config = format!(
        "[explain]\n{endpoint}levels = [{}]\nmodel = \"{}\"\nmax_tokens = 128\nmax_input_chars = 1600\n",
        levels.join(", "),
        o.server.model
    );
    if let Some(n) = o.max_entities {
        config.push_str(&format!("max_entities = {n}\n"));
    }
    let config_path = work.join("explain.toml");
    std::fs::write(&config_path, &config)?;
    eprintln!(
        "+ {} index {} --out {} --config {}",
        bin.display(),
        repo.display(),
        model_dir.display(),
        config_path.display()
    );
    let indexed = Command::new(&bin)
        .arg("index")
        .arg(&repo)
        .arg("--out")
        .arg(&model_dir)
        .arg("--config")
        .arg(&config_path)
        .arg("--json")
        .arg(work.join("index-model.json"))
        .stderr(Stdio::inherit())
        .output()
        .context("running codegloss index with model glosses")?;
    let index_out = String::from_utf8_lossy(&indexed.stdout).into_owned();
    print!("{index_out}");
    let server_rss = if o.backend == "openai" {
        let rss = llm::server_peak_rss(&root, o.server.port);
        if !o.server.keep_server {
            llm::stop(&root, o.server.port)?;
        }
        rss
    } else {
        None
    };
    if !indexed.status.success() {
        bail!("codegloss index failed with {}", indexed.status);
    }

    let mut results: BTreeMap<&str, Metrics> = BTreeMap::new();
    for (name, dir) in [("structural", &structural), ("model", &model_dir)] {
        let json = work.join(format!("eval-{name}.json"));
        let out = Command::new(&bin)
            .arg("eval")
            .arg(dir)
            .arg("--questions")
            .arg(&questions)
            .arg("--json")
            .arg(&json)
            .stderr(Stdio::inherit())
            .output()?;
        if !out.status.success() {
            bail!("codegloss eval {} failed", dir.display());
        }
        let metrics = crate::read_eval_report(&json)?
            .metrics
            .with_context(|| format!("{} has no metrics", json.display()))?;
        results.insert(name, metrics);
    }

    let summary_path = work.join("index-model.json");
    let indexed: IndexSummary = serde_json::from_str(
        &std::fs::read_to_string(&summary_path)
            .with_context(|| format!("reading {}", summary_path.display()))?,
    )
    .with_context(|| format!("reading {}", summary_path.display()))?;
    let (glosses, seconds) = indexed.glosses.as_ref().map_or((0, 0.0), |g| {
        (g.total_model_glosses, g.total_generation_seconds)
    });
    // Tokens per second of this run's generation (a resumed run counts
    // only what it generated).
    let (tokens, run_seconds) = indexed
        .glosses
        .as_ref()
        .map_or((0, 0.0), |g| (g.completion_tokens, g.generation_seconds));
    let peak_rss_bytes = if o.backend == "ort" {
        indexed.peak_rss_bytes
    } else {
        server_rss
    };
    let cache_bytes = std::fs::metadata(model_dir.join("gloss-cache.jsonl")).map_or(0, |m| m.len());
    let (structural_metrics, model_metrics) = (
        results.remove("structural").unwrap_or_default(),
        results.remove("model").unwrap_or_default(),
    );
    let summary = ExplainBench {
        repo: repo.display().to_string(),
        model: o.server.model.clone(),
        backend: o.backend.to_string(),
        batch_size: if o.backend == "ort" { o.batch_size } else { 1 },
        levels: o.levels.to_vec(),
        max_entities: o.max_entities,
        model_glosses: glosses,
        generation_seconds: seconds,
        glosses_per_minute: if seconds > 0.0 {
            glosses as f64 * 60.0 / seconds
        } else {
            0.0
        },
        completion_tokens: tokens,
        tokens_per_second: if run_seconds > 0.0 {
            tokens as f64 / run_seconds
        } else {
            0.0
        },
        peak_rss_bytes,
        cache_bytes,
        glosses_by_source: indexed
            .glosses
            .as_ref()
            .map(|g| g.by_source.clone())
            .unwrap_or_default(),
        fallbacks: indexed.glosses.as_ref().map_or(0, |g| g.fallbacks),
        structural: structural_metrics,
        model_glosses_metrics: model_metrics,
    };
    println!();
    println!(
        "model glosses ({tag}): {glosses} in {seconds:.1} s of generation ({:.2}/min, {:.1} completion tokens/s); peak RSS {}; cache {cache_bytes} bytes; fallbacks {}",
        summary.glosses_per_minute,
        summary.tokens_per_second,
        summary
            .peak_rss_bytes
            .map_or("unknown".to_string(), |b| format!("{:.0} MiB", b as f64 / 1048576.0)),
        summary.fallbacks
    );
    println!(
        "{:<24} {:>15} {:>15} {:>15}",
        "category", "hit@5 s→m", "all@10 s→m", "recall s→m"
    );
    let (s, m) = (&summary.structural, &summary.model_glosses_metrics);
    let mut rows: Vec<(&str, Option<&Summary>, Option<&Summary>)> = s
        .by_category
        .iter()
        .map(|(cat, a)| (cat.as_str(), Some(a), m.by_category.get(cat)))
        .collect();
    rows.push(("overall", Some(&s.overall), Some(&m.overall)));
    for (cat, a, b) in rows {
        let pair = |get: fn(&Summary) -> f64| {
            format!("{:.3}→{:.3}", a.map_or(0.0, get), b.map_or(0.0, get))
        };
        println!(
            "{cat:<24} {:>15} {:>15} {:>15}",
            pair(|x| x.hit5),
            pair(|x| x.all10),
            pair(|x| x.context_recall)
        );
    }
    let json = root.join(o.json);
    if let Some(dir) = json.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&json, serde_json::to_string_pretty(&summary)? + "\n")?;
    eprintln!("results written to {}", json.display());
    Ok(())
}
