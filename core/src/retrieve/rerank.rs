//! The metadata reranker of Listing 12: every candidate's semantic share
//! (score or reciprocal-rank fusion), its lexical/metadata score with
//! penalties, and its entity-target score, combined with the settings'
//! weights, plus the evidence of the candidate's whole file
//! (`file_evidence.rs`); the pool is then sorted by the combined score.
//!
//! The weights below are the paper's where it gives them and were tuned on
//! the IPPL benchmark otherwise; they are constants, not settings, because
//! the settings are written into every manifest.

use std::collections::BTreeSet;

use super::dense::{semantic_share, Dense};
use super::file_evidence::file_evidence;
use super::pool::{Bm25, Candidate};
use super::signals::name_parts;
use super::{Corpus, Fusion, QuerySignals, RetrievalSettings, Route, ScoreParts, Source};
use crate::model::{Chunk, EntityKind, EntityLevel, GlossSource, Scope, SourceType};
use crate::query::{ChunkTypeHint, Intent};
use crate::sort::sort_by;

/// A score that depends on whether the chunk is a whole file.
#[derive(Clone, Copy)]
struct FileOrMember {
    /// For a file-level chunk.
    file: f32,
    /// For any other chunk of the file.
    member: f32,
}

impl FileOrMember {
    fn of(self, kind: EntityKind) -> f32 {
        if kind == EntityKind::File {
            self.file
        } else {
            self.member
        }
    }
}

/// A chunk of a file named exactly in the question.
const EXACT_FILE: FileOrMember = FileOrMember {
    file: 6.0,
    member: 3.0,
};
/// A chunk of a sibling (same base name) of a named file.
const SIBLING_FILE: FileOrMember = FileOrMember {
    file: 2.0,
    member: 1.0,
};
/// A chunk of a subject file.
const SUBJECT_FILE: FileOrMember = FileOrMember {
    file: 2.0,
    member: 1.0,
};
/// The chunk's symbol is named exactly in the question.
const EXACT_SYMBOL: f32 = 3.0;
/// ... and its qualified name ends with a qualified name of the question.
const QUALIFIED_SYMBOL: f32 = 2.0;
/// The chunk's class is named exactly in the question.
const CLASS_NAMED: f32 = 1.0;
/// Per question token among the path's name parts.
const PATH_OVERLAP_PER_PART: f32 = 0.4;
/// At most this much for path overlap.
const PATH_OVERLAP_MAX: f32 = 1.6;
/// Per question token among the symbol's name parts.
const SYMBOL_OVERLAP_PER_PART: f32 = 0.6;
/// At most this much for symbol overlap.
const SYMBOL_OVERLAP_MAX: f32 = 2.4;
/// A namespace of the parent symbol is a question token.
const PARENT_NAMESPACE: f32 = 0.3;
/// A header, when the question asks for one.
const HEADER_ASKED: f32 = 0.5;
/// Documentation, when the question asks for it.
const DOCS_ASKED: f32 = 1.0;
/// Code that calls a qualified API term of an API or location question.
const API_CALL: f32 = 1.5;
/// Per data-flow term among the symbol's name parts.
const DATA_FLOW_PER_TERM: f32 = 0.8;
/// At most this much for data-flow terms.
const DATA_FLOW_MAX: f32 = 1.6;
/// The chunk holds both ends of the question's data-flow direction.
const DATA_FLOW_DIRECTION: f32 = 0.5;
/// A comparison side of a comparison question.
const COMPARISON_SIDE: f32 = 2.0;
/// Brought in by any injected source (not only dense or BM25).
const INJECTED: f32 = 0.5;
/// Symbols of at most this many characters are too short to trust.
const SHORT_SYMBOL_MAX_CHARS: usize = 2;
/// Penalty of a symbol-level chunk with such a short name.
const SHORT_SYMBOL_PENALTY: f32 = 2.0;
/// Penalty of test code for a location question that is not about tests.
const TEST_PENALTY_LOCATION: f32 = 2.0;
/// Penalty of test code for any other question not about tests.
const TEST_PENALTY: f32 = 1.0;
/// Penalty of a chunk whose gloss was skipped as low-information.
const LOW_INFORMATION_PENALTY: f32 = 0.5;
/// Target score of a chunk at the requested entity level.
const ENTITY_TARGET_MATCH: f32 = 1.5;
/// Target score per chunk-type hint the chunk matches.
const CHUNK_TYPE_HINT_MATCH: f32 = 0.5;

/// Score every candidate and sort the pool, best first (ties by chunk id).
pub(super) fn rerank(
    corpus: &Corpus,
    pool: &mut [Candidate],
    signals: &QuerySignals,
    route: &Route,
    dense: &Dense<'_>,
    bm25: &Bm25,
    settings: &RetrievalSettings,
) {
    let file_evidence = file_evidence(corpus, pool, route, dense, bm25);
    for (i, cand) in pool.iter_mut().enumerate() {
        let c = &corpus.data.chunks[cand.chunk as usize];
        let distance = dense.distance(cand.chunk);
        let bm = bm25.fine(cand.chunk);
        let semantic = match settings.fusion {
            Fusion::Score => distance.map_or(0.0, semantic_share),
            Fusion::Rrf => {
                let r = |rank: Option<usize>| {
                    rank.map_or(0.0, |r| 1.0 / (settings.rrf_k + r as f32 + 1.0))
                };
                (r(cand.dense_rank) + r(cand.bm25_rank)) * settings.rrf_k
            }
        };
        let (lexical, penalty) = lexical_score(
            corpus,
            c,
            cand,
            signals,
            route,
            bm25.fine_share(cand.chunk),
            settings,
        );
        let target = target_score(corpus, c, route);
        let file = file_evidence[i];
        let combined = semantic
            + settings.lexical_metadata_weight * lexical
            + settings.entity_target_weight * target
            + file;
        cand.score = ScoreParts {
            distance,
            semantic,
            lexical,
            target,
            file,
            bm25: bm,
            penalty,
            combined,
        };
    }
    sort_by(pool, |a, b| {
        b.score
            .combined
            .total_cmp(&a.score.combined)
            .then(a.chunk.cmp(&b.chunk))
    });
}

/// The lexical/metadata score and its penalty part.
fn lexical_score(
    corpus: &Corpus,
    c: &Chunk,
    cand: &Candidate,
    s: &QuerySignals,
    route: &Route,
    bm25_share: f32,
    settings: &RetrievalSettings,
) -> (f32, f32) {
    // Names of the chunk and its entity (read through the corpus, which
    // records them where names load on demand).
    let e = corpus.named(c.entity);
    let mut score = 0.0f32;
    let file = e.file;
    for m in &s.exact_filenames {
        if file.is_some_and(|f| m.exact.contains(&f)) {
            score += EXACT_FILE.of(e.kind);
        } else if file.is_some_and(|f| m.siblings.contains(&f)) {
            score += SIBLING_FILE.of(e.kind);
        }
    }
    if file.is_some_and(|f| s.subject_files.contains(&f)) {
        score += SUBJECT_FILE.of(e.kind);
    }
    let base_symbol = c.symbol_name.split('<').next().unwrap_or(&c.symbol_name);
    if s.exact_symbols.iter().any(|x| x == base_symbol) {
        score += EXACT_SYMBOL;
        if s.qualified_symbols
            .iter()
            .any(|q| e.qualified_name.ends_with(q.as_str()))
        {
            score += QUALIFIED_SYMBOL;
        }
    }
    if e.class_name
        .as_ref()
        .is_some_and(|k| s.exact_symbols.iter().any(|x| x == k))
    {
        score += CLASS_NAMED;
    }
    // Overlap of question tokens with path and symbol parts.
    let q: BTreeSet<&str> = s.tokens.iter().map(String::as_str).collect();
    let path_parts: BTreeSet<String> = c.path.split(['/', '.']).flat_map(name_parts).collect();
    let path_overlap = path_parts.iter().filter(|p| q.contains(p.as_str())).count() as f32;
    score += (PATH_OVERLAP_PER_PART * path_overlap).min(PATH_OVERLAP_MAX);
    let sym_parts: BTreeSet<String> = name_parts(base_symbol).into_iter().collect();
    let sym_overlap = sym_parts.iter().filter(|p| q.contains(p.as_str())).count() as f32;
    score += (SYMBOL_OVERLAP_PER_PART * sym_overlap).min(SYMBOL_OVERLAP_MAX);
    if !c.parent_symbol.is_empty()
        && c.parent_symbol
            .split("::")
            .any(|ns| q.contains(ns.to_lowercase().as_str()))
    {
        score += PARENT_NAMESPACE;
    }
    if s.asks_header && c.source_type == Some(SourceType::Header) {
        score += HEADER_ASKED;
    }
    if s.asks_docs && c.source_type == Some(SourceType::Documentation) {
        score += DOCS_ASKED;
    }
    if settings.fusion == Fusion::Score {
        score += settings.bm25_weight * bm25_share;
    }
    // Query-specific boosts.
    if matches!(route.intent, Intent::ApiUsage | Intent::LocationLookup)
        && s.api_terms
            .iter()
            .any(|t| t.contains("::") && corpus.features.code_contains(c.id, t, false))
    {
        score += API_CALL;
    }
    if route.intent == Intent::DataFlow {
        let flow = sym_parts
            .iter()
            .filter(|p| s.data_flow_terms.contains(p))
            .count() as f32;
        score += (DATA_FLOW_PER_TERM * flow).min(DATA_FLOW_MAX);
        if let Some((a, b)) = &s.data_flow_direction {
            if corpus.lexical.chunk_has_term(a, c.id) && corpus.lexical.chunk_has_term(b, c.id) {
                score += DATA_FLOW_DIRECTION;
            }
        }
    }
    if route.intent == Intent::Comparison && cand.sources.contains(&Source::Comparison) {
        score += COMPARISON_SIDE;
    }
    if cand.sources.iter().any(|x| x.injected()) {
        score += INJECTED;
    }
    // Penalties.
    let mut penalty = 0.0;
    if base_symbol.chars().count() <= SHORT_SYMBOL_MAX_CHARS
        && e.kind.level() == EntityLevel::Symbol
    {
        penalty -= SHORT_SYMBOL_PENALTY;
    }
    if matches!(c.scope, Scope::Test) && !s.test_intent {
        penalty -= if route.intent == Intent::LocationLookup {
            TEST_PENALTY_LOCATION
        } else {
            TEST_PENALTY
        };
    }
    if e.gloss.source == GlossSource::SkippedLowInformation {
        penalty -= LOW_INFORMATION_PENALTY;
    }
    (score + penalty, penalty)
}

/// How well a chunk's level matches the requested entity level and the
/// chunk-type hints.
fn target_score(corpus: &Corpus, c: &Chunk, route: &Route) -> f32 {
    let kind = corpus.data.entities[c.entity as usize].kind;
    let mut s = 0.0;
    if let Some(t) = route.entity_target {
        if t.matches(kind) {
            s += ENTITY_TARGET_MATCH;
        }
    }
    for h in &route.chunk_type_hints {
        let ok = match h {
            ChunkTypeHint::Function => kind.is_callable(),
            ChunkTypeHint::Class => kind.is_record(),
            ChunkTypeHint::Namespace => kind == EntityKind::Namespace,
            _ => false,
        };
        if ok {
            s += CHUNK_TYPE_HINT_MATCH;
        }
    }
    s
}
