//! Keyword search: a code-aware tokenizer and a BM25 inverted index over
//! chunks (hybrid retrieval; the paper's pipeline had dense search only).
//!
//! The tokenizer keeps every identifier whole (lower-cased) and also splits
//! it into its camelCase / PascalCase / snake_case / digit parts, and splits
//! `::`, `.` and `->` paths into their components. Parts get a light English
//! stemming (plural and `-ing`/`-ed` endings); whole identifiers do not, so
//! `ParticleAttrib` matches "particle attributes" through its parts and
//! `particleattrib` exactly through the whole.
//!
//! The index scores BM25F-style: each field (symbol, path, gloss, code) adds
//! its term frequency times a field weight. Document lengths are read in
//! two stages, coarse for every chunk and fine for re-ranking (`lengths`).

use serde::{Deserialize, Serialize};

use crate::error::CoreError;
use crate::format::IndexData;
use crate::format::{decode_data_file, encode_data_file, DataKind};

mod lengths;
pub use lengths::{
    coarse_code, coarse_length, fine_code, length_code, length_of_code, length_step, lower_length,
    QueryScorer,
};

/// Words too common in questions and prose to help ranking.
const STOPWORDS: &[&str] = &[
    "a",
    "an",
    "and",
    "are",
    "as",
    "at",
    "be",
    "by",
    "can",
    "do",
    "does",
    "for",
    "from",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "of",
    "on",
    "or",
    "that",
    "the",
    "their",
    "them",
    "then",
    "there",
    "these",
    "this",
    "to",
    "used",
    "use",
    "uses",
    "using",
    "via",
    "was",
    "what",
    "when",
    "where",
    "which",
    "who",
    "why",
    "with",
    "within",
    "would",
    "you",
    "your",
    "we",
    "our",
    "will",
    "should",
    "has",
    "have",
    "been",
    "being",
    "not",
    "no",
    "all",
    "any",
    "each",
    "other",
    "between",
    "about",
    "also",
    "than",
    "so",
    "such",
    "they",
    "he",
    "she",
    "explain",
    "describe",
    "role",
    "purpose",
    "work",
    "works",
    "happen",
    "happens",
    "way",
    "code",
    "file",
    "files",
    "function",
    "functions",
    "class",
    "classes",
    "method",
    "methods",
];

/// Whether a lower-case word is too common in questions and prose to be
/// a keyword term.
pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.contains(&word)
}

/// Light English stemming of a lower-case word part: plural `-ies`, `-es`,
/// `-s`, and `-ing`, `-ed` endings on longer words, then a final `e`, so
/// that "exchange", "exchanges", "exchanged" and "exchanging" meet.
pub fn stem(word: &str) -> String {
    let s = strip_suffixes(word);
    match s.strip_suffix('e') {
        Some(t) if t.len() >= 4 && word.bytes().all(|b| b.is_ascii_lowercase()) => t.to_string(),
        _ => s,
    }
}

fn strip_suffixes(word: &str) -> String {
    let w = word;
    if w.len() <= 3 || !w.bytes().all(|b| b.is_ascii_lowercase()) {
        return w.to_string();
    }
    if let Some(s) = w.strip_suffix("ies") {
        if s.len() >= 2 {
            return format!("{s}y");
        }
    }
    for suffix in ["sses", "shes", "ches", "xes"] {
        if let Some(s) = w.strip_suffix(suffix) {
            return format!("{s}{}", &suffix[..suffix.len() - 2]);
        }
    }
    if w.ends_with("ss") || w.ends_with("us") || w.ends_with("is") {
        return w.to_string();
    }
    if let Some(s) = w.strip_suffix('s') {
        return s.to_string();
    }
    if w.len() > 5 {
        if let Some(s) = w.strip_suffix("ing") {
            return undouble(s);
        }
        if let Some(s) = w.strip_suffix("ed") {
            return undouble(s);
        }
    }
    w.to_string()
}

fn undouble(s: &str) -> String {
    let b = s.as_bytes();
    if b.len() >= 2
        && b[b.len() - 1] == b[b.len() - 2]
        && !matches!(b[b.len() - 1], b'l' | b's' | b'z')
    {
        s[..s.len() - 1].to_string()
    } else {
        s.to_string()
    }
}

/// Parts of one identifier: camelCase, PascalCase (with acronyms),
/// snake_case and digit boundaries, lower-cased.
pub fn identifier_parts(ident: &str) -> Vec<String> {
    let mut parts = Vec::new();
    for piece in ident.split('_').filter(|p| !p.is_empty()) {
        let chars: Vec<char> = piece.chars().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (prev, cur) = (chars[i - 1], chars[i]);
            let next_lower = chars.get(i + 1).is_some_and(|c| c.is_lowercase());
            let boundary = (prev.is_lowercase() && cur.is_uppercase())
                || (prev.is_uppercase() && cur.is_uppercase() && next_lower)
                || (prev.is_alphabetic() && cur.is_ascii_digit())
                || (prev.is_ascii_digit() && cur.is_alphabetic());
            if boundary {
                parts.push(chars[start..i].iter().collect::<String>().to_lowercase());
                start = i;
            }
        }
        parts.push(chars[start..].iter().collect::<String>().to_lowercase());
    }
    parts
}

/// Tokens of a text for indexing or querying: whole identifiers (lower
/// case) plus their stemmed parts, stopwords and one-character parts
/// dropped. `::`, `.`, `->` and every other non-identifier character
/// separate tokens.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for ident in text
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|s| !s.is_empty())
    {
        let lower = ident.to_lowercase();
        let parts = identifier_parts(ident);
        if parts.len() > 1 && !STOPWORDS.contains(&lower.as_str()) {
            out.push(lower);
        }
        for p in parts {
            if p.len() < 2
                || STOPWORDS.contains(&p.as_str())
                || p.bytes().all(|b| b.is_ascii_digit())
            {
                continue;
            }
            out.push(stem(&p));
        }
    }
    out
}

/// Field weights of the keyword index.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct FieldWeights {
    /// Symbol name and parent symbol.
    pub symbol: f32,
    /// Path (folders and file name).
    pub path: f32,
    /// Gloss and section path.
    pub gloss: f32,
    /// Code or documentation text.
    pub code: f32,
}

impl Default for FieldWeights {
    fn default() -> Self {
        FieldWeights {
            symbol: 3.0,
            path: 2.0,
            gloss: 1.0,
            code: 1.0,
        }
    }
}

/// BM25 parameters.
pub const K1: f32 = 1.2;
/// BM25 length normalisation.
pub const B: f32 = 0.75;

/// `lexical.bin`: the BM25 inverted index over chunks.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct LexicalIndex {
    /// Field weights used when building.
    pub weights: FieldWeights,
    /// Sorted vocabulary (in runs: the loaded runs' terms, each run sorted,
    /// the runs in the order they arrived).
    pub terms: Vec<String>,
    /// Per term: `(chunk, weighted term frequency × 8)`, by chunk id.
    pub postings: Vec<Vec<(u32, u16)>>,
    /// Per chunk: weighted length × 8.
    pub doc_len: Vec<u32>,
    /// Where the vocabulary arrives run by run (the browser, where a run is
    /// a postings shard's terms with their lists); `None` when it is all
    /// here, as natively.
    #[serde(skip)]
    pub runs: Option<Runs>,
    /// Absent terms that a lookup asked for since the last
    /// [`LexicalIndex::take_wanted`].
    #[serde(skip)]
    wanted: Wanted,
}

/// A vocabulary that arrives run by run: which runs there are, and where
/// the loaded ones sit in [`LexicalIndex::terms`] and its postings. Its
/// size is the number of runs, whatever the vocabulary claims to hold, so
/// a hostile manifest cannot make it allocate.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Runs {
    /// Each run's start (its first term, or a prefix of it that sorts
    /// after the run before's terms) and first term id in the whole
    /// vocabulary, both increasing: a term belongs to the last run whose
    /// start is not after it.
    starts: Vec<(String, u32)>,
    /// Where each loaded run's terms sit in `terms` and `postings`.
    slots: Vec<Option<std::ops::Range<usize>>>,
}

impl Runs {
    /// Runs from their first terms and first term ids (both increasing;
    /// the caller checks).
    pub fn new(starts: Vec<(String, u32)>) -> Self {
        let slots = vec![None; starts.len()];
        Runs { starts, slots }
    }

    /// The run that would hold `term`; `None` before the first run.
    fn of(&self, term: &str) -> Option<usize> {
        self.starts
            .partition_point(|(first, _)| first.as_str() <= term)
            .checked_sub(1)
    }
}

/// The record of absent terms (or vector partitions, or the qualified
/// names) looked up: a lock only so that a corpus stays `Sync` (the native
/// side shares one between threads); core itself never spawns any. Not part
/// of the index's value: clones start empty and every two records compare
/// equal.
#[derive(Debug, Default)]
pub(crate) struct Wanted(std::sync::Mutex<std::collections::BTreeSet<usize>>);

impl Wanted {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::BTreeSet<usize>> {
        // A poisoned record is still a set of term ids.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Clone for Wanted {
    fn clone(&self) -> Self {
        Wanted::default()
    }
}

impl PartialEq for Wanted {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Wanted {}

/// One keyword hit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LexicalHit {
    /// Chunk id.
    pub chunk: u32,
    /// BM25 score.
    pub score: f32,
}

impl LexicalIndex {
    /// An index with every posting list loaded.
    pub fn new(
        weights: FieldWeights,
        terms: Vec<String>,
        postings: Vec<Vec<(u32, u16)>>,
        doc_len: Vec<u32>,
    ) -> Self {
        LexicalIndex {
            weights,
            terms,
            postings,
            doc_len,
            runs: None,
            wanted: Default::default(),
        }
    }

    /// An index whose vocabulary and posting lists arrive later, run by
    /// run (the browser's starting point). Until a run is loaded its terms
    /// look absent, and looking one up records the run's first term id
    /// ([`LexicalIndex::take_wanted`]).
    pub fn in_runs(weights: FieldWeights, runs: Runs, doc_len: Vec<u32>) -> Self {
        let mut index = LexicalIndex::new(weights, Vec::new(), Vec::new(), doc_len);
        index.runs = Some(runs);
        index
    }

    /// What lookups found not loaded since the last call: the first term
    /// id of each run they needed, sorted. A retrieval that asked for none
    /// ran on complete data.
    pub fn take_wanted(&self) -> Vec<usize> {
        std::mem::take(&mut *self.wanted.lock())
            .into_iter()
            .collect()
    }

    /// The first term id of the run that would hold `term`, when the
    /// vocabulary is in runs (`None` natively, or before the first run).
    pub fn run_start(&self, term: &str) -> Option<u32> {
        let runs = self.runs.as_ref()?;
        runs.of(term).map(|r| runs.starts[r].1)
    }

    /// Whether the run whose first term id is `first` is loaded (false
    /// for a run the index does not list).
    pub fn run_loaded(&self, first: u32) -> bool {
        self.runs.as_ref().is_some_and(|runs| {
            runs.starts
                .binary_search_by_key(&first, |&(_, id)| id)
                .is_ok_and(|r| runs.slots[r].is_some())
        })
    }

    /// Load the run that starts at term id `first`: its sorted terms and
    /// their posting lists. A run loaded already, or not in
    /// [`LexicalIndex::runs`], is left as it is.
    pub fn load_run(&mut self, first: u32, terms: Vec<String>, lists: Vec<Vec<(u32, u16)>>) {
        let Some(runs) = self.runs.as_mut() else {
            return;
        };
        let Ok(r) = runs.starts.binary_search_by_key(&first, |&(_, id)| id) else {
            return;
        };
        if runs.slots[r].is_some() {
            return;
        }
        let n = terms.len().min(lists.len());
        runs.slots[r] = Some(self.terms.len()..self.terms.len() + n);
        self.terms.extend(terms.into_iter().take(n));
        self.postings.extend(lists.into_iter().take(n));
    }

    /// Build over every chunk of an index.
    pub fn build(data: &IndexData, weights: FieldWeights) -> Self {
        use std::collections::BTreeMap;
        let mut map: BTreeMap<String, Vec<(u32, u16)>> = BTreeMap::new();
        let mut doc_len = Vec::with_capacity(data.chunks.len());
        for c in &data.chunks {
            // Concept text is not indexed here: on the IPPL benchmark it
            // drew keyword matches from common words (reworded hit@5 0.88
            // -> 0.80); it feeds the vectors only.
            let gloss = data
                .entities
                .get(c.entity as usize)
                .map_or("", |e| e.gloss.text.as_str());
            let mut tf: BTreeMap<String, f32> = BTreeMap::new();
            let mut len = 0f32;
            let fields: [(String, f32); 4] = [
                (
                    format!("{} {}", c.symbol_name, c.parent_symbol),
                    weights.symbol,
                ),
                (c.path.clone(), weights.path),
                (
                    format!("{} {}", gloss, c.section_path.as_deref().unwrap_or("")),
                    weights.gloss,
                ),
                (c.searchable_code().to_owned(), weights.code),
            ];
            for (text, w) in &fields {
                for t in tokenize(text) {
                    *tf.entry(t).or_default() += w;
                    len += w;
                }
            }
            doc_len.push((len * 8.0).round() as u32);
            for (t, f) in tf {
                map.entry(t)
                    .or_default()
                    .push((c.id, (f * 8.0).round().min(f32::from(u16::MAX)) as u16));
            }
        }
        let (terms, postings) = map.into_iter().unzip();
        LexicalIndex::new(weights, terms, postings, doc_len)
    }

    /// Encode as the `lexical.bin` data file.
    pub fn encode(&self) -> Result<Vec<u8>, CoreError> {
        encode_data_file(DataKind::Lexical, self)
    }

    /// Decode and check a `lexical.bin` data file against the chunk count.
    pub fn decode(bytes: &[u8], chunks: usize) -> Result<Self, CoreError> {
        let v: LexicalIndex =
            decode_data_file(DataKind::Lexical.file_name(), DataKind::Lexical, bytes)?;
        let bad = |message: String| CoreError::Inconsistent {
            file: DataKind::Lexical.file_name().into(),
            message,
        };
        if v.terms.len() != v.postings.len() || v.doc_len.len() != chunks {
            return Err(bad(format!(
                "{} terms, {} posting lists, {} document lengths for {chunks} chunks",
                v.terms.len(),
                v.postings.len(),
                v.doc_len.len()
            )));
        }
        if v.terms.windows(2).any(|w| w[0] >= w[1]) {
            return Err(bad("vocabulary is not sorted".into()));
        }
        if v.postings
            .iter()
            .flatten()
            .any(|(c, _)| *c as usize >= chunks)
        {
            return Err(bad("a posting names a chunk outside the table".into()));
        }
        Ok(v)
    }

    /// Whether the run that holds `key` in the vocabulary's order is here
    /// (always, natively). A key before the first run's first term belongs
    /// to the first run. When it is not loaded its first term id is
    /// recorded as wanted ([`LexicalIndex::take_wanted`]): the name lookups
    /// keyed like the vocabulary ([`crate::retrieve::Corpus::symbols`])
    /// arrive with the run's postings.
    pub fn holds_run_of(&self, key: &str) -> bool {
        let Some(runs) = &self.runs else {
            return true;
        };
        let Some(r) = runs.of(key).or((!runs.starts.is_empty()).then_some(0)) else {
            return true;
        };
        if runs.slots[r].is_none() {
            self.wanted.lock().insert(runs.starts[r].1 as usize);
            return false;
        }
        true
    }

    /// Where a term's posting list sits in `postings`; `None` for a term
    /// not in the vocabulary, or (in runs) in a run not loaded yet, which
    /// is then recorded as wanted.
    fn term_id(&self, term: &str) -> Option<usize> {
        let Some(runs) = &self.runs else {
            return self.terms.binary_search_by(|t| t.as_str().cmp(term)).ok();
        };
        let r = runs.of(term)?;
        let Some(slot) = runs.slots[r].clone() else {
            self.wanted.lock().insert(runs.starts[r].1 as usize);
            return None;
        };
        let i = self
            .terms
            .get(slot.clone())?
            .binary_search_by(|t| t.as_str().cmp(term))
            .ok()?;
        Some(slot.start + i)
    }

    /// Whether a chunk's text (any field) holds an index term, such as a
    /// stem from [`stem`].
    pub fn chunk_has_term(&self, term: &str, chunk: u32) -> bool {
        self.term_id(term).is_some_and(|i| {
            self.postings[i]
                .binary_search_by_key(&chunk, |&(c, _)| c)
                .is_ok()
        })
    }

    /// The chunks whose text (any field) holds an index term, by id.
    pub fn chunks_with(&self, term: &str) -> Vec<u32> {
        self.term_id(term)
            .map(|i| self.postings[i].iter().map(|&(c, _)| c).collect())
            .unwrap_or_default()
    }

    /// Number of chunks that contain a term.
    pub fn doc_freq(&self, term: &str) -> usize {
        self.term_id(term).map_or(0, |i| self.postings[i].len())
    }

    /// Inverse document frequency of a term (BM25+ style, never negative).
    pub fn idf(&self, term: &str) -> f32 {
        let n = self.doc_len.len() as f32;
        let df = self.doc_freq(term) as f32;
        ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
    }

    /// Top `k` chunks for a query text, ties by chunk id.
    pub fn search(&self, query: &str, k: usize) -> Vec<LexicalHit> {
        let scores = self.scores(&tokenize(query));
        let mut hits: Vec<LexicalHit> = scores
            .into_iter()
            .enumerate()
            .filter(|(_, s)| *s > 0.0)
            .map(|(i, score)| LexicalHit {
                chunk: i as u32,
                score,
            })
            .collect();
        crate::sort::sort_long_by(&mut hits, |a, b| {
            b.score.total_cmp(&a.score).then(a.chunk.cmp(&b.chunk))
        });
        hits.truncate(k);
        hits
    }
}

// How the search shard's reader decodes it (`crate::wire`).
crate::wire::wire_struct!(FieldWeights {
    symbol,
    path,
    gloss,
    code
});

#[cfg(test)]
mod tests {
    use super::*;

    /// A small index whole, and the same split into runs of two terms.
    fn whole_and_runs() -> (LexicalIndex, LexicalIndex) {
        let terms: Vec<String> = ["cell", "field", "ghost", "halo", "mesh"]
            .map(String::from)
            .to_vec();
        let postings = vec![
            vec![(0, 8)],
            vec![(1, 16)],
            vec![(0, 8), (2, 8)],
            vec![(2, 24)],
            vec![(1, 8)],
        ];
        let doc_len = vec![40, 48, 64];
        let whole = LexicalIndex::new(FieldWeights::default(), terms, postings, doc_len.clone());
        let starts = vec![("cell".into(), 0), ("ghost".into(), 2), ("mesh".into(), 4)];
        let runs = LexicalIndex::in_runs(FieldWeights::default(), Runs::new(starts), doc_len);
        (whole, runs)
    }

    fn load(from: &LexicalIndex, into: &mut LexicalIndex, first: u32, n: usize) {
        let r = first as usize..first as usize + n;
        into.load_run(
            first,
            from.terms[r.clone()].to_vec(),
            from.postings[r].to_vec(),
        );
    }

    #[test]
    fn a_vocabulary_in_runs_knows_a_term_once_its_run_is_loaded() {
        let (whole, mut runs) = whole_and_runs();
        // Nothing loaded: every lookup is empty and records its run, once.
        assert!(runs.chunks_with("halo").is_empty());
        assert!(runs.chunks_with("ghost").is_empty());
        assert!(runs.chunks_with("zeta").is_empty());
        assert_eq!(runs.take_wanted(), vec![2, 4]);
        // Before the first run's first term: absent, nothing to fetch.
        assert!(runs.chunks_with("aaa").is_empty());
        assert!(runs.take_wanted().is_empty());
        // A key looked up in the vocabulary's order (a name) needs the run
        // that holds it, the first run for a key before every term.
        assert!(!runs.holds_run_of("haloexchange") && !runs.holds_run_of("aaa"));
        assert_eq!(runs.take_wanted(), vec![0, 2]);
        assert!(whole.holds_run_of("aaa") && whole.take_wanted().is_empty());
        // Runs load in any order; loading one twice changes nothing.
        load(&whole, &mut runs, 4, 1);
        load(&whole, &mut runs, 2, 2);
        load(&whole, &mut runs, 2, 2);
        load(&whole, &mut runs, 0, 2);
        assert_eq!(runs.terms.len(), 5);
        for t in [
            "cell", "field", "ghost", "halo", "mesh", "gamma", "zeta", "a",
        ] {
            assert_eq!(runs.chunks_with(t), whole.chunks_with(t), "{t}");
            assert_eq!(runs.idf(t), whole.idf(t), "{t}");
        }
        let q: Vec<String> = ["ghost", "halo", "mesh"].map(String::from).to_vec();
        assert_eq!(runs.scores(&q), whole.scores(&q));
        assert!(runs.holds_run_of("haloexchange") && runs.holds_run_of("aaa"));
        assert!(runs.take_wanted().is_empty());
        // A run the index does not list is ignored.
        load(&whole, &mut runs, 1, 1);
        assert_eq!(runs.terms.len(), 5);
    }

    #[test]
    fn identifiers_split_and_stay_whole() {
        assert_eq!(identifier_parts("fillHalo"), vec!["fill", "halo"]);
        assert_eq!(
            identifier_parts("FFTPeriodicPoissonSolver"),
            vec!["fft", "periodic", "poisson", "solver"]
        );
        assert_eq!(
            identifier_parts("halo_cells_3d"),
            vec!["halo", "cells", "3", "d"]
        );
        let t = tokenize("ippl::BareField<T, Dim>::fillHalo() and particles->R");
        for want in [
            "ippl",
            "barefield",
            "bare",
            "field",
            "fillhalo",
            "fill",
            "halo",
        ] {
            assert!(t.contains(&want.to_string()), "{want} missing from {t:?}");
        }
        assert!(t.contains(&stem("particles")), "{t:?}");
        assert!(!t.contains(&"and".to_string()));
    }

    #[test]
    fn light_stemming() {
        assert_eq!(stem("particles"), stem("particle"));
        assert_eq!(stem("boundaries"), "boundary");
        assert_eq!(stem("classes"), "class");
        for w in ["exchange", "exchanges", "exchanged", "exchanging"] {
            assert_eq!(stem(w), "exchang", "{w}");
        }
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("Kokkos"), "Kokkos");
        assert_eq!(stem("mesh"), "mesh");
    }
}
