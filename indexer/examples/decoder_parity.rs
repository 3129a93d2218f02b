//! Agreement of the in-process decoder with llama.cpp on real prompts.
//!
//! - `decoder_parity render DIR PROMPTS.jsonl OUT.json`: render each
//!   `{system, user}` prompt (for example from `codegloss explain-plan
//!   --prompts`) with the decoder's chat template and tokenizer; writes
//!   `[{"text", "ids"}]`.
//! - `models/convert/llama_reference.py OUT.json REF.json STEPS` (in the
//!   llama-cpp-python environment) tokenises the same texts with llama.cpp
//!   and generates its greedy tokens.
//! - `decoder_parity agree DIR REF.json [STEPS]`: feed llama.cpp's tokens
//!   one at a time (teacher forcing) and compare the decoder's own greedy
//!   choice before each; also counts prompts whose token ids differ.
//!   Prints one JSON object.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Result};
use codegloss_core::chat::Message;
use codegloss_indexer::config::Device;
use codegloss_indexer::generate::{Decoder, DecoderFiles};
use serde::Deserialize;

#[derive(Deserialize)]
struct Prompt {
    system: String,
    user: String,
}

#[derive(Deserialize)]
struct Reference {
    /// Our token ids of the text.
    ids: Vec<u32>,
    /// llama.cpp's token ids of the text.
    llama_ids: Vec<u32>,
    /// llama.cpp's greedy continuation.
    gen: Vec<u32>,
}

fn decoder(dir: &str) -> Result<Decoder> {
    let lib = codegloss_indexer::embed::onnxruntime_library(None)?;
    let files = DecoderFiles::in_dir(Path::new(dir), &lib, &[])?;
    Ok(Decoder::load(&files, 0, Device::Cpu)?)
}

fn render(dir: &str, prompts: &str, out: &str) -> Result<()> {
    let d = decoder(dir)?;
    let mut rows = Vec::new();
    for line in std::fs::read_to_string(prompts)?.lines() {
        let p: Prompt = serde_json::from_str(line)?;
        let messages = [
            Message {
                role: "system".into(),
                content: p.system,
            },
            Message {
                role: "user".into(),
                content: p.user,
            },
        ];
        let text = d.chat_text(&messages)?;
        let ids = d.encode(&text)?;
        rows.push(serde_json::json!({ "text": text, "ids": ids }));
    }
    std::fs::write(out, serde_json::to_string(&rows)?)?;
    eprintln!("{} prompts rendered to {out}", rows.len());
    Ok(())
}

fn agree(dir: &str, reference: &str, steps: usize) -> Result<()> {
    let mut d = decoder(dir)?;
    let refs: Vec<Reference> = serde_json::from_str(&std::fs::read_to_string(reference)?)?;
    let (mut agreed, mut total, mut id_mismatch) = (0usize, 0usize, 0usize);
    let mut first_miss = Vec::new();
    let mut prompt_tokens = 0usize;
    let started = Instant::now();
    for (i, r) in refs.iter().enumerate() {
        if r.ids != r.llama_ids {
            id_mismatch += 1;
        }
        // Both runtimes start from llama.cpp's tokens.
        let forced = &r.gen[..r.gen.len().min(steps)];
        let picks = d.forced_top1(&r.llama_ids, forced)?;
        let same = picks.iter().zip(forced).filter(|(a, b)| a == b).count();
        agreed += same;
        total += forced.len();
        prompt_tokens += r.llama_ids.len();
        first_miss.push(picks.iter().zip(forced).position(|(a, b)| a != b));
        eprintln!(
            "prompt {}: {} tokens, {same}/{} agree",
            i + 1,
            r.llama_ids.len(),
            forced.len()
        );
    }
    println!(
        "{}",
        serde_json::json!({
            "prompts": refs.len(),
            "prompts_whose_token_ids_differ": id_mismatch,
            "mean_prompt_tokens": prompt_tokens as f64 / refs.len().max(1) as f64,
            "steps": total,
            "agreed": agreed,
            "agreement": agreed as f64 / total.max(1) as f64,
            "first_disagreement": first_miss,
            "seconds": started.elapsed().as_secs_f64(),
        })
    );
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["render", dir, prompts, out] => render(dir, prompts, out),
        ["agree", dir, reference] => agree(dir, reference, 64),
        ["agree", dir, reference, steps] => agree(dir, reference, steps.parse()?),
        _ => bail!(
            "usage: decoder_parity render DIR PROMPTS.jsonl OUT.json | agree DIR REF.json [STEPS]"
        ),
    }
}
