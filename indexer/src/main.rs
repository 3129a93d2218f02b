//! `codegloss`: the command-line front end of the indexer.
//!
//! Results go to stdout, logs, warnings and progress to stderr.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use codegloss_core::{retrieve, EdgeKind, Entity, EntityKind, IndexData};
use codegloss_indexer::{build, embed, explain, store, vectorize, Config};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Print a line of results to stdout. A closed stdout (`codegloss ... | head`)
/// ends the program quietly instead of panicking.
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        if writeln!(std::io::stdout(), $($t)*).is_err() {
            std::process::exit(0);
        }
    }};
}

/// Turn a scientific C++ codebase into a static, self-contained
/// question-answering index.
#[derive(Parser)]
#[command(name = "codegloss", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Index a repository: parse C++ and docs, build the structure graph and glosses, write the index.
    Index {
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
    },
    /// Write the static site for an existing index: the widget, the wasm
    /// client and the index in its web layout (sharded, content-addressed).
    Site {
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
    },
    /// Serve a site directory on loopback (ES modules, fetch and wasm do not work from file://).
    Serve {
        /// Site directory written by `codegloss site` or `index --site`.
        dir: PathBuf,
        /// Port (0 picks a free one; the URL is printed on stdout).
        #[arg(long, default_value_t = 8700)]
        port: u16,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1")]
        host: std::net::IpAddr,
    },
    /// Dry run of the explanation stage: the prompts `index` would send to
    /// the `[explain]` model, their sizes, and how many the cache already holds.
    ExplainPlan {
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
    },
    /// Retrieve the context for a question: ranked chunks with roles, file:line ranges, glosses and diagnostics.
    Query {
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
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Answer a question from a locally hosted model, grounded in the retrieved context, with cited sources.
    Ask {
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
    },
    /// Evaluate retrieval on a question file (bench format): hit@k, all_gold@k, context recall, MRR, per category.
    Eval {
        /// Index directory written by `codegloss index`.
        index: PathBuf,
        /// JSON-lines question file.
        #[arg(long)]
        questions: PathBuf,
        /// Field of each question record to use as the question text.
        #[arg(long, default_value = "question")]
        field: String,
        /// Write the results JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Also compute a baseline in the same run (`bm25-files`).
        #[arg(long)]
        baseline: Option<String>,
        /// Configuration file (`[retrieval]` settings, embedding model paths).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Skip dense search (keywords and structure only).
        #[arg(long)]
        no_vectors: bool,
        /// Only questions of this split (`dev` or `test`).
        #[arg(long)]
        split: Option<String>,
        /// Also answer every question with the `[answer]` model; resumable
        /// (answers already in the `--json` file are kept).
        #[arg(long, requires = "json")]
        answer: bool,
        /// Context for `--answer`: `pipeline` (default) or `bm25-files` (the
        /// top 3 files of the BM25 file baseline, cut to the same budget).
        #[arg(long, default_value = "pipeline")]
        answer_context: String,
        /// Only score the answers in the `--json` file against the nuggets of `--questions`.
        #[arg(long, requires = "json", conflicts_with = "answer")]
        score: bool,
        /// Write each question's answer context here, as the answer model
        /// would get it: `<id>.pipeline.txt` and `<id>.bm25-files.txt`, with
        /// the nuggets that the context lacks at the top.
        #[arg(long)]
        contexts: Option<PathBuf>,
    },
    /// Dense vector search only: embed a question and list the nearest chunks.
    Search {
        /// Index directory written by `codegloss index`.
        index: PathBuf,
        /// The question.
        question: String,
        /// Number of results.
        #[arg(long, default_value_t = 10)]
        k: usize,
        /// `exact`, `hnsw`, or `auto` (exact below `--exact-below` vectors).
        #[arg(long, default_value = "auto")]
        mode: String,
        /// Corpus size from which `auto` uses HNSW.
        #[arg(long, default_value_t = 20_000)]
        exact_below: usize,
        /// Configuration file for the embedding model paths (default: none).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show what an index holds about a symbol or a file.
    Inspect {
        /// Index directory written by `codegloss index`.
        index: PathBuf,
        /// Symbol name or (partly) qualified name, for example `BareField::fillHalo`.
        #[arg(long, conflicts_with = "file")]
        symbol: Option<String>,
        /// Repository-relative file path (or a unique suffix of one).
        #[arg(long)]
        file: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .target(env_logger::Target::Stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Index {
            repo,
            out,
            config,
            quiet,
            max_warnings,
            no_embed,
            no_explain,
            site,
            assets,
        } => (|| {
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
                    run_site(&out, &dir, &assets, &cfg)
                }
                _ => Ok(()),
            }
        })(),
        Command::Site {
            index,
            out,
            assets,
            config,
        } => (|| {
            let assets = codegloss_indexer::site::find_assets(assets.as_deref())?;
            run_site(
                &index,
                &out,
                &assets,
                &config_or_default(config.as_deref())?,
            )
        })(),
        Command::Serve { dir, port, host } => (|| {
            codegloss_indexer::serve::serve(&dir, host, port)?;
            Ok(())
        })(),
        Command::ExplainPlan {
            repo,
            config,
            out,
            prompts,
        } => run_explain_plan(&repo, config.as_deref(), out.as_deref(), prompts.as_deref()),
        Command::Query {
            index,
            question,
            k,
            config,
            no_vectors,
            json,
        } => run_query(&index, &question, k, config.as_deref(), no_vectors, json),
        Command::Ask {
            index,
            question,
            config,
            base_url,
            model,
            api_key,
            temperature,
            max_tokens,
            timeout,
            no_stream,
            no_vectors,
            json,
        } => (|| {
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
            if let Some(v) = timeout {
                a.timeout_seconds = v;
            }
            if no_stream {
                a.stream = false;
            }
            run_ask(&index, &question, &cfg, no_vectors, json)
        })(),
        Command::Eval {
            index,
            questions,
            field,
            json,
            baseline,
            config,
            no_vectors,
            split,
            answer,
            answer_context,
            score,
            contexts,
        } => {
            if score {
                run_score(&questions, json.as_deref().expect("clap requires --json"))
            } else {
                run_eval(
                    &index,
                    EvalRun {
                        questions: &questions,
                        field: &field,
                        json: json.as_deref(),
                        baseline: baseline.as_deref(),
                        config: config.as_deref(),
                        no_vectors,
                        split: split.as_deref(),
                        answer,
                        answer_context: &answer_context,
                        contexts: contexts.as_deref(),
                    },
                )
            }
        }
        Command::Search {
            index,
            question,
            k,
            mode,
            exact_below,
            config,
            json,
        } => run_search(
            &index,
            &question,
            k,
            &mode,
            exact_below,
            config.as_deref(),
            json,
        ),
        Command::Inspect {
            index,
            symbol,
            file,
            json,
        } => run_inspect(&index, symbol.as_deref(), file.as_deref(), json),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn load_config(repo: &Path, config: Option<&Path>) -> Result<Config> {
    let path = match config {
        Some(p) => Some(p.to_path_buf()),
        None => Some(repo.join("codegloss.toml")).filter(|p| p.is_file()),
    };
    match path {
        Some(p) => {
            eprintln!("using configuration {}", p.display());
            Ok(Config::load(&p)?)
        }
        None => Ok(Config::default()),
    }
}

fn run_site(index: &Path, site: &Path, assets: &Path, cfg: &Config) -> Result<()> {
    let model = embed::ModelFiles::resolve(&cfg.embedding).map_err(|e| e.to_string());
    let report = codegloss_indexer::site::write_site(
        index,
        site,
        assets,
        model.as_ref().map_err(Clone::clone),
        cfg.retrieval_given.then_some(&cfg.retrieval),
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
        eprintln!("warning: {w}");
    }
    if output.warnings.len() > max_warnings {
        eprintln!(
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
        eprintln!("prompts written to {}", path.display());
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
        eprintln!(
            "warning: gloss of {} ({}) fell back to structural: {}",
            f.name, f.level, f.cause
        );
    }
    if r.info.fallbacks.len() > 10 {
        eprintln!(
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

fn progress_bar(quiet: bool, unit: &str) -> ProgressBar {
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

fn run_search(
    dir: &Path,
    question: &str,
    k: usize,
    mode: &str,
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
        "exact" => vectors.search_exact(&q, k)?,
        "hnsw" => vectors.search_hnsw(&q, k)?,
        "auto" => vectors.search(&q, k, exact_below)?,
        other => anyhow::bail!("unknown --mode {other:?} (exact, hnsw or auto)"),
    };
    if json {
        let items: Vec<serde_json::Value> = hits
            .iter()
            .map(|h| {
                let c = &data.chunks[h.chunk as usize];
                serde_json::json!({"chunk": h.chunk, "distance": h.distance, "path": c.path, "start_line": c.start_line, "end_line": c.end_line, "symbol": c.symbol_name, "chunk_type": c.chunk_type})
            })
            .collect();
        out!("{}", serde_json::to_string_pretty(&items)?);
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

fn run_inspect(dir: &Path, symbol: Option<&str>, file: Option<&str>, json: bool) -> Result<()> {
    let (manifest, data) =
        store::read_index(dir).with_context(|| format!("reading index {}", dir.display()))?;
    let entities: Vec<&Entity> = match (symbol, file) {
        (Some(s), _) => {
            let hits = data.find_symbol(s);
            anyhow::ensure!(
                !hits.is_empty(),
                "no symbol matches {s:?} in {}",
                dir.display()
            );
            hits
        }
        (None, Some(f)) => {
            let sf = data.find_file(f).with_context(|| {
                format!("no indexed file matches {f:?} (or the suffix is ambiguous)")
            })?;
            if !json {
                out!(
                    "file {} ({} {}, {} scope, module {}, {} lines, sha256 {})",
                    sf.path,
                    sf.language.as_str(),
                    sf.source_type.as_str(),
                    sf.scope.as_str(),
                    sf.module,
                    sf.lines,
                    sf.sha256
                );
                for inc in &sf.includes {
                    let to = inc
                        .resolved
                        .map(|r| data.files[r as usize].path.clone())
                        .unwrap_or_else(|| "(outside the repository)".into());
                    out!("  include {} (line {}) -> {to}", inc.target, inc.line);
                }
                if let Some(p) = &sf.parse {
                    out!("  parse: {}/{} function bodies in ERROR nodes ({} before macro neutralisation)", p.functions_in_error, p.functions, p.functions_in_error_raw);
                }
                for w in &sf.warnings {
                    out!("  warning: {w}");
                }
                out!();
            }
            data.entities
                .iter()
                .filter(|e| e.file == Some(sf.id) && e.kind != EntityKind::CallChain)
                .collect()
        }
        (None, None) => {
            out!("{}", manifest.to_json());
            return Ok(());
        }
    };
    if json {
        let items: Vec<serde_json::Value> = entities
            .iter()
            .map(|e| {
                let edges: Vec<serde_json::Value> = data
                    .edges_from(e.id)
                    .map(|x| serde_json::json!({"dir": "out", "kind": x.kind, "entity": data.entities[x.to as usize].qualified_name}))
                    .chain(data.edges_to(e.id).map(|x| serde_json::json!({"dir": "in", "kind": x.kind, "entity": data.entities[x.from as usize].qualified_name})))
                    .collect();
                serde_json::json!({"entity": e, "path": e.file.map(|f| data.files[f as usize].path.clone()), "edges": edges})
            })
            .collect();
        out!("{}", serde_json::to_string_pretty(&items)?);
        return Ok(());
    }
    for e in entities {
        print_entity(&data, e);
    }
    Ok(())
}

fn print_entity(data: &IndexData, e: &Entity) {
    let loc = match (e.file, e.span) {
        (Some(f), Some(s)) => format!(
            "{}:{}-{}",
            data.files[f as usize].path, s.start_line, s.end_line
        ),
        (Some(f), None) => data.files[f as usize].path.clone(),
        _ => String::new(),
    };
    out!("{} {}  [{}]", e.kind.as_str(), e.qualified_name, loc);
    if let Some(p) = e.parent {
        out!(
            "  parent: {} {}",
            data.entities[p as usize].kind.as_str(),
            data.entities[p as usize].qualified_name
        );
    }
    if !e.signature.is_empty() {
        out!("  signature: {}", e.signature);
    }
    if let Some(t) = &e.template_params {
        out!("  template: {t}");
    }
    if let Some(r) = &e.return_type {
        out!("  returns: {r}");
    }
    for p in &e.params {
        out!(
            "  param: {} {}{}",
            p.ty,
            p.name,
            p.default
                .as_ref()
                .map(|d| format!(" = {d}"))
                .unwrap_or_default()
        );
    }
    for b in &e.bases {
        out!("  base: {b}");
    }
    if let Some(d) = &e.doc_comment {
        out!("  doc: {}", d.replace('\n', "\n       "));
    }
    out!("  gloss ({}): {}", e.gloss.source.as_str(), e.gloss.text);
    if !e.concepts.is_empty() {
        out!("  concepts: {}", e.concepts);
    }
    for x in data.edges_from(e.id) {
        out!(
            "  -> {} {} {}",
            x.kind.as_str(),
            data.entities[x.to as usize].kind.as_str(),
            data.entities[x.to as usize].qualified_name
        );
    }
    for x in data.edges_to(e.id) {
        out!(
            "  <- {} {} {}",
            x.kind.as_str(),
            data.entities[x.from as usize].kind.as_str(),
            data.entities[x.from as usize].qualified_name
        );
    }
    let chunks: Vec<_> = data.chunks_of(e.id).collect();
    if chunks.len() > 1 {
        out!("  chunks: {} parts", chunks.len());
    }
    out!();
}

fn config_or_default(config: Option<&Path>) -> Result<Config> {
    Ok(match config {
        Some(p) => Config::load(p)?,
        None => Config::default(),
    })
}

/// The query-side embedder for an index: the configured model files with
/// the index's preprocessing, refused when it is not the index's model.
fn query_embedder(
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

fn run_query(
    dir: &Path,
    question: &str,
    k: Option<usize>,
    config: Option<&Path>,
    no_vectors: bool,
    json: bool,
) -> Result<()> {
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
            .map(|rc| rc.to_json(&corpus, true))
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
        out!("{}", serde_json::to_string_pretty(&out)?);
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
                "    score {:.3} = semantic {:.3} + lexical {:.3} + target {:.3}{}; sources {:?}",
                rc.score.combined,
                rc.score.semantic,
                rc.score.lexical,
                rc.score.target,
                rc.score
                    .distance
                    .map(|d| format!(" (distance {d:.3})"))
                    .unwrap_or_default(),
                rc.sources
            ),
        }
        let gloss: String = e.gloss.text.chars().take(240).collect();
        out!("    gloss: {gloss}");
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)] // reason: one parameter per CLI flag
/// Write one answer context to `dir` for inspection, headed by the
/// question and the nuggets it lacks.
fn write_context_dump(
    dir: &Path,
    q: &codegloss_indexer::eval::Question,
    text: &str,
    bm25_files: bool,
    ctx: &codegloss_core::answer::Context,
) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut head = format!("question: {text}\ncategory: {}\n", q.category);
    for n in &q.nuggets {
        if !codegloss_indexer::eval::nugget_present(&ctx.text, n).map_err(anyhow::Error::msg)? {
            head.push_str(&format!("missing nugget: {}\n", n.fact));
        }
    }
    head.push_str(&format!("tokens: {}\n\n", ctx.tokens));
    let kind = if bm25_files { "bm25-files" } else { "pipeline" };
    let path = dir.join(format!("{}.{kind}.txt", q.id));
    std::fs::write(&path, head + &ctx.text).with_context(|| format!("writing {}", path.display()))
}

/// What one `codegloss eval` run reads and does (its command-line options).
struct EvalRun<'a> {
    questions: &'a Path,
    field: &'a str,
    json: Option<&'a Path>,
    baseline: Option<&'a str>,
    config: Option<&'a Path>,
    no_vectors: bool,
    split: Option<&'a str>,
    answer: bool,
    answer_context: &'a str,
    contexts: Option<&'a Path>,
}

fn run_eval(dir: &Path, run: EvalRun<'_>) -> Result<()> {
    let EvalRun {
        questions,
        field,
        json,
        baseline,
        config,
        no_vectors,
        split,
        answer,
        answer_context,
        contexts,
    } = run;
    use codegloss_core::answer::{build_context, check_citations, RETRIEVAL_ANSWER_V2};
    use codegloss_indexer::{eval, llm};
    let (manifest, corpus) =
        store::load_corpus(dir).with_context(|| format!("reading index {}", dir.display()))?;
    let cfg = config_or_default(config)?;
    let settings = cfg.retrieval_for(&manifest);
    let mut qs = eval::read_questions(questions)?;
    if let Some(sp) = split {
        qs.retain(|q| q.split.as_deref() == Some(sp));
    }
    anyhow::ensure!(!qs.is_empty(), "no questions in {}", questions.display());
    let texts: Vec<String> = qs
        .iter()
        .map(|q| {
            if field == "question" {
                Ok(q.question.clone())
            } else {
                q.extra
                    .get(field)
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
                    .with_context(|| format!("question {} has no string field {field:?}", q.id))
            }
        })
        .collect::<Result<_>>()?;
    let mut embedder = match (&corpus.vectors, no_vectors) {
        (Some(v), false) => Some(query_embedder(&v.spec, &cfg)?),
        _ => None,
    };
    // Answers already written by an interrupted run are kept.
    let mut done: std::collections::BTreeMap<String, serde_json::Value> = Default::default();
    if answer {
        if let Some(prev) = json
            .filter(|p| p.is_file())
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        {
            for q in prev["questions"].as_array().into_iter().flatten() {
                if q["answer"].is_string() {
                    if let Some(id) = q["id"].as_str() {
                        done.insert(id.to_string(), q.clone());
                    }
                }
            }
            if !done.is_empty() {
                eprintln!("resuming: {} answers already in the file", done.len());
            }
        }
    }
    anyhow::ensure!(
        matches!(answer_context, "pipeline" | "bm25-files"),
        "unknown --answer-context {answer_context:?} (pipeline or bm25-files)"
    );
    let count_tokens = llm::token_counter(&cfg.answer)?;
    let files_baseline = retrieve::baseline::FileBaseline::new(&corpus);
    // The context an answer model would get: the pipeline's, or the top 3
    // files of the BM25 file baseline, within the same budget.
    let make_context = |bm25_files: bool, text: &str, r: &retrieve::Retrieval| {
        if bm25_files {
            let top: Vec<&str> = files_baseline.rank(text).into_iter().take(3).collect();
            codegloss_core::answer::file_context(
                &corpus,
                &top,
                cfg.answer.context_tokens,
                &*count_tokens,
            )
        } else {
            build_context(&corpus, r, cfg.answer.context_tokens, &*count_tokens)
        }
    };
    let mut context_nuggets: Vec<(String, Option<f64>)> = Vec::new();
    let mut baseline_context_nuggets: Vec<(String, Option<f64>)> = Vec::new();
    let mut scores = Vec::new();
    let mut per_question: Vec<serde_json::Value> = Vec::new();
    let mut nugget_rows: Vec<(String, Option<f64>)> = Vec::new();
    let mut latencies = Vec::new();
    let pb = progress_bar(false, "questions");
    pb.set_length(qs.len() as u64);
    for (q, text) in qs.iter().zip(&texts) {
        let qv = match embedder.as_mut() {
            Some(e) => Some(e.embed_query(text)?),
            None => None,
        };
        let t = Instant::now();
        let r = retrieve::retrieve(&corpus, text, qv.as_deref(), &settings)?;
        latencies.push(t.elapsed().as_secs_f64() * 1000.0);
        let files = r.files(&corpus);
        let tokens = r.context_tokens(&corpus);
        scores.push(eval::score(&files, &q.gold_files, tokens));
        let mut row = serde_json::json!({
            "id": q.id, "category": q.category, "question": text, "intent": r.route.intent.as_str(),
            "files": files, "gold_files": q.gold_files, "context_tokens": tokens,
            "chunks": r.chunks.iter().map(|c| serde_json::json!([c.chunk, c.role.as_str()])).collect::<Vec<_>>(),
            "latency_ms": latencies.last(),
            "answer": null, "nugget_recall": null,
        });
        if !q.nuggets.is_empty() {
            // How many nuggets the context itself contains: the most an
            // answer model could state from it.
            for (bm25, rows) in [
                (false, &mut context_nuggets),
                (true, &mut baseline_context_nuggets),
            ] {
                let ctx = make_context(bm25, text, &r);
                let nr = eval::nugget_recall(&ctx.text, &q.nuggets).map_err(anyhow::Error::msg)?;
                rows.push((q.category.clone(), nr));
                if let Some(dir) = contexts {
                    write_context_dump(dir, q, text, bm25, &ctx)?;
                }
            }
        }
        if answer {
            // The context is deterministic: a kept answer gets the same one
            // back, so its citations are checked again, not trusted.
            let ctx = make_context(answer_context == "bm25-files", text, &r);
            if let Some(prev) = done.get(&q.id) {
                // Every recorded field comes back (retrieval fields are fresh).
                for (k, v) in prev.as_object().into_iter().flatten() {
                    if row.get(k).is_none_or(serde_json::Value::is_null) {
                        row[k] = v.clone();
                    }
                }
                if let Some(a) = prev["answer"].as_str() {
                    let report = check_citations(a, &ctx);
                    row["citations"] = serde_json::json!(report.citations);
                    row["cited_sentence_share"] = serde_json::json!(report.cited_share);
                    row["support"] = support_json(a, text, &ctx);
                }
            } else {
                let messages = RETRIEVAL_ANSWER_V2.render(text, &ctx);
                let t = Instant::now();
                // Batch answers need no streaming, and plain responses carry
                // token usage (llama-cpp-python sends none in streams).
                let plain = llm::AnswerConfig {
                    stream: false,
                    ..cfg.answer.clone()
                };
                match llm::chat(&plain, &messages, &mut |_| {}) {
                    Ok(a) => {
                        let report = check_citations(&a.text, &ctx);
                        let nr =
                            eval::nugget_recall(&a.text, &q.nuggets).map_err(anyhow::Error::msg)?;
                        row["answer"] = serde_json::json!(a.text);
                        row["citations"] = serde_json::json!(report.citations);
                        row["cited_sentence_share"] = serde_json::json!(report.cited_share);
                        row["support"] = support_json(&a.text, text, &ctx);
                        row["prompt_tokens"] = serde_json::json!(a.prompt_tokens);
                        row["completion_tokens"] = serde_json::json!(a.completion_tokens);
                        row["nugget_recall"] = serde_json::json!(nr);
                    }
                    Err(e) => {
                        row["error"] = serde_json::json!(e.to_string());
                        eprintln!("{}: {e}", q.id);
                    }
                }
                row["context_files"] = serde_json::json!(ctx
                    .chunks
                    .iter()
                    .map(|c| c.path.clone())
                    .fold(Vec::<String>::new(), |mut v, p| {
                        if !v.contains(&p) {
                            v.push(p);
                        }
                        v
                    }));
                row["latency_seconds"] = serde_json::json!(t.elapsed().as_secs_f64());
                row["model"] = serde_json::json!(cfg.answer.model);
                row["prompt_signature"] = serde_json::json!(RETRIEVAL_ANSWER_V2.signature());
                row["answer_context"] = serde_json::json!(answer_context);
            }
            nugget_rows.push((q.category.clone(), row["nugget_recall"].as_f64()));
        }
        per_question.push(row);
        if answer {
            // Progress after every question, so that an interrupted run resumes.
            if let Some(path) = json {
                let partial = serde_json::json!({"run_complete": false, "questions": per_question});
                let tmp = path.with_extension("partial");
                std::fs::write(&tmp, serde_json::to_string_pretty(&partial)? + "\n")?;
                std::fs::rename(&tmp, path)?;
            }
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    let mut metrics = eval::metrics(&qs, &scores);
    if !context_nuggets.is_empty() {
        let ours = eval::nugget_summary(&context_nuggets);
        let base = eval::nugget_summary(&baseline_context_nuggets);
        out!(
            "context nugget recall (nuggets present in the answer context, budget {} tokens) over {} questions: pipeline {}, bm25-files top 3 {}",
            cfg.answer.context_tokens,
            ours["questions"],
            ours["overall"],
            base["overall"]
        );
        for (cat, v) in ours["by_category"].as_object().into_iter().flatten() {
            out!("  {cat:<24} {v:<8} {}", base["by_category"][cat]);
        }
        metrics["context_nugget_recall"] =
            serde_json::json!({"pipeline": ours, "bm25_files_top3": base});
    }
    if answer {
        let ns = eval::nugget_summary(&nugget_rows);
        metrics["overall"]["nugget_recall"] = ns["overall"].clone();
        for (cat, v) in ns["by_category"].as_object().into_iter().flatten() {
            metrics["by_category"][cat]["nugget_recall"] = v.clone();
        }
        out!(
            "nugget recall: {} over {} questions with nuggets; by category: {}",
            ns["overall"],
            ns["questions"],
            ns["by_category"]
        );
        let a = eval::answer_summary(&per_question);
        print_answer_summary(&a);
        metrics["answers"] = a;
    }
    latencies.sort_by(f64::total_cmp);
    let (p50, p95) = (
        eval::percentile(&latencies, 50.0),
        eval::percentile(&latencies, 95.0),
    );
    print_metrics("codegloss", &metrics);
    out!(
        "retrieval latency (core, query embedding excluded): p50 {p50:.2} ms, p95 {p95:.2} ms over {} questions{}",
        latencies.len(),
        if embedder.is_none() { "; dense search off" } else { "" }
    );
    let mut result = serde_json::json!({
        "run_complete": true,
        "metrics": metrics,
        "questions": per_question,
        "latency_ms": {"p50": p50, "p95": p95},
    });
    match baseline {
        Some("bm25-files") => {
            let b = retrieve::baseline::FileBaseline::new(&corpus);
            let bs: Vec<eval::Scores> = qs
                .iter()
                .zip(&texts)
                .map(|(q, text)| {
                    let ranked = b.rank(text);
                    let top: Vec<&str> = ranked.into_iter().take(10).collect();
                    eval::score(&top, &q.gold_files, 0)
                })
                .collect();
            let bm = eval::metrics(&qs, &bs);
            out!();
            print_metrics("baseline bm25-files (top 10 files)", &bm);
            result["baseline"] = serde_json::json!({"name": "bm25-files", "metrics": bm});
        }
        Some(other) => anyhow::bail!("unknown baseline {other:?} (known: bm25-files)"),
        None => {}
    }
    if let Some(path) = json {
        std::fs::write(path, serde_json::to_string_pretty(&result)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("results written to {}", path.display());
    }
    Ok(())
}

/// The evidence support of an answer, as recorded per question by `eval
/// --answer`: citations inferred for uncited sentences, sentences nothing
/// supports, identifiers the context never shows.
fn support_json(
    answer: &str,
    question: &str,
    ctx: &codegloss_core::answer::Context,
) -> serde_json::Value {
    let s = codegloss_core::support::check_support(answer, question, ctx);
    serde_json::json!({
        "sentences": s.sentences.len(),
        "inferred": s.inferred,
        "unsupported": s.unsupported,
        "unsupported_share": s.unsupported_share,
        "unsupported_sentences": s.sentences.iter().filter(|x| x.unsupported).map(|x| &x.text).collect::<Vec<_>>(),
        "unknown_identifiers": s.unknown_identifiers,
    })
}

fn print_answer_summary(a: &serde_json::Value) {
    let p = |k: &str| format!("p50 {} p95 {} (n {})", a[k]["p50"], a[k]["p95"], a[k]["n"]);
    out!(
        "answers: {} ({} errors); with at least one valid citation {}; mean share of cited sentences {}",
        a["answered"],
        a["errors"],
        a["with_valid_citation"],
        a["mean_cited_sentence_share"]
    );
    out!(
        "  support: with a cited or inferred source {}; unsupported sentences {} of all; answers naming identifiers the context lacks {}",
        a["with_cited_or_inferred_source"],
        a["unsupported_sentence_share"],
        a["with_unknown_identifiers"]
    );
    out!("  latency seconds   {}", p("latency_seconds"));
    out!("  prompt tokens     {}", p("prompt_tokens"));
    out!("  completion tokens {}", p("completion_tokens"));
}

fn print_metrics(title: &str, m: &serde_json::Value) {
    out!("{title}");
    out!(
        "  {:<22} {:>4} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>7}",
        "category",
        "n",
        "hit@1",
        "hit@5",
        "hit@10",
        "all@5",
        "all@10",
        "recall",
        "mrr",
        "files",
        "tokens"
    );
    let row = |name: &str, v: &serde_json::Value| {
        let f = |k: &str| v[k].as_f64().unwrap_or(0.0);
        out!(
            "  {:<22} {:>4} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.2} {:>7.0}",
            name,
            v["questions"].as_u64().unwrap_or(0),
            f("hit@1"),
            f("hit@5"),
            f("hit@10"),
            f("all_gold@5"),
            f("all_gold@10"),
            f("context_recall"),
            f("mrr"),
            f("context_files"),
            f("context_tokens")
        );
    };
    if let Some(cats) = m["by_category"].as_object() {
        for (k, v) in cats {
            row(k, v);
        }
    }
    row("overall", &m["overall"]);
}

fn run_ask(dir: &Path, question: &str, cfg: &Config, no_vectors: bool, json: bool) -> Result<()> {
    use codegloss_core::answer::{build_context, check_citations, RETRIEVAL_ANSWER_V2};
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
    let context = build_context(&corpus, &r, cfg.answer.context_tokens, &*count_tokens);
    let template = RETRIEVAL_ANSWER_V2;
    let messages = template.render(question, &context);
    let started = Instant::now();
    let mut printed = false;
    let result = llm::chat(&cfg.answer, &messages, &mut |d| {
        if !json {
            use std::io::Write as _;
            let mut out = std::io::stdout();
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
            let report = check_citations(&answer.text, &context);
            let support = codegloss_core::support::check_support(&answer.text, question, &context);
            if json {
                let v = serde_json::json!({
                    "question": question,
                    "answer": answer.text,
                    "citations": report.citations,
                    "invalid_citations": report.invalid,
                    "cited_sentence_share": report.cited_share,
                    "support": support,
                    "context": context.chunks,
                    "context_tokens": context.tokens,
                    "context_files": r.files(&corpus),
                    "latency_seconds": latency,
                    "prompt_tokens": answer.prompt_tokens,
                    "completion_tokens": answer.completion_tokens,
                    "model": cfg.answer.model,
                    "prompt_template": template.id,
                    "prompt_signature": template.signature(),
                    "streamed": answer.streamed,
                });
                out!("{}", serde_json::to_string_pretty(&v)?);
                return Ok(());
            }
            if printed && !answer.text.ends_with('\n') {
                out!();
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
            eprintln!("error: {e}");
            out!("The retrieved evidence for this question:");
            evidence(&[]);
            std::process::exit(2);
        }
    }
}

/// Score the answers of an `eval --answer` file against the nuggets of a
/// question file, and write the nugget recall back into it.
fn run_score(questions: &Path, answers: &Path) -> Result<()> {
    use codegloss_indexer::eval;
    let qs = eval::read_questions(questions)?;
    let text = std::fs::read_to_string(answers)
        .with_context(|| format!("reading {}", answers.display()))?;
    let mut v: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not an eval JSON file", answers.display()))?;
    let mut rows = Vec::new();
    if let Some(items) = v["questions"].as_array_mut() {
        for item in items {
            let Some(q) = qs
                .iter()
                .find(|q| Some(q.id.as_str()) == item["id"].as_str())
            else {
                continue;
            };
            let Some(a) = item["answer"].as_str() else {
                continue;
            };
            let nr = eval::nugget_recall(a, &q.nuggets).map_err(anyhow::Error::msg)?;
            item["nugget_recall"] = serde_json::json!(nr);
            rows.push((q.category.clone(), nr));
        }
    }
    let ns = eval::nugget_summary(&rows);
    out!(
        "nugget recall: {} over {} questions with nuggets",
        ns["overall"],
        ns["questions"]
    );
    for (cat, r) in ns["by_category"].as_object().into_iter().flatten() {
        out!("  {cat:<24} {r}");
    }
    let summary = eval::answer_summary(v["questions"].as_array().map_or(&[][..], Vec::as_slice));
    print_answer_summary(&summary);
    if v.get("metrics").is_some() {
        v["metrics"]["answers"] = summary;
        v["metrics"]["overall"]["nugget_recall"] = ns["overall"].clone();
        for (cat, r) in ns["by_category"].as_object().into_iter().flatten() {
            if v["metrics"]["by_category"].get(cat).is_some() {
                v["metrics"]["by_category"][cat]["nugget_recall"] = r.clone();
            }
        }
    }
    std::fs::write(answers, serde_json::to_string_pretty(&v)? + "\n")?;
    Ok(())
}
