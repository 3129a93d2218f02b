//! `codegloss`: the command-line front end of the indexer.
//!
//! Results go to stdout, logs, warnings and progress to stderr.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use codegloss_core::{EdgeKind, Entity, EntityKind, IndexData};
use codegloss_indexer::{build, embed, store, vectorize, Config};
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
        } => run_index(
            &repo,
            &out,
            config.as_deref(),
            quiet,
            max_warnings,
            no_embed,
        ),
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

fn run_index(
    repo: &Path,
    out: &Path,
    config: Option<&Path>,
    quiet: bool,
    max_warnings: usize,
    no_embed: bool,
) -> Result<()> {
    let started = Instant::now();
    let mut cfg = load_config(repo, config)?;
    if no_embed {
        cfg.embedding.enabled = false;
    }
    // Load the model first: a missing model should fail before minutes of work.
    let mut embedder = if cfg.embedding.enabled {
        Some(embed::Embedder::new(&cfg.embedding).context("loading the embedding model")?)
    } else {
        None
    };
    let pb = progress_bar(quiet, "files");
    let output = build::build_index(repo, &cfg, &pb)
        .with_context(|| format!("indexing {}", repo.display()))?;
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
    let manifest = store::write_index(
        out,
        &output.data,
        vectors.as_ref().map(|v| (&v.index, &v.info)),
        &cfg.hash(),
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
    Ok(())
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
    let cfg = match config {
        Some(p) => Config::load(p)?,
        None => Config::default(),
    };
    let mut embedding = cfg.embedding.clone();
    embedding.model_id = vectors.spec.model_id.clone();
    embedding.pooling = vectors.spec.pooling;
    embedding.normalize = vectors.spec.normalize;
    embedding.max_length = vectors.spec.max_length as usize;
    embedding.query_prefix = vectors.spec.query_prefix.clone();
    embedding.document_prefix = vectors.spec.document_prefix.clone();
    let mut embedder = embed::Embedder::new(&embedding).context("loading the query model")?;
    vectors.spec.check_query_model(embedder.spec())?;
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
