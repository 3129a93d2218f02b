//! The commands of the `codegloss` binary, one module per command or per
//! closely related group, so that `main.rs` stays the command-line surface
//! and its dispatch. Each module owns its options (a clap `Args` struct)
//! and the `run` function that `main.rs` calls; this file holds what
//! several commands share: finding the configuration, the query embedder,
//! progress bars.

pub(crate) mod ask;
pub(crate) mod eval;
pub(crate) mod explain_plan;
pub(crate) mod index;
pub(crate) mod inspect;
pub(crate) mod macros;
pub(crate) mod output;
pub(crate) mod partitions;
pub(crate) mod query;
pub(crate) mod search;
pub(crate) mod site;

use std::path::Path;

use anyhow::{Context, Result};
use codegloss_indexer::{embed, Config};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use output::note;

/// The configuration of `repo`: `config` when given, else
/// `<repo>/codegloss.toml` when it exists, else the defaults.
pub(crate) fn load_config(repo: &Path, config: Option<&Path>) -> Result<Config> {
    let path = match config {
        Some(p) => Some(p.to_path_buf()),
        None => Some(repo.join("codegloss.toml")).filter(|p| p.is_file()),
    };
    match path {
        Some(p) => {
            note!("using configuration {}", p.display());
            Ok(Config::load(&p)?)
        }
        None => Ok(Config::default()),
    }
}

/// `config` when given, else the defaults (no repository to look in).
pub(crate) fn config_or_default(config: Option<&Path>) -> Result<Config> {
    Ok(match config {
        Some(p) => Config::load(p)?,
        None => Config::default(),
    })
}

/// The query-side embedder for an index: the configured model files with
/// the index's preprocessing, refused when it is not the index's model.
pub(crate) fn query_embedder(
    spec: &codegloss_core::embed::EmbeddingSpec,
    cfg: &Config,
) -> Result<embed::Embedder> {
    let mut embedding = cfg.embedding.clone();
    embedding.model_id = spec.model_id.clone();
    embedding.pooling = spec.pooling;
    embedding.normalize = spec.normalize;
    embedding.max_length = spec.max_length as usize;
    embedding.query_prefix = spec.query_prefix.clone();
    embedding.document_prefix = spec.document_prefix.clone();
    let embedder = embed::Embedder::new(&embedding).context("loading the query model")?;
    spec.check_query_model(embedder.spec())?;
    Ok(embedder)
}

/// A progress bar on stderr counting `unit`, hidden when `quiet`.
pub(crate) fn progress_bar(quiet: bool, unit: &str) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template(&format!(
            "{{spinner}} {{msg:16}} [{{bar:30}}] {{pos}}/{{len}} {unit} ({{per_sec}}, eta {{eta}})"
        ))
        .expect("valid template")
        .progress_chars("=> "),
    );
    pb
}
