//! `codegloss explain-plan`: the dry run of the explanation stage, the
//! prompts `index` would send to the `[explain]` model counted by level and
//! mode, with what the gloss cache already holds.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use codegloss_indexer::{explain, ingest::build};
use indicatif::ProgressBar;

use super::load_config;
use super::output::{note, out};

/// The options of `codegloss explain-plan`.
#[derive(Args)]
pub(crate) struct ExplainPlanArgs {
    /// Repository root.
    repo: PathBuf,
    /// Configuration file (default: `<repo>/codegloss.toml` when it exists).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Index directory whose gloss cache to consult (`explain.cache` wins).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write every prompt here as JSON lines.
    #[arg(long)]
    prompts: Option<PathBuf>,
}

/// Plan the model glosses of a repository and print the plan.
pub(crate) fn run(args: ExplainPlanArgs) -> Result<()> {
    let ExplainPlanArgs {
        repo,
        config,
        out,
        prompts,
    } = args;
    run_explain_plan(&repo, config.as_deref(), out.as_deref(), prompts.as_deref())
}

fn run_explain_plan(
    repo: &Path,
    config: Option<&Path>,
    out: Option<&Path>,
    prompts: Option<&Path>,
) -> Result<()> {
    let cfg = load_config(repo, config)?;
    let built = build::build_index(repo, &cfg, &ProgressBar::hidden())
        .with_context(|| format!("indexing {}", repo.display()))?;
    let cache = cfg
        .explain
        .cache_path(out.unwrap_or_else(|| Path::new(".")));
    let plan = explain::plan(&built.data, repo, &cfg.explain, &cache)?;
    let mut by: std::collections::BTreeMap<(String, String), (usize, usize, usize)> =
        Default::default();
    for p in &plan {
        let row = by.entry((p.level.clone(), p.mode.clone())).or_default();
        row.0 += 1;
        row.1 += usize::from(p.cached);
        row.2 += p.estimated_tokens;
    }
    out!(
        "{:<12} {:<20} {:>8} {:>8} {:>14}",
        "level",
        "mode",
        "prompts",
        "cached",
        "prompt tokens"
    );
    for ((level, mode), (n, cached, tokens)) in &by {
        out!("{level:<12} {mode:<20} {n:>8} {cached:>8} {tokens:>14}");
    }
    let todo = plan.iter().filter(|p| !p.cached).count();
    out!(
        "to generate: {todo} glosses, about {} prompt tokens (characters / 3) and at most {} completion tokens ({} per gloss); cache {}",
        plan.iter().filter(|p| !p.cached).map(|p| p.estimated_tokens).sum::<usize>(),
        todo * cfg.explain.max_tokens as usize,
        cfg.explain.max_tokens,
        cache.display()
    );
    if let Some(path) = prompts {
        let mut text = String::new();
        for p in &plan {
            text.push_str(&serde_json::to_string(p)?);
            text.push('\n');
        }
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        note!("prompts written to {}", path.display());
    }
    Ok(())
}
