//! `codegloss macros`: what each macro rule of a repository is worth to
//! the parse (function bodies it keeps out of tree-sitter ERROR nodes, and
//! ERROR nodes it removes), so that a maintainer sees which rules carry
//! the parse and which macros still break it before naming any in
//! `[parse]`. It parses each file once per rule the file uses: a
//! diagnostic, not part of `index`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use codegloss_indexer::ingest::macro_report::{repository_report, MacroEffect};

use super::output::{json_text, out};
use super::{load_config, progress_bar};

/// The options of `codegloss macros`.
#[derive(Args)]
pub(crate) struct MacrosArgs {
    /// Repository to read (its `codegloss.toml` is used when present).
    repo: PathBuf,
    /// Configuration file (default: `<repo>/codegloss.toml` when it exists).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Rules shown in the table (the JSON holds all of them).
    #[arg(long, default_value_t = 30)]
    top: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

fn share(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// Measure and print the report.
pub(crate) fn run(args: MacrosArgs) -> Result<()> {
    let cfg = load_config(&args.repo, args.config.as_deref())?;
    let pb = progress_bar(args.quiet, "parses");
    pb.set_message("parsing");
    let report = repository_report(&args.repo, &cfg, &pb)
        .with_context(|| format!("measuring the macro rules of {}", args.repo.display()))?;
    pb.finish_and_clear();
    if args.json {
        out!("{}", json_text(&report)?);
        return Ok(());
    }
    let q = report.quality;
    out!(
        "{} C++ files: {}/{} function bodies in ERROR nodes ({:.2}%), {} ERROR nodes, with every rule",
        report.files,
        q.functions_in_error,
        q.functions,
        share(q.functions_in_error, q.functions),
        q.errors
    );
    out!(
        "{:<36} {:<22} {:<22} {:>6} {:>7} {:>8} {:>8}",
        "rule",
        "origin",
        "rewrite",
        "files",
        "uses",
        "bodies",
        "errors"
    );
    let shown = |e: &&MacroEffect| e.bodies_rescued != 0 || e.errors_removed != 0;
    for e in report.rules.iter().filter(shown).take(args.top) {
        let origin = serde_json::to_value(e.origin)?;
        out!(
            "{:<36} {:<22} {:<22} {:>6} {:>7} {:>8} {:>8}",
            e.name,
            origin.as_str().unwrap_or(""),
            e.rule,
            e.files,
            e.uses,
            e.bodies_rescued,
            e.errors_removed
        );
    }
    let idle = report.rules.iter().filter(|e| !shown(e)).count();
    out!(
        "bodies: function bodies kept out of ERROR nodes by the rule, given all the others; errors: ERROR nodes it removes. {idle} of {} rules change nothing on their own.",
        report.rules.len()
    );
    Ok(())
}
