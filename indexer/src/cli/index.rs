//! `codegloss index`: a repository walked, parsed, glossed, embedded and
//! written as an index, with the run's summary (counts, parse quality,
//! embedding and gloss statistics); the site too when `--site` asks.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use codegloss_core::report::{EmbeddingSummary, GlossSummary, IndexSummary};
use codegloss_core::{EdgeKind, EntityKind};
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
    /// Also write the run's summary (counts, parse quality, embedding and
    /// gloss statistics) to this file as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// Index the repository, then write the site when `--site` names a folder.
pub(crate) fn run(args: IndexArgs) -> Result<()> {
    // Find the assets first: a missing build fails before hours of indexing.
    let assets = args
        .site
        .as_ref()
        .map(|_| codegloss_indexer::site::find_assets(args.assets.as_deref()))
        .transpose()?;
    run_index(&args)?;
    match (&args.site, assets) {
        (Some(dir), Some(assets)) => {
            let cfg = load_config(&args.repo, args.config.as_deref())?;
            super::site::run_site(&args.out, dir, &assets, &cfg)
        }
        _ => Ok(()),
    }
}

fn run_index(args: &IndexArgs) -> Result<()> {
    let (repo, out, config) = (
        args.repo.as_path(),
        args.out.as_path(),
        args.config.as_deref(),
    );
    let (quiet, max_warnings, json) = (args.quiet, args.max_warnings, args.json.as_deref());
    let started = Instant::now();
    // One writer per index folder, for the whole run (its gloss cache too).
    let _lock = store::lock_index_dir(out)?;
    let mut cfg = load_config(repo, config)?;
    if args.no_embed {
        cfg.embedding.enabled = false;
    }
    if args.no_explain {
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
    let summary = IndexSummary {
        out: out.display().to_string(),
        seconds: started.elapsed().as_secs_f64(),
        counts: manifest.counts.clone(),
        templates: output
            .data
            .entities
            .iter()
            .filter(|e| e.template_params.is_some())
            .count(),
        parse: build::total_parse_stats(&output.data),
        warnings: output.warnings.len(),
        embeddings: match (&vectors, &manifest.embedding) {
            (Some(v), Some(info)) => Some(EmbeddingSummary {
                computed: v.stats.computed,
                reused: v.stats.reused,
                model_id: info.spec.model_id.clone(),
                backend: match embedder.as_ref().map(embed::Embedder::backend) {
                    Some(embed::Backend::Cuda) => "CUDA",
                    _ => "CPU",
                }
                .to_string(),
                dimension: info.spec.dimension,
                quantization: info.quantization.as_str().to_string(),
                embed_seconds: v.stats.embed_seconds,
                prompt_seconds: v.stats.prompt_seconds,
                hnsw_seconds: v.stats.hnsw_seconds,
                hnsw_recall_at_10: info.hnsw_recall_at_10,
                hnsw_recall_queries: info.hnsw_recall_queries,
            }),
            _ => None,
        },
        glosses: explained.as_ref().map(gloss_summary),
        peak_rss_bytes: peak_rss_bytes(),
    };
    print_summary(&summary);
    if let Some(r) = &explained {
        print_fallbacks(r);
    }
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&summary)? + "\n";
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        note!("summary written to {}", path.display());
    }
    Ok(())
}

/// This process's peak resident memory (`VmHWM` of /proc/self/status).
fn peak_rss_bytes() -> Option<u64> {
    codegloss_core::report::peak_rss_from_status(
        &std::fs::read_to_string("/proc/self/status").ok()?,
    )
}

/// The explanation stage's part of the summary.
fn gloss_summary(r: &explain::ExplainReport) -> GlossSummary {
    GlossSummary {
        levels: r.info.levels.clone(),
        model: r
            .info
            .by_source
            .values()
            .filter_map(|m| m.get("model"))
            .sum(),
        generated: r.generated.len(),
        cache_hits: r.cache_hits,
        skipped: r.skipped,
        fallbacks: r.info.fallbacks.len(),
        requests: r.requests,
        generation_seconds: r.generation_seconds,
        completion_tokens: r.completion_tokens,
        total_model_glosses: r.total_model_glosses,
        total_generation_seconds: r.total_generation_seconds,
        by_source: r.info.by_source.clone(),
        cache_path: r.cache_path.display().to_string(),
        cache_bytes: r.cache_bytes,
    }
}

/// The glosses that fell back to structural ones, as warnings.
fn print_fallbacks(r: &explain::ExplainReport) {
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
}

fn print_glosses(g: &GlossSummary) {
    out!(
        "glosses: {} from the model over levels {} ({} generated, {} from the cache), {} skipped_low_information, {} fell back to structural; {} requests",
        g.model,
        g.levels.join(", "),
        g.generated,
        g.cache_hits,
        g.skipped,
        g.fallbacks,
        g.requests
    );
    if g.generated > 0 {
        out!(
            "glosses: {:.1} s generating, {:.2} glosses/min, {} completion tokens ({:.1} tok/s)",
            g.generation_seconds,
            g.glosses_per_minute(),
            g.completion_tokens,
            g.tokens_per_second()
        );
    }
    if g.total_model_glosses > 0 {
        out!(
            "glosses: the {} model glosses in this index took {:.1} s to generate in total ({:.2} glosses/min), this run and earlier ones",
            g.total_model_glosses,
            g.total_generation_seconds,
            g.total_glosses_per_minute()
        );
    }
    for (level, counts) in &g.by_source {
        let parts: Vec<String> = counts.iter().map(|(s, n)| format!("{s} {n}")).collect();
        out!("  {level:<12} {}", parts.join(", "));
    }
    out!("gloss cache: {} ({} bytes)", g.cache_path, g.cache_bytes);
}

fn print_summary(s: &IndexSummary) {
    let c = &s.counts;
    let stats = &s.parse;
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
        s.out,
        s.seconds
    );
    out!("entities: {}", c.entities);
    for k in EntityKind::ALL {
        if let Some(n) = c.entities_by_kind.get(k.as_str()) {
            out!("  {:<12} {n}", k.as_str());
        }
    }
    out!("  (templates among them: {})", s.templates);
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
    out!("warnings: {}", s.warnings);
    match &s.embeddings {
        Some(e) => out!(
            "embeddings: {} computed, {} reused ({} {}, dimension {}, {}); {:.1} s embedding ({:.1} chunks/s), {:.1} s prompts, {:.1} s HNSW; HNSW recall@10 {:.4} on {} queries",
            e.computed,
            e.reused,
            e.model_id,
            e.backend,
            e.dimension,
            e.quantization,
            e.embed_seconds,
            e.chunks_per_second(),
            e.prompt_seconds,
            e.hnsw_seconds,
            e.hnsw_recall_at_10,
            e.hnsw_recall_queries
        ),
        None => out!("embeddings: none (embedding disabled)"),
    }
    match &s.glosses {
        Some(g) => print_glosses(g),
        None => out!("glosses: structural"),
    }
}
