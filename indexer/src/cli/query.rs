//! `codegloss query`: the retrieved context for a question, as text (ranked
//! chunks with roles, locations, scores, glosses and, with `--code`, the
//! numbered code) or as JSON.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use codegloss_core::retrieve;
use codegloss_indexer::store;

use super::output::{json_text, out};
use super::{config_or_default, query_embedder};

/// The options of `codegloss query`.
#[derive(Args)]
pub(crate) struct QueryArgs {
    /// Index directory written by `codegloss index`.
    index: PathBuf,
    /// The question.
    question: String,
    /// Primary chunks (before structural expansion and supplementary chunks).
    #[arg(long)]
    k: Option<usize>,
    /// Configuration file (`[retrieval]` settings, embedding model paths).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Skip dense search (keywords and structure only).
    #[arg(long)]
    no_vectors: bool,
    /// Also show each chunk's code, numbered with the file's lines (the
    /// signature that a part of a split function repeats is shown unnumbered).
    #[arg(long)]
    code: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Retrieve the context for the question and print it.
pub(crate) fn run(args: QueryArgs) -> Result<()> {
    let QueryArgs {
        index,
        question,
        k,
        config,
        no_vectors,
        code,
        json,
    } = args;
    run_query(
        &index,
        &question,
        k,
        config.as_deref(),
        QueryOutput {
            no_vectors,
            code,
            json,
        },
    )
}

/// How `codegloss query` searches and prints.
struct QueryOutput {
    no_vectors: bool,
    code: bool,
    json: bool,
}

/// A chunk's code for the terminal, indented: each of the file's own lines
/// with its line number in the file, the prelude (the signature a part of a
/// split function repeats, its part marker) and the trailer (`// [continues
/// in part ...]`) unnumbered behind `:`, under a note saying what they are.
fn numbered_code(c: &codegloss_core::Chunk, indent: &str) -> String {
    use codegloss_core::lines::{code_lines, prelude_note, LineKind};
    let lines = code_lines(c);
    let width = lines
        .iter()
        .filter_map(|l| l.line())
        .max()
        .map_or(1, |n| n.to_string().len());
    let mut s = String::new();
    if let Some(note) = prelude_note(c) {
        s.push_str(&format!(
            "{indent}{:>width$} : ({note}; not lines of this part)\n",
            ""
        ));
    }
    for l in &lines {
        let line = match (l.kind, l.line()) {
            (LineKind::Source { .. }, Some(n)) => format!("{n:>width$} | "),
            (LineKind::Source { .. }, None) => format!("{:>width$} | ", ""),
            _ => format!("{:>width$} : ", ""),
        };
        s.push_str(&format!("{indent}{line}{}\n", l.text));
    }
    s
}

fn run_query(
    dir: &Path,
    question: &str,
    k: Option<usize>,
    config: Option<&Path>,
    output: QueryOutput,
) -> Result<()> {
    let QueryOutput {
        no_vectors,
        code,
        json,
    } = output;
    let (manifest, corpus) =
        store::load_corpus(dir).with_context(|| format!("reading index {}", dir.display()))?;
    let cfg = config_or_default(config)?;
    let mut settings = cfg.retrieval_for(&manifest);
    if let Some(k) = k {
        settings.k = k;
    }
    let qv = match (&corpus.vectors, no_vectors) {
        (Some(v), false) => Some(query_embedder(&v.spec, &cfg)?.embed_query(question)?),
        _ => None,
    };
    let r = retrieve::retrieve(&corpus, question, qv.as_deref(), &settings)?;
    let data = &corpus.data;
    if json {
        let chunks: Vec<serde_json::Value> = r
            .chunks
            .iter()
            .map(|rc| {
                let mut v = rc.to_json(&corpus, true);
                if code {
                    let c = &data.chunks[rc.chunk as usize];
                    v["code"] = serde_json::json!(c.searchable_code());
                    v["frame"] = serde_json::json!(c.frame);
                }
                v
            })
            .collect();
        let out = serde_json::json!({
            "question": question,
            "intent": r.route.intent.as_str(),
            "mode": r.route.mode,
            "entity_target": r.route.entity_target,
            "reasons": r.route.reasons,
            "signals": r.signals,
            "candidates": r.candidates,
            "files": r.files(&corpus),
            "context_tokens": r.context_tokens(&corpus),
            "chunks": chunks,
            "dropped": r.dropped,
        });
        out!("{}", json_text(&out)?);
        return Ok(());
    }
    out!(
        "intent {} (expansion {:?}{}); {} candidates{}",
        r.route.intent.as_str(),
        r.route.mode,
        r.route
            .entity_target
            .map(|t| format!(", target {t:?}"))
            .unwrap_or_default(),
        r.candidates,
        if qv.is_none() {
            "; dense search off"
        } else {
            ""
        }
    );
    for reason in &r.route.reasons {
        out!("  why: {reason}");
    }
    out!();
    for (i, rc) in r.chunks.iter().enumerate() {
        let c = &data.chunks[rc.chunk as usize];
        let e = &data.entities[c.entity as usize];
        out!(
            "{:>2}. [{}] {}:{}-{}  {} {}",
            i + 1,
            rc.role.as_str(),
            c.path,
            c.start_line,
            c.end_line,
            c.chunk_type,
            e.qualified_name
        );
        match (&rc.via, rc.role) {
            (Some(v), _) => out!(
                "    via {} from chunk {} ({})",
                v.edge,
                v.from_chunk,
                data.chunks[v.from_chunk as usize].symbol_name
            ),
            (None, _) => out!(
                "    score {:.3} = semantic {:.3} + lexical {:.3} + target {:.3} + file {:.3}{}; sources {:?}",
                rc.score.combined,
                rc.score.semantic,
                rc.score.lexical,
                rc.score.target,
                rc.score.file,
                rc.score
                    .distance
                    .map(|d| format!(" (distance {d:.3})"))
                    .unwrap_or_default(),
                rc.sources
            ),
        }
        let gloss: String = e.gloss.text.chars().take(240).collect();
        out!("    gloss: {gloss}");
        if code && !c.searchable_code().trim().is_empty() {
            for line in numbered_code(c, "      ").lines() {
                out!("{line}");
            }
        }
    }
    Ok(())
}
