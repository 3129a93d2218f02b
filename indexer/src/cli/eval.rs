//! `codegloss eval`: retrieval measured on a question file (hit@k,
//! all_gold@k, context recall, MRR, per category, the `bm25-files`
//! baseline), the nuggets each answer context holds, and with `--answer`
//! the answers of the `[answer]` model, resumable; `--score` scores a
//! finished answer file again.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use codegloss_core::report::{AnswerSummary, EvalReport, Metrics, Percentiles, Summary};
use codegloss_indexer::{eval, store, IndexError};

use super::output::{note, out};
use super::{config_or_default, progress_bar, query_embedder};

/// The options of `codegloss eval`.
#[derive(Args)]
pub(crate) struct EvalArgs {
    /// Index directory written by `codegloss index`.
    index: PathBuf,
    /// JSON-lines question file.
    #[arg(long)]
    questions: PathBuf,
    /// Field of each question record to use as the question text.
    #[arg(long, default_value = "question")]
    field: String,
    /// Write the results JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Also compute a baseline in the same run (`bm25-files`).
    #[arg(long, value_enum)]
    baseline: Option<Baseline>,
    /// Configuration file (`[retrieval]` settings, embedding model paths).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Skip dense search (keywords and structure only).
    #[arg(long)]
    no_vectors: bool,
    /// Only questions of this split (`dev` or `test`).
    #[arg(long)]
    split: Option<String>,
    /// Also answer every question with the `[answer]` model; resumable
    /// (answers already in the `--json` file are kept).
    #[arg(long, requires = "json")]
    answer: bool,
    /// Context for `--answer`: `pipeline` (default) or `bm25-files` (the
    /// top 3 files of the BM25 file baseline, cut to the same budget).
    #[arg(long, value_enum, default_value = "pipeline")]
    answer_context: AnswerContext,
    /// Only score the answers in the `--json` file against the nuggets of `--questions`.
    #[arg(long, requires = "json", conflicts_with = "answer")]
    score: bool,
    /// Write each question's answer context here, as the answer model
    /// would get it: `<id>.pipeline.txt` and `<id>.bm25-files.txt`, with
    /// the nuggets and gold symbols that the context lacks at the top
    /// (every question, with or without nuggets).
    #[arg(long)]
    contexts: Option<PathBuf>,
}

/// The baseline `--baseline` computes in the same run.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Baseline {
    // The files ranked by BM25 over their whole text.
    #[value(name = "bm25-files")]
    Bm25Files,
}

/// The context `--answer` gives the answer model (`--answer-context`).
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum AnswerContext {
    // The pipeline's numbered, budgeted context.
    Pipeline,
    // The top 3 files of the BM25 file baseline, cut to the same budget.
    #[value(name = "bm25-files")]
    Bm25Files,
}

impl From<AnswerContext> for eval::AnswerContext {
    fn from(c: AnswerContext) -> Self {
        match c {
            AnswerContext::Pipeline => eval::AnswerContext::Pipeline,
            AnswerContext::Bm25Files => eval::AnswerContext::Bm25Files,
        }
    }
}

/// Evaluate, or with `--score` only score the answers of `--json`.
pub(crate) fn run(args: EvalArgs) -> Result<()> {
    if args.score {
        run_score(
            &args.questions,
            args.json.as_deref().expect("clap requires --json"),
        )
    } else {
        run_eval(&args)
    }
}

/// Progress bar, notes on stderr, and the checkpoint file of an answer run.
struct CliObserver<'a> {
    pb: indicatif::ProgressBar,
    json: Option<&'a Path>,
}

impl eval::EvalObserver for CliObserver<'_> {
    fn question_done(&mut self, done: usize, total: usize) {
        self.pb.set_length(total as u64);
        self.pb.set_position(done as u64);
    }

    fn note(&mut self, message: &str) {
        self.pb.suspend(|| note!("{message}"));
    }

    fn checkpoint(&mut self, partial: &EvalReport) -> Result<(), IndexError> {
        match self.json {
            Some(path) => write_report(path, partial),
            None => Ok(()),
        }
    }
}

/// Write a report whole: to a temporary file first, then renamed.
fn write_report(path: &Path, report: &EvalReport) -> Result<(), IndexError> {
    let text = serde_json::to_string_pretty(report).expect("a report serializes") + "\n";
    let tmp = path.with_extension("partial");
    std::fs::write(&tmp, text).map_err(|e| IndexError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| IndexError::io(path, e))
}

/// Read an earlier report (`--answer` resumes from it, `--score` rescores it).
fn read_report(path: &Path) -> Result<EvalReport> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not an eval JSON file", path.display()))
}

fn run_eval(args: &EvalArgs) -> Result<()> {
    let dir = args.index.as_path();
    let questions = args.questions.as_path();
    let field = args.field.as_str();
    let (manifest, corpus) =
        store::load_corpus(dir).with_context(|| format!("reading index {}", dir.display()))?;
    let cfg = config_or_default(args.config.as_deref())?;
    let settings = cfg.retrieval_for(&manifest);
    let mut qs = eval::read_questions(questions)?;
    if let Some(sp) = args.split.as_deref() {
        qs.retain(|q| q.split.as_deref() == Some(sp));
    }
    anyhow::ensure!(!qs.is_empty(), "no questions in {}", questions.display());
    let texts: Vec<String> = qs
        .iter()
        .map(|q| {
            if field == "question" {
                Ok(q.question.clone())
            } else {
                q.extra
                    .get(field)
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
                    .with_context(|| format!("question {} has no string field {field:?}", q.id))
            }
        })
        .collect::<Result<_>>()?;
    let mut embedder = match (&corpus.vectors, args.no_vectors) {
        (Some(v), false) => Some(query_embedder(&v.spec, &cfg)?),
        _ => None,
    };
    let json = args.json.as_deref();
    // An unreadable earlier file is not resumed from (it is rewritten).
    let resume = match json {
        Some(p) if args.answer && p.is_file() => read_report(p).ok(),
        _ => None,
    };
    let opts = eval::EvalOptions {
        questions: &qs,
        texts: &texts,
        settings: &settings,
        config: &cfg,
        baseline: args.baseline == Some(Baseline::Bm25Files),
        answer: args.answer.then(|| args.answer_context.into()),
        resume,
        contexts: args.contexts.as_deref(),
    };
    let mut observer = CliObserver {
        pb: progress_bar(false, "questions"),
        json,
    };
    let report = eval::run(&corpus, embedder.as_mut(), &opts, &mut observer)?;
    observer.pb.finish_and_clear();
    print_report(&report, cfg.answer.context_tokens, embedder.is_none());
    if let Some(path) = json {
        write_report(path, &report)?;
        note!("results written to {}", path.display());
    }
    Ok(())
}

/// Print an eval report: context nuggets and gold symbols, answers, the
/// metrics table, the latency, and the baseline.
fn print_report(report: &EvalReport, budget: usize, dense_off: bool) {
    let Some(m) = &report.metrics else {
        return;
    };
    let contexts = [
        (
            &m.context_nugget_recall,
            "nugget recall (nuggets present in",
        ),
        (
            &m.context_symbol_recall,
            "gold-symbol recall (gold symbols whose own name is in",
        ),
    ];
    for (recall, what) in contexts {
        let Some(cn) = recall else {
            continue;
        };
        let (ours, base) = (&cn.pipeline, &cn.bm25_files_top3);
        out!(
            "context {what} the answer context, budget {budget} tokens) over {} questions: pipeline {}, bm25-files top 3 {}",
            ours.questions,
            json_value(&ours.overall),
            json_value(&base.overall)
        );
        for (cat, v) in &ours.by_category {
            let b = base.by_category.get(cat).copied().flatten();
            out!("  {cat:<24} {:<8} {}", json_value(v), json_value(&b));
        }
    }
    if let Some(a) = &m.answers {
        let answered: Vec<(String, Option<f64>)> = report
            .questions
            .iter()
            .map(|q| (q.category.clone(), q.nugget_recall))
            .collect();
        let ns = eval::nugget_summary(&answered);
        out!(
            "nugget recall: {} over {} questions with nuggets; by category: {}",
            json_value(&ns.overall),
            ns.questions,
            serde_json::to_string(&ns.by_category).unwrap_or_default()
        );
        print_answer_summary(a);
    }
    print_metrics("codegloss", m);
    if let Some(l) = &report.latency_ms {
        out!(
            "retrieval latency (core, query embedding excluded): p50 {:.2} ms, p95 {:.2} ms over {} questions{}",
            l.p50,
            l.p95,
            report.questions.len(),
            if dense_off { "; dense search off" } else { "" }
        );
    }
    if let Some(b) = &report.baseline {
        out!();
        print_metrics("baseline bm25-files (top 10 files)", &b.metrics);
    }
}

/// A value as JSON prints it (`null` for none), as the summaries always
/// printed their numbers.
fn json_value<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn print_answer_summary(a: &AnswerSummary) {
    let p = |x: &Percentiles| {
        format!(
            "p50 {} p95 {} (n {})",
            json_value(&x.p50),
            json_value(&x.p95),
            x.n
        )
    };
    out!(
        "answers: {} ({} errors); with at least one valid citation {}; mean share of cited sentences {}",
        a.answered,
        a.errors,
        json_value(&a.with_valid_citation),
        json_value(&a.mean_cited_sentence_share)
    );
    out!(
        "  support: with a cited or inferred source {}; unsupported sentences {} of all; answers naming identifiers the context lacks {}",
        json_value(&a.with_cited_or_inferred_source),
        json_value(&a.unsupported_sentence_share),
        json_value(&a.with_unknown_identifiers)
    );
    out!("  latency seconds   {}", p(&a.latency_seconds));
    out!("  prompt tokens     {}", p(&a.prompt_tokens));
    out!("  completion tokens {}", p(&a.completion_tokens));
    out!(
        "  cut where the model began to repeat itself: {} of answers",
        json_value(&a.cut_repetition)
    );
}

fn print_metrics(title: &str, m: &Metrics) {
    out!("{title}");
    out!(
        "  {:<22} {:>4} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>7}",
        "category",
        "n",
        "hit@1",
        "hit@5",
        "hit@10",
        "all@5",
        "all@10",
        "recall",
        "mrr",
        "files",
        "tokens"
    );
    let row = |name: &str, v: &Summary| {
        out!(
            "  {:<22} {:>4} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.2} {:>7.0}",
            name,
            v.questions,
            v.hit1,
            v.hit5,
            v.hit10,
            v.all5,
            v.all10,
            v.context_recall,
            v.mrr,
            v.context_files,
            v.context_tokens
        );
    };
    for (k, v) in &m.by_category {
        row(k, v);
    }
    row("overall", &m.overall);
}

/// Score the answers of an `eval --answer` file against the nuggets of a
/// question file, and write the nugget recall back into it.
fn run_score(questions: &Path, answers: &Path) -> Result<()> {
    let qs = eval::read_questions(questions)?;
    let mut report = read_report(answers)?;
    let ns = eval::score_answers(&qs, &mut report)?;
    out!(
        "nugget recall: {} over {} questions with nuggets",
        json_value(&ns.overall),
        ns.questions
    );
    for (cat, r) in &ns.by_category {
        out!("  {cat:<24} {}", json_value(r));
    }
    print_answer_summary(&eval::answer_summary(&report.questions));
    write_report(answers, &report)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::AnswerContext;
    use clap::ValueEnum;
    use codegloss_indexer::eval;

    #[test]
    fn answer_contexts_are_recorded_by_their_command_line_names() {
        for v in AnswerContext::value_variants() {
            let name = v.to_possible_value().expect("not skipped");
            assert_eq!(name.get_name(), eval::AnswerContext::from(*v).as_str());
        }
    }
}
