//! The candidate pool of Table 3: the chunks the question names (files,
//! siblings, symbols, subject files, comparison sides, API call sites,
//! modules, the requested entity level), then the dense and BM25
//! candidates, each with every source that brought it in. Also the dense
//! pseudo-relevance feedback that moves the query vector before the dense
//! search.
//!
//! Injection order matters: a candidate keeps its first position in the
//! pool, and equal combined scores are ordered by chunk id only later, so
//! the order here is part of the ranking.

use std::collections::{BTreeMap, BTreeSet};

use super::dense::Dense;
use super::{is_callable_chunk, is_noise, Corpus, Route, ScoreParts, Source};
use super::{QuerySignals, RetrievalSettings};
use crate::error::CoreError;
use crate::lexical::QueryScorer;
use crate::model::EntityKind;
use crate::query::Intent;
use crate::sort::sort_by;

/// Subject files (files whose base name the question is about) injected
/// at most.
const SUBJECT_FILE_INJECTIONS: usize = 4;
/// Literal API call sites injected at most.
const API_CALL_SITE_INJECTIONS: usize = 3;
/// Modules named in the question injected at most.
const MODULE_INJECTIONS: usize = 2;
/// Chunks of the requested entity level injected at most.
const TARGET_ALIGNED_INJECTIONS: usize = 2;
/// How far a chunk's normalised BM25 share lowers its distance when the
/// target-aligned candidates are ordered.
const TARGET_ALIGNED_BM25_WEIGHT: f32 = 0.3;
/// Distance assumed for an injected symbol, comparison side or call site
/// when there is no query vector (or no vector for the chunk).
const INJECTION_DEFAULT_DISTANCE: f32 = 1.0;
/// Distance assumed for a target-aligned candidate without a distance:
/// beyond any unit-vector neighbour, so keyword evidence decides.
const TARGET_ALIGNED_DEFAULT_DISTANCE: f32 = 2.0;
/// Rank of an exact symbol whose file, class or qualified name the
/// question also mentions.
const SYMBOL_CONTEXT_RANK: i32 = 4;
/// Rank of an exact symbol that is a definition.
const SYMBOL_DEFINITION_RANK: i32 = 2;
/// Rank lost by an exact symbol in test or build code.
const SYMBOL_NOISE_RANK: i32 = 3;
/// Added to the distance of a comparison side that is neither a file nor
/// a record (a function of the same name is a weaker anchor).
const COMPARISON_NON_RECORD_DISTANCE: f32 = 0.5;
/// Added to the distance of test or build code when ordering comparison
/// sides and API call sites.
const NOISE_DISTANCE: f32 = 1.0;
/// Lower bound of the best BM25 score used to normalise BM25 shares.
pub(super) const BM25_MAX_FLOOR: f32 = 1e-6;
/// The best BM25 score taken when no chunk matches a question token.
const BM25_MAX_WITHOUT_MATCHES: f32 = 1.0;
/// Lower bound of the feedback vector's norm before renormalising.
const NORM_FLOOR: f32 = 1e-12;

/// One candidate of the pool.
pub(super) struct Candidate {
    pub(super) chunk: u32,
    pub(super) sources: Vec<Source>,
    pub(super) dense_rank: Option<usize>,
    pub(super) bm25_rank: Option<usize>,
    pub(super) score: ScoreParts,
}

/// The BM25 scores in two stages ([`crate::lexical::coarse_code`]):
/// coarse ones of every chunk, which choose the pool's keyword candidates,
/// order target-aligned and supplementary chunks and weigh whole files,
/// and fine ones of the pool's candidates, which re-ranking scores them
/// with.
pub(super) struct Bm25 {
    /// Coarse score of every chunk, by chunk id.
    pub(super) scores: Vec<f32>,
    /// The best coarse score (at least [`BM25_MAX_FLOOR`];
    /// [`BM25_MAX_WITHOUT_MATCHES`] when nothing matches).
    pub(super) max: f32,
    /// Fine scores by chunk id, of the candidates that match a token.
    fine: BTreeMap<u32, f32>,
    /// The best fine score (floored as `max`).
    fine_max: f32,
}

impl Bm25 {
    /// Fine scores of the pool's candidates, with their best. A chunk's
    /// fine length loads with its names ([`Corpus::length_code_of`]), which
    /// re-ranking reads of every candidate anyway; the other chunks of a
    /// candidate's file (file evidence) keep their coarse scores, since a
    /// file chunk's names ride in the search shard and reading its file's
    /// fine lengths would fetch that file's names for them alone (IPPL,
    /// 100 questions, measured: the first question's name shards 3.8 ->
    /// 7.2 KB).
    fn refine(&mut self, corpus: &Corpus, scorer: &QueryScorer<'_>, pool: &[Candidate]) {
        for c in pool.iter().map(|c| c.chunk) {
            if self.scores.get(c as usize).is_some_and(|&s| s > 0.0) {
                self.fine
                    .insert(c, scorer.fine_score(c, corpus.length_code_of(c)));
            }
        }
        self.fine_max = self
            .fine
            .values()
            .copied()
            .reduce(f32::max)
            .unwrap_or(BM25_MAX_WITHOUT_MATCHES)
            .max(BM25_MAX_FLOOR);
    }

    /// Chunk `chunk`'s fine score over the best fine score: 0 for a chunk
    /// [`Bm25::refine`] was not given or that matches nothing.
    pub(super) fn fine_share(&self, chunk: u32) -> f32 {
        self.fine.get(&chunk).map_or(0.0, |s| s / self.fine_max)
    }

    /// Chunk `chunk`'s fine score (0 as for [`Bm25::fine_share`]).
    pub(super) fn fine(&self, chunk: u32) -> f32 {
        self.fine.get(&chunk).copied().unwrap_or(0.0)
    }
}

/// The pool being built: candidates in order of first injection.
struct Pool {
    candidates: Vec<Candidate>,
    index_of: BTreeMap<u32, usize>,
    chunks: usize,
}

impl Pool {
    /// Add `source` to the candidate of `chunk` (adding the candidate when
    /// new); its position, or `None` for a chunk outside the index.
    fn add(&mut self, chunk: u32, source: Source) -> Option<usize> {
        if chunk as usize >= self.chunks {
            return None;
        }
        Some(match self.index_of.get(&chunk) {
            Some(&i) => {
                if !self.candidates[i].sources.contains(&source) {
                    self.candidates[i].sources.push(source);
                }
                i
            }
            None => {
                self.index_of.insert(chunk, self.candidates.len());
                self.candidates.push(Candidate {
                    chunk,
                    sources: vec![source],
                    dense_rank: None,
                    bm25_rank: None,
                    score: ScoreParts::default(),
                });
                self.candidates.len() - 1
            }
        })
    }
}

/// Gather the candidate pool (Table 3) and the BM25 scores it was built
/// from.
pub(super) fn gather(
    corpus: &Corpus,
    signals: &QuerySignals,
    route: &Route,
    dense: &Dense<'_>,
    settings: &RetrievalSettings,
) -> Result<(Vec<Candidate>, Bm25), CoreError> {
    let mut pool = Pool {
        candidates: Vec::new(),
        index_of: BTreeMap::new(),
        chunks: corpus.data.chunks.len(),
    };
    named_files(&mut pool, corpus, signals);
    if route.intent == Intent::Comparison {
        comparison_sides(&mut pool, corpus, signals, dense);
    } else {
        exact_symbols(&mut pool, corpus, signals, dense, settings);
        for &f in signals.subject_files.iter().take(SUBJECT_FILE_INJECTIONS) {
            if let Some(c) = corpus.file_chunk(f) {
                pool.add(c, Source::SubjectFile);
            }
        }
    }
    api_call_sites(&mut pool, corpus, signals, route, dense);
    for &m in signals.modules.iter().take(MODULE_INJECTIONS) {
        if let Some(c) = corpus.first_chunk(m) {
            pool.add(c, Source::ModuleName);
        }
    }

    // Dense and keyword candidates.
    let nearest = dense.search(settings.candidate_k)?;
    let scorer = corpus.lexical.scorer(&signals.tokens);
    let scores = scorer.coarse_scores();
    let mut bm25: Vec<(u32, f32)> = scores
        .iter()
        .enumerate()
        .filter(|(_, s)| **s > 0.0)
        .map(|(i, s)| (i as u32, *s))
        .collect();
    crate::sort::sort_long_by(&mut bm25, |a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    bm25.truncate(settings.bm25_k);
    let mut bm25_scores = Bm25 {
        max: bm25
            .first()
            .map_or(BM25_MAX_WITHOUT_MATCHES, |x| x.1)
            .max(BM25_MAX_FLOOR),
        scores,
        fine: BTreeMap::new(),
        fine_max: BM25_MAX_WITHOUT_MATCHES,
    };

    target_aligned(
        &mut pool,
        corpus,
        signals,
        route,
        dense,
        &bm25_scores,
        settings,
    );
    for (rank, &(c, _)) in nearest.iter().enumerate() {
        if let Some(i) = pool.add(c, Source::Semantic) {
            pool.candidates[i].dense_rank = Some(rank);
        }
    }
    for (rank, &(c, _)) in bm25.iter().enumerate() {
        if let Some(i) = pool.add(c, Source::Bm25) {
            pool.candidates[i].bm25_rank = Some(rank);
        }
    }
    bm25_scores.refine(corpus, &scorer, &pool.candidates);
    Ok((pool.candidates, bm25_scores))
}

/// Exact file names, with siblings (section 3.2.6).
fn named_files(pool: &mut Pool, corpus: &Corpus, signals: &QuerySignals) {
    for m in &signals.exact_filenames {
        for &f in &m.exact {
            if let Some(c) = corpus.file_chunk(f) {
                pool.add(c, Source::ExactFilename);
            }
        }
        for &f in &m.siblings {
            if let Some(c) = corpus.file_chunk(f) {
                pool.add(c, Source::SiblingFile);
            }
        }
    }
}

/// Exact symbols: at most `max_symbol_injections`, preferring those whose
/// file or class is also mentioned.
fn exact_symbols(
    pool: &mut Pool,
    corpus: &Corpus,
    signals: &QuerySignals,
    dense: &Dense<'_>,
    settings: &RetrievalSettings,
) {
    let data = &corpus.data;
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
        for &e in corpus.symbols(sym).into_iter().flatten() {
            let ent = corpus.named(e);
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
            let rank = i32::from(context) * SYMBOL_CONTEXT_RANK
                + definition * SYMBOL_DEFINITION_RANK
                - i32::from(is_noise(ch)) * SYMBOL_NOISE_RANK;
            let d = dense.distance(c).unwrap_or(INJECTION_DEFAULT_DISTANCE);
            found.push((-rank, d, c));
        }
    }
    sort_by(&mut found, |a, b| {
        a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2))
    });
    for (_, _, c) in found.into_iter().take(settings.max_symbol_injections) {
        pool.add(c, Source::ExactSymbol);
    }
}

/// Balanced comparison anchors: the best chunk for each side.
fn comparison_sides(pool: &mut Pool, corpus: &Corpus, signals: &QuerySignals, dense: &Dense<'_>) {
    let data = &corpus.data;
    for subject in &signals.comparison_subjects {
        let s_lower = subject.to_lowercase();
        let s_base = s_lower.rsplit('/').next().unwrap_or(&s_lower);
        let s_base = s_base.split('.').next().unwrap_or(s_base).to_string();
        // The chunks whose symbol is the subject, and those of the files
        // whose base name is, in chunk order.
        let mut named: Vec<u32> = corpus.chunks_named(&s_base).to_vec();
        for &f in corpus.by_base_name.get(&s_base).into_iter().flatten() {
            let file_chunks = corpus.file_entity[f as usize]
                .map_or(&[][..], |e| corpus.chunks_of_entity[e as usize].as_slice());
            named.extend(
                file_chunks
                    .iter()
                    .filter(|&&c| data.chunks[c as usize].base_name.to_lowercase() == s_base),
            );
        }
        crate::sort::sort_values(&mut named);
        named.dedup();
        let mut best: Option<(f32, u32)> = None;
        for c in named.into_iter().map(|c| &data.chunks[c as usize]) {
            let e = &data.entities[c.entity as usize];
            let prefer = if e.kind == EntityKind::File || e.kind.is_record() {
                0.0
            } else {
                COMPARISON_NON_RECORD_DISTANCE
            };
            let d = dense.distance(c.id).unwrap_or(INJECTION_DEFAULT_DISTANCE)
                + prefer
                + if is_noise(c) { NOISE_DISTANCE } else { 0.0 };
            if best.is_none_or(|(bd, _)| d < bd) {
                best = Some((d, c.id));
            }
        }
        if let Some((_, c)) = best {
            pool.add(c, Source::Comparison);
        }
    }
}

/// Literal API call sites, for API and location questions.
fn api_call_sites(
    pool: &mut Pool,
    corpus: &Corpus,
    signals: &QuerySignals,
    route: &Route,
    dense: &Dense<'_>,
) {
    if !matches!(
        route.intent,
        Intent::ApiUsage | Intent::LocationLookup | Intent::WorkflowExplanation
    ) || signals.api_terms.is_empty()
    {
        return;
    }
    let mut sites: Vec<(f32, u32)> = Vec::new();
    for c in &corpus.data.chunks {
        if !is_callable_chunk(corpus, c) {
            continue;
        }
        if signals
            .api_terms
            .iter()
            .any(|t| t.contains("::") && corpus.features.code_contains(c.id, t, true))
        {
            let d = dense.distance(c.id).unwrap_or(INJECTION_DEFAULT_DISTANCE)
                + if is_noise(c) && !signals.test_intent {
                    NOISE_DISTANCE
                } else {
                    0.0
                };
            sites.push((d, c.id));
        }
    }
    sort_by(&mut sites, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    for (_, c) in sites.into_iter().take(API_CALL_SITE_INJECTIONS) {
        pool.add(c, Source::ApiCallSite);
    }
}

/// Target-aligned candidates: the best chunks of the requested level.
fn target_aligned(
    pool: &mut Pool,
    corpus: &Corpus,
    signals: &QuerySignals,
    route: &Route,
    dense: &Dense<'_>,
    bm25: &Bm25,
    settings: &RetrievalSettings,
) {
    let Some(target) = route.entity_target else {
        return;
    };
    let data = &corpus.data;
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
            let d = dense
                .distance(c.id)
                .unwrap_or(TARGET_ALIGNED_DEFAULT_DISTANCE);
            let b = bm25.scores[c.id as usize] / bm25.max;
            (d - TARGET_ALIGNED_BM25_WEIGHT * b, c.id)
        })
        .collect();
    sort_by(&mut aligned, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    for (_, c) in aligned.into_iter().take(TARGET_ALIGNED_INJECTIONS) {
        pool.add(c, Source::TargetAligned);
    }
}

/// The query vector moved towards the mean of its nearest chunks
/// (Rocchio feedback on the vectors alone, so the browser computes the same
/// vector from the same shards), renormalised. None when off or without
/// vectors.
pub(super) fn dense_feedback(
    dense: &Dense<'_>,
    settings: &RetrievalSettings,
) -> Result<Option<Vec<f32>>, CoreError> {
    let Some(q) = dense.vector() else {
        return Ok(None);
    };
    if settings.dense_feedback_docs == 0 {
        return Ok(None);
    }
    let docs: Vec<&[f32]> = dense
        .search(settings.dense_feedback_docs)?
        .into_iter()
        .filter_map(|(c, _)| dense.stored(c))
        .collect();
    if docs.is_empty() {
        return Ok(None);
    }
    let w = settings.dense_feedback_weight / docs.len() as f32;
    let mut out = q.to_vec();
    for d in &docs {
        for (o, x) in out.iter_mut().zip(d.iter()) {
            *o += w * x;
        }
    }
    let norm = out
        .iter()
        .map(|x| x * x)
        .sum::<f32>()
        .sqrt()
        .max(NORM_FLOOR);
    out.iter_mut().for_each(|x| *x /= norm);
    Ok(Some(out))
}
