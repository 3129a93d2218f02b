//! Retrieval evaluation over a question file (the format of
//! `bench/README.md`): per question the ranked distinct files of the final
//! context, and per category and overall hit@k, all_gold@k,
//! context_recall, MRR, context_files and context_tokens. The output JSON
//! shape is fixed by that README, because other tools read it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::IndexError;

/// One benchmark question (extra fields are ignored; nuggets are optional).
#[derive(Deserialize, Clone, Debug)]
pub struct Question {
    /// Identifier.
    pub id: String,
    /// Category.
    #[serde(default)]
    pub category: String,
    /// The question text.
    pub question: String,
    /// `dev` or `test`.
    #[serde(default)]
    pub split: Option<String>,
    /// Files with the primary evidence.
    #[serde(default)]
    pub gold_files: Vec<String>,
    /// Atomic facts a correct answer states (dev split).
    #[serde(default)]
    pub nuggets: Vec<Nugget>,
    /// Other fields, kept for `--field`.
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// One fact of a reference answer, present when any pattern matches.
#[derive(Deserialize, Clone, Debug)]
pub struct Nugget {
    /// The fact in words.
    #[serde(default)]
    pub fact: String,
    /// Regular expressions (case-insensitive); any match counts.
    #[serde(default)]
    pub any: Vec<String>,
}

/// Whether one nugget is present in a text: any of its patterns matches,
/// case-insensitively. A pattern that does not compile is an error.
pub fn nugget_present(text: &str, nugget: &Nugget) -> Result<bool, String> {
    for p in &nugget.any {
        let re = regex::RegexBuilder::new(p)
            .case_insensitive(true)
            .build()
            .map_err(|e| format!("nugget pattern {p:?}: {e}"))?;
        if re.is_match(text) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Share of a question's nuggets present in an answer, or none when the
/// question has no nuggets. A pattern that does not compile is an error.
pub fn nugget_recall(answer: &str, nuggets: &[Nugget]) -> Result<Option<f64>, String> {
    if nuggets.is_empty() {
        return Ok(None);
    }
    let mut present = 0;
    for n in nuggets {
        if nugget_present(answer, n)? {
            present += 1;
        }
    }
    Ok(Some(present as f64 / nuggets.len() as f64))
}

/// Mean nugget recall overall and per category over answered questions
/// that have nuggets.
pub fn nugget_summary(rows: &[(String, Option<f64>)]) -> serde_json::Value {
    let mean = |v: &[f64]| {
        if v.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::json!(
                ((v.iter().sum::<f64>() / v.len() as f64) * 10_000.0).round() / 10_000.0
            )
        }
    };
    let all: Vec<f64> = rows.iter().filter_map(|(_, r)| *r).collect();
    let mut by: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for (c, r) in rows {
        if let Some(r) = r {
            by.entry(c.as_str()).or_default().push(*r);
        }
    }
    serde_json::json!({
        "overall": mean(&all),
        "questions": all.len(),
        "by_category": by.iter().map(|(k, v)| (k.to_string(), mean(v))).collect::<serde_json::Map<_, _>>(),
    })
}

/// Read a JSON-lines question file (blank lines and `#` comments skipped).
pub fn read_questions(path: &std::path::Path) -> Result<Vec<Question>, IndexError> {
    let text = std::fs::read_to_string(path).map_err(|e| IndexError::io(path, e))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let q: Question = serde_json::from_str(line).map_err(|e| IndexError::Config {
            path: path.to_path_buf(),
            message: format!("line {}: {e}", i + 1),
        })?;
        out.push(q);
    }
    Ok(out)
}

/// Metrics of one question.
#[derive(Serialize, Clone, Debug, Default, PartialEq)]
pub struct Scores {
    /// `hit@1`.
    pub hit1: f64,
    /// `hit@5`.
    pub hit5: f64,
    /// `hit@10`.
    pub hit10: f64,
    /// `all_gold@1`.
    pub all1: f64,
    /// `all_gold@5`.
    pub all5: f64,
    /// `all_gold@10`.
    pub all10: f64,
    /// Share of gold files anywhere in the context.
    pub recall: f64,
    /// Reciprocal rank of the first gold file.
    pub mrr: f64,
    /// Distinct files in the context.
    pub files: f64,
    /// Estimated context tokens.
    pub tokens: f64,
}

/// Score a ranked file list against gold files.
pub fn score(files: &[&str], gold: &[String], tokens: usize) -> Scores {
    let pos = |g: &String| files.iter().position(|f| f == g);
    let hit = |k: usize| f64::from(u8::from(gold.iter().any(|g| pos(g).is_some_and(|p| p < k))));
    let all = |k: usize| {
        f64::from(u8::from(
            !gold.is_empty() && gold.iter().all(|g| pos(g).is_some_and(|p| p < k)),
        ))
    };
    let present = gold.iter().filter(|g| pos(g).is_some()).count();
    let first = gold.iter().filter_map(pos).min();
    Scores {
        hit1: hit(1),
        hit5: hit(5),
        hit10: hit(10),
        all1: all(1),
        all5: all(5),
        all10: all(10),
        recall: if gold.is_empty() {
            0.0
        } else {
            present as f64 / gold.len() as f64
        },
        mrr: first.map_or(0.0, |p| 1.0 / (p as f64 + 1.0)),
        files: files.len() as f64,
        tokens: tokens as f64,
    }
}

/// Mean of scores, in the README's key names.
pub fn summary(items: &[&Scores]) -> serde_json::Value {
    let n = items.len().max(1) as f64;
    let m = |f: fn(&Scores) -> f64| {
        let v = items.iter().map(|s| f(s)).sum::<f64>() / n;
        (v * 10_000.0).round() / 10_000.0
    };
    serde_json::json!({
        "hit@1": m(|s| s.hit1), "hit@5": m(|s| s.hit5), "hit@10": m(|s| s.hit10),
        "all_gold@1": m(|s| s.all1), "all_gold@5": m(|s| s.all5), "all_gold@10": m(|s| s.all10),
        "context_recall": m(|s| s.recall), "mrr": m(|s| s.mrr),
        "context_files": m(|s| s.files), "context_tokens": m(|s| s.tokens),
        "nugget_recall": serde_json::Value::Null,
        "questions": items.len(),
    })
}

/// Overall and per-category metrics.
pub fn metrics(questions: &[Question], scores: &[Scores]) -> serde_json::Value {
    let all: Vec<&Scores> = scores.iter().collect();
    let mut by_cat: BTreeMap<&str, Vec<&Scores>> = BTreeMap::new();
    for (q, s) in questions.iter().zip(scores) {
        by_cat.entry(q.category.as_str()).or_default().push(s);
    }
    let cats: serde_json::Map<String, serde_json::Value> = by_cat
        .into_iter()
        .map(|(k, v)| (k.to_string(), summary(&v)))
        .collect();
    serde_json::json!({"overall": summary(&all), "by_category": cats})
}

/// p-th percentile (nearest rank) of a sample.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

/// Summary of answered questions (rows of an `eval --answer` file): how
/// many have at least one valid citation, the mean share of cited
/// sentences, errors, and p50/p95 of latency, prompt and completion tokens.
pub fn answer_summary(rows: &[serde_json::Value]) -> serde_json::Value {
    let answered: Vec<&serde_json::Value> =
        rows.iter().filter(|r| r["answer"].is_string()).collect();
    let n = answered.len();
    let cited = answered
        .iter()
        .filter(|r| r["citations"].as_array().is_some_and(|c| !c.is_empty()))
        .count();
    let shares: Vec<f64> = answered
        .iter()
        .filter_map(|r| r["cited_sentence_share"].as_f64())
        .collect();
    let pct = |key: &str| {
        let mut v: Vec<f64> = answered.iter().filter_map(|r| r[key].as_f64()).collect();
        v.sort_by(f64::total_cmp);
        serde_json::json!({"n": v.len(), "p50": percentile(&v, 50.0), "p95": percentile(&v, 95.0)})
    };
    let round = |x: f64| (x * 10_000.0).round() / 10_000.0;
    let supported = answered
        .iter()
        .filter(|r| {
            r["citations"].as_array().is_some_and(|c| !c.is_empty())
                || r["support"]["inferred"].as_u64().is_some_and(|n| n > 0)
        })
        .count();
    let (sentences, unsupported) = answered.iter().fold((0u64, 0u64), |(s, u), r| {
        (
            s + r["support"]["sentences"].as_u64().unwrap_or(0),
            u + r["support"]["unsupported"].as_u64().unwrap_or(0),
        )
    });
    let unknown = answered
        .iter()
        .filter(|r| {
            r["support"]["unknown_identifiers"]
                .as_array()
                .is_some_and(|u| !u.is_empty())
        })
        .count();
    let share = |a: usize, b: usize| {
        if b == 0 {
            0.0
        } else {
            round(a as f64 / b as f64)
        }
    };
    serde_json::json!({
        "with_cited_or_inferred_source": share(supported, n),
        "unsupported_sentence_share": share(unsupported as usize, sentences as usize),
        "with_unknown_identifiers": share(unknown, n),
        "answered": n,
        "errors": rows.iter().filter(|r| r["error"].is_string()).count(),
        "with_valid_citation": if n == 0 { 0.0 } else { round(cited as f64 / n as f64) },
        "mean_cited_sentence_share": if shares.is_empty() { 0.0 } else { round(shares.iter().sum::<f64>() / shares.len() as f64) },
        "latency_seconds": pct("latency_seconds"),
        "prompt_tokens": pct("prompt_tokens"),
        "completion_tokens": pct("completion_tokens"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answer_summary_counts_citations_and_percentiles() {
        let rows = vec![
            serde_json::json!({"answer": "a [1]", "citations": [{"n": 1}], "cited_sentence_share": 1.0, "latency_seconds": 2.0, "prompt_tokens": 100, "completion_tokens": 10,
                "support": {"sentences": 3, "inferred": 0, "unsupported": 1, "unknown_identifiers": ["X::y"]}}),
            serde_json::json!({"answer": "b", "citations": [], "cited_sentence_share": 0.0, "latency_seconds": 4.0, "prompt_tokens": 300, "completion_tokens": 30,
                "support": {"sentences": 1, "inferred": 1, "unsupported": 0, "unknown_identifiers": []}}),
            serde_json::json!({"answer": null, "error": "timeout"}),
        ];
        let s = answer_summary(&rows);
        assert_eq!(s["answered"], 2);
        assert_eq!(s["errors"], 1);
        assert_eq!(s["with_valid_citation"], 0.5);
        assert_eq!(s["mean_cited_sentence_share"], 0.5);
        assert_eq!(s["with_cited_or_inferred_source"], 1.0);
        assert_eq!(s["unsupported_sentence_share"], 0.25);
        assert_eq!(s["with_unknown_identifiers"], 0.5);
        assert_eq!(s["latency_seconds"]["p50"], 2.0);
        assert_eq!(s["latency_seconds"]["p95"], 4.0);
        assert_eq!(s["prompt_tokens"]["n"], 2);
    }

    #[test]
    fn metrics_follow_the_readme_definitions() {
        let gold = vec!["a.h".to_string(), "b.cpp".to_string()];
        let s = score(&["x", "a.h", "y", "z", "w", "v", "b.cpp"], &gold, 100);
        assert_eq!((s.hit1, s.hit5, s.hit10), (0.0, 1.0, 1.0));
        assert_eq!((s.all1, s.all5, s.all10), (0.0, 0.0, 1.0));
        assert_eq!(s.recall, 1.0);
        assert_eq!(s.mrr, 0.5);
        assert_eq!(s.files, 7.0);
        let nuggets = vec![
            Nugget {
                fact: "a".into(),
                any: vec!["mpi::Environment".into(), r"\bEnv\b".into()],
            },
            Nugget {
                fact: "b".into(),
                any: vec!["--(help|info)".into()],
            },
        ];
        assert_eq!(
            nugget_recall("it creates an MPI::environment", &nuggets).unwrap(),
            Some(0.5)
        );
        assert_eq!(
            nugget_recall("Env and --info", &nuggets).unwrap(),
            Some(1.0)
        );
        assert_eq!(nugget_recall("x", &[]).unwrap(), None);
        assert!(nugget_recall(
            "x",
            &[Nugget {
                fact: String::new(),
                any: vec!["(".into()]
            }]
        )
        .is_err());
        let none = score(&["x"], &gold, 0);
        assert_eq!((none.hit10, none.recall, none.mrr), (0.0, 0.0, 0.0));
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 50.0), 2.0);
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 95.0), 4.0);
    }
}
