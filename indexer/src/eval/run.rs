//! The evaluation harness: every question retrieved through core exactly
//! as `codegloss query` does, scored against its gold files; the nuggets
//! and gold symbols its answer context holds (the pipeline's and the
//! `bm25-files` top 3 within the same budget); with an answer context
//! chosen, the answer of the `[answer]` model, resumable from an earlier
//! report; and the `bm25-files` baseline in the same run. It returns an
//! [`EvalReport`] and prints nothing: the CLI prints it, and an
//! [`EvalObserver`] sees the progress and the checkpoints.

use std::path::Path;
use std::time::Instant;

use codegloss_core::answer::answer_template;
use codegloss_core::answer::{build_context_for, check_citations, file_context, Context};
use codegloss_core::report::{
    answer_summary, metrics, nugget_summary, p50_p95, score, BaselineReport, ContextNuggets,
    EvalReport, Latency, QuestionRow, Scores, SupportRecord,
};
use codegloss_core::retrieve::{
    self, baseline::FileBaseline, Corpus, Retrieval, RetrievalSettings,
};

use super::{nugget_present, nugget_recall, Question};
use crate::embed::Embedder;
use crate::error::IndexError;
use crate::{llm, Config};

/// The context an answer model gets in an answer run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnswerContext {
    /// The pipeline's numbered, budgeted context.
    Pipeline,
    /// The top 3 files of the BM25 file baseline, cut to the same budget.
    Bm25Files,
}

impl AnswerContext {
    /// The name recorded per answer (and used on the command line).
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerContext::Pipeline => "pipeline",
            AnswerContext::Bm25Files => "bm25-files",
        }
    }
}

/// What one evaluation runs.
pub struct EvalOptions<'a> {
    /// The questions, already filtered (by split).
    pub questions: &'a [Question],
    /// The text asked of each question (its `question` or another field).
    pub texts: &'a [String],
    /// The retrieval settings.
    pub settings: &'a RetrievalSettings,
    /// `[answer]` settings (budget, model) and the rest of the configuration.
    pub config: &'a Config,
    /// Also compute the `bm25-files` baseline (top 10 files).
    pub baseline: bool,
    /// Answer every question from this context.
    pub answer: Option<AnswerContext>,
    /// An earlier report whose answers are kept (rows with an answer).
    pub resume: Option<EvalReport>,
    /// Write each question's answer contexts into this folder.
    pub contexts: Option<&'a Path>,
}

/// Sees an evaluation as it runs.
pub trait EvalObserver {
    /// One more question is done.
    fn question_done(&mut self, done: usize, total: usize);
    /// Something worth telling (a resumed run, a failed answer).
    fn note(&mut self, message: &str);
    /// In an answer run, the report so far after each question, to be kept
    /// so that an interrupted run resumes.
    fn checkpoint(&mut self, partial: &EvalReport) -> Result<(), IndexError>;
}

fn eval_error(message: String) -> IndexError {
    IndexError::Eval { message }
}

/// Write one answer context to `dir` for inspection, headed by the
/// question and the nuggets and gold symbols (`symbols`, from
/// [`gold_symbols`]) it lacks.
fn write_context_dump(
    dir: &Path,
    q: &Question,
    symbols: &[(&str, &str)],
    text: &str,
    kind: AnswerContext,
    ctx: &Context,
) -> Result<(), IndexError> {
    std::fs::create_dir_all(dir).map_err(|e| IndexError::io(dir, e))?;
    let mut head = format!("question: {text}\ncategory: {}\n", q.category);
    let prompt = ctx.prompt_text();
    for n in &q.nuggets {
        if !nugget_present(prompt, n)? {
            head.push_str(&format!("missing nugget: {}\n", n.fact));
        }
    }
    for (s, _) in symbols.iter().filter(|(_, name)| !prompt.contains(name)) {
        head.push_str(&format!("missing gold symbol: {s}\n"));
    }
    head.push_str(&format!(
        "tokens: {} (evidence {})\n",
        ctx.model_tokens(),
        ctx.tokens
    ));
    if !ctx.lead.is_empty() {
        head.push_str(&format!("answer lead (written by code):\n{}", ctx.lead));
    }
    head.push('\n');
    let path = dir.join(format!("{}.{}.txt", q.id, kind.as_str()));
    std::fs::write(&path, head + prompt).map_err(|e| IndexError::io(&path, e))
}

/// The question's `gold_symbols` (a field of the benchmark format, on
/// every split) as written, each with its own name (the last `::` part
/// without template arguments or parameters), which a context must
/// contain to hold the symbol; symbols without a name are left out.
fn gold_symbols(q: &Question) -> Vec<(&str, &str)> {
    let Some(serde_json::Value::Array(symbols)) = q.extra.get("gold_symbols") else {
        return Vec::new();
    };
    symbols
        .iter()
        .filter_map(serde_json::Value::as_str)
        .filter_map(|s| {
            let name = s.rsplit("::").next().unwrap_or(s);
            let name = name.split(['<', '(']).next().unwrap_or(name).trim();
            (!name.is_empty()).then_some((s, name))
        })
        .collect()
}

/// The share of `symbols` (from [`gold_symbols`]) whose own name `text`
/// contains; none when there are none.
fn symbol_recall(symbols: &[(&str, &str)], text: &str) -> Option<f64> {
    (!symbols.is_empty()).then(|| {
        let present = symbols.iter().filter(|(_, n)| text.contains(n)).count();
        present as f64 / symbols.len() as f64
    })
}

/// The distinct files of a context, in order.
fn context_files(ctx: &Context) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for c in &ctx.chunks {
        if !v.contains(&c.path) {
            v.push(c.path.clone());
        }
    }
    v
}

/// Evaluate every question of `opts` on `corpus`; dense search when an
/// embedder is given.
pub fn run(
    corpus: &Corpus,
    mut embedder: Option<&mut Embedder>,
    opts: &EvalOptions<'_>,
    observer: &mut dyn EvalObserver,
) -> Result<EvalReport, IndexError> {
    let cfg = opts.config;
    // Answers already written by an interrupted run are kept.
    let done: std::collections::BTreeMap<&str, &QuestionRow> = match (&opts.answer, &opts.resume) {
        (Some(_), Some(prev)) => prev
            .questions
            .iter()
            .filter(|q| q.answer.is_some())
            .map(|q| (q.id.as_str(), q))
            .collect(),
        _ => Default::default(),
    };
    if !done.is_empty() {
        observer.note(&format!(
            "resuming: {} answers already in the file",
            done.len()
        ));
    }
    let count_tokens = llm::token_counter(&cfg.answer)?;
    let files_baseline = FileBaseline::new(corpus);
    // The context an answer model would get: the pipeline's, or the top 3
    // files of the BM25 file baseline, within the same budget.
    let make_context = |kind: AnswerContext, text: &str, r: &Retrieval| match kind {
        AnswerContext::Bm25Files => {
            let top: Vec<&str> = files_baseline.rank(text).into_iter().take(3).collect();
            file_context(corpus, &top, cfg.answer.context_tokens, &*count_tokens)
        }
        AnswerContext::Pipeline => {
            build_context_for(corpus, r, text, cfg.answer.budget(), &*count_tokens)
        }
    };
    let mut context_nuggets = Vec::new();
    let mut baseline_context_nuggets = Vec::new();
    let mut context_symbols = Vec::new();
    let mut baseline_context_symbols = Vec::new();
    let mut scores: Vec<Scores> = Vec::new();
    let mut rows: Vec<QuestionRow> = Vec::new();
    let mut nugget_rows = Vec::new();
    let mut latencies = Vec::new();
    let total = opts.questions.len();
    for (q, text) in opts.questions.iter().zip(opts.texts) {
        let qv = match embedder.as_deref_mut() {
            Some(e) => Some(e.embed_query(text)?),
            None => None,
        };
        let t = Instant::now();
        let r = retrieve::retrieve(corpus, text, qv.as_deref(), opts.settings)
            .map_err(|e| eval_error(format!("question {}: {e}", q.id)))?;
        let latency_ms = t.elapsed().as_secs_f64() * 1000.0;
        latencies.push(latency_ms);
        let files = r.files(corpus);
        let tokens = r.context_tokens(corpus);
        scores.push(score(&files, &q.gold_files, tokens));
        let mut row = QuestionRow {
            id: q.id.clone(),
            category: q.category.clone(),
            question: text.clone(),
            intent: r.route.intent.as_str().to_string(),
            files: files.iter().map(|f| f.to_string()).collect(),
            gold_files: q.gold_files.clone(),
            context_tokens: tokens,
            chunks: r
                .chunks
                .iter()
                .map(|c| (c.chunk, c.role.as_str().to_string()))
                .collect(),
            latency_ms,
            ..QuestionRow::default()
        };
        let symbols = gold_symbols(q);
        if !q.nuggets.is_empty() || opts.contexts.is_some() || !symbols.is_empty() {
            // How many nuggets the context itself contains: the most an
            // answer model could state from it; and how many of the gold
            // symbols it names, which the test split (no nuggets) has too.
            // A question without either still gets its contexts written.
            for (kind, into, symbols_into) in [
                (
                    AnswerContext::Pipeline,
                    &mut context_nuggets,
                    &mut context_symbols,
                ),
                (
                    AnswerContext::Bm25Files,
                    &mut baseline_context_nuggets,
                    &mut baseline_context_symbols,
                ),
            ] {
                let ctx = make_context(kind, text, &r);
                // What the model reads, within the budget both contexts
                // share.
                if !q.nuggets.is_empty() {
                    into.push((
                        q.category.clone(),
                        nugget_recall(ctx.prompt_text(), &q.nuggets)?,
                    ));
                }
                if let Some(recall) = symbol_recall(&symbols, ctx.prompt_text()) {
                    symbols_into.push((q.category.clone(), Some(recall)));
                }
                if let Some(dir) = opts.contexts {
                    write_context_dump(dir, q, &symbols, text, kind, &ctx)?;
                }
            }
        }
        if let Some(kind) = opts.answer {
            answer_question(
                &mut row,
                q,
                text,
                kind,
                &make_context(kind, text, &r),
                &done,
                cfg,
                observer,
            )?;
            nugget_rows.push((q.category.clone(), row.nugget_recall));
        }
        rows.push(row);
        if opts.answer.is_some() {
            // Progress after every question, so that an interrupted run resumes.
            observer.checkpoint(&EvalReport {
                run_complete: false,
                questions: rows.clone(),
                ..EvalReport::default()
            })?;
        }
        observer.question_done(rows.len(), total);
    }
    let categories = || opts.questions.iter().map(|q| q.category.as_str());
    let mut m = metrics(categories(), &scores);
    if !context_nuggets.is_empty() {
        m.context_nugget_recall = Some(ContextNuggets {
            pipeline: nugget_summary(&context_nuggets),
            bm25_files_top3: nugget_summary(&baseline_context_nuggets),
        });
    }
    if !context_symbols.is_empty() {
        m.context_symbol_recall = Some(ContextNuggets {
            pipeline: nugget_summary(&context_symbols),
            bm25_files_top3: nugget_summary(&baseline_context_symbols),
        });
    }
    if opts.answer.is_some() {
        m.set_nugget_recall(&nugget_summary(&nugget_rows));
        m.answers = Some(answer_summary(&rows));
    }
    let (p50, p95) = p50_p95(&latencies);
    let baseline = opts.baseline.then(|| {
        let bs: Vec<Scores> = opts
            .questions
            .iter()
            .zip(opts.texts)
            .map(|(q, text)| {
                let top: Vec<&str> = files_baseline.rank(text).into_iter().take(10).collect();
                score(&top, &q.gold_files, 0)
            })
            .collect();
        BaselineReport {
            name: "bm25-files".into(),
            metrics: metrics(categories(), &bs),
        }
    });
    Ok(EvalReport {
        run_complete: true,
        metrics: Some(m),
        questions: rows,
        latency_ms: Some(Latency { p50, p95 }),
        baseline,
    })
}

/// Answer one question into its row, or keep the answer an earlier run
/// recorded. The context is deterministic: a kept answer gets the same one
/// back, so its citations are checked again, not trusted.
#[allow(clippy::too_many_arguments)]
fn answer_question(
    row: &mut QuestionRow,
    q: &Question,
    text: &str,
    kind: AnswerContext,
    ctx: &Context,
    done: &std::collections::BTreeMap<&str, &QuestionRow>,
    cfg: &Config,
    observer: &mut dyn EvalObserver,
) -> Result<(), IndexError> {
    let record = |row: &mut QuestionRow, answer: &str| {
        let report = check_citations(answer, ctx);
        row.citations = Some(report.citations);
        row.cited_sentence_share = Some(report.cited_share);
        let support = codegloss_core::support::check_support(answer, text, ctx);
        row.checked_answer = Some(codegloss_core::support::with_inferred_citations(
            answer, &support,
        ));
        row.support = Some(SupportRecord::from(&support));
    };
    if let Some(prev) = done.get(q.id.as_str()) {
        // Every recorded answer field comes back; retrieval fields are fresh.
        *row = QuestionRow {
            id: row.id.clone(),
            category: row.category.clone(),
            question: row.question.clone(),
            intent: row.intent.clone(),
            files: std::mem::take(&mut row.files),
            gold_files: std::mem::take(&mut row.gold_files),
            context_tokens: row.context_tokens,
            chunks: std::mem::take(&mut row.chunks),
            latency_ms: row.latency_ms,
            ..(*prev).clone()
        };
        if let Some(a) = prev.answer.as_deref() {
            record(row, a);
        }
        return Ok(());
    }
    let template = answer_template(text);
    let messages = template.render(text, ctx);
    let t = Instant::now();
    // Asked as a user asks: streamed when `[answer] stream` is on (the
    // default), so that an answer which starts to loop is stopped where the
    // repetition guard cuts it, as in `codegloss ask` and the widget, rather
    // than generated up to `max_tokens` and cut afterwards.
    let mut deltas = 0u64;
    let reply = llm::chat(&cfg.answer, &messages, &mut |_| deltas += 1);
    row.latency_seconds = Some(t.elapsed().as_secs_f64());
    match reply {
        Ok(a) => {
            let answer = ctx.answer(&a.text);
            record(row, &answer);
            row.nugget_recall = nugget_recall(&answer, &q.nuggets)?;
            row.answer = Some(answer);
            row.model_answer = Some(a.text);
            row.completion_tokens = a.completion_tokens.or(a.streamed.then_some(deltas));
            row.prompt_tokens = match a.prompt_tokens {
                Some(n) => Some(n),
                None if a.streamed => prompt_tokens(&cfg.answer, &messages, &q.id, observer),
                None => None,
            };
            row.cut_repetition = a.cut_repetition;
        }
        Err(e) => {
            row.error = Some(e.to_string());
            observer.note(&format!("{}: {e}", q.id));
        }
    }
    row.context_files = Some(context_files(ctx));
    row.model = Some(cfg.answer.model.clone());
    row.prompt_signature = Some(template.signature());
    row.answer_context = Some(kind.as_str().to_string());
    Ok(())
}

/// The prompt's length in tokens as the server counts it, for a streamed
/// answer whose stream reported no usage (llama-cpp-python sends none, and
/// ignores `stream_options`): the same messages asked again without
/// streaming for one token. A server that keeps the prompt it has just
/// evaluated (llama.cpp's and llama-cpp-python's do) evaluates only what
/// differs, so this costs a fraction of a second; it is outside the
/// question's latency. None, with a note, when the server does not answer.
fn prompt_tokens(
    cfg: &llm::AnswerConfig,
    messages: &[codegloss_core::chat::Message],
    id: &str,
    observer: &mut dyn EvalObserver,
) -> Option<u64> {
    let probe = llm::AnswerConfig {
        stream: false,
        max_tokens: 1,
        ..cfg.clone()
    };
    match llm::chat(&probe, messages, &mut |_| {}) {
        Ok(a) => a.prompt_tokens,
        Err(e) => {
            observer.note(&format!("{id}: prompt tokens not counted: {e}"));
            None
        }
    }
}

/// Score the answers of an earlier report against the nuggets of
/// `questions`: each row's nugget recall, and the report's answer summary
/// and nugget recall when it has metrics. Returns the nugget summary.
pub fn score_answers(
    questions: &[Question],
    report: &mut EvalReport,
) -> Result<codegloss_core::report::NuggetSummary, IndexError> {
    let mut rows = Vec::new();
    for item in &mut report.questions {
        let Some(q) = questions.iter().find(|q| q.id == item.id) else {
            continue;
        };
        let Some(a) = item.answer.as_deref() else {
            continue;
        };
        let nr = nugget_recall(a, &q.nuggets)?;
        item.nugget_recall = nr;
        rows.push((q.category.clone(), nr));
    }
    let ns = nugget_summary(&rows);
    let summary = answer_summary(&report.questions);
    if let Some(m) = report.metrics.as_mut() {
        m.answers = Some(summary);
        m.set_nugget_recall(&ns);
    }
    Ok(ns)
}
