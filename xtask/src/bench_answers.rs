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

use anyhow::Result;
use codegloss_core::report::{AnswerSummary, EvalReport};
use serde::{Deserialize, Serialize};

use crate::{cargo, llm, root, run};

/// Settings of one run.
pub struct Options<'a> {
    /// Index to answer from.
    pub index: &'a Path,
    /// Question file with nuggets.
    pub questions: &'a Path,
    /// Split to answer.
    pub split: &'a str,
    /// The model server to start.
    pub server: &'a llm::ServerArgs,
    /// Extra `codegloss.toml` (for example a different `[answer]` budget).
    pub config: Option<&'a Path>,
    /// Where the per-context answer files and the summary go.
    pub out: &'a Path,
}

pub fn bench_answers(o: &Options) -> Result<()> {
    let root = root();
    run(cargo().args(["build", "--release", "-p", "codegloss-indexer"]))?;
    let bin = root.join("target/release/codegloss");
    let out = root.join(o.out);
    std::fs::create_dir_all(&out)?;
    let server = llm::serve(&root, &o.server.model, o.server.port, o.server.threads)?;
    let url = &server.url;
    let mut config = format!(
        "[answer]\nbase_url = \"{url}\"\nmodel = \"{}\"\ntimeout_seconds = 900\n",
        o.server.model
    );
    if let Some(extra) = o.config {
        config.push_str(&std::fs::read_to_string(root.join(extra))?);
    }
    let config_path = out.join("answer.toml");
    std::fs::write(&config_path, config)?;
    let mut reports: BTreeMap<&str, EvalReport> = BTreeMap::new();
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
            reports.insert(context, crate::read_eval_report(&json)?);
        }
        Ok(())
    })();
    if server.started && !o.server.keep_server {
        llm::stop(&root, o.server.port)?;
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

/// One side of the comparison.
#[derive(Serialize, Deserialize)]
struct Side {
    nugget_recall: Option<f64>,
    by_category: BTreeMap<String, Option<f64>>,
    answers: Option<AnswerSummary>,
}

/// Per question, how the pipeline's answers compare with the baseline's.
#[derive(Serialize, Deserialize)]
struct SignTest {
    better: u64,
    worse: u64,
    same: u64,
    p: f64,
}

/// What `bench answers` writes to `summary.json`.
#[derive(Serialize, Deserialize)]
struct AnswerBench {
    pipeline: Side,
    #[serde(rename = "bm25-files")]
    bm25_files: Side,
    ratio: f64,
    sign_test: SignTest,
}

fn side(r: &EvalReport) -> Side {
    let m = r.metrics.as_ref();
    Side {
        nugget_recall: m.and_then(|m| m.overall.nugget_recall),
        by_category: m
            .map(|m| {
                m.by_category
                    .iter()
                    .map(|(k, v)| (k.clone(), v.nugget_recall))
                    .collect()
            })
            .unwrap_or_default(),
        answers: m.and_then(|m| m.answers.clone()),
    }
}

fn summarize(pipeline: &EvalReport, baseline: &EvalReport) -> AnswerBench {
    let recall = |r: &EvalReport| -> BTreeMap<String, f64> {
        r.questions
            .iter()
            .filter_map(|q| Some((q.id.clone(), q.nugget_recall?)))
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
    let (ours, base) = (side(pipeline), side(baseline));
    let (x, y) = (
        ours.nugget_recall.unwrap_or(0.0),
        base.nugget_recall.unwrap_or(0.0),
    );
    AnswerBench {
        pipeline: ours,
        bm25_files: base,
        ratio: if y > 0.0 { x / y } else { 0.0 },
        sign_test: SignTest {
            better,
            worse,
            same,
            p: sign_test(better, worse),
        },
    }
}

fn print_summary(s: &AnswerBench) {
    let f = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x:.3}"));
    let sides = [&s.pipeline, &s.bm25_files];
    println!("| | pipeline | bm25-files |");
    println!("|---|---|---|");
    println!(
        "| nugget recall | {} | {} |",
        f(s.pipeline.nugget_recall),
        f(s.bm25_files.nugget_recall)
    );
    type Share = fn(&AnswerSummary) -> f64;
    let shares: [(&str, Share); 6] = [
        ("answers with a valid citation", |a| a.with_valid_citation),
        ("mean share of cited sentences", |a| {
            a.mean_cited_sentence_share
        }),
        ("answers with a cited or inferred source", |a| {
            a.with_cited_or_inferred_source
        }),
        ("unsupported sentences", |a| a.unsupported_sentence_share),
        ("answers naming identifiers the context lacks", |a| {
            a.with_unknown_identifiers
        }),
        ("answers cut where the model began to repeat itself", |a| {
            a.cut_repetition
        }),
    ];
    for (label, get) in shares {
        let [p, b] = sides.map(|x| f(x.answers.as_ref().map(get)));
        println!("| {label} | {p} | {b} |");
    }
    type Pct = fn(&AnswerSummary) -> codegloss_core::report::Percentiles;
    let pcts: [(&str, Pct); 3] = [
        ("prompt tokens p50 / p95", |a| a.prompt_tokens),
        ("completion tokens p50 / p95", |a| a.completion_tokens),
        ("latency s p50 / p95", |a| a.latency_seconds),
    ];
    for (label, get) in pcts {
        let [p, b] = sides.map(|x| {
            x.answers
                .as_ref()
                .map(get)
                .map_or("- / -".into(), |q| format!("{:.1} / {:.1}", q.p50, q.p95))
        });
        println!("| {label} | {p} | {b} |");
    }
    println!();
    let p = match s.sign_test.p {
        p if p < 0.001 => "p < 0.001".to_string(),
        p => format!("p = {p:.3}"),
    };
    println!(
        "ratio pipeline / bm25-files: {:.2}; sign test: better {} worse {} same {} ({p})",
        s.ratio, s.sign_test.better, s.sign_test.worse, s.sign_test.same
    );
    println!();
    println!("| category | pipeline | bm25-files |");
    println!("|---|---|---|");
    for (cat, v) in &s.pipeline.by_category {
        println!(
            "| {cat} | {} | {} |",
            f(*v),
            f(s.bm25_files.by_category.get(cat).copied().flatten())
        );
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
