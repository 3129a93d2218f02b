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
use codegloss_core::report::{EvalReport, Summary};
use serde::{Deserialize, Serialize};

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

/// What building a variant's index cost (none for a given `--index`).
#[derive(Serialize, Deserialize, Clone, Copy)]
struct Cost {
    index_seconds: f64,
    index_bytes: u64,
}

/// One variant: its cost and its report per question set.
#[derive(Serialize, Deserialize)]
struct Variant {
    cost: Option<Cost>,
    sets: BTreeMap<String, EvalReport>,
}

/// The columns of the tables, from a summary.
fn columns(m: &Summary) -> [f64; 5] {
    [m.hit1, m.hit5, m.all10, m.context_recall, m.mrr]
}

pub fn bench_retrieval(o: &Options) -> Result<()> {
    let root = root();
    models::install(&root)?;
    run(cargo().args(["build", "--release", "-p", "codegloss-indexer"]))?;
    let bin = root.join("target/release/codegloss");
    let work = root.join("target/bench/retrieval-work");
    std::fs::create_dir_all(&work)?;
    let mut indexes: Vec<(String, PathBuf, Option<Cost>)> = Vec::new();
    match (o.repo, o.index) {
        (_, Some(index)) => indexes.push(("index".into(), index.to_path_buf(), None)),
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
                let cost = Cost {
                    index_seconds: secs,
                    index_bytes: bytes,
                };
                indexes.push((name.to_string(), dir, Some(cost)));
            }
        }
        (None, None) => bail!("give --repo or --index"),
    }
    let mut results: BTreeMap<String, Variant> = BTreeMap::new();
    for (name, dir, cost) in &indexes {
        let mut sets = BTreeMap::new();
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
            sets.insert(set.to_string(), crate::read_eval_report(&out)?);
        }
        results.insert(name.clone(), Variant { cost: *cost, sets });
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

fn cell(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.3}"))
}

fn print_tables(results: &BTreeMap<String, Variant>) {
    println!("## Overall");
    println!();
    println!("| variant | set | hit@1 | hit@5 | all_gold@10 | context_recall | MRR | files | tokens | index s | index MB |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, r) in results {
        for set in ["named", "reworded"] {
            let Some(rep) = r.sets.get(set) else {
                continue;
            };
            let ours = rep.metrics.as_ref().map(|m| &m.overall);
            let base = rep.baseline.as_ref().map(|b| &b.metrics.overall);
            for (label, m) in [(name.as_str(), ours), ("bm25-files", base)] {
                let Some(m) = m else {
                    continue;
                };
                // The baseline ranks files; it builds no context to count.
                let tokens = if m.context_tokens > 0.0 {
                    format!("{:.0}", m.context_tokens)
                } else {
                    "-".into()
                };
                let cols: Vec<String> = columns(m).iter().map(|v| cell(Some(*v))).collect();
                println!(
                    "| {label} | {set} | {} | {:.1} | {tokens} | {} | {} |",
                    cols.join(" | "),
                    m.context_files,
                    r.cost
                        .map_or("-".into(), |c| format!("{:.0}", c.index_seconds)),
                    r.cost
                        .map_or("-".into(), |c| format!("{:.1}", c.index_bytes as f64 / 1e6)),
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
        let mut cats: BTreeMap<&str, ()> = BTreeMap::new();
        for rep in r.sets.values() {
            if let Some(m) = &rep.metrics {
                cats.extend(m.by_category.keys().map(|k| (k.as_str(), ())));
            }
        }
        for cat in cats.keys() {
            let get = |set: &str, base: bool| {
                let rep = r.sets.get(set);
                let metrics = if base {
                    rep.and_then(|r| r.baseline.as_ref()).map(|b| &b.metrics)
                } else {
                    rep.and_then(|r| r.metrics.as_ref())
                };
                let m = metrics.and_then(|m| m.by_category.get(*cat));
                format!(
                    "{} / {} / {}",
                    cell(m.map(|m| m.hit5)),
                    cell(m.map(|m| m.all10)),
                    cell(m.map(|m| m.context_recall))
                )
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
