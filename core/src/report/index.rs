//! The summary of a `codegloss index` run (`index --json FILE`): what the
//! index holds, how well the C++ parsed, and what embedding and
//! explanation cost. The CLI prints it and writes it; `cargo xtask bench
//! explain` reads the explanation cost from it instead of from the printed
//! text.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::format::Counts;
use crate::model::ParseStats;

/// One `codegloss index` run.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct IndexSummary {
    /// The index folder written.
    pub out: String,
    /// Wall-clock seconds of the run, up to the index written.
    pub seconds: f64,
    /// What the manifest counts.
    pub counts: Counts,
    /// Entities that are templates.
    pub templates: usize,
    /// Parse quality over all C++ files.
    pub parse: ParseStats,
    /// Warnings (all are stored per file in the index).
    pub warnings: usize,
    /// The embedding stage; none when embedding is off.
    pub embeddings: Option<EmbeddingSummary>,
    /// The explanation stage; none for structural glosses only.
    pub glosses: Option<GlossSummary>,
    /// Peak resident memory of the indexing process in bytes (Linux's
    /// `VmHWM`), where the platform says.
    #[serde(default)]
    pub peak_rss_bytes: Option<u64>,
}

/// The peak resident memory, in bytes, that a Linux `/proc/<pid>/status`
/// text reports (`VmHWM`, in kB); `None` when it has no such line.
pub fn peak_rss_from_status(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// What the embedding stage did.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct EmbeddingSummary {
    /// Vectors computed in this run.
    pub computed: usize,
    /// Vectors reused from the previous index.
    pub reused: usize,
    /// The document model.
    pub model_id: String,
    /// `CPU` or `CUDA`.
    pub backend: String,
    /// Vector dimension.
    pub dimension: u32,
    /// How vectors are stored (`int8`, ...).
    pub quantization: String,
    /// Seconds of tokenisation and inference.
    pub embed_seconds: f64,
    /// Seconds building and fitting document prompts.
    pub prompt_seconds: f64,
    /// Seconds building the HNSW graph and measuring its recall.
    pub hnsw_seconds: f64,
    /// HNSW recall@10 against exact search.
    pub hnsw_recall_at_10: f64,
    /// Queries that recall was measured on.
    pub hnsw_recall_queries: u32,
}

impl EmbeddingSummary {
    /// Chunks embedded per second of inference (0 when none were).
    pub fn chunks_per_second(&self) -> f64 {
        if self.embed_seconds > 0.0 {
            self.computed as f64 / self.embed_seconds
        } else {
            0.0
        }
    }
}

/// What the explanation stage did.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct GlossSummary {
    /// Levels explained by the model, bottom-up.
    pub levels: Vec<String>,
    /// Glosses from the model in the index.
    pub model: u64,
    /// Glosses generated in this run.
    pub generated: usize,
    /// Glosses taken from the cache.
    pub cache_hits: usize,
    /// Entities marked `skipped_low_information`.
    pub skipped: usize,
    /// Entities that fell back to structural glosses.
    pub fallbacks: usize,
    /// Requests sent (retries included).
    pub requests: u64,
    /// Seconds waiting for the backend in this run.
    pub generation_seconds: f64,
    /// Completion tokens of the glosses generated in this run.
    pub completion_tokens: u64,
    /// Model glosses in the index, this run and earlier ones.
    pub total_model_glosses: usize,
    /// Generation seconds of all of those.
    pub total_generation_seconds: f64,
    /// Glosses per level and source (`model`, `structural`, ...).
    pub by_source: BTreeMap<String, BTreeMap<String, u64>>,
    /// The gloss cache file.
    pub cache_path: String,
    /// Its size in bytes.
    pub cache_bytes: u64,
}

/// Glosses per minute, 0 without time spent.
fn per_minute(glosses: usize, seconds: f64) -> f64 {
    if seconds > 0.0 {
        glosses as f64 * 60.0 / seconds
    } else {
        0.0
    }
}

impl GlossSummary {
    /// Glosses generated per minute in this run.
    pub fn glosses_per_minute(&self) -> f64 {
        per_minute(self.generated, self.generation_seconds)
    }

    /// Glosses per minute over every model gloss the index holds.
    pub fn total_glosses_per_minute(&self) -> f64 {
        per_minute(self.total_model_glosses, self.total_generation_seconds)
    }

    /// Completion tokens per second in this run.
    pub fn tokens_per_second(&self) -> f64 {
        if self.generation_seconds > 0.0 {
            self.completion_tokens as f64 / self.generation_seconds
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_rss_comes_from_vm_hwm() {
        let status = "Name:\tcodegloss\nVmPeak:\t  900 kB\nVmHWM:\t    2048 kB\n";
        assert_eq!(peak_rss_from_status(status), Some(2048 * 1024));
        assert_eq!(peak_rss_from_status("Name:\tx\n"), None);
    }

    #[test]
    fn rates_are_zero_without_time() {
        let g = GlossSummary {
            generated: 3,
            generation_seconds: 0.0,
            total_model_glosses: 6,
            total_generation_seconds: 120.0,
            ..GlossSummary::default()
        };
        assert_eq!(g.glosses_per_minute(), 0.0);
        assert_eq!(g.total_glosses_per_minute(), 3.0);
        let back: IndexSummary = serde_json::from_value(
            serde_json::to_value(IndexSummary {
                glosses: Some(g.clone()),
                ..IndexSummary::default()
            })
            .expect("serializes"),
        )
        .expect("reads back");
        assert_eq!(back.glosses, Some(g));
    }
}
