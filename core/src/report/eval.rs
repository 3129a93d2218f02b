//! The report of `codegloss eval --json`: the benchmark's output shape,
//! fixed by `bench/README.md`, so its field names are that README's
//! (`hit@1`, `all_gold@10`, ...), and the pure scoring that fills it:
//! [`score`], [`summary`], [`metrics`], [`nugget_summary`],
//! [`answer_summary`] and [`percentile`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::answer::Citation;
use crate::support::SupportReport;

/// Round a mean to four decimals, as every reported share is.
fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// p-th percentile (nearest rank) of a sample sorted ascending; 0 when empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

/// p50 and p95 of an unsorted sample.
pub fn p50_p95(sample: &[f64]) -> (f64, f64) {
    let mut s = sample.to_vec();
    s.sort_by(f64::total_cmp);
    (percentile(&s, 50.0), percentile(&s, 95.0))
}

/// The whole output of `codegloss eval --json`. While `eval --answer`
/// runs, the file holds only the questions so far (`run_complete` false,
/// no metrics), so that an interrupted run resumes.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct EvalReport {
    /// False in the checkpoints an answer run writes after each question.
    pub run_complete: bool,
    /// Overall and per-category metrics (absent in a checkpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    /// One row per question, in the question file's order.
    pub questions: Vec<QuestionRow>,
    /// Retrieval latency in core, query embedding excluded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<Latency>,
    /// The baseline computed in the same run (`--baseline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineReport>,
}

/// p50 and p95 in milliseconds.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
}

/// The metrics of a baseline.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct BaselineReport {
    /// Its name (`bm25-files`).
    pub name: String,
    /// Its metrics, same keys as the pipeline's.
    pub metrics: Metrics,
}

/// Overall and per-category metrics, with the answer and context-nugget
/// summaries when the run computed them.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Metrics {
    /// Over all questions.
    pub overall: Summary,
    /// Per category, by name.
    pub by_category: BTreeMap<String, Summary>,
    /// Nuggets present in the answer contexts (questions with nuggets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_nugget_recall: Option<ContextNuggets>,
    /// The share of a question's gold symbols whose own name the answer
    /// context contains (questions with `gold_symbols`, every split: the
    /// one measure of the context that the held-out split allows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_symbol_recall: Option<ContextNuggets>,
    /// Answers of the `[answer]` model (`--answer`, `--score`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<AnswerSummary>,
}

/// Mean metrics over a set of questions, in the README's key names. Every
/// container reads missing fields as their defaults, so that a partial or
/// hand-written report still reads.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Summary {
    /// A gold file is the first file of the context.
    #[serde(rename = "hit@1")]
    pub hit1: f64,
    /// A gold file is among the first 5.
    #[serde(rename = "hit@5")]
    pub hit5: f64,
    /// A gold file is among the first 10.
    #[serde(rename = "hit@10")]
    pub hit10: f64,
    /// Every gold file is first (one gold file) or absent.
    #[serde(rename = "all_gold@1")]
    pub all1: f64,
    /// Every gold file is among the first 5.
    #[serde(rename = "all_gold@5")]
    pub all5: f64,
    /// Every gold file is among the first 10.
    #[serde(rename = "all_gold@10")]
    pub all10: f64,
    /// Share of gold files anywhere in the context.
    pub context_recall: f64,
    /// Mean reciprocal rank of the first gold file.
    pub mrr: f64,
    /// Distinct files in the context.
    pub context_files: f64,
    /// Estimated context tokens.
    pub context_tokens: f64,
    /// Mean nugget recall of the answers, when there are answers.
    pub nugget_recall: Option<f64>,
    /// Questions counted.
    pub questions: usize,
}

/// Nugget (or gold-symbol) recall of the contexts: the pipeline's and the
/// `bm25-files` baseline's top 3 files within the same budget.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct ContextNuggets {
    /// The pipeline's context.
    pub pipeline: NuggetSummary,
    /// The baseline's top 3 files.
    pub bm25_files_top3: NuggetSummary,
}

/// Mean nugget recall overall and per category.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct NuggetSummary {
    /// Over the questions with nuggets (none when there are none).
    pub overall: Option<f64>,
    /// Questions with nuggets.
    pub questions: usize,
    /// Per category.
    pub by_category: BTreeMap<String, Option<f64>>,
}

/// p50/p95 of a per-answer quantity, over the answers that record it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Percentiles {
    /// Answers that record it.
    pub n: usize,
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
}

/// What the answers of a run look like as a whole.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct AnswerSummary {
    /// Share of answers with a valid citation or an inferred source.
    pub with_cited_or_inferred_source: f64,
    /// Unsupported sentences over all answer sentences.
    pub unsupported_sentence_share: f64,
    /// Share of answers naming identifiers the context lacks.
    pub with_unknown_identifiers: f64,
    /// Questions answered.
    pub answered: usize,
    /// Questions whose answer failed.
    pub errors: usize,
    /// Share of answers with at least one valid citation.
    pub with_valid_citation: f64,
    /// Mean share of answer sentences that cite.
    pub mean_cited_sentence_share: f64,
    /// Seconds per answer.
    pub latency_seconds: Percentiles,
    /// Prompt tokens per answer.
    pub prompt_tokens: Percentiles,
    /// Completion tokens per answer.
    pub completion_tokens: Percentiles,
    /// Share of answers cut where the model began to repeat itself
    /// ([`crate::chat::repetition_cut`]).
    #[serde(default)]
    pub cut_repetition: f64,
}

/// One question of an eval run: what retrieval gave, and with `--answer`
/// the answer and its checks.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct QuestionRow {
    /// The question's id.
    pub id: String,
    /// Its category.
    #[serde(default)]
    pub category: String,
    /// The text asked (the `--field` chosen).
    #[serde(default)]
    pub question: String,
    /// The intent the router gave it.
    #[serde(default)]
    pub intent: String,
    /// Ranked distinct files of the final context.
    #[serde(default)]
    pub files: Vec<String>,
    /// The question's gold files.
    #[serde(default)]
    pub gold_files: Vec<String>,
    /// Estimated context tokens.
    #[serde(default)]
    pub context_tokens: usize,
    /// The context's chunks with their roles, in order: `[id, "role"]`.
    #[serde(default)]
    pub chunks: Vec<(u32, String)>,
    /// Retrieval time in core.
    #[serde(default)]
    pub latency_ms: f64,
    /// The answer (`--answer`): the context's code-written lead, then
    /// the model's text ([`crate::answer::Context::answer`]).
    pub answer: Option<String>,
    /// The model's own text of the answer, without the lead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_answer: Option<String>,
    /// The answer as shown to a reader: with the sources the support check
    /// inferred written in as `[n]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_answer: Option<String>,
    /// Share of the question's nuggets the answer states.
    pub nugget_recall: Option<f64>,
    /// Valid citations of the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citations: Option<Vec<Citation>>,
    /// Share of answer sentences that cite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cited_sentence_share: Option<f64>,
    /// The answer's evidence support.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub support: Option<SupportRecord>,
    /// Prompt tokens the server counted (for a stream that reported no
    /// usage, counted by asking the server again for one token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Completion tokens the server counted (for a stream that reported no
    /// usage, its text deltas: one per token on llama.cpp servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Whether the answer was cut where the model began to repeat itself.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut_repetition: bool,
    /// Why the answer failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Distinct files of the answer context, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_files: Option<Vec<String>>,
    /// Seconds the answer took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_seconds: Option<f64>,
    /// The answer model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Signature of the answer prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_signature: Option<String>,
    /// The answer context (`pipeline` or `bm25-files`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_context: Option<String>,
}

/// The evidence support of an answer as recorded per question: citations
/// inferred for uncited sentences, sentences nothing supports, identifiers
/// the context never shows.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct SupportRecord {
    /// Answer sentences.
    pub sentences: usize,
    /// Sentences that got an inferred citation.
    pub inferred: usize,
    /// Sentences nothing supports.
    pub unsupported: usize,
    /// `unsupported / sentences`.
    pub unsupported_share: f64,
    /// Those sentences.
    #[serde(default)]
    pub unsupported_sentences: Vec<String>,
    /// Identifiers the answer names that the context lacks.
    #[serde(default)]
    pub unknown_identifiers: Vec<String>,
}

impl From<&SupportReport> for SupportRecord {
    fn from(s: &SupportReport) -> Self {
        SupportRecord {
            sentences: s.sentences.len(),
            inferred: s.inferred,
            unsupported: s.unsupported,
            unsupported_share: s.unsupported_share,
            unsupported_sentences: s
                .sentences
                .iter()
                .filter(|x| x.unsupported)
                .map(|x| x.text.clone())
                .collect(),
            unknown_identifiers: s.unknown_identifiers.clone(),
        }
    }
}

/// Metrics of one question.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
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

/// Mean of scores (four decimals), with no nugget recall yet.
pub fn summary(items: &[&Scores]) -> Summary {
    let n = items.len().max(1) as f64;
    let m = |f: fn(&Scores) -> f64| round4(items.iter().map(|s| f(s)).sum::<f64>() / n);
    Summary {
        hit1: m(|s| s.hit1),
        hit5: m(|s| s.hit5),
        hit10: m(|s| s.hit10),
        all1: m(|s| s.all1),
        all5: m(|s| s.all5),
        all10: m(|s| s.all10),
        context_recall: m(|s| s.recall),
        mrr: m(|s| s.mrr),
        context_files: m(|s| s.files),
        context_tokens: m(|s| s.tokens),
        nugget_recall: None,
        questions: items.len(),
    }
}

/// Overall and per-category metrics of questions given by category.
pub fn metrics<'a>(categories: impl IntoIterator<Item = &'a str>, scores: &[Scores]) -> Metrics {
    let all: Vec<&Scores> = scores.iter().collect();
    let mut by_cat: BTreeMap<&str, Vec<&Scores>> = BTreeMap::new();
    for (c, s) in categories.into_iter().zip(scores) {
        by_cat.entry(c).or_default().push(s);
    }
    Metrics {
        overall: summary(&all),
        by_category: by_cat
            .into_iter()
            .map(|(k, v)| (k.to_string(), summary(&v)))
            .collect(),
        context_nugget_recall: None,
        context_symbol_recall: None,
        answers: None,
    }
}

/// Mean nugget recall overall and per category, over `(category, recall)`
/// rows; rows without a recall (no nuggets) are not counted.
pub fn nugget_summary(rows: &[(String, Option<f64>)]) -> NuggetSummary {
    let mean = |v: &[f64]| (!v.is_empty()).then(|| round4(v.iter().sum::<f64>() / v.len() as f64));
    let all: Vec<f64> = rows.iter().filter_map(|(_, r)| *r).collect();
    let mut by: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for (c, r) in rows {
        if let Some(r) = r {
            by.entry(c.as_str()).or_default().push(*r);
        }
    }
    NuggetSummary {
        overall: mean(&all),
        questions: all.len(),
        by_category: by.iter().map(|(k, v)| (k.to_string(), mean(v))).collect(),
    }
}

impl Metrics {
    /// Record the answers' nugget recall, overall and in the categories
    /// this report has.
    pub fn set_nugget_recall(&mut self, ns: &NuggetSummary) {
        self.overall.nugget_recall = ns.overall;
        for (cat, v) in &ns.by_category {
            if let Some(s) = self.by_category.get_mut(cat) {
                s.nugget_recall = *v;
            }
        }
    }
}

/// Summary of the answered questions of a run: citations, support,
/// errors, and p50/p95 of latency, prompt and completion tokens.
pub fn answer_summary(rows: &[QuestionRow]) -> AnswerSummary {
    let answered: Vec<&QuestionRow> = rows.iter().filter(|r| r.answer.is_some()).collect();
    let n = answered.len();
    let has_citation = |r: &QuestionRow| r.citations.as_ref().is_some_and(|c| !c.is_empty());
    let cited = answered.iter().filter(|r| has_citation(r)).count();
    let shares: Vec<f64> = answered
        .iter()
        .filter_map(|r| r.cited_sentence_share)
        .collect();
    let pct = |get: fn(&QuestionRow) -> Option<f64>| {
        let mut v: Vec<f64> = answered.iter().filter_map(|r| get(r)).collect();
        v.sort_by(f64::total_cmp);
        Percentiles {
            n: v.len(),
            p50: percentile(&v, 50.0),
            p95: percentile(&v, 95.0),
        }
    };
    let supported = answered
        .iter()
        .filter(|r| has_citation(r) || r.support.as_ref().is_some_and(|s| s.inferred > 0))
        .count();
    let (sentences, unsupported) = answered.iter().fold((0, 0), |(s, u), r| {
        r.support
            .as_ref()
            .map_or((s, u), |x| (s + x.sentences, u + x.unsupported))
    });
    let unknown = answered
        .iter()
        .filter(|r| {
            r.support
                .as_ref()
                .is_some_and(|s| !s.unknown_identifiers.is_empty())
        })
        .count();
    let share = |a: usize, b: usize| {
        if b == 0 {
            0.0
        } else {
            round4(a as f64 / b as f64)
        }
    };
    AnswerSummary {
        with_cited_or_inferred_source: share(supported, n),
        unsupported_sentence_share: share(unsupported, sentences),
        with_unknown_identifiers: share(unknown, n),
        answered: n,
        errors: rows.iter().filter(|r| r.error.is_some()).count(),
        with_valid_citation: share(cited, n),
        mean_cited_sentence_share: if shares.is_empty() {
            0.0
        } else {
            round4(shares.iter().sum::<f64>() / shares.len() as f64)
        },
        latency_seconds: pct(|r| r.latency_seconds),
        prompt_tokens: pct(|r| r.prompt_tokens.map(|t| t as f64)),
        completion_tokens: pct(|r| r.completion_tokens.map(|t| t as f64)),
        cut_repetition: share(answered.iter().filter(|r| r.cut_repetition).count(), n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(share: f64, secs: f64, prompt: u64, support: SupportRecord) -> QuestionRow {
        QuestionRow {
            answer: Some("a".into()),
            citations: Some(if share > 0.0 {
                vec![Citation {
                    n: 1,
                    location: None,
                }]
            } else {
                vec![]
            }),
            cited_sentence_share: Some(share),
            latency_seconds: Some(secs),
            prompt_tokens: Some(prompt),
            completion_tokens: Some(prompt / 10),
            support: Some(support),
            ..QuestionRow::default()
        }
    }

    #[test]
    fn answer_summary_counts_citations_and_percentiles() {
        let rows = vec![
            answered(
                1.0,
                2.0,
                100,
                SupportRecord {
                    sentences: 3,
                    unsupported: 1,
                    unknown_identifiers: vec!["X::y".into()],
                    ..SupportRecord::default()
                },
            ),
            answered(
                0.0,
                4.0,
                300,
                SupportRecord {
                    sentences: 1,
                    inferred: 1,
                    ..SupportRecord::default()
                },
            ),
            QuestionRow {
                error: Some("timeout".into()),
                ..QuestionRow::default()
            },
        ];
        let s = answer_summary(&rows);
        assert_eq!((s.answered, s.errors), (2, 1));
        assert_eq!(s.with_valid_citation, 0.5);
        assert_eq!(s.mean_cited_sentence_share, 0.5);
        assert_eq!(s.with_cited_or_inferred_source, 1.0);
        assert_eq!(s.unsupported_sentence_share, 0.25);
        assert_eq!(s.with_unknown_identifiers, 0.5);
        assert_eq!((s.latency_seconds.p50, s.latency_seconds.p95), (2.0, 4.0));
        assert_eq!(s.prompt_tokens.n, 2);
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
        let none = score(&["x"], &gold, 0);
        assert_eq!((none.hit10, none.recall, none.mrr), (0.0, 0.0, 0.0));
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 50.0), 2.0);
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 95.0), 4.0);
        assert_eq!(p50_p95(&[4.0, 1.0, 3.0, 2.0]), (2.0, 4.0));
    }

    #[test]
    fn the_report_keeps_the_readme_key_names() {
        let m = metrics(
            ["a", "b", "a"],
            &[Scores::default(), Scores::default(), Scores::default()],
        );
        let report = EvalReport {
            run_complete: true,
            metrics: Some(m),
            questions: vec![QuestionRow {
                id: "q1".into(),
                chunks: vec![(3, "primary".into())],
                ..QuestionRow::default()
            }],
            latency_ms: Some(Latency { p50: 1.0, p95: 2.0 }),
            baseline: None,
        };
        let v = serde_json::to_value(&report).expect("serializes");
        let overall = &v["metrics"]["overall"];
        for key in [
            "hit@1",
            "hit@5",
            "hit@10",
            "all_gold@1",
            "all_gold@5",
            "all_gold@10",
            "context_recall",
            "mrr",
            "context_files",
            "context_tokens",
            "nugget_recall",
        ] {
            assert!(overall.get(key).is_some(), "{key} missing");
        }
        assert_eq!(v["metrics"]["by_category"]["a"]["questions"], 2);
        let q = &v["questions"][0];
        assert!(q["answer"].is_null() && q["nugget_recall"].is_null());
        assert!(
            q.get("citations").is_none(),
            "answer fields only when answered"
        );
        assert_eq!(q["chunks"], serde_json::json!([[3, "primary"]]));
        let back: EvalReport = serde_json::from_value(v).expect("reads back");
        assert_eq!(back, report);
    }

    #[test]
    fn nugget_summaries_skip_questions_without_nuggets() {
        let ns = nugget_summary(&[
            ("a".into(), Some(0.5)),
            ("a".into(), None),
            ("b".into(), Some(1.0)),
        ]);
        assert_eq!((ns.overall, ns.questions), (Some(0.75), 2));
        assert_eq!(ns.by_category["a"], Some(0.5));
        assert_eq!(nugget_summary(&[]).overall, None);
    }
}
