//! The embedding benchmark behind `cargo xtask bench embed`.
//!
//! On a copy of a repository it measures, in one run:
//! - a full index with embeddings: chunks embedded, wall time, chunks/s;
//! - a bare ort session running the same model on the same padded batches
//!   (no tokenisation, pooling or prompt building): the ceiling on this
//!   machine, reported as the ratio bare time / embedding time;
//! - index bytes per chunk for the vectors and the graphs;
//! - the full index's wall time over the bare session's (how far indexing
//!   is from that floor) and the peak resident memory of the index step;
//! - re-index time after editing one file, as a ratio of the full time.
//!
//! `cargo run --release -p codegloss-indexer --example bench_embed -- <repo> <work-dir> [--edit FILE] [--no-repeat]`
//!
//! Without `--edit`, the edited file is the first indexed C++ file (in path
//! order) with a `{`, so the benchmark names nothing of any one codebase.
//! `--no-repeat` leaves out the second pass of our embedder over the bare
//! session's batches: on a large codebase it halves the run, and the floor
//! ratio needs only the full index and the bare session.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use codegloss_core::vectors::VectorStore;
use codegloss_core::DataKind;
use codegloss_indexer::embed::Embedder;
use codegloss_indexer::{embed::vectorize, ingest::build, store, Config};
use indicatif::ProgressBar;

fn copy_tree(src: &Path, dst: &Path) -> Result<()> {
    std::fs::create_dir_all(dst)?;
    for entry in std::fs::read_dir(src)? {
        let entry = entry?;
        let to = dst.join(entry.file_name());
        let ft = entry.file_type()?;
        if ft.is_dir() {
            copy_tree(&entry.path(), &to)?;
        } else if ft.is_file() {
            std::fs::copy(entry.path(), &to)?;
        }
    }
    Ok(())
}

/// The benchmark's arguments.
#[derive(Parser)]
struct Args {
    /// Repository to index (it is copied; the copy is edited).
    repo: PathBuf,
    /// Work folder (emptied first): the copy and its index.
    work: PathBuf,
    /// File, relative to the repository, edited before the re-index
    /// (default: the first indexed C++ file with a `{`).
    #[arg(long)]
    edit: Option<String>,
    /// Skip our embedder's second pass over the bare session's batches.
    #[arg(long)]
    no_repeat: bool,
}

/// This process's peak resident memory so far, in bytes.
fn peak_rss() -> Option<u64> {
    codegloss_core::report::peak_rss_from_status(
        &std::fs::read_to_string("/proc/self/status").ok()?,
    )
}

struct Run {
    seconds: f64,
    chunks: usize,
    stats: vectorize::EmbedStats,
    recall: f64,
}

/// What `codegloss index` does, timed end to end (model loading included).
fn index(repo: &Path, out: &Path) -> Result<Run> {
    let t = Instant::now();
    let cfg = Config::default();
    let mut embedder = Embedder::new(&cfg.embedding)?;
    let built = build::build_index(repo, &cfg, &ProgressBar::hidden())?;
    let previous = store::previous_vectors(out);
    let v = vectorize::build_vectors(
        &built.data,
        &mut embedder,
        &cfg.embedding,
        previous.as_ref(),
        &ProgressBar::hidden(),
    )?;
    store::write_index(out, &built.data, Some((&v.index, &v.info)), &cfg.hash())?;
    Ok(Run {
        seconds: t.elapsed().as_secs_f64(),
        chunks: built.data.chunks.len(),
        stats: v.stats,
        recall: v.info.hnsw_recall_at_10,
    })
}

/// The first indexed C++ file, in path order, whose text has a `{`.
fn first_cpp_with_brace(repo: &Path, data: &codegloss_core::IndexData) -> Result<String> {
    let mut paths: Vec<&str> = data
        .files
        .iter()
        .filter(|f| f.language == codegloss_core::model::Language::Cpp)
        .map(|f| f.path.as_str())
        .collect();
    paths.sort_unstable();
    paths
        .into_iter()
        .find(|p| std::fs::read_to_string(repo.join(p)).is_ok_and(|t| t.contains('{')))
        .map(str::to_string)
        .context("no indexed C++ file with a brace to edit")
}

fn main() -> Result<()> {
    let args = Args::parse();
    let repo = args.repo.clone();
    let work = args.work.clone();
    let _ = std::fs::remove_dir_all(&work);
    let copy = work.join("repo");
    let out = work.join("index");
    copy_tree(&repo, &copy)?;

    eprintln!("full index with embeddings ...");
    let full = index(&copy, &out)?;
    let index_peak_rss = peak_rss();
    let st = &full.stats;
    let embed_rate = st.computed as f64 / st.embed_seconds;

    eprintln!("bare ort session on the same batches ...");
    let cfg = Config::default();
    let mut embedder = Embedder::new(&cfg.embedding)?;
    let (_, data) = store::read_index(&out)?;
    let texts = vectorize::document_texts(&data, &embedder)?;
    let tokens = embedder.tokenize(&texts)?;
    let batches = embedder.batches(&tokens);
    let t = Instant::now();
    for b in &batches {
        embedder.run_raw(b)?;
    }
    let bare = t.elapsed().as_secs_f64();
    // Our path on the same texts, measured right after, for a like-for-like pair.
    let ours = if args.no_repeat {
        None
    } else {
        let t = Instant::now();
        let ours_vectors = embedder.embed_texts(&texts, None)?;
        anyhow::ensure!(ours_vectors.len() == texts.len(), "a text was not embedded");
        Some(t.elapsed().as_secs_f64())
    };

    let m = store::read_index(&out)?.0;
    let size = |k: DataKind| {
        m.data_files
            .iter()
            .find(|d| d.kind == k)
            .map_or(0, |d| d.bytes)
    };
    let vectors_bin = size(DataKind::Vectors);
    let graph_bin = size(DataKind::Graph);
    let v = store::read_vectors(&out, &m)?.context("vectors")?;
    let cfgb = bincode::config::standard();
    let point_bytes: usize = match &v.store {
        VectorStore::Int8(map) => map
            .iter()
            .map(|(_, p)| bincode::serde::encode_to_vec(p, cfgb).map_or(0, |b| b.len()))
            .sum(),
        VectorStore::F32(map) => map
            .iter()
            .map(|(_, p)| bincode::serde::encode_to_vec(p, cfgb).map_or(0, |b| b.len()))
            .sum(),
    };
    let n = full.chunks.max(1) as f64;
    let keys_bytes = 16 * full.chunks;

    let edit = match args.edit.clone() {
        Some(edit) => edit,
        None => first_cpp_with_brace(&copy, &data)?,
    };
    let path = copy.join(&edit);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let pos = text.find('{').context("no brace in the edited file")?;
    let mut edited = text.clone();
    edited.insert_str(pos + 1, "\n    // benchmark edit\n");
    std::fs::write(&path, edited)?;
    eprintln!("re-index after editing {edit} ...");
    let re = index(&copy, &out)?;

    let result = serde_json::json!({
        "repo": repo.display().to_string(),
        "chunks": full.chunks,
        "full_index_seconds": full.seconds,
        "embedded": st.computed,
        "embed_seconds": st.embed_seconds,
        "chunks_per_second": embed_rate,
        "prompt_seconds": st.prompt_seconds,
        "hnsw_seconds": st.hnsw_seconds,
        "hnsw_recall_at_10": full.recall,
        "index_peak_rss_bytes": index_peak_rss,
        "bare_session_seconds": bare,
        "full_index_over_bare": full.seconds / bare,
        "embedder_seconds_same_batches": ours,
        "throughput_ratio_vs_bare": ours.map(|o| bare / o),
        "vectors_bin_bytes": vectors_bin,
        "vectors_bin_bytes_per_chunk": vectors_bin as f64 / n,
        "of_which_points_bytes_per_chunk": point_bytes as f64 / n,
        "of_which_keys_bytes_per_chunk": keys_bytes as f64 / n,
        "of_which_hnsw_graph_bytes_per_chunk": (vectors_bin as f64 - point_bytes as f64 - keys_bytes as f64) / n,
        "structure_graph_bin_bytes_per_chunk": graph_bin as f64 / n,
        "edited_file": edit,
        "reindex_seconds": re.seconds,
        "reindex_computed": re.stats.computed,
        "reindex_reused": re.stats.reused,
        "reindex_ratio": re.seconds / full.seconds,
    });
    println!("{}", serde_json::to_string_pretty(&result)?);
    Ok(())
}
