//! The two filters of retrieval: the test/build noise filter over the
//! sorted pool (section 3.3.3), and the final-context filter (section
//! 3.4) that drops weak, trivial chunks when a much better chunk from the
//! same local context is present.

use super::pool::Candidate;
use super::{is_noise, Corpus, QuerySignals, RetrievalSettings, RetrievedChunk, Source};
use crate::model::{Chunk, EntityKind, GlossSource};

/// Quality of a chunk whose gloss the model wrote.
const MODEL_GLOSS_QUALITY: i32 = 2;
/// Quality of a chunk with any other gloss.
const OTHER_GLOSS_QUALITY: i32 = 1;
/// Quality of a documented chunk.
const DOCUMENTED_QUALITY: i32 = 1;
/// Quality of a file, module or call-chain summary.
const SUMMARY_QUALITY: i32 = 2;
/// Quality of a chunk with substance
/// ([`super::features::SUBSTANTIAL_LINES`] non-blank lines or more).
const SUBSTANTIAL_QUALITY: i32 = 1;
/// Quality lost by a chunk whose gloss was skipped as low-information.
const LOW_INFORMATION_QUALITY: i32 = 2;
/// Quality lost by a trivial declaration.
const TRIVIAL_QUALITY: i32 = 2;
/// A chunk of at most this quality can be weak.
const WEAK_QUALITY_MAX: i32 = 0;
/// A better chunk has at least this quality ...
const BETTER_QUALITY_MIN: i32 = 2;
/// ... and at least this much more than the weak one.
const BETTER_QUALITY_GAP: i32 = 3;

/// Whether test and build chunks stay: the question is about tests or the
/// build, or the filter is off.
pub(super) fn keeps_noise(signals: &QuerySignals, settings: &RetrievalSettings) -> bool {
    signals.test_intent || signals.build_intent || !settings.filter_test_build_noise
}

/// Drop test/build chunks from the pool unless their file is named
/// exactly, recording each in `dropped`.
pub(super) fn drop_noise(
    corpus: &Corpus,
    pool: &mut Vec<Candidate>,
    dropped: &mut Vec<(u32, String)>,
) {
    pool.retain(|cand| {
        let c = &corpus.data.chunks[cand.chunk as usize];
        let named = cand.sources.contains(&Source::ExactFilename);
        if is_noise(c) && !named {
            dropped.push((cand.chunk, "test/build noise".into()));
            false
        } else {
            true
        }
    });
}

/// Quality of a chunk for the final context (section 3.4).
fn quality(corpus: &Corpus, c: &Chunk) -> i32 {
    let e = &corpus.data.entities[c.entity as usize];
    let f = corpus.facts_of(c.id);
    let mut q = 0;
    if e.gloss.source == GlossSource::Model {
        q += MODEL_GLOSS_QUALITY;
    } else if f.has_gloss {
        q += OTHER_GLOSS_QUALITY;
    }
    if f.documented {
        q += DOCUMENTED_QUALITY;
    }
    if matches!(
        e.kind,
        EntityKind::File | EntityKind::Module | EntityKind::CallChain
    ) {
        q += SUMMARY_QUALITY;
    }
    if f.substantial {
        q += SUBSTANTIAL_QUALITY;
    }
    if e.gloss.source == GlossSource::SkippedLowInformation {
        q -= LOW_INFORMATION_QUALITY;
    }
    if is_trivial_declaration(corpus, c) {
        q -= TRIVIAL_QUALITY;
    }
    q
}

fn is_trivial_declaration(corpus: &Corpus, c: &Chunk) -> bool {
    corpus.facts_of(c.id).trivial_declaration
}

/// Drop weak, trivial chunks when a much better chunk from the same local
/// context (same file or same symbol) is present.
pub(super) fn final_filter(
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
        let c = corpus.named_chunk(rc.chunk);
        let weak = q[i] <= WEAK_QUALITY_MAX
            && (data.entities[c.entity as usize].gloss.source
                == GlossSource::SkippedLowInformation
                || is_trivial_declaration(corpus, c));
        let better = chosen.iter().enumerate().any(|(j, other)| {
            let o = corpus.named_chunk(other.chunk);
            j != i
                && (o.path == c.path || o.symbol_name == c.symbol_name)
                && q[j] >= BETTER_QUALITY_MIN
                && q[j] - q[i] >= BETTER_QUALITY_GAP
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
