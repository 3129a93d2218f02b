//! The `bm25-files` baseline of the benchmark: whole files ranked by BM25
//! over identifier-split tokens of path plus content, with the question as
//! the query. An honest weak baseline, computed in the same run as the
//! pipeline. File content is the union of the file's chunk texts (the index
//! stores no raw files), which covers every indexed line.

use std::collections::BTreeMap;

use super::corpus::Corpus;
use crate::lexical::{tokenize, B, K1};
use crate::model::EntityKind;

/// A file-level BM25 index.
pub struct FileBaseline {
    paths: Vec<String>,
    tf: Vec<BTreeMap<String, u32>>,
    len: Vec<f32>,
    df: BTreeMap<String, u32>,
}

impl FileBaseline {
    /// Build over every indexed file.
    pub fn new(corpus: &Corpus) -> Self {
        let data = &corpus.data;
        let mut text: Vec<String> = data.files.iter().map(|f| f.path.clone()).collect();
        for c in &data.chunks {
            let kind = data.entities[c.entity as usize].kind;
            if matches!(
                kind,
                EntityKind::File | EntityKind::Module | EntityKind::CallChain
            ) || c.part > 1 && kind != EntityKind::DocSection
            {
                continue;
            }
            if let Some(f) = data.entities[c.entity as usize].file {
                let t = &mut text[f as usize];
                t.push('\n');
                t.push_str(&c.code);
            }
        }
        let mut tf = Vec::with_capacity(text.len());
        let mut len = Vec::with_capacity(text.len());
        let mut df: BTreeMap<String, u32> = BTreeMap::new();
        for t in &text {
            let mut m: BTreeMap<String, u32> = BTreeMap::new();
            let toks = tokenize(t);
            len.push(toks.len() as f32);
            for tok in toks {
                *m.entry(tok).or_default() += 1;
            }
            for k in m.keys() {
                *df.entry(k.clone()).or_default() += 1;
            }
            tf.push(m);
        }
        FileBaseline {
            paths: data.files.iter().map(|f| f.path.clone()).collect(),
            tf,
            len,
            df,
        }
    }

    /// File paths ranked for a question, best first (files scoring zero are left out).
    pub fn rank(&self, question: &str) -> Vec<&str> {
        let n = self.paths.len() as f32;
        let avg = self.len.iter().sum::<f32>() / n.max(1.0);
        let mut q = tokenize(question);
        q.sort();
        q.dedup();
        let mut scores: Vec<(f32, usize)> = (0..self.paths.len())
            .map(|i| {
                let mut s = 0.0;
                for t in &q {
                    let Some(&f) = self.tf[i].get(t) else {
                        continue;
                    };
                    let df = *self.df.get(t).unwrap_or(&0) as f32;
                    let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                    let f = f as f32;
                    s += idf * f * (K1 + 1.0)
                        / (f + K1 * (1.0 - B + B * self.len[i] / avg.max(1.0)));
                }
                (s, i)
            })
            .filter(|(s, _)| *s > 0.0)
            .collect();
        scores.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scores
            .into_iter()
            .map(|(_, i)| self.paths[i].as_str())
            .collect()
    }
}
