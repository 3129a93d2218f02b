//! The question's vector during one retrieval: its dense candidates and
//! its distance to any chunk. It exists so that every stage asks one place
//! how far a chunk is, whichever search the settings choose: exact or HNSW
//! over every vector (`ivf_probe = 0`), or the inverted-file partitions
//! nearest to the question (`ivf_probe > 0`), where a chunk outside the
//! probed partitions gets the directory's estimate (see [`crate::ivf`]).
//! The browser, which loads only the probed partitions, then ranks exactly
//! as the CLI, which holds them all.

use super::{Corpus, RetrievalSettings};
use crate::error::CoreError;
use crate::ivf::Probe;

/// A query vector bound to a corpus and its search settings.
pub(super) struct Dense<'a> {
    corpus: &'a Corpus,
    vector: Option<&'a [f32]>,
    probe: Option<Probe>,
    exact_below: usize,
}

impl<'a> Dense<'a> {
    /// Bind `vector` (none: keyword and structural retrieval only). With
    /// `ivf_probe > 0` and partitioned vectors, probe the nearest
    /// partitions now (the corpus records those it lacks).
    pub(super) fn new(
        corpus: &'a Corpus,
        vector: Option<&'a [f32]>,
        settings: &RetrievalSettings,
    ) -> Result<Self, CoreError> {
        let probe = match vector {
            Some(q) => corpus.probe(q, settings.ivf_probe)?,
            None => None,
        };
        Ok(Dense {
            corpus,
            vector,
            probe,
            exact_below: settings.exact_search_below,
        })
    }

    /// The query vector.
    pub(super) fn vector(&self) -> Option<&'a [f32]> {
        self.vector
    }

    /// A chunk's stored vector, when loaded.
    pub(super) fn stored(&self, chunk: u32) -> Option<&'a [f32]> {
        self.corpus
            .chunk_vectors
            .get(chunk as usize)
            .map(Vec::as_slice)
            .filter(|v| !v.is_empty())
    }

    /// Squared L2 distance from the query to a chunk: exact, or for a
    /// chunk outside the probed partitions, the directory's estimate.
    pub(super) fn distance(&self, chunk: u32) -> Option<f32> {
        let q = self.vector?;
        if let (Some(probe), Some(ivf)) = (&self.probe, &self.corpus.ivf) {
            let p = *ivf.partition_of.get(chunk as usize)?;
            if !probe.contains(p) {
                return ivf.estimate(probe, chunk);
            }
        }
        self.corpus.distance(Some(q), chunk)
    }

    /// The `k` nearest chunks `(chunk, squared distance)`, nearest first,
    /// ties by chunk id: over the probed partitions, or over every vector.
    pub(super) fn search(&self, k: usize) -> Result<Vec<(u32, f32)>, CoreError> {
        let Some(q) = self.vector else {
            return Ok(Vec::new());
        };
        if let Some(probe) = &self.probe {
            return Ok(self.corpus.nearest_probed(probe, q, k));
        }
        let Some(v) = &self.corpus.vectors else {
            return Ok(Vec::new());
        };
        Ok(v.search(q, k, self.exact_below)?
            .into_iter()
            .map(|h| (h.chunk, h.distance))
            .collect())
    }
}
