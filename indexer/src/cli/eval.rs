//! `codegloss eval`: retrieval measured on a question file (hit@k,
//! all_gold@k, context recall, MRR, per category, the `bm25-files`
//! baseline), the nuggets each answer context holds, and with `--answer`
//! the answers of the `[answer]` model, resumable; `--score` scores a
//! finished answer file again.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use codegloss_core::retrieve;
use codegloss_indexer::store;

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
    /// the nuggets that the context lacks at the top.
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

impl AnswerContext {
    /// The name as given on the command line and recorded per answer.
    fn as_str(self) -> &'static str {
        match self {
            AnswerContext::Pipeline => "pipeline",
            AnswerContext::Bm25Files => "bm25-files",
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

/// Write one answer context to `dir` for inspection, headed by the
/// question and the nuggets it lacks.
fn write_context_dump(
    dir: &Path,
    q: &codegloss_indexer::eval::Question,
    text: &str,
    bm25_files: bool,
    ctx: &codegloss_core::answer::Context,
) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut head = format!("question: {text}\ncategory: {}\n", q.category);
    for n in &q.nuggets {
        if !codegloss_indexer::eval::nugget_present(&ctx.text, n).map_err(anyhow::Error::msg)? {
            head.push_str(&format!("missing nugget: {}\n", n.fact));
        }
    }
    head.push_str(&format!("tokens: {}\n\n", ctx.tokens));
    let kind = if bm25_files { "bm25-files" } else { "pipeline" };
    let path = dir.join(format!("{}.{kind}.txt", q.id));
    std::fs::write(&path, head + &ctx.text).with_context(|| format!("writing {}", path.display()))
}

fn run_eval(args: &EvalArgs) -> Result<()> {
    let dir = args.index.as_path();
    let questions = args.questions.as_path();
    let field = args.field.as_str();
    let json = args.json.as_deref();
    let (baseline, answer, answer_context) = (args.baseline, args.answer, args.answer_context);
    let (config, no_vectors) = (args.config.as_deref(), args.no_vectors);
    let (split, contexts) = (args.split.as_deref(), args.contexts.as_deref());
    use codegloss_core::answer::{build_context, check_citations, RETRIEVAL_ANSWER_V2};
    use codegloss_indexer::{eval, llm};
    let (manifest, corpus) =
        store::load_corpus(dir).with_context(|| format!("reading index {}", dir.display()))?;
    let cfg = config_or_default(config)?;
    let settings = cfg.retrieval_for(&manifest);
    let mut qs = eval::read_questions(questions)?;
    if let Some(sp) = split {
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
    let mut embedder = match (&corpus.vectors, no_vectors) {
        (Some(v), false) => Some(query_embedder(&v.spec, &cfg)?),
        _ => None,
    };
    // Answers already written by an interrupted run are kept.
    let mut done: std::collections::BTreeMap<String, serde_json::Value> = Default::default();
    if answer {
        if let Some(prev) = json
            .filter(|p| p.is_file())
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        {
            for q in prev["questions"].as_array().into_iter().flatten() {
                if q["answer"].is_string() {
                    if let Some(id) = q["id"].as_str() {
                        done.insert(id.to_string(), q.clone());
                    }
                }
            }
            if !done.is_empty() {
                note!("resuming: {} answers already in the file", done.len());
            }
        }
    }
    let count_tokens = llm::token_counter(&cfg.answer)?;
    let files_baseline = retrieve::baseline::FileBaseline::new(&corpus);
    // The context an answer model would get: the pipeline's, or the top 3
    // files of the BM25 file baseline, within the same budget.
    let make_context = |bm25_files: bool, text: &str, r: &retrieve::Retrieval| {
        if bm25_files {
            let top: Vec<&str> = files_baseline.rank(text).into_iter().take(3).collect();
            codegloss_core::answer::file_context(
                &corpus,
                &top,
                cfg.answer.context_tokens,
                &*count_tokens,
            )
        } else {
            build_context(&corpus, r, cfg.answer.context_tokens, &*count_tokens)
        }
    };
    let mut context_nuggets: Vec<(String, Option<f64>)> = Vec::new();
    let mut baseline_context_nuggets: Vec<(String, Option<f64>)> = Vec::new();
    let mut scores = Vec::new();
    let mut per_question: Vec<serde_json::Value> = Vec::new();
    let mut nugget_rows: Vec<(String, Option<f64>)> = Vec::new();
    let mut latencies = Vec::new();
    let pb = progress_bar(false, "questions");
    pb.set_length(qs.len() as u64);
    for (q, text) in qs.iter().zip(&texts) {
        let qv = match embedder.as_mut() {
            Some(e) => Some(e.embed_query(text)?),
            None => None,
        };
        let t = Instant::now();
        let r = retrieve::retrieve(&corpus, text, qv.as_deref(), &settings)?;
        latencies.push(t.elapsed().as_secs_f64() * 1000.0);
        let files = r.files(&corpus);
        let tokens = r.context_tokens(&corpus);
        scores.push(eval::score(&files, &q.gold_files, tokens));
        let mut row = serde_json::json!({
            "id": q.id, "category": q.category, "question": text, "intent": r.route.intent.as_str(),
            "files": files, "gold_files": q.gold_files, "context_tokens": tokens,
            "chunks": r.chunks.iter().map(|c| serde_json::json!([c.chunk, c.role.as_str()])).collect::<Vec<_>>(),
            "latency_ms": latencies.last(),
            "answer": null, "nugget_recall": null,
        });
        if !q.nuggets.is_empty() {
            // How many nuggets the context itself contains: the most an
            // answer model could state from it.
            for (bm25, rows) in [
                (false, &mut context_nuggets),
                (true, &mut baseline_context_nuggets),
            ] {
                let ctx = make_context(bm25, text, &r);
                let nr = eval::nugget_recall(&ctx.text, &q.nuggets).map_err(anyhow::Error::msg)?;
                rows.push((q.category.clone(), nr));
                if let Some(dir) = contexts {
                    write_context_dump(dir, q, text, bm25, &ctx)?;
                }
            }
        }
        if answer {
            // The context is deterministic: a kept answer gets the same one
            // back, so its citations are checked again, not trusted.
            let ctx = make_context(answer_context == AnswerContext::Bm25Files, text, &r);
            if let Some(prev) = done.get(&q.id) {
                // Every recorded field comes back (retrieval fields are fresh).
                for (k, v) in prev.as_object().into_iter().flatten() {
                    if row.get(k).is_none_or(serde_json::Value::is_null) {
                        row[k] = v.clone();
                    }
                }
                if let Some(a) = prev["answer"].as_str() {
                    let report = check_citations(a, &ctx);
                    row["citations"] = serde_json::json!(report.citations);
                    row["cited_sentence_share"] = serde_json::json!(report.cited_share);
                    row["support"] = support_json(a, text, &ctx);
                }
            } else {
                let messages = RETRIEVAL_ANSWER_V2.render(text, &ctx);
                let t = Instant::now();
                // Batch answers need no streaming, and plain responses carry
                // token usage (llama-cpp-python sends none in streams).
                let plain = llm::AnswerConfig {
                    stream: false,
                    ..cfg.answer.clone()
                };
                match llm::chat(&plain, &messages, &mut |_| {}) {
                    Ok(a) => {
                        let report = check_citations(&a.text, &ctx);
                        let nr =
                            eval::nugget_recall(&a.text, &q.nuggets).map_err(anyhow::Error::msg)?;
                        row["answer"] = serde_json::json!(a.text);
                        row["citations"] = serde_json::json!(report.citations);
                        row["cited_sentence_share"] = serde_json::json!(report.cited_share);
                        row["support"] = support_json(&a.text, text, &ctx);
                        row["prompt_tokens"] = serde_json::json!(a.prompt_tokens);
                        row["completion_tokens"] = serde_json::json!(a.completion_tokens);
                        row["nugget_recall"] = serde_json::json!(nr);
                    }
                    Err(e) => {
                        row["error"] = serde_json::json!(e.to_string());
                        note!("{}: {e}", q.id);
                    }
                }
                row["context_files"] = serde_json::json!(ctx
                    .chunks
                    .iter()
                    .map(|c| c.path.clone())
                    .fold(Vec::<String>::new(), |mut v, p| {
                        if !v.contains(&p) {
                            v.push(p);
                        }
                        v
                    }));
                row["latency_seconds"] = serde_json::json!(t.elapsed().as_secs_f64());
                row["model"] = serde_json::json!(cfg.answer.model);
                row["prompt_signature"] = serde_json::json!(RETRIEVAL_ANSWER_V2.signature());
                row["answer_context"] = serde_json::json!(answer_context.as_str());
            }
            nugget_rows.push((q.category.clone(), row["nugget_recall"].as_f64()));
        }
        per_question.push(row);
        if answer {
            // Progress after every question, so that an interrupted run resumes.
            if let Some(path) = json {
                let partial = serde_json::json!({"run_complete": false, "questions": per_question});
                let tmp = path.with_extension("partial");
                std::fs::write(&tmp, serde_json::to_string_pretty(&partial)? + "\n")?;
                std::fs::rename(&tmp, path)?;
            }
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    let mut metrics = eval::metrics(&qs, &scores);
    if !context_nuggets.is_empty() {
        let ours = eval::nugget_summary(&context_nuggets);
        let base = eval::nugget_summary(&baseline_context_nuggets);
        out!(
            "context nugget recall (nuggets present in the answer context, budget {} tokens) over {} questions: pipeline {}, bm25-files top 3 {}",
            cfg.answer.context_tokens,
            ours["questions"],
            ours["overall"],
            base["overall"]
        );
        for (cat, v) in ours["by_category"].as_object().into_iter().flatten() {
            out!("  {cat:<24} {v:<8} {}", base["by_category"][cat]);
        }
        metrics["context_nugget_recall"] =
            serde_json::json!({"pipeline": ours, "bm25_files_top3": base});
    }
    if answer {
        let ns = eval::nugget_summary(&nugget_rows);
        metrics["overall"]["nugget_recall"] = ns["overall"].clone();
        for (cat, v) in ns["by_category"].as_object().into_iter().flatten() {
            metrics["by_category"][cat]["nugget_recall"] = v.clone();
        }
        out!(
            "nugget recall: {} over {} questions with nuggets; by category: {}",
            ns["overall"],
            ns["questions"],
            ns["by_category"]
        );
        let a = eval::answer_summary(&per_question);
        print_answer_summary(&a);
        metrics["answers"] = a;
    }
    latencies.sort_by(f64::total_cmp);
    let (p50, p95) = (
        eval::percentile(&latencies, 50.0),
        eval::percentile(&latencies, 95.0),
    );
    print_metrics("codegloss", &metrics);
    out!(
        "retrieval latency (core, query embedding excluded): p50 {p50:.2} ms, p95 {p95:.2} ms over {} questions{}",
        latencies.len(),
        if embedder.is_none() { "; dense search off" } else { "" }
    );
    let mut result = serde_json::json!({
        "run_complete": true,
        "metrics": metrics,
        "questions": per_question,
        "latency_ms": {"p50": p50, "p95": p95},
    });
    match baseline {
        Some(Baseline::Bm25Files) => {
            let b = retrieve::baseline::FileBaseline::new(&corpus);
            let bs: Vec<eval::Scores> = qs
                .iter()
                .zip(&texts)
                .map(|(q, text)| {
                    let ranked = b.rank(text);
                    let top: Vec<&str> = ranked.into_iter().take(10).collect();
                    eval::score(&top, &q.gold_files, 0)
                })
                .collect();
            let bm = eval::metrics(&qs, &bs);
            out!();
            print_metrics("baseline bm25-files (top 10 files)", &bm);
            result["baseline"] = serde_json::json!({"name": "bm25-files", "metrics": bm});
        }
        None => {}
    }
    if let Some(path) = json {
        std::fs::write(path, serde_json::to_string_pretty(&result)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        note!("results written to {}", path.display());
    }
    Ok(())
}

/// The evidence support of an answer, as recorded per question by `eval
/// --answer`: citations inferred for uncited sentences, sentences nothing
/// supports, identifiers the context never shows.
fn support_json(
    answer: &str,
    question: &str,
    ctx: &codegloss_core::answer::Context,
) -> serde_json::Value {
    let s = codegloss_core::support::check_support(answer, question, ctx);
    serde_json::json!({
        "sentences": s.sentences.len(),
        "inferred": s.inferred,
        "unsupported": s.unsupported,
        "unsupported_share": s.unsupported_share,
        "unsupported_sentences": s.sentences.iter().filter(|x| x.unsupported).map(|x| &x.text).collect::<Vec<_>>(),
        "unknown_identifiers": s.unknown_identifiers,
    })
}

fn print_answer_summary(a: &serde_json::Value) {
    let p = |k: &str| format!("p50 {} p95 {} (n {})", a[k]["p50"], a[k]["p95"], a[k]["n"]);
    out!(
        "answers: {} ({} errors); with at least one valid citation {}; mean share of cited sentences {}",
        a["answered"],
        a["errors"],
        a["with_valid_citation"],
        a["mean_cited_sentence_share"]
    );
    out!(
        "  support: with a cited or inferred source {}; unsupported sentences {} of all; answers naming identifiers the context lacks {}",
        a["with_cited_or_inferred_source"],
        a["unsupported_sentence_share"],
        a["with_unknown_identifiers"]
    );
    out!("  latency seconds   {}", p("latency_seconds"));
    out!("  prompt tokens     {}", p("prompt_tokens"));
    out!("  completion tokens {}", p("completion_tokens"));
}

fn print_metrics(title: &str, m: &serde_json::Value) {
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
    let row = |name: &str, v: &serde_json::Value| {
        let f = |k: &str| v[k].as_f64().unwrap_or(0.0);
        out!(
            "  {:<22} {:>4} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.2} {:>7.0}",
            name,
            v["questions"].as_u64().unwrap_or(0),
            f("hit@1"),
            f("hit@5"),
            f("hit@10"),
            f("all_gold@5"),
            f("all_gold@10"),
            f("context_recall"),
            f("mrr"),
            f("context_files"),
            f("context_tokens")
        );
    };
    if let Some(cats) = m["by_category"].as_object() {
        for (k, v) in cats {
            row(k, v);
        }
    }
    row("overall", &m["overall"]);
}

/// Score the answers of an `eval --answer` file against the nuggets of a
/// question file, and write the nugget recall back into it.
fn run_score(questions: &Path, answers: &Path) -> Result<()> {
    use codegloss_indexer::eval;
    let qs = eval::read_questions(questions)?;
    let text = std::fs::read_to_string(answers)
        .with_context(|| format!("reading {}", answers.display()))?;
    let mut v: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not an eval JSON file", answers.display()))?;
    let mut rows = Vec::new();
    if let Some(items) = v["questions"].as_array_mut() {
        for item in items {
            let Some(q) = qs
                .iter()
                .find(|q| Some(q.id.as_str()) == item["id"].as_str())
            else {
                continue;
            };
            let Some(a) = item["answer"].as_str() else {
                continue;
            };
            let nr = eval::nugget_recall(a, &q.nuggets).map_err(anyhow::Error::msg)?;
            item["nugget_recall"] = serde_json::json!(nr);
            rows.push((q.category.clone(), nr));
        }
    }
    let ns = eval::nugget_summary(&rows);
    out!(
        "nugget recall: {} over {} questions with nuggets",
        ns["overall"],
        ns["questions"]
    );
    for (cat, r) in ns["by_category"].as_object().into_iter().flatten() {
        out!("  {cat:<24} {r}");
    }
    let summary = eval::answer_summary(v["questions"].as_array().map_or(&[][..], Vec::as_slice));
    print_answer_summary(&summary);
    if v.get("metrics").is_some() {
        v["metrics"]["answers"] = summary;
        v["metrics"]["overall"]["nugget_recall"] = ns["overall"].clone();
        for (cat, r) in ns["by_category"].as_object().into_iter().flatten() {
            if v["metrics"]["by_category"].get(cat).is_some() {
                v["metrics"]["by_category"][cat]["nugget_recall"] = r.clone();
            }
        }
    }
    std::fs::write(answers, serde_json::to_string_pretty(&v)? + "\n")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::AnswerContext;
    use clap::ValueEnum;

    #[test]
    fn answer_contexts_are_recorded_by_their_command_line_names() {
        for v in AnswerContext::value_variants() {
            let name = v.to_possible_value().expect("not skipped");
            assert_eq!(name.get_name(), v.as_str());
        }
    }
}
