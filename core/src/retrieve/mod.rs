//! The online retrieval stage (paper section 3.3), pure and shared by the
//! CLI and the browser: query signals and intent routing, the candidate
//! pool of Table 3 (dense, BM25 and injected candidates), the metadata
//! reranker of Listing 12, primary selection with the gates of Table 2,
//! structural expansion along graph edges, supplementary retrieval from
//! referenced files, and the final-context filter of section 3.4. Every
//! returned chunk carries its diagnostics: sources, score parts, role and
//! the edge that brought it in.
//!
//! The caller embeds the question (query vector) and hands it in; without
//! one, retrieval runs on keywords and structure alone.
//!
//! [`retrieve`] runs the stages in order, one module each: `pool` (the
//! candidates and the dense feedback), `rerank`, `filter` (test/build
//! noise), `select` (primaries), `expand` (structural and supplementary)
//! and `filter` again (the final context). Their weights are named
//! constants in those modules, not settings: [`RetrievalSettings`] is
//! written into every manifest.

pub mod baseline;
pub mod corpus;
mod dense;
mod expand;
pub mod features;
mod file_evidence;
mod filter;
pub mod graph;
pub mod names;
pub mod partitioned;
mod pool;
mod rerank;
pub mod router;
mod select;
pub mod settings;
pub mod signals;

use std::collections::BTreeMap;

use serde::Serialize;

pub use corpus::Corpus;
pub use dense::{semantic_search, SemanticSearch};
pub use partitioned::{PartitionedVectors, REFINE_BLOCK};
pub use router::{route, EntityTarget, ExpansionMode, Route};
pub use settings::{Fusion, RetrievalSettings};
pub use signals::QuerySignals;

use crate::error::CoreError;
use crate::model::{Chunk, Scope, SourceType};
use dense::Dense;

/// Where a candidate came from (Table 3, plus BM25).
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Exact file name in the question.
    ExactFilename,
    /// Same base name as a named file, another extension.
    SiblingFile,
    /// Exact symbol name in the question.
    ExactSymbol,
    /// File whose base name is a subject of the question.
    SubjectFile,
    /// One side of a comparison.
    Comparison,
    /// A literal API call site.
    ApiCallSite,
    /// Matches the entity level the question asks for.
    TargetAligned,
    /// A module named in the question.
    ModuleName,
    /// Dense vector search.
    Semantic,
    /// Keyword search.
    Bm25,
}

impl Source {
    fn injected(self) -> bool {
        !matches!(self, Source::Semantic | Source::Bm25)
    }
}

/// Why a chunk is in the context.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Selected from the candidate pool.
    Primary,
    /// Reached from a primary chunk along a graph edge.
    StructuralExpansion,
    /// Found inside a file that a primary chunk references.
    Supplementary,
}

impl Role {
    /// Stable name (`primary`, `structural_expansion`, `supplementary`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Primary => "primary",
            Role::StructuralExpansion => "structural_expansion",
            Role::Supplementary => "supplementary",
        }
    }
}

/// The parts of a candidate's score (Listing 12 plus boosts).
#[derive(Serialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct ScoreParts {
    /// Squared L2 distance to the query (none without vectors).
    pub distance: Option<f32>,
    /// `1 / (1 + distance)` (or the RRF share).
    pub semantic: f32,
    /// Lexical/metadata score before weighting.
    pub lexical: f32,
    /// Entity-target score before weighting.
    pub target: f32,
    /// Evidence of the chunk's whole file, weighted (`file_evidence.rs`).
    pub file: f32,
    /// BM25 score (raw).
    pub bm25: f32,
    /// Penalties (negative), included in `lexical`.
    pub penalty: f32,
    /// The combined score.
    pub combined: f32,
}

/// An expansion step.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Expansion {
    /// The primary chunk expanded from.
    pub from_chunk: u32,
    /// The relation followed.
    pub edge: String,
}

/// One chunk of the final context.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct RetrievedChunk {
    /// Chunk id.
    pub chunk: u32,
    /// Role.
    pub role: Role,
    /// Candidate sources (primary chunks).
    pub sources: Vec<Source>,
    /// Score parts.
    pub score: ScoreParts,
    /// How an expansion or supplementary chunk was reached.
    pub via: Option<Expansion>,
}

impl RetrievedChunk {
    /// The chunk as `codegloss query --json` lists it, and as the browser's
    /// engine reports it for the parity check: id, role, location, symbol
    /// and chunk type, the entity's gloss when `gloss` is set, then the
    /// diagnostics (sources, score parts, the edge that brought it in).
    pub fn to_json(&self, corpus: &Corpus, gloss: bool) -> serde_json::Value {
        serde_json::to_value(self.row(corpus, gloss)).unwrap_or_default()
    }

    /// [`RetrievedChunk::to_json`]'s fields, typed: the browser's engine
    /// writes them as JSON without a `serde_json::Value` (a search module
    /// without one is smaller, and it is fetched before the first
    /// results).
    pub fn row<'a>(&'a self, corpus: &'a Corpus, gloss: bool) -> ChunkRow<'a> {
        let c = &corpus.data.chunks[self.chunk as usize];
        let e = corpus.named(c.entity);
        ChunkRow {
            chunk: self.chunk,
            chunk_type: c.chunk_type.as_str(),
            end_line: Some(c.end_line),
            gloss: gloss.then_some(e.gloss.text.as_str()),
            path: &c.path,
            role: self.role.as_str(),
            score: self.score,
            sources: &self.sources,
            start_line: Some(c.start_line),
            symbol: &e.qualified_name,
            via: self.via.as_ref(),
        }
    }
}

/// A retrieved chunk as `codegloss query --json` and the browser list it
/// ([`RetrievedChunk::row`]). The fields are in name order, the order a
/// `serde_json::Value` object writes them in, so both write the same text.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct ChunkRow<'a> {
    /// Chunk id.
    pub chunk: u32,
    /// Chunk type.
    pub chunk_type: &'a str,
    /// Last line; `None` (left out) where the browser has no lines yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u32>,
    /// The entity's gloss, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gloss: Option<&'a str>,
    /// File path.
    pub path: &'a str,
    /// Role.
    pub role: &'a str,
    /// Score parts.
    pub score: ScoreParts,
    /// Candidate sources.
    pub sources: &'a [Source],
    /// First line; `None` (left out) where the browser has no lines yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
    /// The entity's qualified name.
    pub symbol: &'a str,
    /// How an expansion or supplementary chunk was reached.
    pub via: Option<&'a Expansion>,
}

/// The result of retrieval with its diagnostics.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Retrieval {
    /// The router's decision.
    pub route: Route,
    /// The signals read off the question.
    pub signals: QuerySignals,
    /// Final context in rank order.
    pub chunks: Vec<RetrievedChunk>,
    /// Candidates considered.
    pub candidates: usize,
    /// Chunks dropped by the noise filter and the final-context filter.
    pub dropped: Vec<(u32, String)>,
    /// The question's distance to every chunk of the final context's files
    /// (empty without a query vector): the answer context shows the parts
    /// of a long unit nearest the question by meaning
    /// (`answer::context`), which the question's words alone miss.
    #[serde(skip)]
    pub file_distances: BTreeMap<u32, f32>,
}

impl Retrieval {
    /// Distinct file paths of the final context, in order of first appearance.
    pub fn files<'a>(&self, corpus: &'a Corpus) -> Vec<&'a str> {
        let mut out: Vec<&str> = Vec::new();
        for c in &self.chunks {
            let p = corpus.data.chunks[c.chunk as usize].path.as_str();
            if !out.contains(&p) {
                out.push(p);
            }
        }
        out
    }

    /// Estimated tokens of the final context (code and glosses), a report
    /// of the native index: a web corpus does not carry the estimates and
    /// gives 0.
    pub fn context_tokens(&self, corpus: &Corpus) -> usize {
        self.chunks
            .iter()
            .map(|c| corpus.features.of(c.chunk).tokens as usize)
            .sum()
    }
}

fn is_noise(c: &Chunk) -> bool {
    matches!(c.scope, Scope::Test | Scope::Build) || c.source_type == Some(SourceType::Build)
}

fn is_callable_chunk(corpus: &Corpus, c: &Chunk) -> bool {
    corpus.data.entities[c.entity as usize].kind.is_callable()
}

/// The question's distance to every chunk of the files `chunks` come
/// from, as dense retrieval measures it (exact, or under a probe the same
/// estimates the browser has).
fn file_distances(
    corpus: &Corpus,
    chunks: &[RetrievedChunk],
    dense: &Dense<'_>,
) -> BTreeMap<u32, f32> {
    let mut out = BTreeMap::new();
    if dense.vector().is_none() {
        return out;
    }
    let mut files: Vec<u32> = chunks
        .iter()
        .filter_map(|rc| corpus.file_of_chunk(rc.chunk))
        .collect();
    crate::sort::sort_values(&mut files);
    files.dedup();
    for f in files {
        for &c in corpus.chunks_of_file(f) {
            if let Some(d) = dense.distance(c) {
                out.insert(c, d);
            }
        }
    }
    out
}

/// Run the whole retrieval pipeline for a question. `query_vector` is the
/// question embedded through [`crate::embed::query_prompt`] by the index's
/// model; `None` runs keyword and structural retrieval only.
pub fn retrieve(
    corpus: &Corpus,
    question: &str,
    query_vector: Option<&[f32]>,
    settings: &RetrievalSettings,
) -> Result<Retrieval, CoreError> {
    let mut signals = QuerySignals::extract(question, corpus);
    if settings.expand_acronyms {
        signals.expand_acronyms(question, corpus);
    }
    let route = route(question, &signals);
    let first = Dense::new(corpus, query_vector, settings)?;
    let feedback = pool::dense_feedback(&first, settings)?;
    let dense = match feedback.as_deref() {
        Some(moved) => Dense::new(corpus, Some(moved), settings)?,
        None => first,
    };

    let (mut pool, bm25) = pool::gather(corpus, &signals, &route, &dense, settings)?;
    let candidates = pool.len();
    rerank::rerank(corpus, &mut pool, &signals, &route, &dense, &bm25, settings);

    let mut dropped: Vec<(u32, String)> = Vec::new();
    let keep_noise = filter::keeps_noise(&signals, settings);
    if !keep_noise {
        filter::drop_noise(corpus, &mut pool, &mut dropped);
    }

    let mut chosen = select::primaries(corpus, &pool, settings);
    let budget = expand::budget(route.mode, settings);
    let expansions = expand::structural(corpus, &chosen, route.mode, budget, keep_noise);
    chosen.extend(expansions);
    let supplementary =
        expand::supplementary(corpus, &chosen, &dense, &bm25.scores, settings, keep_noise);
    chosen.extend(supplementary);
    let chunks = filter::final_filter(corpus, chosen, &mut dropped);
    let file_distances = file_distances(corpus, &chunks, &dense);

    Ok(Retrieval {
        route,
        signals,
        chunks,
        candidates,
        dropped,
        file_distances,
    })
}
