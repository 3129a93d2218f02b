//! What gets embedded, and with which model: the document and query
//! embedding prompts (paper section 3.2.5, Listings 7 and 9) and the
//! description of an embedding model that an index records.
//!
//! Both prompt builders live here, in the pure core, so that the indexer
//! (documents and native queries) and the browser (queries) produce exactly
//! the same text for the same model. Token counting and inference are the
//! caller's business: the indexer shrinks a document prompt with the real
//! tokenizer through [`DocPrompt::render`].

use serde::{Deserialize, Serialize};

use crate::error::CoreError;
use crate::model::Chunk;
use crate::query::{detect_code, detect_file_names, ChunkTypeHint};

/// Version of the document and query prompt formats below. Bump it when
/// either text changes: vectors made with another version are recomputed,
/// and an index refuses queries built with another version.
pub const PROMPT_FORMAT_VERSION: u32 = 1;

/// How token vectors become one sentence vector.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[serde(rename_all = "snake_case")]
pub enum Pooling {
    /// Attention-masked mean over tokens (sentence-transformers default).
    #[default]
    Mean,
    /// The first (`[CLS]`) token.
    Cls,
}

impl Pooling {
    /// Stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Pooling::Mean => "mean",
            Pooling::Cls => "cls",
        }
    }
}

/// Pool a model's raw output into one vector per row, then L2-normalise
/// when `normalize`: the one implementation the indexer (ONNX Runtime
/// native) and the browser (onnxruntime-web) share, so a query vector is
/// made the same way on both sides.
///
/// `shape` is the output's shape: `[rows, dim]` (already pooled) or
/// `[rows, cols, dim]` (token vectors, pooled over `mask`, row-major
/// `rows × cols`). Returns a message on a shape that fits neither.
pub fn pool_output(
    pooling: Pooling,
    normalize: bool,
    shape: &[i64],
    data: &[f32],
    rows: usize,
    cols: usize,
    mask: &[i64],
) -> Result<Vec<Vec<f32>>, String> {
    let bad = || format!("unexpected output shape {shape:?} for a batch of {rows}x{cols}");
    let mut out = Vec::with_capacity(rows);
    match shape {
        [b, dim] if *b as usize == rows => {
            let dim = *dim as usize;
            if data.len() != rows * dim {
                return Err(bad());
            }
            for r in 0..rows {
                out.push(data[r * dim..(r + 1) * dim].to_vec());
            }
        }
        [b, s, dim] if *b as usize == rows && *s as usize == cols => {
            let (s, dim) = (*s as usize, *dim as usize);
            if data.len() != rows * s * dim || mask.len() != rows * s {
                return Err(bad());
            }
            for r in 0..rows {
                let mut v = vec![0f32; dim];
                match pooling {
                    Pooling::Cls => v.copy_from_slice(&data[r * s * dim..r * s * dim + dim]),
                    Pooling::Mean => {
                        let mut n = 0f32;
                        for t in 0..s {
                            if mask[r * s + t] == 0 {
                                continue;
                            }
                            n += 1.0;
                            let row = &data[(r * s + t) * dim..(r * s + t + 1) * dim];
                            for (acc, x) in v.iter_mut().zip(row) {
                                *acc += x;
                            }
                        }
                        let n = n.max(1e-9);
                        v.iter_mut().for_each(|x| *x /= n);
                    }
                }
                out.push(v);
            }
        }
        _ => return Err(bad()),
    }
    if normalize {
        for v in &mut out {
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
            v.iter_mut().for_each(|x| *x /= norm);
        }
    }
    Ok(out)
}

/// How vectors are stored in the index.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[serde(rename_all = "snake_case")]
pub enum Quantization {
    /// One signed byte per dimension plus one `f32` scale per vector.
    #[default]
    Int8,
    /// Full `f32` vectors.
    F32,
}

impl Quantization {
    /// Stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Quantization::Int8 => "int8",
            Quantization::F32 => "f32",
        }
    }
}

/// Everything about an embedding model that decides which vectors it
/// makes. Two sides may compare vectors only when these agree.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct EmbeddingSpec {
    /// Model id, for example `all-MiniLM-L6-v2-int8`.
    pub model_id: String,
    /// SHA-256 of the ONNX model file (hex).
    pub model_sha256: String,
    /// SHA-256 of the tokenizer file (hex).
    pub tokenizer_sha256: String,
    /// Vector dimension.
    pub dimension: u32,
    /// Pooling.
    pub pooling: Pooling,
    /// Whether vectors are L2-normalised.
    pub normalize: bool,
    /// Token limit per input, special tokens included.
    pub max_length: u32,
    /// [`PROMPT_FORMAT_VERSION`] of the prompts embedded.
    pub prompt_format_version: u32,
    /// Text put before every query (for models trained with one).
    pub query_prefix: String,
    /// Text put before every document.
    pub document_prefix: String,
}

impl EmbeddingSpec {
    /// Check that a query model may search vectors made with `self`.
    /// Reports the first field that differs.
    pub fn check_query_model(&self, query: &EmbeddingSpec) -> Result<(), CoreError> {
        let fields: [(&str, String, String); 9] = [
            ("model_id", self.model_id.clone(), query.model_id.clone()),
            (
                "model_sha256",
                self.model_sha256.clone(),
                query.model_sha256.clone(),
            ),
            (
                "tokenizer_sha256",
                self.tokenizer_sha256.clone(),
                query.tokenizer_sha256.clone(),
            ),
            (
                "dimension",
                self.dimension.to_string(),
                query.dimension.to_string(),
            ),
            (
                "pooling",
                self.pooling.as_str().into(),
                query.pooling.as_str().into(),
            ),
            (
                "normalize",
                self.normalize.to_string(),
                query.normalize.to_string(),
            ),
            (
                "max_length",
                self.max_length.to_string(),
                query.max_length.to_string(),
            ),
            (
                "prompt_format_version",
                self.prompt_format_version.to_string(),
                query.prompt_format_version.to_string(),
            ),
            (
                "query_prefix",
                self.query_prefix.clone(),
                query.query_prefix.clone(),
            ),
        ];
        for (field, index, query) in fields {
            if index != query {
                return Err(CoreError::ModelMismatch {
                    field: field.to_string(),
                    index,
                    query,
                });
            }
        }
        Ok(())
    }
}

/// The document embedding prompt of one chunk, in three parts so that the
/// caller can shrink the explanation first and the code second while the
/// header fields stay whole (Listing 7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocPrompt {
    /// `File:` ... `Section Path:` lines, with the document prefix.
    pub header: String,
    /// The gloss.
    pub explanation: String,
    /// The chunk's code or text.
    pub code: String,
}

impl DocPrompt {
    /// Build the prompt of a chunk with its entity's gloss.
    pub fn new(chunk: &Chunk, gloss: &str, document_prefix: &str) -> Self {
        let section = chunk.section_path.as_deref().unwrap_or("");
        let parent = if chunk.parent_symbol.is_empty() {
            chunk.class_name.as_deref().unwrap_or("")
        } else {
            &chunk.parent_symbol
        };
        let header = format!(
            "{document_prefix}File: {}\nSymbol: {}\nChunk Type: {}\nParent Symbol: {}\nSection Path: {}\n",
            chunk.path, chunk.symbol_name, chunk.chunk_type, parent, section
        );
        DocPrompt {
            header,
            explanation: gloss.trim().to_string(),
            code: chunk.searchable_code().trim_end().to_string(),
        }
    }

    /// The full text, with the explanation cut to at most
    /// `explanation_bytes` and the code to at most `code_bytes` (both
    /// snapped back to a character boundary; code is cut at a line end
    /// when one is near).
    pub fn render(&self, explanation_bytes: usize, code_bytes: usize) -> String {
        let expl = cut_at_word(&self.explanation, explanation_bytes);
        let code = cut_at_line(&self.code, code_bytes);
        let mut s = String::with_capacity(self.header.len() + expl.len() + code.len() + 40);
        s.push_str(&self.header);
        s.push_str("Generated Explanation:\n");
        s.push_str(expl);
        s.push_str("\nCode:\n");
        s.push_str(code);
        s
    }

    /// The full, unshrunk text.
    pub fn full(&self) -> String {
        self.render(usize::MAX, usize::MAX)
    }
}

fn floor_boundary(s: &str, max: usize) -> usize {
    if max >= s.len() {
        return s.len();
    }
    let mut i = max;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn cut_at_word(s: &str, max: usize) -> &str {
    let end = floor_boundary(s, max);
    if end == s.len() {
        return s;
    }
    match s[..end].rfind(char::is_whitespace) {
        Some(k) if k + 40 >= end => s[..k].trim_end(),
        _ => &s[..end],
    }
}

fn cut_at_line(s: &str, max: usize) -> &str {
    let end = floor_boundary(s, max);
    if end == s.len() {
        return s;
    }
    match s[..end].rfind('\n') {
        Some(k) if k + 40 >= end => &s[..k],
        _ => &s[..end],
    }
}

/// The query embedding prompt of Listing 9: detected file names, chunk-type
/// hints, the question, and detected code. It is only embedded; the
/// question sent to the answer model stays as typed.
///
/// The `Intent:` line is written only when the question names several
/// files (the paper's "find relation across FILES" case). A per-intent
/// phrase on every query was measured to hurt dense retrieval: on the IPPL
/// questions, distinct-file hit@5 of exact dense search was 0.85 with it,
/// 0.93 without it, and 0.89 for the bare question (`PROMPT_FORMAT_VERSION`
/// 1). The router still uses the intent; it just does not embed it.
pub fn query_prompt(question: &str, query_prefix: &str) -> String {
    let question = question.trim();
    let files = detect_file_names(question);
    let hints = ChunkTypeHint::detect(question);
    let chunk_type = if hints.is_empty() {
        "any".to_string()
    } else {
        hints
            .iter()
            .map(|h| h.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let code = detect_code(question);
    let mut s = String::from(query_prefix);
    if !files.is_empty() {
        s.push_str(&format!("File: {}\n", files.join(", ")));
    }
    s.push_str(&format!("Chunk Type: {chunk_type}\n"));
    if files.len() > 1 {
        s.push_str("Intent: find relation across FILES which is asked in QUESTION\n");
    }
    s.push_str(&format!("Question: {question}"));
    if !code.is_empty() {
        s.push_str(&format!("\nCode: {}", code.join(" ")));
    }
    s
}

// How the web shards' reader decodes these types (`crate::wire`).
crate::wire::wire_enum!(Pooling { Mean, Cls });
crate::wire::wire_enum!(Quantization { Int8, F32 });
crate::wire::wire_struct!(EmbeddingSpec {
    model_id,
    model_sha256,
    tokenizer_sha256,
    dimension,
    pooling,
    normalize,
    max_length,
    prompt_format_version,
    query_prefix,
    document_prefix
});

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> EmbeddingSpec {
        EmbeddingSpec {
            model_id: "m".into(),
            model_sha256: "aa".into(),
            tokenizer_sha256: "bb".into(),
            dimension: 4,
            pooling: Pooling::Mean,
            normalize: true,
            max_length: 256,
            prompt_format_version: PROMPT_FORMAT_VERSION,
            query_prefix: String::new(),
            document_prefix: String::new(),
        }
    }

    #[test]
    fn query_model_must_match_every_field() {
        let a = spec();
        assert!(a.check_query_model(&a.clone()).is_ok());
        let mut b = spec();
        b.dimension = 8;
        let err = a.check_query_model(&b).unwrap_err();
        assert_eq!(
            err,
            CoreError::ModelMismatch {
                field: "dimension".into(),
                index: "4".into(),
                query: "8".into()
            }
        );
        let mut c = spec();
        c.model_sha256 = "cc".into();
        assert!(matches!(
            a.check_query_model(&c),
            Err(CoreError::ModelMismatch { field, .. }) if field == "model_sha256"
        ));
    }

    #[test]
    fn render_cuts_explanation_and_code_but_keeps_header() {
        let p = DocPrompt {
            header: "File: a.cpp\nSymbol: f\n".into(),
            explanation: "one two three four".into(),
            code: "line1\nline2\nline3".into(),
        };
        assert_eq!(
            p.full(),
            "File: a.cpp\nSymbol: f\nGenerated Explanation:\none two three four\nCode:\nline1\nline2\nline3"
        );
        let short = p.render(9, 8);
        assert!(short.starts_with("File: a.cpp\nSymbol: f\n"));
        assert!(short.contains("Explanation:\none two\n"), "{short}");
        assert!(short.ends_with("Code:\nline1"), "{short}");
        let none = p.render(0, 0);
        assert!(none.ends_with("Generated Explanation:\n\nCode:\n"));
    }

    #[test]
    fn render_never_splits_a_character() {
        let p = DocPrompt {
            header: String::new(),
            explanation: "ääää".into(),
            code: "ßßß".into(),
        };
        for i in 0..10 {
            for j in 0..8 {
                let _ = p.render(i, j);
            }
        }
    }

    #[test]
    fn query_prompt_follows_listing_9() {
        let q = query_prompt("What does BareField.h declare for `fillHalo()`?", "");
        assert!(q.starts_with("File: BareField.h\n"), "{q}");
        assert!(q.contains("Question: What does BareField.h"), "{q}");
        assert!(q.ends_with("Code: fillHalo()"), "{q}");
        let two = query_prompt("How do Ippl.cpp and Ippl.h relate?", "q: ");
        assert!(two.starts_with("q: File: Ippl.cpp, Ippl.h\n"), "{two}");
        assert!(two.contains("Intent: find relation across FILES"), "{two}");
        let plain = query_prompt("how is the halo exchanged between ranks", "");
        assert!(plain.starts_with("Chunk Type: any\n"), "{plain}");
    }
}
