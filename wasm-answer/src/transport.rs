//! The browser transport to an OpenAI-compatible chat-completions endpoint:
//! `fetch` through web-sys, streaming the response body. It only moves
//! bytes: the protocol is the native client's (`codegloss_core::chat`: the
//! request body, each line folded by `ChatStream`, the typed errors), the
//! lines cut by the same bounded splitter (`codegloss_core::sse`). Works
//! in a page and in a Web Worker (it uses the global scope's `fetch`).
//! Every failure becomes a JavaScript `Error` with a message a user can
//! act on.

use codegloss_core::chat::{
    completions_url, excerpt, parse_completion, request_body, ChatError, ChatResult, ChatStream,
    Message,
};
use codegloss_core::sse::SseLines;
use js_sys::{Function, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, Headers, Request, RequestInit, Response};

fn error(base_url: &str, message: impl std::fmt::Display) -> JsValue {
    js_sys::Error::new(&format!("answer server {base_url}: {message}")).into()
}

fn get(target: &JsValue, key: &str) -> Result<JsValue, JsValue> {
    Reflect::get(target, &JsValue::from_str(key))
}

fn call0(target: &JsValue, method: &str) -> Result<JsValue, JsValue> {
    get(target, method)?.dyn_into::<Function>()?.call0(target)
}

/// Answer a chat completion request from the browser.
///
/// `messages_json` is the JSON array of `{role, content}` messages (as
/// built by the shared prompt template). `on_delta` is called with each
/// piece of streamed text. Resolves to a JSON string
/// `{"text", "prompt_tokens", "completion_tokens", "streamed"}`.
#[allow(clippy::too_many_arguments)] // reason: one parameter per setting, as JavaScript passes them
#[wasm_bindgen(js_name = chatCompletion)]
pub async fn chat_completion(
    base_url: String,
    model: String,
    api_key: Option<String>,
    messages_json: String,
    temperature: f32,
    max_tokens: u32,
    timeout_ms: u32,
    stream: bool,
    seed: Option<u32>,
    on_delta: Function,
    cancel: Option<web_sys::AbortSignal>,
) -> Result<JsValue, JsValue> {
    let messages: Vec<Message> = serde_json::from_str(&messages_json)
        .map_err(|e| js_sys::Error::new(&format!("messages: {e}")))?;
    let url = completions_url(&base_url);
    let body = request_body(
        &model,
        &messages,
        temperature,
        max_tokens,
        seed.map(u64::from),
        stream,
    )
    .to_string();

    let headers = Headers::new()?;
    headers.set("Content-Type", "application/json")?;
    if let Some(key) = api_key.as_deref().filter(|k| !k.is_empty()) {
        headers.set("Authorization", &format!("Bearer {key}"))?;
    }
    let controller = AbortController::new()?;
    let init = RequestInit::new();
    init.set_method("POST");
    init.set_headers(&headers);
    init.set_body(&JsValue::from_str(&body));
    init.set_signal(Some(&controller.signal()));
    let request = Request::new_with_str_and_init(&url, &init)?;

    // Abort after the timeout.
    let global = js_sys::global();
    let on_timeout = controller.clone();
    let abort = Closure::once_into_js(move || on_timeout.abort());
    let set_timeout: Function = get(&global, "setTimeout")?.dyn_into()?;
    let timer = set_timeout.call2(&global, &abort, &JsValue::from(timeout_ms))?;
    let clear = move || {
        if let Ok(f) = get(&js_sys::global(), "clearTimeout").and_then(|f| f.dyn_into::<Function>())
        {
            let _ = f.call1(&js_sys::global(), &timer);
        }
    };

    // Stop when the caller cancels (a newer question replaced this one).
    if let Some(signal) = &cancel {
        let controller = controller.clone();
        let stop = Closure::once_into_js(move || controller.abort());
        let add: Function = get(signal, "addEventListener")?.dyn_into()?;
        add.call2(signal, &JsValue::from_str("abort"), &stop)?;
    }
    let cancelled = move || cancel.as_ref().is_some_and(web_sys::AbortSignal::aborted);

    let fetch: Function = get(&global, "fetch")?.dyn_into()?;
    let promise: Promise = fetch.call1(&global, &request)?.dyn_into()?;
    let response: Response = match JsFuture::from(promise).await {
        Ok(r) => r.dyn_into()?,
        Err(e) => {
            clear();
            let aborted = get(&e, "name")
                .ok()
                .and_then(|n| n.as_string())
                .is_some_and(|n| n == "AbortError");
            return Err(if aborted && cancelled() {
                error(&base_url, "the answer was stopped")
            } else if aborted {
                error(
                    &base_url,
                    format!("no answer within {} s (timeout)", timeout_ms / 1000),
                )
            } else {
                error(
                    &base_url,
                    "cannot reach the server: is it running, and does it allow this page's origin? (Ollama: set OLLAMA_ORIGINS to this site's origin)",
                )
            });
        }
    };
    let result = read_response(&base_url, &url, response, stream, &on_delta).await;
    clear();
    result
}

async fn read_response(
    base_url: &str,
    url: &str,
    response: Response,
    stream: bool,
    on_delta: &Function,
) -> Result<JsValue, JsValue> {
    let status = response.status();
    if !response.ok() {
        let text = JsFuture::from(response.text()?)
            .await
            .ok()
            .and_then(|t| t.as_string())
            .unwrap_or_default();
        // No retry without streaming here: every status is reported as it is.
        let e = ChatError::Http {
            status,
            url: url.to_string(),
            excerpt: excerpt(&text),
        };
        return Err(error(base_url, e));
    }
    let content_type = response.headers().get("content-type")?.unwrap_or_default();
    if !stream || !content_type.contains("text/event-stream") {
        let text = JsFuture::from(response.text()?)
            .await?
            .as_string()
            .unwrap_or_default();
        let c = parse_completion(&text).map_err(|e| error(base_url, e))?;
        on_delta.call1(&JsValue::NULL, &JsValue::from_str(&c.text))?;
        return result_json(&c.into());
    }
    let body = get(&response, "body")?;
    if body.is_null() || body.is_undefined() {
        return Err(error(base_url, "the response has no body"));
    }
    let reader = call0(&body, "getReader")?;
    let mut lines = SseLines::new();
    let mut answer = ChatStream::new();
    loop {
        let chunk = JsFuture::from(call0(&reader, "read")?.dyn_into::<Promise>()?)
            .await
            .map_err(|_| error(base_url, answer.broke_off(None)))?;
        if get(&chunk, "done")?.as_bool().unwrap_or(true) {
            break;
        }
        let bytes = Uint8Array::new(&get(&chunk, "value")?).to_vec();
        for line in lines.push(&bytes).map_err(|e| error(base_url, e))? {
            if let Some(d) = answer.feed(&line).map_err(|e| error(base_url, e))? {
                on_delta.call1(&JsValue::NULL, &JsValue::from_str(&d))?;
            }
        }
        // The model began to repeat itself: leave, so the server stops
        // generating (the answer is already cut where the copy began).
        if answer.cut_repetition() {
            let _ = call0(&reader, "cancel");
            break;
        }
    }
    result_json(&answer.finish().map_err(|e| error(base_url, e))?)
}

/// The result as the JSON string JavaScript reads (through a JSON value,
/// so its keys come in the order they always came).
fn result_json(r: &ChatResult) -> Result<JsValue, JsValue> {
    let out = serde_json::to_value(r).map_err(|e| js_sys::Error::new(&e.to_string()))?;
    Ok(JsValue::from_str(&out.to_string()))
}
