//! # codegloss-wasm-embed
//!
//! The query encoder of the browser: the index's own `tokenizer.json`
//! through the `tokenizers` crate (the code the indexer runs), with the
//! same truncation, and core's pooling. The ONNX session itself runs in
//! onnxruntime-web, driven by the worker: `encode` gives it the input
//! tensors, `pool` turns its output into the query vector.
//!
//! It is a module of its own because the tokenizer is most of its size
//! (about 2.6 MB of wasm): the search module stays small for the first
//! keyword results, and this one loads with semantic search, later.

use codegloss_core::embed::{pool_output, EmbeddingSpec};
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};
use wasm_bindgen::prelude::*;

/// Install the panic hook (a readable console message instead of an
/// opaque trap).
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
}

/// Tokenizer plus the embedding spec of an index.
#[wasm_bindgen]
pub struct QueryEncoder {
    tokenizer: Tokenizer,
    spec: EmbeddingSpec,
    mask: Vec<i64>,
}

/// The input tensors of one query, each `[1, len]`.
#[wasm_bindgen(getter_with_clone)]
pub struct Encoded {
    /// `input_ids`.
    pub ids: Vec<i64>,
    /// `attention_mask`.
    pub mask: Vec<i64>,
    /// `token_type_ids`.
    pub type_ids: Vec<i64>,
}

#[wasm_bindgen]
impl QueryEncoder {
    /// Load `tokenizer.json` (bytes, already checked against the manifest's
    /// sha256 by the caller) for the index's embedding spec (JSON).
    #[wasm_bindgen(constructor)]
    pub fn new(tokenizer_json: &[u8], spec_json: &str) -> Result<QueryEncoder, JsError> {
        let spec: EmbeddingSpec = serde_json::from_str(spec_json)
            .map_err(|e| JsError::new(&format!("embedding spec: {e}")))?;
        let mut tokenizer = Tokenizer::from_bytes(tokenizer_json)
            .map_err(|e| JsError::new(&format!("tokenizer.json: {e}")))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: spec.max_length as usize,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|e| JsError::new(&format!("tokenizer: {e}")))?;
        Ok(QueryEncoder {
            tokenizer,
            spec,
            mask: Vec::new(),
        })
    }

    /// Tokenise the query text (`Engine::queryText`), special tokens included.
    pub fn encode(&mut self, text: &str) -> Result<Encoded, JsError> {
        let e = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| JsError::new(&format!("tokenizer: {e}")))?;
        let ids: Vec<i64> = e.get_ids().iter().map(|&x| i64::from(x)).collect();
        let mask: Vec<i64> = e
            .get_attention_mask()
            .iter()
            .map(|&x| i64::from(x))
            .collect();
        let type_ids = e.get_type_ids().iter().map(|&x| i64::from(x)).collect();
        self.mask = mask.clone();
        Ok(Encoded {
            ids,
            mask,
            type_ids,
        })
    }

    /// Pool the model output of the last `encode` (`shape` and flat `data`)
    /// into the query vector.
    pub fn pool(&self, shape: Vec<i64>, data: &[f32]) -> Result<Vec<f32>, JsError> {
        let cols = self.mask.len();
        pool_output(
            self.spec.pooling,
            self.spec.normalize,
            &shape,
            data,
            1,
            cols,
            &self.mask,
        )
        .map(|mut v| v.remove(0))
        .map_err(|e| JsError::new(&format!("query embedding: {e}")))
    }
}
