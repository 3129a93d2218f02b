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

pub mod baseline;
pub mod corpus;
pub mod features;
pub mod router;
pub mod settings;
pub mod signals;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

pub use corpus::Corpus;
pub use router::{route, EntityTarget, ExpansionMode, Route};
pub use settings::{Fusion, RetrievalSettings};
pub use signals::QuerySignals;

use crate::error::CoreError;
use crate::model::{Chunk, EdgeKind, EntityKind, GlossSource, Scope, SourceType};
use crate::query::Intent;
use signals::name_parts;

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
        let c = &corpus.data.chunks[self.chunk as usize];
        let e = &corpus.data.entities[c.entity as usize];
        let mut m = serde_json::Map::new();
        m.insert("chunk".into(), self.chunk.into());
        m.insert("role".into(), self.role.as_str().into());
        m.insert("path".into(), c.path.as_str().into());
        m.insert("start_line".into(), c.start_line.into());
        m.insert("end_line".into(), c.end_line.into());
        m.insert("symbol".into(), e.qualified_name.as_str().into());
        m.insert("chunk_type".into(), c.chunk_type.as_str().into());
        if gloss {
            m.insert("gloss".into(), e.gloss.text.as_str().into());
        }
        let value = |v: serde_json::Result<serde_json::Value>| v.unwrap_or_default();
        m.insert("sources".into(), value(serde_json::to_value(&self.sources)));
        m.insert("score".into(), value(serde_json::to_value(self.score)));
        m.insert("via".into(), value(serde_json::to_value(&self.via)));
        serde_json::Value::Object(m)
    }
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

    /// Estimated tokens of the final context (code and glosses).
    pub fn context_tokens(&self, corpus: &Corpus) -> usize {
        self.chunks
            .iter()
            .map(|c| corpus.features.of(c.chunk).tokens as usize)
            .sum()
    }
}

struct Candidate {
    chunk: u32,
    sources: Vec<Source>,
    dense_rank: Option<usize>,
    bm25_rank: Option<usize>,
    score: ScoreParts,
}

fn is_noise(c: &Chunk) -> bool {
    matches!(c.scope, Scope::Test | Scope::Build) || c.source_type == Some(SourceType::Build)
}

fn is_callable_chunk(corpus: &Corpus, c: &Chunk) -> bool {
    corpus.data.entities[c.entity as usize].kind.is_callable()
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
    let data = &corpus.data;
    let feedback = dense_feedback(corpus, query_vector, settings)?;
    let query_vector = feedback.as_deref().or(query_vector);

    // ---- candidate pool (Table 3) ----
    let mut pool: Vec<Candidate> = Vec::new();
    let mut index_of: BTreeMap<u32, usize> = BTreeMap::new();
    let mut add = |pool: &mut Vec<Candidate>, chunk: u32, source: Source| -> Option<usize> {
        if chunk as usize >= data.chunks.len() {
            return None;
        }
        Some(match index_of.get(&chunk) {
            Some(&i) => {
                if !pool[i].sources.contains(&source) {
                    pool[i].sources.push(source);
                }
                i
            }
            None => {
                index_of.insert(chunk, pool.len());
                pool.push(Candidate {
                    chunk,
                    sources: vec![source],
                    dense_rank: None,
                    bm25_rank: None,
                    score: ScoreParts::default(),
                });
                pool.len() - 1
            }
        })
    };
    let comparison = route.intent == Intent::Comparison;

    // Exact file names, with siblings (section 3.2.6).
    for m in &signals.exact_filenames {
        for &f in &m.exact {
            if let Some(c) = corpus.file_chunk(f) {
                add(&mut pool, c, Source::ExactFilename);
            }
        }
        for &f in &m.siblings {
            if let Some(c) = corpus.file_chunk(f) {
                add(&mut pool, c, Source::SiblingFile);
            }
        }
    }
    // Exact symbols: at most `max_symbol_injections`, preferring those whose
    // file or class is also mentioned.
    if !comparison {
        let mentioned: BTreeSet<String> = signals
            .exact_symbols
            .iter()
            .map(|s| s.to_lowercase())
            .chain(signals.exact_filenames.iter().map(|m| {
                let n = m
                    .written
                    .rsplit('/')
                    .next()
                    .unwrap_or(&m.written)
                    .to_lowercase();
                n.split('.').next().unwrap_or(&n).to_string()
            }))
            .collect();
        let mut found: Vec<(i32, f32, u32)> = Vec::new();
        for sym in &signals.exact_symbols {
            for &e in corpus.by_symbol.get(sym).into_iter().flatten() {
                let ent = &data.entities[e as usize];
                let Some(c) = corpus.first_chunk(e) else {
                    continue;
                };
                let ch = &data.chunks[c as usize];
                let context = mentioned.contains(&ch.base_name.to_lowercase())
                    || ent
                        .class_name
                        .as_ref()
                        .is_some_and(|k| mentioned.contains(&k.to_lowercase()))
                    || signals
                        .qualified_symbols
                        .iter()
                        .any(|q| ent.qualified_name.ends_with(q.as_str()));
                let definition = i32::from(ent.is_definition);
                let rank = i32::from(context) * 4 + definition * 2 - i32::from(is_noise(ch)) * 3;
                let d = corpus.distance(query_vector, c).unwrap_or(1.0);
                found.push((-rank, d, c));
            }
        }
        found.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2)));
        for (_, _, c) in found.into_iter().take(settings.max_symbol_injections) {
            add(&mut pool, c, Source::ExactSymbol);
        }
        // Subject files.
        for &f in signals.subject_files.iter().take(4) {
            if let Some(c) = corpus.file_chunk(f) {
                add(&mut pool, c, Source::SubjectFile);
            }
        }
    } else {
        // Balanced comparison anchors: the best chunk for each side.
        for subject in &signals.comparison_subjects {
            let s_lower = subject.to_lowercase();
            let s_base = s_lower.rsplit('/').next().unwrap_or(&s_lower);
            let s_base = s_base.split('.').next().unwrap_or(s_base).to_string();
            let mut best: Option<(f32, u32)> = None;
            for c in &data.chunks {
                let e = &data.entities[c.entity as usize];
                let names = c.symbol_name.to_lowercase() == s_base
                    || (e.kind == EntityKind::File && c.base_name.to_lowercase() == s_base);
                if !names {
                    continue;
                }
                let prefer = if e.kind == EntityKind::File || e.kind.is_record() {
                    0.0
                } else {
                    0.5
                };
                let d = corpus.distance(query_vector, c.id).unwrap_or(1.0)
                    + prefer
                    + if is_noise(c) { 1.0 } else { 0.0 };
                if best.is_none_or(|(bd, _)| d < bd) {
                    best = Some((d, c.id));
                }
            }
            if let Some((_, c)) = best {
                add(&mut pool, c, Source::Comparison);
            }
        }
    }
    // Literal API call sites, for API and location questions.
    if matches!(
        route.intent,
        Intent::ApiUsage | Intent::LocationLookup | Intent::WorkflowExplanation
    ) && !signals.api_terms.is_empty()
    {
        let mut sites: Vec<(f32, u32)> = Vec::new();
        for c in &data.chunks {
            if !is_callable_chunk(corpus, c) {
                continue;
            }
            if signals
                .api_terms
                .iter()
                .any(|t| t.contains("::") && corpus.features.code_contains(c.id, t, true))
            {
                let d = corpus.distance(query_vector, c.id).unwrap_or(1.0)
                    + if is_noise(c) && !signals.test_intent {
                        1.0
                    } else {
                        0.0
                    };
                sites.push((d, c.id));
            }
        }
        sites.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for (_, c) in sites.into_iter().take(3) {
            add(&mut pool, c, Source::ApiCallSite);
        }
    }
    // Modules named in the question.
    for &m in signals.modules.iter().take(2) {
        if let Some(c) = corpus.first_chunk(m) {
            add(&mut pool, c, Source::ModuleName);
        }
    }

    // Dense and keyword candidates.
    let mut dense: Vec<(u32, f32)> = Vec::new();
    if let (Some(v), Some(q)) = (&corpus.vectors, query_vector) {
        for h in v.search(q, settings.candidate_k, settings.exact_search_below)? {
            dense.push((h.chunk, h.distance));
        }
    }
    let bm25_scores = corpus.lexical.scores(&signals.tokens);
    let mut bm25: Vec<(u32, f32)> = bm25_scores
        .iter()
        .enumerate()
        .filter(|(_, s)| **s > 0.0)
        .map(|(i, s)| (i as u32, *s))
        .collect();
    bm25.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    bm25.truncate(settings.bm25_k);
    let bm25_max = bm25.first().map_or(1.0, |x| x.1).max(1e-6);

    // Target-aligned candidates: the best chunks of the requested level.
    if let Some(target) = route.entity_target {
        let mut aligned: Vec<(f32, u32)> = data
            .chunks
            .iter()
            .filter(|c| target.matches(data.entities[c.entity as usize].kind))
            .filter(|c| {
                !settings.filter_test_build_noise
                    || !is_noise(c)
                    || signals.test_intent
                    || signals.build_intent
            })
            .map(|c| {
                let d = corpus.distance(query_vector, c.id).unwrap_or(2.0);
                let b = bm25_scores[c.id as usize] / bm25_max;
                (d - 0.3 * b, c.id)
            })
            .collect();
        aligned.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for (_, c) in aligned.into_iter().take(2) {
            add(&mut pool, c, Source::TargetAligned);
        }
    }
    for (rank, &(c, _)) in dense.iter().enumerate() {
        if let Some(i) = add(&mut pool, c, Source::Semantic) {
            pool[i].dense_rank = Some(rank);
        }
    }
    for (rank, &(c, _)) in bm25.iter().enumerate() {
        if let Some(i) = add(&mut pool, c, Source::Bm25) {
            pool[i].bm25_rank = Some(rank);
        }
    }
    let candidates = pool.len();

    // ---- rerank (Listing 12) ----
    for cand in &mut pool {
        let c = &data.chunks[cand.chunk as usize];
        let distance = corpus.distance(query_vector, cand.chunk);
        let bm = bm25_scores[cand.chunk as usize];
        let semantic = match settings.fusion {
            Fusion::Score => distance.map_or(0.0, |d| 1.0 / (1.0 + d.max(0.0))),
            Fusion::Rrf => {
                let r = |rank: Option<usize>| {
                    rank.map_or(0.0, |r| 1.0 / (settings.rrf_k + r as f32 + 1.0))
                };
                (r(cand.dense_rank) + r(cand.bm25_rank)) * settings.rrf_k
            }
        };
        let (lexical, penalty) =
            lexical_score(corpus, c, cand, &signals, &route, bm / bm25_max, settings);
        let target = target_score(corpus, c, &route);
        let combined = semantic
            + settings.lexical_metadata_weight * lexical
            + settings.entity_target_weight * target;
        cand.score = ScoreParts {
            distance,
            semantic,
            lexical,
            target,
            bm25: bm,
            penalty,
            combined,
        };
    }
    pool.sort_by(|a, b| {
        b.score
            .combined
            .total_cmp(&a.score.combined)
            .then(a.chunk.cmp(&b.chunk))
    });

    // ---- test/build noise filter (section 3.3.3) ----
    let mut dropped: Vec<(u32, String)> = Vec::new();
    let keep_noise =
        signals.test_intent || signals.build_intent || !settings.filter_test_build_noise;
    if !keep_noise {
        pool.retain(|cand| {
            let c = &data.chunks[cand.chunk as usize];
            let named = cand.sources.contains(&Source::ExactFilename);
            if is_noise(c) && !named {
                dropped.push((cand.chunk, "test/build noise".into()));
                false
            } else {
                true
            }
        });
    }

    // ---- primary selection (Table 2) ----
    let primary = select_primary(corpus, &pool, settings);
    let mut chosen: Vec<RetrievedChunk> = primary
        .iter()
        .map(|&i| RetrievedChunk {
            chunk: pool[i].chunk,
            role: Role::Primary,
            sources: pool[i].sources.clone(),
            score: pool[i].score,
            via: None,
        })
        .collect();
    // Exact-filename safeguard: named files are always in the primary set,
    // first.
    let mut named: Vec<RetrievedChunk> = Vec::new();
    for cand in &pool {
        if cand.sources.contains(&Source::ExactFilename)
            && !chosen.iter().any(|c| c.chunk == cand.chunk)
        {
            named.push(RetrievedChunk {
                chunk: cand.chunk,
                role: Role::Primary,
                sources: cand.sources.clone(),
                score: cand.score,
                via: None,
            });
        }
    }
    if !named.is_empty() {
        named.extend(chosen);
        chosen = named;
    }

    // ---- structural expansion (section 3.3.4) ----
    let budget = match route.mode {
        ExpansionMode::ApiUsage => settings.expansion_api_usage,
        ExpansionMode::Minimal => settings.expansion_minimal,
        ExpansionMode::Balanced => settings.expansion_balanced,
        ExpansionMode::Broad => settings.expansion_broad,
    };
    let expansions = expand(corpus, &chosen, route.mode, budget, keep_noise);
    chosen.extend(expansions);

    // ---- supplementary retrieval from referenced files ----
    let supplementary = supplementary(
        corpus,
        &chosen,
        query_vector,
        &bm25_scores,
        settings,
        keep_noise,
    );
    chosen.extend(supplementary);

    // ---- final-context filter (section 3.4) ----
    let chosen = final_filter(corpus, chosen, &mut dropped);

    Ok(Retrieval {
        route,
        signals,
        chunks: chosen,
        candidates,
        dropped,
    })
}

/// The lexical/metadata score and its penalty part.
/// The query vector moved towards the mean of its nearest chunks
/// (Rocchio feedback on the vectors alone, so the browser computes the same
/// vector from the same shards), renormalised. None when off or without
/// vectors.
fn dense_feedback(
    corpus: &Corpus,
    query: Option<&[f32]>,
    settings: &RetrievalSettings,
) -> Result<Option<Vec<f32>>, CoreError> {
    let (Some(v), Some(q)) = (&corpus.vectors, query) else {
        return Ok(None);
    };
    if settings.dense_feedback_docs == 0 {
        return Ok(None);
    }
    let hits = v.search(q, settings.dense_feedback_docs, settings.exact_search_below)?;
    let docs: Vec<Vec<f32>> = hits.iter().filter_map(|h| v.vector(h.chunk)).collect();
    if docs.is_empty() {
        return Ok(None);
    }
    let w = settings.dense_feedback_weight / docs.len() as f32;
    let mut out = q.to_vec();
    for d in &docs {
        for (o, x) in out.iter_mut().zip(d) {
            *o += w * x;
        }
    }
    let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    out.iter_mut().for_each(|x| *x /= norm);
    Ok(Some(out))
}

fn lexical_score(
    corpus: &Corpus,
    c: &Chunk,
    cand: &Candidate,
    s: &QuerySignals,
    route: &Route,
    bm25_share: f32,
    settings: &RetrievalSettings,
) -> (f32, f32) {
    let e = &corpus.data.entities[c.entity as usize];
    let mut score = 0.0f32;
    let file = e.file;
    for m in &s.exact_filenames {
        if file.is_some_and(|f| m.exact.contains(&f)) {
            score += if e.kind == EntityKind::File { 6.0 } else { 3.0 };
        } else if file.is_some_and(|f| m.siblings.contains(&f)) {
            score += if e.kind == EntityKind::File { 2.0 } else { 1.0 };
        }
    }
    if file.is_some_and(|f| s.subject_files.contains(&f)) {
        score += if e.kind == EntityKind::File { 2.0 } else { 1.0 };
    }
    let base_symbol = c.symbol_name.split('<').next().unwrap_or(&c.symbol_name);
    if s.exact_symbols.iter().any(|x| x == base_symbol) {
        score += 3.0;
        if s.qualified_symbols
            .iter()
            .any(|q| e.qualified_name.ends_with(q.as_str()))
        {
            score += 2.0;
        }
    }
    if e.class_name
        .as_ref()
        .is_some_and(|k| s.exact_symbols.iter().any(|x| x == k))
    {
        score += 1.0;
    }
    // Overlap of question tokens with path and symbol parts.
    let q: BTreeSet<&str> = s.tokens.iter().map(String::as_str).collect();
    let path_parts: BTreeSet<String> = c.path.split(['/', '.']).flat_map(name_parts).collect();
    let path_overlap = path_parts.iter().filter(|p| q.contains(p.as_str())).count() as f32;
    score += (0.4 * path_overlap).min(1.6);
    let sym_parts: BTreeSet<String> = name_parts(base_symbol).into_iter().collect();
    let sym_overlap = sym_parts.iter().filter(|p| q.contains(p.as_str())).count() as f32;
    score += (0.6 * sym_overlap).min(2.4);
    if !c.parent_symbol.is_empty()
        && c.parent_symbol
            .split("::")
            .any(|ns| q.contains(ns.to_lowercase().as_str()))
    {
        score += 0.3;
    }
    if s.asks_header && c.source_type == Some(SourceType::Header) {
        score += 0.5;
    }
    if s.asks_docs && c.source_type == Some(SourceType::Documentation) {
        score += 1.0;
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
        score += 1.5;
    }
    if route.intent == Intent::DataFlow {
        let flow = sym_parts
            .iter()
            .filter(|p| s.data_flow_terms.contains(p))
            .count() as f32;
        score += (0.8 * flow).min(1.6);
        if let Some((a, b)) = &s.data_flow_direction {
            if corpus.lexical.chunk_has_term(a, c.id) && corpus.lexical.chunk_has_term(b, c.id) {
                score += 0.5;
            }
        }
    }
    if route.intent == Intent::Comparison && cand.sources.contains(&Source::Comparison) {
        score += 2.0;
    }
    if cand.sources.iter().any(|x| x.injected()) {
        score += 0.5;
    }
    // Penalties.
    let mut penalty = 0.0;
    if base_symbol.chars().count() <= 2 && e.kind.level() == crate::model::EntityLevel::Symbol {
        penalty -= 2.0;
    }
    if matches!(c.scope, Scope::Test) && !s.test_intent {
        penalty -= if route.intent == Intent::LocationLookup {
            2.0
        } else {
            1.0
        };
    }
    if e.gloss.source == GlossSource::SkippedLowInformation {
        penalty -= 0.5;
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
            s += 1.5;
        }
    }
    for h in &route.chunk_type_hints {
        let ok = match h {
            crate::query::ChunkTypeHint::Function => kind.is_callable(),
            crate::query::ChunkTypeHint::Class => kind.is_record(),
            crate::query::ChunkTypeHint::Namespace => kind == EntityKind::Namespace,
            _ => false,
        };
        if ok {
            s += 0.5;
        }
    }
    s
}

/// Indices into the sorted pool of the primary chunks (Table 2).
fn select_primary(corpus: &Corpus, pool: &[Candidate], st: &RetrievalSettings) -> Vec<usize> {
    let data = &corpus.data;
    let Some(best) = pool.first().map(|c| c.score.combined) else {
        return Vec::new();
    };
    let mut out: Vec<usize> = Vec::new();
    let mut per_symbol: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut per_file: BTreeMap<String, usize> = BTreeMap::new();
    let mut last_accepted = best;
    let mut skipped: Vec<usize> = Vec::new();
    for (i, cand) in pool.iter().enumerate() {
        if out.len() >= st.k {
            break;
        }
        let s = cand.score.combined;
        let weak =
            s < st.primary_score_relative_floor * best || s < st.primary_score_absolute_floor;
        if out.len() >= st.primary_min {
            if last_accepted - s >= st.primary_score_gap_threshold && weak {
                break;
            }
            if s < st.primary_score_absolute_floor && s < st.primary_score_relative_floor * best {
                break;
            }
        }
        let c = &data.chunks[cand.chunk as usize];
        let kind = data.entities[c.entity as usize].kind;
        let sym_key = (
            c.path.clone(),
            c.symbol_name.split('_').next().unwrap_or("").to_string() + &c.entity.to_string(),
        );
        if per_symbol.get(&sym_key).copied().unwrap_or(0) >= st.primary_same_symbol_cap {
            skipped.push(i);
            continue;
        }
        if kind != EntityKind::File
            && per_file.get(&c.path).copied().unwrap_or(0) >= st.primary_same_file_cap
        {
            skipped.push(i);
            continue;
        }
        *per_symbol.entry(sym_key).or_default() += 1;
        if kind != EntityKind::File {
            *per_file.entry(c.path.clone()).or_default() += 1;
        }
        out.push(i);
        last_accepted = s;
    }
    // Dominant file: when most primaries come from one file, swap the
    // weakest of them for the best candidate from another file.
    if out.len() >= 3 {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for &i in &out {
            *counts
                .entry(data.chunks[pool[i].chunk as usize].path.as_str())
                .or_default() += 1;
        }
        if let Some((&dom, &n)) = counts.iter().max_by_key(|(_, n)| **n) {
            if n as f32 / out.len() as f32 > st.dominant_file_ratio {
                let other = pool
                    .iter()
                    .enumerate()
                    .find(|(i, c)| !out.contains(i) && data.chunks[c.chunk as usize].path != dom)
                    .map(|(i, _)| i);
                if let (Some(other), Some(pos)) = (
                    other,
                    out.iter()
                        .rposition(|&i| data.chunks[pool[i].chunk as usize].path == dom),
                ) {
                    out[pos] = other;
                }
            }
        }
    }
    out
}

/// Follow graph edges from the primary chunks, within the mode's budget.
fn expand(
    corpus: &Corpus,
    primary: &[RetrievedChunk],
    mode: ExpansionMode,
    budget: usize,
    keep_noise: bool,
) -> Vec<RetrievedChunk> {
    let data = &corpus.data;
    let mut have: BTreeSet<u32> = primary.iter().map(|c| c.chunk).collect();
    let mut out = Vec::new();
    // Rounds: first the most useful relation of every primary chunk, then
    // the next, so that one chunk does not take the whole budget.
    let relations: &[&str] = match mode {
        ExpansionMode::Minimal => &["sibling_file", "definition", "file"],
        ExpansionMode::ApiUsage => &["sibling_file", "definition", "call_chain", "file"],
        ExpansionMode::Balanced => &["sibling_file", "definition", "file", "class"],
        ExpansionMode::Broad => &[
            "sibling_file",
            "definition",
            "call_chain",
            "file",
            "callee",
            "module",
        ],
    };
    'outer: for rel in relations {
        for p in primary {
            if out.len() >= budget {
                break 'outer;
            }
            let c = &data.chunks[p.chunk as usize];
            let e = c.entity;
            let ent = &data.entities[e as usize];
            let targets: Vec<(u32, &str)> = match *rel {
                "definition" => corpus.out_edges[e as usize]
                    .iter()
                    .filter(|(k, _)| *k == EdgeKind::Defines)
                    .map(|(_, t)| (*t, "defines"))
                    .chain(
                        corpus.in_edges[e as usize]
                            .iter()
                            .filter(|(k, _)| *k == EdgeKind::Defines)
                            .map(|(_, t)| (*t, "defined_by")),
                    )
                    .collect(),
                // Header and implementation of the same name, joined by an
                // include edge (`X.h` includes `X.hpp`, `X.cpp` includes `X.h`).
                "sibling_file" => match ent.file {
                    Some(f) => {
                        let fe = corpus.file_entity[f as usize];
                        let base = &c.base_name;
                        fe.map(|fe| {
                            corpus.out_edges[fe as usize]
                                .iter()
                                .chain(corpus.in_edges[fe as usize].iter())
                                .filter(|(k, t)| {
                                    *k == EdgeKind::Includes
                                        && data.entities[*t as usize]
                                            .file
                                            .and_then(|tf| corpus.file_chunk(tf))
                                            .is_some_and(|tc| {
                                                &data.chunks[tc as usize].base_name == base
                                            })
                                })
                                .map(|(_, t)| (*t, "includes_same_name"))
                                .collect()
                        })
                        .unwrap_or_default()
                    }
                    None => Vec::new(),
                },
                "call_chain" => corpus
                    .call_chain_of
                    .get(&e)
                    .map(|&cc| vec![(cc, "summarized_by")])
                    .unwrap_or_default(),
                "file" => match (ent.kind, ent.file) {
                    (EntityKind::File | EntityKind::Module, _) => Vec::new(),
                    (_, Some(f)) => corpus.file_entity[f as usize]
                        .map(|fe| vec![(fe, "contained_in_file")])
                        .unwrap_or_default(),
                    _ => Vec::new(),
                },
                "class" => ent
                    .parent
                    .filter(|&p| data.entities[p as usize].kind.is_record())
                    .map(|p| vec![(p, "member_of")])
                    .unwrap_or_default(),
                "module" => {
                    let fe = if ent.kind == EntityKind::File {
                        Some(e)
                    } else {
                        None
                    };
                    fe.and_then(|fe| {
                        corpus.in_edges[fe as usize]
                            .iter()
                            .find(|(k, from)| {
                                *k == EdgeKind::Contains
                                    && data.entities[*from as usize].kind == EntityKind::Module
                            })
                            .map(|(_, m)| vec![(*m, "in_module")])
                    })
                    .unwrap_or_default()
                }
                "callee" => corpus.out_edges[e as usize]
                    .iter()
                    .filter(|(k, _)| *k == EdgeKind::Calls)
                    .take(1)
                    .map(|(_, t)| (*t, "calls"))
                    .collect(),
                _ => Vec::new(),
            };
            for (t, edge) in targets {
                let Some(tc) = corpus.first_chunk(t) else {
                    continue;
                };
                if have.contains(&tc) || (!keep_noise && is_noise(&data.chunks[tc as usize])) {
                    continue;
                }
                have.insert(tc);
                out.push(RetrievedChunk {
                    chunk: tc,
                    role: Role::StructuralExpansion,
                    sources: Vec::new(),
                    score: ScoreParts::default(),
                    via: Some(Expansion {
                        from_chunk: p.chunk,
                        edge: edge.to_string(),
                    }),
                });
                break;
            }
        }
    }
    out
}

/// Function-level chunks from files that the primary chunks reference
/// (includes, definitions, callees), closest to the query.
fn supplementary(
    corpus: &Corpus,
    chosen: &[RetrievedChunk],
    query_vector: Option<&[f32]>,
    bm25: &[f32],
    st: &RetrievalSettings,
    keep_noise: bool,
) -> Vec<RetrievedChunk> {
    let data = &corpus.data;
    let in_context: BTreeSet<u32> = chosen
        .iter()
        .filter_map(|c| corpus.file_of_chunk(c.chunk))
        .collect();
    let mut referenced: BTreeMap<u32, u32> = BTreeMap::new(); // file -> referencing chunk
    for p in chosen.iter().filter(|c| c.role == Role::Primary) {
        let c = &data.chunks[p.chunk as usize];
        if let Some(f) = corpus.file_of_chunk(p.chunk) {
            for inc in &data.files[f as usize].includes {
                if let Some(r) = inc.resolved {
                    referenced.entry(r).or_insert(p.chunk);
                }
            }
        }
        for (k, t) in &corpus.out_edges[c.entity as usize] {
            if matches!(k, EdgeKind::Calls | EdgeKind::Defines | EdgeKind::Inherits) {
                if let Some(f) = data.entities[*t as usize].file {
                    referenced.entry(f).or_insert(p.chunk);
                }
            }
        }
    }
    referenced.retain(|f, _| !in_context.contains(f));
    let bm_max = bm25.iter().copied().fold(0.0f32, f32::max).max(1e-6);
    let mut scored: Vec<(f32, u32, u32)> = Vec::new();
    for c in &data.chunks {
        let Some(f) = corpus.file_of_chunk(c.id) else {
            continue;
        };
        let Some(&from) = referenced.get(&f) else {
            continue;
        };
        if !is_callable_chunk(corpus, c) || (!keep_noise && is_noise(c)) {
            continue;
        }
        let d = corpus.distance(query_vector, c.id).unwrap_or(2.0);
        let s = 1.0 / (1.0 + d) + 0.5 * bm25[c.id as usize] / bm_max;
        scored.push((s, c.id, from));
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(st.supplementary_k)
        .map(|(s, chunk, from)| RetrievedChunk {
            chunk,
            role: Role::Supplementary,
            sources: Vec::new(),
            score: ScoreParts {
                combined: s,
                ..ScoreParts::default()
            },
            via: Some(Expansion {
                from_chunk: from,
                edge: "referenced_file".into(),
            }),
        })
        .collect()
}

/// Quality of a chunk for the final context (section 3.4).
fn quality(corpus: &Corpus, c: &Chunk) -> i32 {
    let e = &corpus.data.entities[c.entity as usize];
    let f = corpus.features.of(c.id);
    let mut q = 0;
    if e.gloss.source == GlossSource::Model {
        q += 2;
    } else if f.has_gloss {
        q += 1;
    }
    if f.documented {
        q += 1;
    }
    if matches!(
        e.kind,
        EntityKind::File | EntityKind::Module | EntityKind::CallChain
    ) {
        q += 2;
    }
    if f.nonblank_lines >= 3 {
        q += 1;
    }
    if e.gloss.source == GlossSource::SkippedLowInformation {
        q -= 2;
    }
    if is_trivial_declaration(corpus, c) {
        q -= 2;
    }
    q
}

fn is_trivial_declaration(corpus: &Corpus, c: &Chunk) -> bool {
    corpus.features.of(c.id).trivial_declaration
}

/// Drop weak, trivial chunks when a much better chunk from the same local
/// context (same file or same symbol) is present.
fn final_filter(
    corpus: &Corpus,
    chosen: Vec<RetrievedChunk>,
    dropped: &mut Vec<(u32, String)>,
) -> Vec<RetrievedChunk> {
    let data = &corpus.data;
    let q: Vec<i32> = chosen
        .iter()
        .map(|c| quality(corpus, &data.chunks[c.chunk as usize]))
        .collect();
    let mut keep = Vec::new();
    for (i, rc) in chosen.iter().enumerate() {
        let c = &data.chunks[rc.chunk as usize];
        let weak = q[i] <= 0
            && (data.entities[c.entity as usize].gloss.source
                == GlossSource::SkippedLowInformation
                || is_trivial_declaration(corpus, c));
        let better = chosen.iter().enumerate().any(|(j, other)| {
            let o = &data.chunks[other.chunk as usize];
            j != i
                && (o.path == c.path || o.symbol_name == c.symbol_name)
                && q[j] >= 2
                && q[j] - q[i] >= 3
        });
        if weak && better {
            dropped.push((
                rc.chunk,
                "final-context filter: trivial, better chunk from the same context".into(),
            ));
        } else {
            keep.push(rc.clone());
        }
    }
    keep
}
