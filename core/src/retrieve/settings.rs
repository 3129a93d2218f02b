//! Every knob of the online retrieval pipeline, with the paper's defaults
//! (Table 2, section 3.3.4) where it gives them. The `[retrieval]` section
//! of `codegloss.toml` maps onto this struct; the browser gets the same
//! values from the index manifest.

use serde::{Deserialize, Serialize};

use crate::error::CoreError;

/// How dense and keyword ranks are combined.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Fusion {
    /// Semantic score `1/(1+d)` plus a normalised BM25 share inside the
    /// lexical score.
    #[default]
    Score,
    /// Reciprocal rank fusion of the dense and BM25 ranks.
    Rrf,
}

/// Retrieval settings.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RetrievalSettings {
    /// Primary chunks returned (before expansion and supplementary).
    pub k: usize,
    /// Dense candidates taken from the vector index.
    pub candidate_k: usize,
    /// Keyword (BM25) candidates.
    pub bm25_k: usize,
    /// Below this many vectors, search exactly instead of through HNSW.
    pub exact_search_below: usize,
    /// Dense/keyword fusion.
    pub fusion: Fusion,
    /// The `k` of reciprocal rank fusion.
    pub rrf_k: f32,
    /// Weight of the lexical/metadata score (Listing 12).
    pub lexical_metadata_weight: f32,
    /// Weight of the entity-target score (Listing 12).
    pub entity_target_weight: f32,
    /// Weight of the normalised BM25 share inside the lexical score.
    pub bm25_weight: f32,
    /// Table 2: candidates below this share of the best score are weak.
    pub primary_score_relative_floor: f32,
    /// Table 2: a drop this large between accepted candidates is a cliff.
    pub primary_score_gap_threshold: f32,
    /// Table 2: below this absolute score a candidate is very weak.
    pub primary_score_absolute_floor: f32,
    /// Primary chunks always kept, whatever the floors say.
    pub primary_min: usize,
    /// Table 2: primary chunks per symbol group (file path + symbol).
    pub primary_same_symbol_cap: usize,
    /// Table 2: non-file-level primary chunks per file. The paper uses 2;
    /// 1 measured better on the IPPL benchmark (all_gold@10 0.70 → 0.76,
    /// context recall 0.83 → 0.87, fewer context tokens): spreading the
    /// primary slots over more files is what multi-file questions need.
    pub primary_same_file_cap: usize,
    /// Table 2: share of primaries from one file that triggers diversification.
    pub dominant_file_ratio: f32,
    /// Expansions allowed in the `api_usage` mode.
    pub expansion_api_usage: usize,
    /// Expansions allowed in the `minimal` mode.
    pub expansion_minimal: usize,
    /// Expansions allowed in the `balanced` mode.
    pub expansion_balanced: usize,
    /// Expansions allowed in the `broad` mode.
    pub expansion_broad: usize,
    /// Supplementary chunks from referenced files.
    pub supplementary_k: usize,
    /// At most this many exact-symbol injections.
    pub max_symbol_injections: usize,
    /// Test/example/build chunks are removed unless the question asks
    /// about tests or the build.
    pub filter_test_build_noise: bool,
    /// Dense pseudo-relevance feedback: the query vector moves towards the
    /// mean of its this many nearest chunks before the dense search (0: off).
    pub dense_feedback_docs: usize,
    /// Weight of that mean against the query vector.
    pub dense_feedback_weight: f32,
    /// Add to the keyword query the index's acronyms that the question
    /// spells out ("cloud-in-cell" → `CIC`), when the index spells them
    /// out too.
    pub expand_acronyms: bool,
    /// Semantic search over the vectors' inverted-file partitions: the
    /// question's this many nearest partitions give the dense candidates,
    /// and a chunk elsewhere gets an estimated distance (see
    /// [`crate::ivf`]); the browser then fetches only those partitions.
    /// 0: exact or HNSW search over every vector.
    pub ivf_probe: usize,
    /// Under `ivf_probe`: this many of the probed chunks nearest by their
    /// product codes get their exact distance from their int8 vectors
    /// (the browser fetches those in small blocks; see [`crate::pq`]).
    pub ivf_refine: usize,
    /// Hubness correction of semantic distances (see [`crate::hubness`]):
    /// a chunk's squared distance to the question grows by this weight
    /// times how much smaller its neighbourhood radius is than the
    /// corpus mean (a chunk of a crowded region moves away, an isolated
    /// one closer). 0: raw distances.
    pub hubness_weight: f32,
}

impl Default for RetrievalSettings {
    fn default() -> Self {
        RetrievalSettings {
            k: 8,
            candidate_k: 20,
            bm25_k: 20,
            exact_search_below: 20_000,
            fusion: Fusion::Score,
            rrf_k: 60.0,
            lexical_metadata_weight: 1.0,
            entity_target_weight: 1.0,
            bm25_weight: 2.0,
            primary_score_relative_floor: 0.4,
            primary_score_gap_threshold: 8.0,
            primary_score_absolute_floor: 1.25,
            primary_min: 2,
            primary_same_symbol_cap: 1,
            primary_same_file_cap: 1,
            dominant_file_ratio: 0.75,
            expansion_api_usage: 3,
            expansion_minimal: 2,
            expansion_balanced: 3,
            expansion_broad: 4,
            supplementary_k: 3,
            max_symbol_injections: 2,
            filter_test_build_noise: true,
            dense_feedback_docs: 0,
            dense_feedback_weight: 0.5,
            expand_acronyms: true,
            ivf_probe: 0,
            ivf_refine: 60,
            hubness_weight: 1.0,
        }
    }
}

impl RetrievalSettings {
    /// These settings with the keys of a JSON object put over them (`{}`
    /// changes nothing): how the browser applies a page's own settings on
    /// top of the ones the site was built with. Unknown keys are an error.
    pub fn with_overrides(&self, json: &str) -> Result<Self, CoreError> {
        let bad = |e: serde_json::Error| CoreError::Settings {
            message: e.to_string(),
        };
        let over: serde_json::Value = serde_json::from_str(json).map_err(bad)?;
        let serde_json::Value::Object(over) = over else {
            return Err(CoreError::Settings {
                message: "expected a JSON object".into(),
            });
        };
        let mut base = serde_json::to_value(self).map_err(bad)?;
        if let serde_json::Value::Object(map) = &mut base {
            map.extend(over);
        }
        serde_json::from_value(base).map_err(bad)
    }
}

// How the binary web manifest's reader decodes them (`crate::wire`).
crate::wire::wire_enum!(Fusion { Score, Rrf });
crate::wire::wire_struct!(RetrievalSettings {
    k,
    candidate_k,
    bm25_k,
    exact_search_below,
    fusion,
    rrf_k,
    lexical_metadata_weight,
    entity_target_weight,
    bm25_weight,
    primary_score_relative_floor,
    primary_score_gap_threshold,
    primary_score_absolute_floor,
    primary_min,
    primary_same_symbol_cap,
    primary_same_file_cap,
    dominant_file_ratio,
    expansion_api_usage,
    expansion_minimal,
    expansion_balanced,
    expansion_broad,
    supplementary_k,
    max_symbol_injections,
    filter_test_build_noise,
    dense_feedback_docs,
    dense_feedback_weight,
    expand_acronyms,
    ivf_probe,
    ivf_refine,
    hubness_weight
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_replace_only_the_keys_given() {
        let base = RetrievalSettings {
            k: 5,
            fusion: Fusion::Rrf,
            ..RetrievalSettings::default()
        };
        assert_eq!(base.with_overrides("{}").unwrap(), base);
        let o = base.with_overrides(r#"{"k": 3}"#).unwrap();
        assert_eq!(o.k, 3);
        assert_eq!(o.fusion, Fusion::Rrf);
        assert!(matches!(
            base.with_overrides(r#"{"kk": 3}"#),
            Err(CoreError::Settings { .. })
        ));
        assert!(base.with_overrides("[1]").is_err());
        assert!(base.with_overrides("not json").is_err());
    }
}
