//! `cargo xtask bench explain`: do model-written glosses pay off?
//!
//! Indexes a repository twice with the release binary, once with
//! structural glosses and once with an explanation model (Qwen2.5-Coder
//! 1.5B on the local llama-cpp-python server by default) at the chosen
//! levels, then runs the retrieval benchmark (`codegloss eval`) on both
//! with the same settings. Resumable: glosses are cached next to the model
//! index as they arrive, so an interrupted run picks up where it stopped,
//! and the generation time the cache recorded is summed across runs. The
//! model index starts from the structural index's vectors, so only chunks
//! whose gloss changed are embedded again.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use crate::{cargo, llm, models, root, run};

/// Settings of one benchmark run.
pub struct Options<'a> {
    /// Repository to index.
    pub repo: &'a Path,
    /// Question file (bench format).
    pub questions: &'a Path,
    /// `qwen-coder-1.5b` or `smollm2`.
    pub model: &'a str,
    /// Loopback port of the server.
    pub port: u16,
    /// Inference threads of the server.
    pub threads: usize,
    /// `explain.levels`.
    pub levels: &'a [String],
    /// `explain.max_entities`.
    pub max_entities: Option<usize>,
    /// Leave the server running afterwards.
    pub keep_server: bool,
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
    let model_dir = work.join("model");
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

    let url = llm::start(&root, o.model, o.port, o.threads)?;
    let levels: Vec<String> = o.levels.iter().map(|l| format!("{l:?}")).collect();
    let mut config = format!(
        "[explain]\nbackend = \"openai\"\nlevels = [{}]\nbase_url = \"{url}\"\nmodel = \"{}\"\nmax_tokens = 128\nmax_input_chars = 1600\ntimeout_seconds = 600\n",
        levels.join(", "),
        o.model
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
        .stderr(Stdio::inherit())
        .output()
        .context("running codegloss index with model glosses")?;
    let index_out = String::from_utf8_lossy(&indexed.stdout).into_owned();
    print!("{index_out}");
    if !o.keep_server {
        llm::stop(&root, o.port)?;
    }
    if !indexed.status.success() {
        bail!("codegloss index failed with {}", indexed.status);
    }

    let mut results = serde_json::Map::new();
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
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json)?)?;
        results.insert(name.to_string(), v["metrics"].clone());
    }

    let (glosses, seconds) = index_out
        .lines()
        .find_map(|l| {
            let rest = l.strip_prefix("glosses: the ")?;
            let (n, rest) = rest.split_once(" model glosses in this index took ")?;
            let (s, _) = rest.split_once(" s to generate")?;
            Some((n.parse::<u64>().ok()?, s.parse::<f64>().ok()?))
        })
        .unwrap_or((0, 0.0));
    let cache_bytes = std::fs::metadata(model_dir.join("gloss-cache.jsonl")).map_or(0, |m| m.len());
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(model_dir.join("manifest.json"))?)?;
    let summary = serde_json::json!({
        "repo": repo,
        "model": o.model,
        "levels": o.levels,
        "max_entities": o.max_entities,
        "model_glosses": glosses,
        "generation_seconds": seconds,
        "glosses_per_minute": if seconds > 0.0 { glosses as f64 * 60.0 / seconds } else { 0.0 },
        "cache_bytes": cache_bytes,
        "glosses_by_source": manifest["glosses"]["by_source"],
        "fallbacks": manifest["glosses"]["fallbacks"].as_array().map_or(0, Vec::len),
        "structural": results["structural"],
        "model_glosses_metrics": results["model"],
    });
    println!();
    println!(
        "model glosses: {glosses} in {seconds:.1} s of generation ({:.2}/min); cache {cache_bytes} bytes; fallbacks {}",
        summary["glosses_per_minute"].as_f64().unwrap_or(0.0),
        summary["fallbacks"]
    );
    println!(
        "{:<24} {:>15} {:>15} {:>15}",
        "category", "hit@5 s→m", "all@10 s→m", "recall s→m"
    );
    let s = &results["structural"];
    let m = &results["model"];
    let mut cats: Vec<String> = s["by_category"]
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    cats.push("overall".into());
    for cat in cats {
        let (a, b) = if cat == "overall" {
            (&s["overall"], &m["overall"])
        } else {
            (&s["by_category"][&cat], &m["by_category"][&cat])
        };
        let pair = |k: &str| {
            format!(
                "{:.3}→{:.3}",
                a[k].as_f64().unwrap_or(0.0),
                b[k].as_f64().unwrap_or(0.0)
            )
        };
        println!(
            "{cat:<24} {:>15} {:>15} {:>15}",
            pair("hit@5"),
            pair("all_gold@10"),
            pair("context_recall")
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
