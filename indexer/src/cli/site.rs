//! `codegloss site` and `codegloss serve`: the static site written from an
//! index (also the last step of `index --site`), and that site served on
//! loopback for a browser.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use codegloss_indexer::{embed, Config};

use super::config_or_default;
use super::output::out;

/// The options of `codegloss site`.
#[derive(Args)]
pub(crate) struct SiteArgs {
    /// Index directory written by `codegloss index`.
    index: PathBuf,
    /// Site directory to write (`index.html`, `codegloss/`, `index/`).
    #[arg(long)]
    out: PathBuf,
    /// Folder of the built widget assets (see `index --assets`).
    #[arg(long)]
    assets: Option<PathBuf>,
    /// Configuration file naming the embedding model files (to ship the
    /// query-embedding model); the defaults otherwise.
    #[arg(long)]
    config: Option<PathBuf>,
}

/// The options of `codegloss serve`.
#[derive(Args)]
pub(crate) struct ServeArgs {
    /// Site directory written by `codegloss site` or `index --site`.
    dir: PathBuf,
    /// Port (0 picks a free one; the URL is printed on stdout).
    #[arg(long, default_value_t = 8700)]
    port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: std::net::IpAddr,
}

/// Write the site of an existing index.
pub(crate) fn run(args: SiteArgs) -> Result<()> {
    let SiteArgs {
        index,
        out,
        assets,
        config,
    } = args;
    let assets = codegloss_indexer::site::find_assets(assets.as_deref())?;
    run_site(
        &index,
        &out,
        &assets,
        &config_or_default(config.as_deref())?,
    )
}

/// Serve a site folder until the process is stopped.
pub(crate) fn serve(args: ServeArgs) -> Result<()> {
    let ServeArgs { dir, port, host } = args;
    codegloss_indexer::site::serve::serve(&dir, host, port)?;
    Ok(())
}

/// Write the site of the index in `index` into `site` and say how to serve it.
pub(crate) fn run_site(index: &Path, site: &Path, assets: &Path, cfg: &Config) -> Result<()> {
    let model = embed::ModelFiles::resolve(&cfg.embedding);
    let report = codegloss_indexer::site::write_site(
        index,
        site,
        assets,
        model.as_ref(),
        cfg.retrieval_given.then_some(&cfg.retrieval),
        &cfg.site.answer_origins,
    )
    .with_context(|| format!("writing the site {}", site.display()))?;
    out!("{}", codegloss_indexer::site::describe(&report));
    out!(
        "site written to {}; serve it with `codegloss serve {}`",
        site.display(),
        site.display()
    );
    Ok(())
}
