// protocol.js: the messages between the widget (widget.js) and its Web
// Worker (worker.js).
//
// Why it exists: the two sides of the page talk only through postMessage,
// so a message name written differently on each side fails silently (the
// message is ignored). Both import the names from here, and the shapes are
// written down once, next to them; site/README.md explains them for a
// reader. Plain data only: the worker is a module worker and imports this
// file from the site's own origin, as the Content-Security-Policy allows.

/**
 * What the widget posts to the worker.
 * - `init` `{type, index, semantic?, policies?}`: `index` is the absolute
 *   URL of `codegloss.json`; `semantic: 'manual'` loads semantic search only
 *   on request; `policies` are the page's `<meta>` Content-Security-Policies.
 * - `search` `{type, id, query}`
 * - `ask` `{type, id, query, settings: {endpoint, model, apiKey}}`
 * - `text` `{type, id}`: the text of every card of search `id`.
 * - `cancel` `{type, id}`: stop the answer of an `ask` still streaming.
 * - `semantic` `{type, id}`: load semantic search now (answered by `semantic-done`).
 * - `rank` `{type, id, query, semantic}`: ranked context only (answered by `ranked`).
 * - `prompt` `{type, id, query, semantic}`: the answer prompt, not sent (answered by `prompted`).
 */
export const TO_WORKER = Object.freeze({
  init: 'init',
  search: 'search',
  ask: 'ask',
  text: 'text',
  cancel: 'cancel',
  semantic: 'semantic',
  rank: 'rank',
  prompt: 'prompt',
});

/**
 * What the worker posts to the widget.
 * - `ready` `{type, info}`: build id, counts, embedding spec, and
 *   `semantic` (`'off'|'pending'`) with `semantic_message`.
 * - `semantic` `{type, state, message}`: `state` is one of {@link SEMANTIC}.
 * - `results` `{type, id, query, semantic, cards, text, stats, ranked, files}`:
 *   the cards at once; `text: false` means their glosses and code follow in
 *   `texts` `{type, id, cards, stats, all?}` (with `all`: every card's).
 * - `answer-start` `{type, id, model, prompt_signature}`,
 *   `answer-delta` `{type, id, text}`,
 *   `answer-done` `{type, id, text, model_text, citations, invalid, cited_share, support, prompt_tokens, completion_tokens, cut_repetition}`
 *   (`text`: the model's text with the sources the check inferred written in as `[n]`),
 *   `answer-error` `{type, id, message}`: for an `ask`, after its `results` and `texts`.
 * - `error` `{type, id?, message, detail?}`: loading or searching failed.
 * - `policy-violation` `{type, directive, blocked}`: the site's policy blocked a request.
 * - `semantic-done` `{type, id, on}`, `ranked` `{type, id, ms, total_ms, embed_ms, result}`
 *   and `prompted` `{type, id, prompt}` (`prompt`: the answer module's `prompt` JSON):
 *   the replies to `semantic`, `rank` and `prompt`.
 */
export const FROM_WORKER = Object.freeze({
  ready: 'ready',
  semantic: 'semantic',
  results: 'results',
  texts: 'texts',
  answerStart: 'answer-start',
  answerDelta: 'answer-delta',
  answerDone: 'answer-done',
  answerError: 'answer-error',
  error: 'error',
  policyViolation: 'policy-violation',
  semanticDone: 'semantic-done',
  ranked: 'ranked',
  prompted: 'prompted',
});

/** The states of semantic search, in `ready` (`off`, `pending`) and `semantic` (`loading`, `on`, `off`). */
export const SEMANTIC = Object.freeze({
  pending: 'pending',
  loading: 'loading',
  on: 'on',
  off: 'off',
});
