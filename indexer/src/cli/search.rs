//! `codegloss search`: dense vector search alone, the question embedded
//! and the nearest chunks listed (exact, HNSW, or chosen by corpus size).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use codegloss_indexer::store;

use super::output::{json_text, out};
use super::{config_or_default, query_embedder};

/// The options of `codegloss search`.
#[derive(Args)]
pub(crate) struct SearchArgs {
    /// Index directory written by `codegloss index`.
    index: PathBuf,
    /// The question.
    question: String,
    /// Number of results.
    #[arg(long, default_value_t = 10)]
    k: usize,
    /// `exact`, `hnsw`, or `auto` (exact below `--exact-below` vectors).
    #[arg(long, value_enum, default_value = "auto")]
    mode: SearchMode,
    /// Corpus size from which `auto` uses HNSW.
    #[arg(long, default_value_t = 20_000)]
    exact_below: usize,
    /// Configuration file for the embedding model paths (default: none).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// How `codegloss search` searches the vectors (`--mode`).
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum SearchMode {
    // Every vector compared.
    Exact,
    // The HNSW graph.
    Hnsw,
    // Exact below `--exact-below` vectors, HNSW from there.
    Auto,
}

/// Embed the question and print the nearest chunks.
pub(crate) fn run(args: SearchArgs) -> Result<()> {
    let SearchArgs {
        index,
        question,
        k,
        mode,
        exact_below,
        config,
        json,
    } = args;
    run_search(
        &index,
        &question,
        k,
        mode,
        exact_below,
        config.as_deref(),
        json,
    )
}

fn run_search(
    dir: &Path,
    question: &str,
    k: usize,
    mode: SearchMode,
    exact_below: usize,
    config: Option<&Path>,
    json: bool,
) -> Result<()> {
    let (manifest, data) =
        store::read_index(dir).with_context(|| format!("reading index {}", dir.display()))?;
    let vectors = store::read_vectors(dir, &manifest)?.with_context(|| {
        format!(
            "{} has no vectors (indexed with --no-embed?)",
            dir.display()
        )
    })?;
    let cfg = config_or_default(config)?;
    let mut embedder = query_embedder(&vectors.spec, &cfg)?;
    let q = embedder.embed_query(question)?;
    let hits = match mode {
        SearchMode::Exact => vectors.search_exact(&q, k)?,
        SearchMode::Hnsw => vectors.search_hnsw(&q, k)?,
        SearchMode::Auto => vectors.search(&q, k, exact_below)?,
    };
    if json {
        let items: Vec<serde_json::Value> = hits
            .iter()
            .map(|h| {
                let c = &data.chunks[h.chunk as usize];
                serde_json::json!({"chunk": h.chunk, "distance": h.distance, "path": c.path, "start_line": c.start_line, "end_line": c.end_line, "symbol": c.symbol_name, "chunk_type": c.chunk_type})
            })
            .collect();
        out!("{}", json_text(&items)?);
        return Ok(());
    }
    for (rank, h) in hits.iter().enumerate() {
        let c = &data.chunks[h.chunk as usize];
        out!(
            "{:>2}. {:.4}  {}:{}-{}  {} {}",
            rank + 1,
            h.distance,
            c.path,
            c.start_line,
            c.end_line,
            c.chunk_type,
            c.symbol_name
        );
    }
    Ok(())
}
