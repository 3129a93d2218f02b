//! `cargo xtask bench answers`: the answer benchmark, pipeline against the
//! `bm25-files` context with the same model, prompt and budget.
//!
//! Starts the local answer server (`llm-server`, Qwen2.5-Coder-1.5B by
//! default), runs `codegloss eval --answer` on the dev split for both
//! contexts (resumable: an interrupted run answers only what is missing),
//! and prints nugget recall overall and by category, the citation and
//! support shares, prompt and completion tokens, latency percentiles and a
//! question-by-question sign test between the two contexts.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use anyhow::{Context as _, Result};
use serde_json::Value;

use crate::{cargo, llm, root, run};

/// Settings of one run.
pub struct Options<'a> {
    /// Index to answer from.
    pub index: &'a Path,
    /// Question file with nuggets.
    pub questions: &'a Path,
    /// Split to answer.
    pub split: &'a str,
    /// `qwen-coder-1.5b` or `smollm2`.
    pub model: &'a str,
    /// Loopback port.
    pub port: u16,
    /// Inference threads.
    pub threads: usize,
    /// Extra `codegloss.toml` (for example a different `[answer]` budget).
    pub config: Option<&'a Path>,
    /// Leave the server running afterwards.
    pub keep_server: bool,
    /// Where the per-context answer files and the summary go.
    pub out: &'a Path,
}

pub fn bench_answers(o: &Options) -> Result<()> {
    let root = root();
    run(cargo().args(["build", "--release", "-p", "codegloss-indexer"]))?;
    let bin = root.join("target/release/codegloss");
    let out = root.join(o.out);
    std::fs::create_dir_all(&out)?;
    let url = llm::start(&root, o.model, o.port, o.threads)?;
    let mut config = format!(
        "[answer]\nbase_url = \"{url}\"\nmodel = \"{}\"\ntimeout_seconds = 900\n",
        o.model
    );
    if let Some(extra) = o.config {
        config.push_str(&std::fs::read_to_string(root.join(extra))?);
    }
    let config_path = out.join("answer.toml");
    std::fs::write(&config_path, config)?;
    let mut reports: BTreeMap<&str, Value> = BTreeMap::new();
    let result = (|| -> Result<()> {
        for context in ["pipeline", "bm25-files"] {
            let json = out.join(format!("{context}.json"));
            run(Command::new(&bin)
                .arg("eval")
                .arg(o.index)
                .arg("--questions")
                .arg(o.questions)
                .args(["--split", o.split, "--answer", "--answer-context", context])
                .arg("--config")
                .arg(&config_path)
                .arg("--json")
                .arg(&json)
                .stdout(std::process::Stdio::null()))?;
            let v: Value = serde_json::from_str(&std::fs::read_to_string(&json)?)
                .with_context(|| format!("reading {}", json.display()))?;
            reports.insert(context, v);
        }
        Ok(())
    })();
    if !o.keep_server {
        llm::stop(&root, o.port)?;
    }
    result?;
    let summary = summarize(&reports["pipeline"], &reports["bm25-files"]);
    print_summary(&summary);
    let path = out.join("summary.json");
    std::fs::write(&path, serde_json::to_string_pretty(&summary)?)?;
    eprintln!("summary written to {}", path.display());
    Ok(())
}

/// Two-sided sign test: the probability of a split at least this uneven
/// between `better` and `worse` under a fair coin (ties left out).
pub fn sign_test(better: u64, worse: u64) -> f64 {
    let n = better + worse;
    if n == 0 {
        return 1.0;
    }
    let k = better.min(worse);
    // P(X <= k) for X ~ Binomial(n, 1/2), doubled, capped at 1.
    let mut p = 0.0f64;
    let mut c = 1.0f64; // C(n, 0)
    for i in 0..=k {
        if i > 0 {
            c = c * (n - i + 1) as f64 / i as f64;
        }
        p += c;
    }
    (2.0 * p / 2f64.powi(n as i32)).min(1.0)
}

fn summarize(pipeline: &Value, baseline: &Value) -> Value {
    let recall = |r: &Value| -> BTreeMap<String, f64> {
        r["questions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|q| Some((q["id"].as_str()?.to_string(), q["nugget_recall"].as_f64()?)))
            .collect()
    };
    let (a, b) = (recall(pipeline), recall(baseline));
    let (mut better, mut worse, mut same) = (0u64, 0u64, 0u64);
    for (id, x) in &a {
        if let Some(y) = b.get(id) {
            if (x - y).abs() < 1e-9 {
                same += 1;
            } else if x > y {
                better += 1;
            } else {
                worse += 1;
            }
        }
    }
    let nr = |r: &Value| {
        r["metrics"]["overall"]["nugget_recall"]
            .as_f64()
            .unwrap_or(0.0)
    };
    serde_json::json!({
        "pipeline": {
            "nugget_recall": pipeline["metrics"]["overall"]["nugget_recall"],
            "by_category": category_recall(pipeline),
            "answers": pipeline["metrics"]["answers"],
        },
        "bm25-files": {
            "nugget_recall": baseline["metrics"]["overall"]["nugget_recall"],
            "by_category": category_recall(baseline),
            "answers": baseline["metrics"]["answers"],
        },
        "ratio": if nr(baseline) > 0.0 { nr(pipeline) / nr(baseline) } else { 0.0 },
        "sign_test": {"better": better, "worse": worse, "same": same, "p": sign_test(better, worse)},
    })
}

fn category_recall(r: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for (cat, m) in r["metrics"]["by_category"]
        .as_object()
        .into_iter()
        .flatten()
    {
        out.insert(cat.clone(), m["nugget_recall"].clone());
    }
    Value::Object(out)
}

fn print_summary(s: &Value) {
    let f = |v: &Value| v.as_f64().map_or("-".into(), |x| format!("{x:.3}"));
    println!("| | pipeline | bm25-files |");
    println!("|---|---|---|");
    println!(
        "| nugget recall | {} | {} |",
        f(&s["pipeline"]["nugget_recall"]),
        f(&s["bm25-files"]["nugget_recall"])
    );
    for (label, key) in [
        ("answers with a valid citation", "with_valid_citation"),
        ("mean share of cited sentences", "mean_cited_sentence_share"),
        (
            "answers with a cited or inferred source",
            "with_cited_or_inferred_source",
        ),
        ("unsupported sentences", "unsupported_sentence_share"),
        (
            "answers naming identifiers the context lacks",
            "with_unknown_identifiers",
        ),
    ] {
        println!(
            "| {label} | {} | {} |",
            f(&s["pipeline"]["answers"][key]),
            f(&s["bm25-files"]["answers"][key])
        );
    }
    for (label, key) in [
        ("prompt tokens p50 / p95", "prompt_tokens"),
        ("completion tokens p50 / p95", "completion_tokens"),
        ("latency s p50 / p95", "latency_seconds"),
    ] {
        let pair = |side: &str| {
            format!(
                "{} / {}",
                s[side]["answers"][key]["p50"], s[side]["answers"][key]["p95"]
            )
        };
        println!(
            "| {label} | {} | {} |",
            pair("pipeline"),
            pair("bm25-files")
        );
    }
    println!();
    println!(
        "ratio pipeline / bm25-files: {:.2}; sign test: better {} worse {} same {} (p = {:.3})",
        s["ratio"].as_f64().unwrap_or(0.0),
        s["sign_test"]["better"],
        s["sign_test"]["worse"],
        s["sign_test"]["same"],
        s["sign_test"]["p"].as_f64().unwrap_or(1.0)
    );
    println!();
    println!("| category | pipeline | bm25-files |");
    println!("|---|---|---|");
    if let Some(cats) = s["pipeline"]["by_category"].as_object() {
        for (cat, v) in cats {
            println!(
                "| {cat} | {} | {} |",
                f(v),
                f(&s["bm25-files"]["by_category"][cat])
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sign_test;

    #[test]
    fn sign_test_matches_the_binomial() {
        // 17 better, 7 worse: p = 0.064 (two-sided).
        assert!(
            (sign_test(17, 7) - 0.0639).abs() < 1e-3,
            "{}",
            sign_test(17, 7)
        );
        assert_eq!(sign_test(0, 0), 1.0);
        assert_eq!(sign_test(3, 3), 1.0);
        assert!((sign_test(5, 0) - 0.0625).abs() < 1e-9);
    }
}
