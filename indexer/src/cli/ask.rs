//! `codegloss ask`: a question answered by a locally hosted,
//! OpenAI-compatible model from the retrieved context, streamed, with the
//! sources it cites, the support of each sentence, and the evidence alone
//! (exit status 2) when the model cannot answer.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use codegloss_core::retrieve;
use codegloss_indexer::{store, Config};

use super::output::{json_text, note, out};
use super::{config_or_default, query_embedder};

/// The options of `codegloss ask`.
#[derive(Args)]
pub(crate) struct AskArgs {
    /// Index directory written by `codegloss index`.
    index: PathBuf,
    /// The question.
    question: String,
    /// Configuration file (`[answer]`, `[retrieval]`, embedding model paths).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Base URL of the OpenAI-compatible API (for example http://127.0.0.1:11434/v1 for Ollama).
    #[arg(long)]
    base_url: Option<String>,
    /// Model name.
    #[arg(long)]
    model: Option<String>,
    /// API key (default: `$CODEGLOSS_API_KEY` when set).
    #[arg(long)]
    api_key: Option<String>,
    /// Sampling temperature.
    #[arg(long)]
    temperature: Option<f32>,
    /// Most tokens to generate.
    #[arg(long)]
    max_tokens: Option<u32>,
    /// Sampling seed sent with the request.
    #[arg(long)]
    seed: Option<u64>,
    /// Seconds before the request is abandoned.
    #[arg(long)]
    timeout: Option<u64>,
    /// Wait for the whole answer instead of streaming it.
    #[arg(long)]
    no_stream: bool,
    /// Skip dense search (keywords and structure only).
    #[arg(long)]
    no_vectors: bool,
    /// Print one JSON object (answer, citations, context, timings) instead of text.
    #[arg(long)]
    json: bool,
    /// Print the prompt that would be sent (system and user message; with
    /// `--json`, the messages and the numbered context as the browser's
    /// worker builds them) and stop, without calling the model.
    #[arg(long)]
    show_prompt: bool,
}

/// The `[answer]` settings with the command-line overrides, then the answer.
pub(crate) fn run(args: AskArgs) -> Result<()> {
    let AskArgs {
        index,
        question,
        config,
        base_url,
        model,
        api_key,
        temperature,
        max_tokens,
        seed,
        timeout,
        no_stream,
        no_vectors,
        json,
        show_prompt,
    } = args;
    let mut cfg = config_or_default(config.as_deref())?;
    let a = &mut cfg.answer;
    if let Some(v) = base_url {
        a.base_url = v;
    }
    if let Some(v) = model {
        a.model = v;
    }
    if let Some(v) = api_key.or_else(|| std::env::var("CODEGLOSS_API_KEY").ok()) {
        a.api_key = Some(v);
    }
    if let Some(v) = temperature {
        a.temperature = v;
    }
    if let Some(v) = max_tokens {
        a.max_tokens = v;
    }
    if let Some(v) = seed {
        a.seed = v;
    }
    if let Some(v) = timeout {
        a.timeout_seconds = v;
    }
    if no_stream {
        a.stream = false;
    }
    run_ask(&index, &question, &cfg, no_vectors, json, show_prompt)
}

fn run_ask(
    dir: &Path,
    question: &str,
    cfg: &Config,
    no_vectors: bool,
    json: bool,
    show_prompt: bool,
) -> Result<()> {
    use codegloss_core::answer::{answer_template, build_context_for, check_citations};
    use codegloss_indexer::llm;
    let (manifest, corpus) =
        store::load_corpus(dir).with_context(|| format!("reading index {}", dir.display()))?;
    let qv = match (&corpus.vectors, no_vectors) {
        (Some(v), false) => Some(query_embedder(&v.spec, cfg)?.embed_query(question)?),
        _ => None,
    };
    let r = retrieve::retrieve(
        &corpus,
        question,
        qv.as_deref(),
        &cfg.retrieval_for(&manifest),
    )?;
    let count_tokens = llm::token_counter(&cfg.answer)?;
    let context = build_context_for(&corpus, &r, question, cfg.answer.budget(), &*count_tokens);
    let template = answer_template(question);
    let messages = template.render(question, &context);
    if show_prompt && json {
        let mut v = template.prompt_json(&messages, &context);
        v["question"] = question.into();
        out!("{}", json_text(&v)?);
        return Ok(());
    }
    if show_prompt {
        for m in &messages {
            out!("=== {} ===", m.role);
            out!("{}", codegloss_core::text::reveal_bidi(&m.content));
        }
        note!(
            "prompt {} v{} ({}), context {} tokens of {} in the evidence, {} excerpts",
            template.id,
            template.version,
            template.signature(),
            context.model_tokens(),
            context.tokens,
            context.chunks.len()
        );
        return Ok(());
    }
    let started = Instant::now();
    let mut printed = false;
    if !json && !context.lead.is_empty() {
        // The answer opens with the lead code wrote from the fact sheet
        // (its lines had their bidirectional controls written out when
        // the sheet was built); the model's words stream after it.
        out!("{}", context.lead);
        printed = true;
    }
    let result = llm::chat(&cfg.answer, &messages, &mut |d| {
        if !json {
            use std::io::Write as _;
            let mut out = std::io::stdout();
            let d = codegloss_core::text::reveal_bidi(d);
            if write!(out, "{d}").and_then(|_| out.flush()).is_err() {
                std::process::exit(0);
            }
            printed = true;
        }
    });
    let latency = started.elapsed().as_secs_f64();
    let evidence = |cited: &[u32]| {
        for c in &context.chunks {
            let mark = if cited.contains(&c.n) { "*" } else { " " };
            out!(
                "{mark}[{}] {}  {} ({})",
                c.n,
                c.location(),
                c.symbol,
                c.role
            );
        }
    };
    match result {
        Ok(answer) => {
            let text = context.answer(&answer.text);
            let report = check_citations(&text, &context);
            let support = codegloss_core::support::check_support(&text, question, &context);
            if json {
                let v = serde_json::json!({
                    "question": question,
                    "answer": text,
                    "model_answer": answer.text,
                    "checked_answer": codegloss_core::support::with_inferred_citations(&text, &support),
                    "citations": report.citations,
                    "invalid_citations": report.invalid,
                    "cited_sentence_share": report.cited_share,
                    "support": support,
                    "context": context.chunks,
                    "context_tokens": context.model_tokens(),
                    "evidence_tokens": context.tokens,
                    "context_files": r.files(&corpus),
                    "latency_seconds": latency,
                    "prompt_tokens": answer.prompt_tokens,
                    "completion_tokens": answer.completion_tokens,
                    "model": cfg.answer.model,
                    "prompt_template": template.id,
                    "prompt_signature": template.signature(),
                    "streamed": answer.streamed,
                    "cut_repetition": answer.cut_repetition,
                });
                out!("{}", json_text(&v)?);
                return Ok(());
            }
            if printed && !text.ends_with('\n') {
                out!();
            }
            if answer.cut_repetition {
                out!();
                out!("(The model began to repeat itself; the answer stops where the copy began, and the copy above is not part of it.)");
            }
            out!();
            out!("Sources (* = cited):");
            let cited: Vec<u32> = report.citations.iter().map(|c| c.n).collect();
            evidence(&cited);
            if !report.invalid.is_empty() {
                out!(
                    "warning: the answer cites {:?}, which name no context excerpt",
                    report.invalid
                );
            }
            for s in &support.sentences {
                if let Some(n) = s.inferred {
                    out!("source inferred: [{n}] for \"{}\"", s.text);
                } else if s.unsupported {
                    out!("unsupported (no excerpt says this): \"{}\"", s.text);
                }
            }
            if !support.unknown_identifiers.is_empty() {
                out!(
                    "warning: the answer names {}, which no excerpt shows",
                    support
                        .unknown_identifiers
                        .iter()
                        .map(|i| format!("`{i}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            out!(
                "{} of {} sentences cite a source; {:.1} s; prompt {} ({}); {} context tokens",
                report.cited_sentences,
                report.sentences,
                latency,
                template.id,
                template.signature(),
                context.tokens
            );
            Ok(())
        }
        Err(e) => {
            if printed {
                out!();
            }
            note!("error: {e}");
            out!("The retrieved evidence for this question:");
            evidence(&[]);
            std::process::exit(2);
        }
    }
}
