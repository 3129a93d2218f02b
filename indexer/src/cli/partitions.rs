//! `codegloss partitions`: how good and how cheap semantic search over the
//! vectors' inverted-file partitions is on an index, for several numbers
//! of probed partitions: recall@k of the partitioned search (product codes,
//! then the nearest refined with their int8 vectors) against exact search
//! over every vector, and the bytes of partition shards and refine blocks
//! a browser fetches for each question. This is how `[retrieval]
//! ivf_probe` and `ivf_refine` are chosen by measurement.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use codegloss_core::report::p50_p95;
use codegloss_core::retrieve::{semantic_search, Corpus, RetrievalSettings};
use codegloss_core::web::{build_site_index, ShardKind};
use codegloss_indexer::{eval, store};
use serde::Serialize;

use super::output::{json_text, note, out};
use super::{config_or_default, progress_bar, query_embedder};

/// The options of `codegloss partitions`.
#[derive(Args)]
pub(crate) struct PartitionsArgs {
    /// Index directory written by `codegloss index`.
    index: PathBuf,
    /// Question files (bench format, one JSON object a line).
    #[arg(long, required = true, num_args = 1..)]
    questions: Vec<PathBuf>,
    /// Numbers of probed partitions to measure.
    #[arg(long, value_delimiter = ',', default_value = "4,8,16,24,32,48,64")]
    probe: Vec<usize>,
    /// Chunks refined with their exact distance (`[retrieval] ivf_refine`).
    #[arg(long, default_value_t = RetrievalSettings::default().ivf_refine)]
    refine: usize,
    /// Recall is measured on the top `k` chunks.
    #[arg(long, default_value_t = 10)]
    k: usize,
    /// Partition the vectors again into partitions of about this many
    /// vectors before measuring (default: the index's partitions).
    #[arg(long)]
    partition_size: Option<usize>,
    /// Configuration file for the embedding model paths (default: none).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// One row of the measurement: one number of probed partitions.
#[derive(Serialize)]
struct Row {
    probe: usize,
    /// Mean share of the exact top-k found.
    recall: f64,
    /// The lowest share of one question.
    recall_min: f64,
    /// Partition shard and refine block bytes a question fetches, p50 /
    /// p95 / max.
    bytes_p50: f64,
    bytes_p95: f64,
    bytes_max: u64,
}

/// What the measurement prints as JSON.
#[derive(Serialize)]
struct Report {
    questions: usize,
    chunks: usize,
    partitions: usize,
    /// Bytes of the vector directory (fetched once per reader).
    directory_bytes: u64,
    /// Bytes of all partition shards together.
    partition_bytes: u64,
    /// Bytes of all refine blocks together.
    block_bytes: u64,
    /// Chunks refined per question.
    refine: usize,
    /// Bytes of the single vectors shard a site without partitions ships.
    single_shard_bytes: u64,
    rows: Vec<Row>,
}

/// Embed the questions and measure each number of probed partitions.
pub(crate) fn run(args: PartitionsArgs) -> Result<()> {
    let dir = &args.index;
    let (manifest, data) =
        store::read_index(dir).with_context(|| format!("reading index {}", dir.display()))?;
    let lexical = store::read_lexical(dir, &manifest)?;
    let mut vectors = store::read_vectors(dir, &manifest)?.with_context(|| {
        format!(
            "{} has no vectors (indexed with --no-embed?)",
            dir.display()
        )
    })?;
    if let Some(size) = args.partition_size {
        vectors.partition(size);
    }
    // Shard sizes, as `codegloss site` writes them with and without partitions.
    let layout = |probe: usize| {
        let mut m = manifest.clone();
        m.retrieval = Some(RetrievalSettings {
            ivf_probe: probe,
            ..m.retrieval.clone().unwrap_or_default()
        });
        build_site_index(&m, &data, &lexical, Some(&vectors))
    };
    let site = layout(1)?;
    let directory_bytes = site.manifest.vector_directory().map_or(0, |s| s.bytes);
    let single_shard_bytes = layout(0)?.manifest.vectors_shard().map_or(0, |s| s.bytes);
    let lists = vectors.ivf.lists();
    // Each partition's refine blocks, then the partition's shard,
    // partition after partition (listed in the vector directory and the
    // partitions, not the manifest).
    let named = |kind: ShardKind| format!("shards/{}-", kind.as_str());
    let (mut partition_sizes, mut block_sizes) = (Vec::new(), Vec::new());
    for (name, bytes) in &site.files {
        if name.starts_with(&named(ShardKind::Block)) {
            block_sizes.push(bytes.len() as u64);
        } else if name.starts_with(&named(ShardKind::Partition)) {
            partition_sizes.push(bytes.len() as u64);
        }
    }
    anyhow::ensure!(
        partition_sizes.len() == lists.len(),
        "{} partition shards for {} partitions",
        partition_sizes.len(),
        lists.len()
    );

    let cfg = config_or_default(args.config.as_deref())?;
    let mut embedder = query_embedder(&vectors.spec, &cfg)?;
    let mut questions = Vec::new();
    for path in &args.questions {
        questions.extend(eval::read_questions(path)?);
    }
    let pb = progress_bar(args.quiet, "questions");
    pb.set_length(questions.len() as u64);
    pb.set_message("embedding");
    let mut queries = Vec::with_capacity(questions.len());
    for q in &questions {
        queries.push(embedder.embed_query(&q.question)?);
        pb.inc(1);
    }
    pb.finish_and_clear();
    let exact: Vec<Vec<u32>> = queries
        .iter()
        .map(|q| {
            Ok(vectors
                .search_exact(q, args.k)?
                .into_iter()
                .map(|h| h.chunk)
                .collect())
        })
        .collect::<Result<_, codegloss_core::CoreError>>()?;
    let partitions = lists.len();
    let chunks = vectors.len();
    let corpus = Corpus::new(data, Some(vectors), lexical);
    let mut rows = Vec::new();
    for &probe in &args.probe {
        let mut recalls = Vec::new();
        let mut bytes = Vec::new();
        let settings = RetrievalSettings {
            ivf_probe: probe,
            ivf_refine: args.refine,
            // Raw distances on both sides: this measures the partitioned
            // search against the exact one, not the hubness correction.
            hubness_weight: 0.0,
            ..RetrievalSettings::default()
        };
        for (q, truth) in queries.iter().zip(&exact) {
            let found = semantic_search(&corpus, q, &settings, args.k)?;
            let hit = truth
                .iter()
                .filter(|c| found.hits.iter().any(|(f, _)| f == *c))
                .count();
            recalls.push(hit as f64 / truth.len().max(1) as f64);
            bytes.push(
                found
                    .partitions
                    .iter()
                    .map(|&i| partition_sizes[i as usize])
                    .chain(found.blocks.iter().map(|&b| block_sizes[b as usize]))
                    .sum::<u64>(),
            );
        }
        let as_f64: Vec<f64> = bytes.iter().map(|&b| b as f64).collect();
        let (bytes_p50, bytes_p95) = p50_p95(&as_f64);
        rows.push(Row {
            probe,
            recall: recalls.iter().sum::<f64>() / recalls.len().max(1) as f64,
            recall_min: recalls.iter().copied().fold(1.0, f64::min),
            bytes_p50,
            bytes_p95,
            bytes_max: bytes.iter().copied().max().unwrap_or(0),
        });
    }
    let report = Report {
        questions: queries.len(),
        chunks,
        partitions,
        directory_bytes,
        partition_bytes: partition_sizes.iter().sum(),
        block_bytes: block_sizes.iter().sum(),
        refine: args.refine,
        single_shard_bytes,
        rows,
    };
    if args.json {
        out!("{}", json_text(&report)?);
        return Ok(());
    }
    note!(
        "{} questions; {} chunks in {} partitions, {} refined a question; directory {} KiB, partitions {} KiB and refine blocks {} KiB in all, one vectors shard {} KiB",
        report.questions,
        report.chunks,
        report.partitions,
        report.refine,
        report.directory_bytes / 1024,
        report.partition_bytes / 1024,
        report.block_bytes / 1024,
        report.single_shard_bytes / 1024
    );
    out!(
        "| probe | recall@{} | min | KiB p50 | KiB p95 | KiB max |",
        args.k
    );
    out!("|---|---|---|---|---|---|");
    for r in &report.rows {
        out!(
            "| {} | {:.3} | {:.2} | {:.0} | {:.0} | {:.0} |",
            r.probe,
            r.recall,
            r.recall_min,
            r.bytes_p50 / 1024.0,
            r.bytes_p95 / 1024.0,
            r.bytes_max as f64 / 1024.0
        );
    }
    Ok(())
}
