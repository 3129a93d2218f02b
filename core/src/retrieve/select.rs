//! Primary selection with the gates of Table 2: walk the sorted pool while
//! the chunks' own scores (without their file's evidence) hold up
//! (relative and absolute floors, the score-gap cliff), cap chunks per
//! symbol group and per file, swap one primary out of a dominant file, and
//! put every exactly named file first.

use std::collections::BTreeMap;

use super::pool::Candidate;
use super::{Corpus, RetrievalSettings, RetrievedChunk, Role, Source};
use crate::model::EntityKind;

/// Diversify away from a dominant file only with at least this many
/// primaries.
const DOMINANT_FILE_MIN_PRIMARIES: usize = 3;

/// The primary chunks of the sorted pool: exactly named files first (the
/// exact-filename safeguard), then the selection of Table 2.
pub(super) fn primaries(
    corpus: &Corpus,
    pool: &[Candidate],
    settings: &RetrievalSettings,
) -> Vec<RetrievedChunk> {
    let primary = |cand: &Candidate| RetrievedChunk {
        chunk: cand.chunk,
        role: Role::Primary,
        sources: cand.sources.clone(),
        score: cand.score,
        via: None,
    };
    let chosen: Vec<RetrievedChunk> = select_primary(corpus, pool, settings)
        .iter()
        .map(|&i| primary(&pool[i]))
        .collect();
    // Exact-filename safeguard: named files are always in the primary set,
    // first.
    let mut named: Vec<RetrievedChunk> = pool
        .iter()
        .filter(|cand| {
            cand.sources.contains(&Source::ExactFilename)
                && !chosen.iter().any(|c| c.chunk == cand.chunk)
        })
        .map(primary)
        .collect();
    named.extend(chosen);
    named
}

/// Indices into the sorted pool of the primary chunks (Table 2).
fn select_primary(corpus: &Corpus, pool: &[Candidate], st: &RetrievalSettings) -> Vec<usize> {
    let data = &corpus.data;
    // The gates weigh a chunk by its own score: its file's evidence orders
    // the pool but lets no weak chunk of a strong file past a floor.
    let own = |c: &Candidate| c.score.combined - c.score.file;
    let Some(best) = pool.iter().map(own).reduce(f32::max) else {
        return Vec::new();
    };
    let mut out: Vec<usize> = Vec::new();
    let mut per_symbol: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut per_file: BTreeMap<String, usize> = BTreeMap::new();
    let mut last_accepted = best;
    for (i, cand) in pool.iter().enumerate() {
        if out.len() >= st.k {
            break;
        }
        let s = own(cand);
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
        let c = corpus.named_chunk(cand.chunk);
        let kind = data.entities[c.entity as usize].kind;
        let sym_key = (
            c.path.clone(),
            c.symbol_name.split('_').next().unwrap_or("").to_string() + &c.entity.to_string(),
        );
        if per_symbol.get(&sym_key).copied().unwrap_or(0) >= st.primary_same_symbol_cap {
            continue;
        }
        if kind != EntityKind::File
            && per_file.get(&c.path).copied().unwrap_or(0) >= st.primary_same_file_cap
        {
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
    if out.len() >= DOMINANT_FILE_MIN_PRIMARIES {
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
