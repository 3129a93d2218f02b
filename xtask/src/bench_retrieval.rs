//! `cargo xtask bench retrieval`: the retrieval benchmark on named and
//! reworded questions from one index, with the `bm25-files` baseline.
//!
//! A question that names the code ("what does `X.h` do?") and the same
//! question asked in concepts, with no names, must both reach the gold
//! files. This runs `codegloss eval --baseline bm25-files` on both question
//! files against the same index (or against each variant's index: a
//! variant is a `codegloss.toml`, so a lever can be measured with and
//! without), and prints the overall and per-category tables side by side
//! with the index time and size of each variant. Indexes are reused when
//! their configuration is unchanged; vectors are reused by key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::{cargo, models, root, run};

/// Settings of one run.
pub struct Options<'a> {
    /// Repository to index (each variant gets its own index).
    pub repo: Option<&'a Path>,
    /// An existing index (instead of `repo`).
    pub index: Option<&'a Path>,
    /// Questions that name the code.
    pub named: &'a Path,
    /// The same questions reworded by concept.
    pub reworded: &'a Path,
    /// `name=config.toml` variants (with `repo`); none: the defaults.
    pub variants: &'a [String],
    /// Only questions of this split.
    pub split: Option<&'a str>,
    /// Keyword and structure only.
    pub no_vectors: bool,
    /// Results JSON.
    pub json: &'a Path,
}

const KEYS: [&str; 5] = ["hit@1", "hit@5", "all_gold@10", "context_recall", "mrr"];

pub fn bench_retrieval(o: &Options) -> Result<()> {
    let root = root();
    models::install(&root)?;
    run(cargo().args(["build", "--release", "-p", "codegloss-indexer"]))?;
    let bin = root.join("target/release/codegloss");
    let work = root.join("target/bench/retrieval-work");
    std::fs::create_dir_all(&work)?;
    let mut indexes: Vec<(String, PathBuf, Value)> = Vec::new();
    match (o.repo, o.index) {
        (_, Some(index)) => indexes.push(("index".into(), index.to_path_buf(), Value::Null)),
        (Some(repo), None) => {
            let variants: Vec<String> = if o.variants.is_empty() {
                vec!["default=".into()]
            } else {
                o.variants.to_vec()
            };
            for v in &variants {
                let (name, config) = v
                    .split_once('=')
                    .with_context(|| format!("variant {v:?}: expected name=config.toml"))?;
                let dir = work.join(name);
                let mut cmd = Command::new(&bin);
                cmd.arg("index")
                    .arg(repo)
                    .arg("--out")
                    .arg(&dir)
                    .arg("--quiet");
                if !config.is_empty() {
                    cmd.arg("--config").arg(root.join(config));
                }
                if o.no_vectors {
                    cmd.arg("--no-embed");
                }
                let t = Instant::now();
                run(&mut cmd)?;
                let secs = t.elapsed().as_secs_f64();
                let bytes: u64 = std::fs::read_dir(&dir)?
                    .filter_map(|e| e.ok()?.metadata().ok())
                    .filter(|m| m.is_file())
                    .map(|m| m.len())
                    .sum();
                let cost = serde_json::json!({"index_seconds": secs, "index_bytes": bytes});
                indexes.push((name.to_string(), dir, cost));
            }
        }
        (None, None) => bail!("give --repo or --index"),
    }
    let mut results = serde_json::Map::new();
    for (name, dir, cost) in &indexes {
        let mut sets = serde_json::Map::new();
        for (set, questions) in [("named", o.named), ("reworded", o.reworded)] {
            let out = work.join(format!("{name}-{set}.json"));
            let mut cmd = Command::new(&bin);
            cmd.arg("eval")
                .arg(dir)
                .arg("--questions")
                .arg(questions)
                .args(["--baseline", "bm25-files", "--json"])
                .arg(&out)
                .stdout(std::process::Stdio::null());
            if let Some(s) = o.split {
                cmd.args(["--split", s]);
            }
            if o.no_vectors {
                cmd.arg("--no-vectors");
            }
            run(&mut cmd)?;
            let report: Value = serde_json::from_str(&std::fs::read_to_string(&out)?)
                .with_context(|| format!("reading {}", out.display()))?;
            sets.insert(set.into(), report);
        }
        let mut entry = serde_json::Map::new();
        entry.insert("cost".into(), cost.clone());
        entry.insert("sets".into(), Value::Object(sets));
        results.insert(name.clone(), Value::Object(entry));
    }
    print_tables(&results);
    let json = root.join(o.json);
    if let Some(d) = json.parent() {
        std::fs::create_dir_all(d)?;
    }
    std::fs::write(&json, serde_json::to_string_pretty(&results)?)?;
    eprintln!("results written to {}", json.display());
    Ok(())
}

fn cell(m: &Value, key: &str) -> String {
    m[key].as_f64().map_or("-".into(), |v| format!("{v:.3}"))
}

fn print_tables(results: &serde_json::Map<String, Value>) {
    println!("## Overall");
    println!();
    println!("| variant | set | hit@1 | hit@5 | all_gold@10 | context_recall | MRR | files | tokens | index s | index MB |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, r) in results {
        let cost = &r["cost"];
        for set in ["named", "reworded"] {
            let rep = &r["sets"][set];
            for (label, m) in [
                (name.as_str(), &rep["metrics"]["overall"]),
                ("bm25-files", &rep["baseline"]["metrics"]["overall"]),
            ] {
                // The baseline ranks files; it builds no context to count.
                let tokens = match m["context_tokens"].as_f64() {
                    Some(t) if t > 0.0 => format!("{t:.0}"),
                    _ => "-".into(),
                };
                let cols: Vec<String> = KEYS.iter().map(|k| cell(m, k)).collect();
                println!(
                    "| {label} | {set} | {} | {:.1} | {tokens} | {} | {} |",
                    cols.join(" | "),
                    m["context_files"].as_f64().unwrap_or(0.0),
                    cost["index_seconds"]
                        .as_f64()
                        .map_or("-".into(), |s| format!("{s:.0}")),
                    cost["index_bytes"]
                        .as_f64()
                        .map_or("-".into(), |b| format!("{:.1}", b / 1e6)),
                );
            }
        }
    }
    for (name, r) in results {
        println!();
        println!("## By category: {name} (named / reworded; hit@5, all_gold@10, context_recall)");
        println!();
        println!("| category | named | reworded | bm25-files named | bm25-files reworded |");
        println!("|---|---|---|---|---|");
        let mut cats: BTreeMap<String, ()> = BTreeMap::new();
        for set in ["named", "reworded"] {
            if let Some(m) = r["sets"][set]["metrics"]["by_category"].as_object() {
                cats.extend(m.keys().map(|k| (k.clone(), ())));
            }
        }
        for cat in cats.keys() {
            let three = |m: &Value| {
                format!(
                    "{} / {} / {}",
                    cell(m, "hit@5"),
                    cell(m, "all_gold@10"),
                    cell(m, "context_recall")
                )
            };
            let get = |set: &str, base: bool| {
                let rep = &r["sets"][set];
                let m = if base {
                    &rep["baseline"]["metrics"]["by_category"][cat]
                } else {
                    &rep["metrics"]["by_category"][cat]
                };
                three(m)
            };
            println!(
                "| {cat} | {} | {} | {} | {} |",
                get("named", false),
                get("reworded", false),
                get("named", true),
                get("reworded", true)
            );
        }
    }
}
