//! # codegloss-wasm-answer
//!
//! The answer side of the browser client, a module of its own so that
//! neither the first keyword results nor a reader who only searches pays
//! for it:
//! - [`transport`]: the call to the answer model (`fetch` with streaming
//!   server-sent events, through web-sys);
//! - [`prompt`] and [`answer_defaults`]: the answer prompt in the shape of
//!   the question's intent, rendered from the answer context, and core's
//!   answer defaults (budget, temperature, length, timeout, streaming), the
//!   same as `codegloss ask`'s;
//! - [`citations`]: the model's answer composed with the context's lead and
//!   its citations and support checked, exactly as `codegloss ask` does.
//!
//! None needs the index: the search module (`codegloss-wasm`) builds the
//! answer context from the corpus, and this module works from the context
//! it hands over (core's `Context`, as JSON). The worker
//! (`site/worker.js`) loads it at the first question that asks for an
//! answer.

pub mod transport;

use codegloss_core::answer::{answer_template, check_citations, Context};
use codegloss_core::chat::ChatSettings;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;

/// Install the panic hook, so that a bug shows as a readable message in
/// the console instead of an opaque `unreachable` trap. Called by the
/// module's start function.
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
}

/// The answer defaults, JSON `{temperature, max_tokens, timeout_ms,
/// stream, context_tokens}`: core's, the same as `codegloss ask`'s
/// `[answer]` defaults, so the worker writes none of its own.
#[wasm_bindgen(js_name = answerDefaults)]
pub fn answer_defaults() -> String {
    ChatSettings::answer_defaults_json().to_string()
}

/// The chat messages for `question` over the `context` that the search
/// module's `Engine.answerContext` returned, JSON: `{messages, context,
/// tokens, prompt_template, prompt_version, prompt_signature}`, as
/// `codegloss ask --show-prompt --json` prints them.
#[wasm_bindgen]
pub fn prompt(question: &str, context_json: &str) -> Result<String, JsError> {
    let context = read_context(context_json)?;
    let template = answer_template(question);
    let messages = template.render(question, &context);
    Ok(template.prompt_json(&messages, &context).to_string())
}

/// Core's `Context` from the JSON the search module wrote.
fn read_context(context_json: &str) -> Result<Context, JsError> {
    serde_json::from_str(context_json).map_err(|e| JsError::new(&format!("answer context: {e}")))
}

/// Compose the answer from the model's text and the `context` that the
/// search module's `Engine.answerContext` returned for `question` (the context's
/// code-written lead first, as `codegloss ask` does), and check its
/// citations, JSON: `{citations: [{n, path, start_line, end_line}],
/// invalid: [n], cited_share, checked_text, support}` (`checked_text`: the
/// composed answer with each inferred source written in as `[n]`, what the
/// widget shows; `support`: `codegloss_core::support::SupportReport`: the
/// source inferred for each uncited sentence, the unsupported sentences,
/// the identifiers no excerpt shows).
#[wasm_bindgen]
pub fn citations(model_text: &str, question: &str, context_json: &str) -> Result<String, JsError> {
    let context = read_context(context_json)?;
    let answer = context.answer(model_text);
    let answer = answer.as_str();
    let report = check_citations(answer, &context);
    let support = codegloss_core::support::check_support(answer, question, &context);
    let cited: Vec<Value> = report
        .citations
        .iter()
        .filter_map(|c| context.chunks.iter().find(|k| k.n == c.n))
        .map(|k| {
            json!({"n": k.n, "path": k.path, "start_line": k.start_line, "end_line": k.end_line})
        })
        .collect();
    Ok(json!({
        "citations": cited,
        "invalid": report.invalid,
        "cited_share": report.cited_share,
        "checked_text": codegloss_core::support::with_inferred_citations(answer, &support),
        "support": support,
    })
    .to_string())
}
