//! The batched generation loop: every prompt of a batch is prefilled at
//! once (right padding; each row's length reaches the attention through
//! `seqlens_k`, so a row's positions and cache are its own), then each
//! step feeds one token per row with the key/value cache the previous
//! step returned. Rows stop at a stop token or their token limit; once a
//! quarter of the rows are done they leave the batch, so the remaining
//! steps compute only live rows.

use std::borrow::Cow;

use ort::session::SessionInputValue;
use ort::value::{DynValue, Tensor};

use super::{gen_err, Decoder, Sampler, Sampling};
use crate::error::IndexError;

/// Why a generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// A stop token (not part of the text).
    Stop,
    /// The token limit.
    Length,
}

/// One finished generation.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The generated ids, the stop token left out.
    pub ids: Vec<u32>,
    /// Their text.
    pub text: String,
    /// Why it ended.
    pub finish: Finish,
    /// Tokens of the prompt.
    pub prompt_tokens: usize,
}

/// A row still in the batch.
struct Row {
    /// Position in the caller's list.
    at: usize,
    /// Tokens in the cache after this step (prompt plus generated).
    len: usize,
    ids: Vec<u32>,
    max_new: usize,
    sampler: Sampler,
    finish: Option<Finish>,
}

/// What one session run returns.
struct StepOut {
    logits: Vec<f32>,
    present: Vec<DynValue>,
}

impl Decoder {
    /// Run the graph once.
    fn step(
        &mut self,
        ids: (Vec<i64>, usize, usize),
        seqlens: Vec<i32>,
        total: i32,
        last: Vec<i64>,
        past: Vec<DynValue>,
    ) -> Result<StepOut, IndexError> {
        let path = self.path.clone();
        let err = |e: ort::Error| gen_err(&path, e);
        let (data, rows, cols) = ids;
        let layers = self.config.layers;
        let mut inputs: Vec<(Cow<'_, str>, SessionInputValue<'_>)> =
            Vec::with_capacity(6 + 2 * layers);
        inputs.push((
            "input_ids".into(),
            Tensor::from_array(([rows as i64, cols as i64], data))
                .map_err(err)?
                .into(),
        ));
        inputs.push((
            "seqlens_k".into(),
            Tensor::from_array(([rows as i64], seqlens))
                .map_err(err)?
                .into(),
        ));
        inputs.push((
            "total_sequence_length".into(),
            Tensor::from_array((Vec::<i64>::new(), vec![total]))
                .map_err(err)?
                .into(),
        ));
        inputs.push((
            "last_index".into(),
            Tensor::from_array(([rows as i64], last))
                .map_err(err)?
                .into(),
        ));
        inputs.push(("cos_cache".into(), (&self.cos).into()));
        inputs.push(("sin_cache".into(), (&self.sin).into()));
        for (i, v) in past.into_iter().enumerate() {
            let kind = if i % 2 == 0 { "key" } else { "value" };
            inputs.push((
                Cow::Owned(format!("past_key_values.{}.{kind}", i / 2)),
                v.into(),
            ));
        }
        let mut out = self.session.run(inputs).map_err(err)?;
        let logits = out
            .get("logits")
            .ok_or_else(|| gen_err(&path, "the decoder produced no `logits`"))?
            .try_extract_tensor::<f32>()
            .map_err(err)?
            .1
            .to_vec();
        let mut present = Vec::with_capacity(2 * layers);
        for i in 0..layers {
            for kind in ["key", "value"] {
                let name = format!("present.{i}.{kind}");
                present.push(
                    out.remove(&name)
                        .ok_or_else(|| gen_err(&path, format!("no `{name}` output")))?,
                );
            }
        }
        Ok(StepOut { logits, present })
    }

    /// An empty cache for `rows` rows.
    fn empty_cache(&self, rows: usize) -> Result<Vec<DynValue>, IndexError> {
        let c = &self.config;
        let shape = [rows as i64, c.kv_heads as i64, 0, c.head_dim as i64];
        (0..2 * c.layers)
            .map(|_| {
                Tensor::from_array((shape, Vec::<f32>::new()))
                    .map(|t| t.into_dyn())
                    .map_err(|e| gen_err(&self.path, e))
            })
            .collect()
    }

    /// Keep only the rows `keep` (in order) of every cache tensor.
    fn compact(&self, cache: Vec<DynValue>, keep: &[usize]) -> Result<Vec<DynValue>, IndexError> {
        let err = |e: ort::Error| gen_err(&self.path, e);
        cache
            .into_iter()
            .map(|v| {
                let (shape, data) = v.try_extract_tensor::<f32>().map_err(err)?;
                let per_row: usize = shape[1..].iter().product::<i64>() as usize;
                let mut out = Vec::with_capacity(per_row * keep.len());
                for &r in keep {
                    out.extend_from_slice(&data[r * per_row..(r + 1) * per_row]);
                }
                let mut dims: Vec<i64> = shape.to_vec();
                dims[0] = keep.len() as i64;
                Ok(Tensor::from_array((dims, out)).map_err(err)?.into_dyn())
            })
            .collect()
    }

    fn check_length(&self, prompt: usize, max_new: usize) -> Result<(), IndexError> {
        let limit = self.config.max_positions;
        if prompt == 0 {
            return Err(gen_err(&self.path, "empty prompt"));
        }
        if prompt + max_new > limit {
            return Err(gen_err(
                &self.path,
                format!("a prompt of {prompt} tokens plus {max_new} new ones exceeds the model's {limit} positions"),
            ));
        }
        Ok(())
    }

    /// Generate for every prompt at once (one batch); `seeds[i]` seeds row
    /// i's sampler, `max_new[i]` caps its new tokens.
    pub fn generate_batch(
        &mut self,
        prompts: &[Vec<u32>],
        max_new: &[usize],
        sampling: Sampling,
        seeds: &[u64],
    ) -> Result<Vec<Generated>, IndexError> {
        if prompts.is_empty() {
            return Ok(Vec::new());
        }
        for (p, &m) in prompts.iter().zip(max_new) {
            self.check_length(p.len(), m)?;
        }
        let vocab = self.config.vocab;
        let pad = self.config.pad_token_id as i64;
        let stops = self.config.stop_token_ids.clone();
        let cols = prompts.iter().map(Vec::len).max().unwrap_or(1);
        let mut ids = vec![pad; prompts.len() * cols];
        for (r, p) in prompts.iter().enumerate() {
            for (c, &t) in p.iter().enumerate() {
                ids[r * cols + c] = t as i64;
            }
        }
        let mut rows: Vec<Row> = prompts
            .iter()
            .enumerate()
            .map(|(at, p)| Row {
                at,
                len: p.len(),
                ids: Vec::new(),
                max_new: max_new[at],
                sampler: Sampler::new(sampling, seeds.get(at).copied().unwrap_or(0)),
                finish: if max_new[at] == 0 {
                    Some(Finish::Length)
                } else {
                    None
                },
            })
            .collect();
        let mut done: Vec<Option<Row>> = (0..prompts.len()).map(|_| None).collect();
        let seqlens = rows.iter().map(|r| r.len as i32 - 1).collect();
        let last = rows.iter().map(|r| r.len as i64 - 1).collect();
        let cache = self.empty_cache(rows.len())?;
        let mut out = self.step((ids, rows.len(), cols), seqlens, cols as i32, last, cache)?;
        loop {
            // Choose each live row's next token.
            for (i, row) in rows.iter_mut().enumerate() {
                if row.finish.is_some() {
                    continue;
                }
                let t = row.sampler.pick(&out.logits[i * vocab..(i + 1) * vocab]);
                if stops.contains(&t) {
                    row.finish = Some(Finish::Stop);
                } else {
                    row.ids.push(t);
                    if row.ids.len() >= row.max_new {
                        row.finish = Some(Finish::Length);
                    }
                }
            }
            let finished = rows.iter().filter(|r| r.finish.is_some()).count();
            if finished == rows.len() {
                break;
            }
            let mut cache = out.present;
            if finished * 4 >= rows.len() && finished > 0 {
                let keep: Vec<usize> = (0..rows.len())
                    .filter(|&i| rows[i].finish.is_none())
                    .collect();
                cache = self.compact(cache, &keep)?;
                let mut live = Vec::with_capacity(keep.len());
                for row in rows.drain(..) {
                    if row.finish.is_some() {
                        let at = row.at;
                        done[at] = Some(row);
                    } else {
                        live.push(row);
                    }
                }
                rows = live;
            }
            let mut next = Vec::with_capacity(rows.len());
            for row in rows.iter_mut() {
                next.push(match (row.finish, row.ids.last()) {
                    (None, Some(&t)) => t as i64,
                    _ => pad,
                });
                row.len += 1;
            }
            let seqlens = rows.iter().map(|r| r.len as i32 - 1).collect();
            let total = rows.iter().map(|r| r.len).max().unwrap_or(1) as i32;
            let n = rows.len();
            out = self.step((next, n, 1), seqlens, total, vec![0; n], cache)?;
        }
        for row in rows {
            let at = row.at;
            done[at] = Some(row);
        }
        done.into_iter()
            .zip(prompts)
            .map(|(row, p)| {
                let row = row.ok_or_else(|| gen_err(&self.path, "a row was lost"))?;
                Ok(Generated {
                    text: self.decode(&row.ids)?,
                    ids: row.ids,
                    finish: row.finish.unwrap_or(Finish::Length),
                    prompt_tokens: p.len(),
                })
            })
            .collect()
    }

    /// Teacher forcing: feed `forced` after `prompt` one token at a time
    /// and return the greedy choice before each forced token (the
    /// agreement check against another runtime's greedy output).
    pub fn forced_top1(&mut self, prompt: &[u32], forced: &[u32]) -> Result<Vec<u32>, IndexError> {
        self.check_length(prompt.len(), forced.len())?;
        let vocab = self.config.vocab;
        let ids: Vec<i64> = prompt.iter().map(|&t| t as i64).collect();
        let mut len = prompt.len();
        let cache = self.empty_cache(1)?;
        let mut out = self.step(
            (ids, 1, len),
            vec![len as i32 - 1],
            len as i32,
            vec![len as i64 - 1],
            cache,
        )?;
        let mut picks = Vec::with_capacity(forced.len());
        for &t in forced {
            picks.push(super::argmax(&out.logits[..vocab]) as u32);
            len += 1;
            out = self.step(
                (vec![t as i64], 1, 1),
                vec![len as i32 - 1],
                len as i32,
                vec![0],
                out.present,
            )?;
        }
        Ok(picks)
    }
}
