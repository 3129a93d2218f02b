//! `codegloss index`: a repository walked, parsed, glossed, embedded and
//! written as an index, with the run's summary (counts, parse quality,
//! embedding and gloss statistics); the site too when `--site` asks.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use codegloss_core::{EdgeKind, EntityKind, IndexData};
use codegloss_indexer::{embed, embed::vectorize, explain, ingest::build, store};

use super::output::{note, out};
use super::{load_config, progress_bar};

/// The options of `codegloss index`.
#[derive(Args)]
pub(crate) struct IndexArgs {
    /// Repository root to index.
    repo: PathBuf,
    /// Output directory for the index.
    #[arg(long)]
    out: PathBuf,
    /// Configuration file (default: `<repo>/codegloss.toml` when it exists).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Do not show the progress bar.
    #[arg(long)]
    quiet: bool,
    /// Print at most this many warnings (all are stored in the index).
    #[arg(long, default_value_t = 40)]
    max_warnings: usize,
    /// Skip the embedding stage: an index without vectors (keyword and
    /// structure retrieval only). Same as `[embedding] enabled = false`.
    #[arg(long)]
    no_embed: bool,
    /// Keep structural glosses even when `[explain]` names a model
    /// backend. Same as `[explain] backend = "structural"`.
    #[arg(long)]
    no_explain: bool,
    /// Also write the static question-answering site (widget, wasm
    /// client and the index in its web layout) into this directory.
    #[arg(long)]
    site: Option<PathBuf>,
    /// Folder of the built widget assets (default: `$CODEGLOSS_SITE_ASSETS`,
    /// else `site-assets` next to the executable; `cargo xtask site-assets` builds it).
    #[arg(long)]
    assets: Option<PathBuf>,
}

/// Index the repository, then write the site when `--site` names a folder.
pub(crate) fn run(args: IndexArgs) -> Result<()> {
    let IndexArgs {
        repo,
        out,
        config,
        quiet,
        max_warnings,
        no_embed,
        no_explain,
        site,
        assets,
    } = args;
    // Find the assets first: a missing build fails before hours of indexing.
    let assets = site
        .as_ref()
        .map(|_| codegloss_indexer::site::find_assets(assets.as_deref()))
        .transpose()?;
    run_index(
        &repo,
        &out,
        config.as_deref(),
        quiet,
        max_warnings,
        no_embed,
        no_explain,
    )?;
    match (site, assets) {
        (Some(dir), Some(assets)) => {
            let cfg = load_config(&repo, config.as_deref())?;
            super::site::run_site(&out, &dir, &assets, &cfg)
        }
        _ => Ok(()),
    }
}

fn run_index(
    repo: &Path,
    out: &Path,
    config: Option<&Path>,
    quiet: bool,
    max_warnings: usize,
    no_embed: bool,
    no_explain: bool,
) -> Result<()> {
    let started = Instant::now();
    // One writer per index folder, for the whole run (its gloss cache too).
    let _lock = store::lock_index_dir(out)?;
    let mut cfg = load_config(repo, config)?;
    if no_embed {
        cfg.embedding.enabled = false;
    }
    if no_explain {
        cfg.explain.backend = explain::BackendKind::Structural;
    }
    let gloss_backend = explain::backend_for(&cfg.explain)?;
    // Load the model first: a missing model should fail before minutes of work.
    let mut embedder = if cfg.embedding.enabled {
        Some(embed::Embedder::new(&cfg.embedding).context("loading the embedding model")?)
    } else {
        None
    };
    let pb = progress_bar(quiet, "files");
    let mut output = build::build_index(repo, &cfg, &pb)
        .with_context(|| format!("indexing {}", repo.display()))?;
    let explained = match gloss_backend.as_deref() {
        Some(backend) => {
            pb.finish_and_clear();
            let gpb = progress_bar(quiet, "glosses");
            let cache = cfg.explain.cache_path(out);
            let report =
                explain::explain(&mut output.data, repo, &cfg.explain, backend, &cache, &gpb)
                    .context("writing model glosses")?;
            gpb.finish_and_clear();
            Some(report)
        }
        None => None,
    };
    let vectors = match embedder.as_mut() {
        Some(embedder) => {
            let previous = store::previous_vectors(out);
            pb.finish_and_clear();
            let epb = progress_bar(quiet, "chunks");
            let v = vectorize::build_vectors(
                &output.data,
                embedder,
                &cfg.embedding,
                previous.as_ref(),
                &epb,
            )
            .context("embedding chunks")?;
            epb.finish_and_clear();
            Some(v)
        }
        None => None,
    };
    pb.set_message("writing");
    let manifest = store::write_index_with_glosses(
        out,
        &output.data,
        vectors.as_ref().map(|v| (&v.index, &v.info)),
        explained.as_ref().map(|r| &r.info),
        &cfg.hash(),
        Some(&cfg.retrieval),
    )
    .with_context(|| format!("writing index to {}", out.display()))?;
    pb.finish_and_clear();
    for w in output.warnings.iter().take(max_warnings) {
        note!("warning: {w}");
    }
    if output.warnings.len() > max_warnings {
        note!(
            "warning: ... and {} more warnings (all are stored per file in the index; `codegloss inspect --file` shows them)",
            output.warnings.len() - max_warnings
        );
    }
    print_summary(
        &output.data,
        &manifest,
        output.warnings.len(),
        started.elapsed().as_secs_f64(),
        out,
    );
    match (&vectors, &manifest.embedding) {
        (Some(v), Some(info)) => {
            let st = &v.stats;
            out!(
                "embeddings: {} computed, {} reused ({} {}, dimension {}, {}); {:.1} s embedding ({:.1} chunks/s), {:.1} s prompts, {:.1} s HNSW; HNSW recall@10 {:.4} on {} queries",
                st.computed,
                st.reused,
                info.spec.model_id,
                match embedder.as_ref().map(embed::Embedder::backend) {
                    Some(embed::Backend::Cuda) => "CUDA",
                    _ => "CPU",
                },
                info.spec.dimension,
                info.quantization.as_str(),
                st.embed_seconds,
                if st.embed_seconds > 0.0 { st.computed as f64 / st.embed_seconds } else { 0.0 },
                st.prompt_seconds,
                st.hnsw_seconds,
                info.hnsw_recall_at_10,
                info.hnsw_recall_queries
            );
        }
        _ => out!("embeddings: none (embedding disabled)"),
    }
    match &explained {
        Some(r) => print_explain_report(r),
        None => out!("glosses: structural"),
    }
    Ok(())
}

fn print_explain_report(r: &explain::ExplainReport) {
    let model: u64 = r
        .info
        .by_source
        .values()
        .filter_map(|m| m.get("model"))
        .sum();
    out!(
        "glosses: {model} from the model over levels {} ({} generated, {} from the cache), {} skipped_low_information, {} fell back to structural; {} requests",
        r.info.levels.join(", "),
        r.generated.len(),
        r.cache_hits,
        r.skipped,
        r.info.fallbacks.len(),
        r.requests
    );
    if !r.generated.is_empty() {
        out!(
            "glosses: {:.1} s generating, {:.2} glosses/min, {} completion tokens ({:.1} tok/s)",
            r.generation_seconds,
            r.glosses_per_minute(),
            r.completion_tokens,
            if r.generation_seconds > 0.0 {
                r.completion_tokens as f64 / r.generation_seconds
            } else {
                0.0
            }
        );
    }
    if r.total_model_glosses > 0 {
        out!(
            "glosses: the {} model glosses in this index took {:.1} s to generate in total ({:.2} glosses/min), this run and earlier ones",
            r.total_model_glosses,
            r.total_generation_seconds,
            if r.total_generation_seconds > 0.0 {
                r.total_model_glosses as f64 * 60.0 / r.total_generation_seconds
            } else {
                0.0
            }
        );
    }
    for (level, counts) in &r.info.by_source {
        let parts: Vec<String> = counts.iter().map(|(s, n)| format!("{s} {n}")).collect();
        out!("  {level:<12} {}", parts.join(", "));
    }
    for f in r.info.fallbacks.iter().take(10) {
        note!(
            "warning: gloss of {} ({}) fell back to structural: {}",
            f.name,
            f.level,
            f.cause
        );
    }
    if r.info.fallbacks.len() > 10 {
        note!(
            "warning: ... and {} more fallbacks (all are listed in manifest.json under glosses.fallbacks)",
            r.info.fallbacks.len() - 10
        );
    }
    out!(
        "gloss cache: {} ({} bytes)",
        r.cache_path.display(),
        r.cache_bytes
    );
}

fn print_summary(
    data: &IndexData,
    manifest: &codegloss_core::Manifest,
    warnings: usize,
    secs: f64,
    out: &Path,
) {
    let c = &manifest.counts;
    let stats = build::total_parse_stats(data);
    let share = |a: u32, b: u32| {
        if b == 0 {
            0.0
        } else {
            100.0 * f64::from(a) / f64::from(b)
        }
    };
    out!(
        "indexed {} files into {} in {:.2} s",
        c.files,
        out.display(),
        secs
    );
    out!("entities: {}", c.entities);
    for k in EntityKind::ALL {
        if let Some(n) = c.entities_by_kind.get(k.as_str()) {
            out!("  {:<12} {n}", k.as_str());
        }
    }
    let templates = data
        .entities
        .iter()
        .filter(|e| e.template_params.is_some())
        .count();
    out!("  (templates among them: {templates})");
    out!("edges: {}", c.edges);
    for k in EdgeKind::ALL {
        if let Some(n) = c.edges_by_kind.get(k.as_str()) {
            out!("  {:<12} {n}", k.as_str());
        }
    }
    out!("chunks: {}", c.chunks);
    out!(
        "function bodies in tree-sitter ERROR nodes: {}/{} ({:.2}%) after macro neutralisation, {}/{} ({:.2}%) before; {} macro uses neutralised",
        stats.functions_in_error,
        stats.functions,
        share(stats.functions_in_error, stats.functions),
        stats.functions_in_error_raw,
        stats.functions_raw,
        share(stats.functions_in_error_raw, stats.functions_raw),
        stats.neutralised_macros
    );
    out!("warnings: {warnings}");
}
