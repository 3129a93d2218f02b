// The codegloss Web Worker: owns the index and every network call, so the
// page never freezes. It loads the wasm engine (codegloss-core compiled to
// WebAssembly), fetches the index manifest and shards (immutable shards go
// through the Cache API), runs searches, builds the answer prompt and
// streams the answer from the configured OpenAI-compatible endpoint.
// The protocol with the widget is documented in site/README.md; its
// message names are in protocol.js, which the widget imports too.
//
// Every file the manifest names is checked against its size and sha256
// before it is cached or used, so a damaged copy never stays in a reader's
// browser: once the site's file is fixed, the next load gets it.

import init, { Engine, manifestFiles } from './pkg/codegloss_wasm.js';
import { endpointRefusal } from './policy.js';
import { FROM_WORKER, SEMANTIC, TO_WORKER } from './protocol.js';

const SHARD_CACHE = 'codegloss-shards-v1';
/** What a reader is told when a file of the site does not match its manifest. */
const DAMAGED = "This site's index is damaged; tell its maintainer.";
const OTHER_VERSION = "This site's index was written by another version of codegloss; tell its maintainer.";

let engine = null;
let indexBase = null;
// Semantic search: onnxruntime-web session and the query encoder, loaded
// lazily after the first keyword results.
let semantic = null;
let semanticLoad = null;
// 'auto': load semantic search after the first results; 'manual': only on
// a `semantic` message (benchmarks measure the phases apart).
let semanticMode = 'auto';
let bytesFetched = 0;
// The size and SHA-256 (a shard's: its first 64 bits) of every file the
// manifest names, by absolute URL.
let expected = new Map();
/** The binary manifest the worker reads, in the folder of the `index` URL (`codegloss.json`). */
const MANIFEST_BIN = 'codegloss.bin';
// The page's <meta> Content-Security-Policy texts (a <meta> policy does not
// reach a worker; a header policy does, and reports what it blocks).
let policies = [];
const violations = []; // the latest {blocked, directive, policy, at}
// The answer module (the model call and the citation check), loaded at
// the first answer: a reader who only searches never fetches it.
let answerModule = null;
// Searches run one at a time (they share the engine's last retrieval);
// answer streaming runs outside this chain.
let chain = Promise.resolve();

const post = (msg) => self.postMessage(msg);
const message = (e) => (e && e.message) ? e.message : String(e);

/** A file of the site that does not match its manifest: `message` is for the reader, `detail` for its maintainer. */
class Damaged extends Error {
  constructor(detail, text = DAMAGED) {
    super(text);
    this.detail = detail;
  }
}

/** The engine's messages that mean the index files are damaged or of another version. */
function forReader(e) {
  if (e instanceof Damaged) return e;
  const m = message(e);
  if (/index format version \d+ is not supported/.test(m)) return new Damaged(m, OTHER_VERSION);
  if (/checksum mismatch|truncated index data|not a codegloss index file|cannot decode payload|unexpected trailing bytes/.test(m)) {
    return new Damaged(m);
  }
  return e;
}

self.addEventListener('securitypolicyviolation', (e) => {
  violations.push({ blocked: e.blockedURI, directive: e.effectiveDirective, policy: e.originalPolicy, at: performance.now() });
  if (violations.length > 16) violations.shift();
  post({ type: FROM_WORKER.policyViolation, directive: e.effectiveDirective, blocked: e.blockedURI });
});

const toHex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');

async function sha256Hex(bytes) {
  return toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)));
}

// A shard's envelope: magic, version and kind (16 bytes), then a raw
// deflate stream, then, for a sealed shard and the binary manifest, the
// trailer: the first 64 bits of the SHA-256 of a key (the directory's; the
// manifest's is empty) and the bytes before it.
const ENVELOPE_HEADER = 16;
// A ShardHash, 8 bytes: the trailer, and a directory's key.
const TRAILER = 8;
// As core's INFLATE_LIMIT: a payload past it is refused, not inflated whole.
const INFLATE_LIMIT = 1 << 28;

/** Whether `bytes` are the file the manifest describes (`want`: {bytes, sha256, sealed}; none: nothing to check). */
async function intact(bytes, want) {
  if (!want) return true;
  // A shard a directory lists comes with its hash only (bytes 0).
  if (want.bytes && bytes.byteLength !== want.bytes) return false;
  // Web Crypto (like the Cache API) exists only in secure contexts; without
  // it nothing is cached, and the engine checks every shard itself.
  if (!self.crypto?.subtle) return true;
  // A sealed shard (one a directory lists) ends with its seal: the first
  // 64 bits of the SHA-256 of its directory's key (`sha256`) and the bytes
  // before the seal.
  if (want.sealed) {
    if (bytes.byteLength < TRAILER || want.sha256.length !== 2 * TRAILER) return false;
    const end = bytes.byteLength - TRAILER;
    const keyed = new Uint8Array(TRAILER + end);
    keyed.set(Uint8Array.from(want.sha256.match(/../g), (h) => parseInt(h, 16)));
    keyed.set(bytes.subarray(0, end), TRAILER);
    return (await sha256Hex(keyed)).startsWith(toHex(bytes.subarray(end)));
  }
  // A shard lists the first 64 bits of its SHA-256 (16 hex digits), a
  // model file the whole hash: the listed digits must open the computed ones.
  return want.sha256.length >= 16 && (await sha256Hex(bytes)).startsWith(want.sha256);
}

// A raw-deflate inflater; where the browser lacks one, an error that says
// what (`what`) it cannot inflate and which browsers can.
function rawInflater(what) {
  try {
    return new DecompressionStream('deflate-raw');
  } catch {
    throw new Error(`this browser cannot inflate ${what} (it lacks DecompressionStream with deflate-raw: Chrome and Edge 103, Firefox 113, Safari 16.4 and later have it)`);
  }
}

// The payload of a shard's (or the binary manifest's) `bytes`, inflated by
// the browser: the search module carries no inflater and takes it with the
// bytes, which it checks first. `trailer`: bytes after the deflate stream.
// A stream that does not inflate gives an empty payload, which the engine
// refuses after its own checks of the bytes.
async function inflated(bytes, trailer = 0) {
  const end = bytes.byteLength - trailer;
  if (end < ENVELOPE_HEADER) return new Uint8Array(0);
  const inflater = rawInflater('the index');
  const reader = new Blob([bytes.subarray(ENVELOPE_HEADER, end)]).stream().pipeThrough(inflater).getReader();
  const parts = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > INFLATE_LIMIT) {
        await reader.cancel().catch(() => {});
        return new Uint8Array(0);
      }
      parts.push(value);
    }
  } catch {
    return new Uint8Array(0);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

// A listed shard's bytes with their payload: the arguments the engine's
// `add*` methods take after the shard's id.
async function fetchShard(m) {
  const bytes = await fetchListed(m);
  return [bytes, await inflated(bytes, m.sealed ? TRAILER : 0)];
}

async function download(url, mode) {
  let response;
  try {
    response = await fetch(url, { cache: mode });
  } catch (e) {
    throw new Error(`cannot fetch ${url}: ${message(e)}`);
  }
  if (!response.ok) throw new Error(`cannot fetch ${url}: HTTP ${response.status}`);
  const buffer = await response.arrayBuffer();
  bytesFetched += buffer.byteLength;
  return new Uint8Array(buffer);
}

// Fetch a file; immutable ones (named by content hash) go through the Cache
// API. Bytes the manifest describes are checked before they are cached or
// used: a damaged cached copy is evicted, a damaged reply (perhaps from the
// HTTP cache) is fetched once more from the server, and bytes still wrong
// mean the site's file itself is damaged.
async function fetchBytes(url, { immutable, want = expected.get(url) }) {
  const cache = immutable && self.caches ? await self.caches.open(SHARD_CACHE).catch(() => null) : null;
  if (cache) {
    const hit = await cache.match(url).catch(() => undefined);
    const bytes = hit && await hit.arrayBuffer().then((b) => new Uint8Array(b), () => null);
    if (bytes && await intact(bytes, want)) return bytes;
    if (hit) await cache.delete(url).catch(() => {});
  }
  let bytes = await download(url, immutable ? 'default' : 'no-cache');
  if (!(await intact(bytes, want))) {
    bytes = await download(url, 'reload');
    if (!(await intact(bytes, want))) {
      const got = !want.bytes || bytes.byteLength === want.bytes ? `${bytes.byteLength} bytes whose ${want.sealed ? 'seal fails' : 'sha256 differs'}` : `${bytes.byteLength} bytes`;
      const size = want.bytes ? `${want.bytes} bytes, ` : '';
      const listed = want.sealed ? `a shard sealed under key ${want.sha256}` : `${size}sha256 ${want.sha256}`;
      throw new Damaged(`${url}: the server sends ${got}; the index lists ${listed}`);
    }
  }
  if (cache) {
    await cache.put(url, new Response(bytes.slice(0), { headers: { 'content-type': 'application/octet-stream' } })).catch(() => {});
  }
  return bytes;
}

// A shard the engine names from a listing other than the manifest (the
// vector directory, a partition's shard, the text directory), checked
// against the hash that listing gives, and its size where it gives one.
function fetchListed(m) {
  const want = { bytes: m.bytes, sha256: String(m.sha256).toLowerCase(), sealed: m.sealed === true };
  return fetchBytes(new URL(m.name, indexBase).href, { immutable: true, want });
}

// The search module, deflated at build time with zopfli (as the one-of-a-
// kind shards are) so that its size does not hang on the host's gzip:
// inflated as it streams in and compiled as it inflates.
async function searchModule() {
  const url = new URL('./pkg/codegloss_wasm_bg.wasm.deflate', import.meta.url);
  const inflater = rawInflater('the search module');
  const reply = await fetch(url);
  if (!reply.ok || !reply.body) throw new Error(`the search module could not be fetched: ${url.pathname} (HTTP ${reply.status})`);
  return new Response(reply.body.pipeThrough(inflater), { headers: { 'Content-Type': 'application/wasm' } });
}

async function open(indexUrl) {
  indexBase = new URL('.', indexUrl);
  // The search module (named here, since the bundled worker holds its
  // glue) and the manifest's binary form, beside `codegloss.json`, at
  // once: the module reads the manifest with the decoder it has for the
  // shards (no JSON parser).
  const [, manifest] = await Promise.all([
    init({ module_or_path: searchModule() }),
    fetchBytes(new URL(MANIFEST_BIN, indexBase).href, { immutable: false }),
  ]);
  // Throws, with what is wrong, on a damaged manifest.
  const manifestPayload = await inflated(manifest, TRAILER);
  const listing = JSON.parse(manifestFiles(manifest, manifestPayload));
  for (const f of listing.files) {
    expected.set(new URL(f.name, indexBase).href, { bytes: f.bytes, sha256: String(f.sha256).toLowerCase() });
  }
  const search = await fetchBytes(new URL(listing.search, indexBase).href, { immutable: true });
  // It ranks with the settings the manifest carries (those of `codegloss query`).
  engine = new Engine(manifest, manifestPayload, search, await inflated(search));
  const info = JSON.parse(engine.info());
  const why = semanticUnavailable(info);
  post({ type: FROM_WORKER.ready, info: { ...info, semantic: why ? SEMANTIC.off : SEMANTIC.pending, semantic_message: why || '' } });
  if (why) post({ type: FROM_WORKER.semantic, state: SEMANTIC.off, message: why });
}

function semanticUnavailable(info) {
  if (!info.embedding || !(info.vectors || info.vector_directory)) return 'the index has no vectors';
  const roles = new Set(info.model_files.map((f) => f.role));
  if (!roles.has('model') || !roles.has('tokenizer')) return 'the site ships no query-embedding model';
  return null;
}

// Checked against its sha256 in the manifest by fetchBytes.
async function modelFile(info, role) {
  const f = info.model_files.find((m) => m.role === role);
  return fetchBytes(new URL(f.name, indexBase).href, { immutable: true });
}

// Load the embedding runtime, model, tokenizer and vectors; afterwards
// searches are hybrid (dense + keyword), exactly as `codegloss query`.
async function loadSemantic() {
  const info = JSON.parse(engine.info());
  if (semanticUnavailable(info)) return;
  post({ type: FROM_WORKER.semantic, state: SEMANTIC.loading, message: 'loading the embedding model' });
  let binary = null;
  try {
    const ortUrl = new URL('./ort/ort.wasm.min.mjs', import.meta.url).href;
    const embedUrl = new URL('./embed/codegloss_wasm_embed.js', import.meta.url).href;
    const [ort, embedModule, model, tokenizer, vectors] = await Promise.all([
      import(ortUrl),
      import(embedUrl).then(async (m) => { await m.default(); return m; }),
      modelFile(info, 'model'),
      modelFile(info, 'tokenizer'),
      // All vectors in one shard, or the partitions' directory (the
      // partitions a question probes follow with its search).
      fetchBytes(new URL((info.vectors || info.vector_directory).name, indexBase).href, { immutable: true }),
    ]);
    // Our own copy of the runtime, single-threaded (no cross-origin
    // isolation needed), never a CDN. Its 14 MB binary goes through the
    // Cache API under a URL that names the runtime's version.
    ort.env.wasm.wasmPaths = new URL('./ort/', import.meta.url).href;
    ort.env.wasm.numThreads = 1;
    ort.env.wasm.proxy = false;
    binary = new URL(`./ort/ort-wasm-simd-threaded.wasm?v=${ort.env.versions.web}`, import.meta.url).href;
    ort.env.wasm.wasmBinary = await fetchBytes(binary, { immutable: true });
    const session = await ort.InferenceSession.create(model, { executionProviders: ['wasm'] });
    const encoder = new embedModule.QueryEncoder(tokenizer, engine.embeddingSpec());
    const vectorsPayload = await inflated(vectors);
    if (info.vectors) engine.addVectors(vectors, vectorsPayload);
    else engine.addVectorDirectory(vectors, vectorsPayload);
    const preferred = ['last_hidden_state', 'token_embeddings', 'sentence_embedding'];
    const output = preferred.find((n) => session.outputNames.includes(n)) || session.outputNames[0];
    semantic = { ort, session, encoder, output };
    post({ type: FROM_WORKER.semantic, state: SEMANTIC.on, message: `${info.embedding.model_id} in the browser` });
  } catch (e) {
    semantic = null;
    // The runtime's binary has no hash in the manifest: a broken cached copy
    // must not outlive this page.
    if (binary && self.caches) await self.caches.open(SHARD_CACHE).then((c) => c.delete(binary)).catch(() => {});
    const m = e instanceof Damaged ? `${e.message} (${e.detail})` : message(e);
    post({ type: FROM_WORKER.semantic, state: SEMANTIC.off, message: `the embedding model did not load: ${m}` });
  }
}

// The query vector of a question, or undefined before semantic search is on.
async function embed(query) {
  if (!semantic) return undefined;
  const { ort, session, encoder, output } = semantic;
  const enc = encoder.encode(engine.queryText(query));
  const tensor = (values) => new ort.Tensor('int64', BigInt64Array.from(values, (v) => BigInt(v)), [1, values.length]);
  const all = { input_ids: enc.ids, attention_mask: enc.mask, token_type_ids: enc.type_ids };
  const feeds = {};
  for (const name of session.inputNames) {
    if (!(name in all)) throw new Error(`the model wants an input ${name} that codegloss does not fill`);
    feeds[name] = tensor(all[name]);
  }
  const out = (await session.run(feeds))[output];
  return encoder.pool(BigInt64Array.from(out.dims, (d) => BigInt(d)), out.data);
}

function startSemantic() {
  if (!semanticLoad) semanticLoad = loadSemantic();
  return semanticLoad;
}

// Fetch and hand to the engine what a search or a prompt lacked: shards
// listed in the manifest (postings runs, the qualified names, edges), the
// codes of probed vector partitions, the vectors of refined chunks.
async function fetchNeeded(r) {
  await Promise.all([
    // Checked (by hash or seal) before they are cached or used.
    ...r.need_shards.map(async (m) => engine.addShard(m.position, ...(await fetchShard(m)))),
    // Listed in the vector directory, not the manifest.
    ...r.need_partitions.map(async (m) => engine.addPartition(m.partition, ...(await fetchShard(m)))),
    // Listed in a loaded partition's shard.
    ...r.need_blocks.map(async (m) => engine.addBlock(m.block, ...(await fetchShard(m)))),
  ]);
}

// Retrieve, fetching first what is not loaded yet: the keyword postings
// of the query's terms (with the lookups of its names), the codes of the
// vector partitions it probes, the vectors of the few chunks it refines,
// then the names of its candidates' files, then the edges of the entities
// its expansion follows; `ms` is the time of the final retrieval.
async function retrieveLoaded(query, vector) {
  for (let round = 0; round < 12; round++) {
    const t = performance.now();
    const r = JSON.parse(engine.search(query, undefined, vector));
    const ms = performance.now() - t;
    if (!r.need_shards) return { result: r, ms };
    await fetchNeeded(r);
  }
  throw new Error('the keyword postings, name, edge and vector shards did not settle');
}

// Cards whose text (gloss, code) is fetched with the results; the text of
// the others follows on request (`text` message) or for an answer.
const CARDS_WITH_TEXT = 6;
let lastSearch = null; // {id, chunks}: the engine's last retrieval

// The text shards are listed in the text directory, which the first call
// fetches: then the engine names the shards themselves.
async function loadText(chunks) {
  let fetched = 0;
  for (let round = 0; round < 2; round++) {
    const missing = JSON.parse(engine.missingText(Uint32Array.from(chunks)));
    if (missing.length === 0) break;
    await Promise.all(missing.map(async (m) => engine.addText(m.position, ...(await fetchShard(m)))));
    fetched += missing.length;
  }
  return fetched;
}

// Search, post the results at once (metadata only), then load the text of
// the first cards and post them again as `texts`.
async function handleSearch(id, query) {
  const started = performance.now();
  const before = bytesFetched;
  const vector = await embed(query);
  const embedMs = performance.now() - started;
  const { result, ms: searchMs } = await retrieveLoaded(query, vector);
  const chunks = result.chunks.map((c) => c.chunk);
  lastSearch = { id, chunks };
  const complete = result.missing.length === 0;
  post({
    type: FROM_WORKER.results, id, query, semantic: result.semantic, cards: JSON.parse(engine.cards()), text: complete,
    stats: { ms: performance.now() - started, embed_ms: embedMs, search_ms: searchMs, bytes: bytesFetched - before },
    ranked: result.chunks, files: result.files,
  });
  if (!complete && (await loadText(chunks.slice(0, CARDS_WITH_TEXT))) > 0) {
    post({ type: FROM_WORKER.texts, id, cards: JSON.parse(engine.cards()), stats: { ms: performance.now() - started, bytes: bytesFetched - before } });
  }
  // The embedding model loads after the first keyword results are shown.
  if (semanticMode === 'auto') startSemantic();
  return result;
}

// The text of every card of the last search (a card opened further down,
// or the context of an answer).
async function handleText(id) {
  if (!lastSearch || lastSearch.id !== id) return;
  const before = bytesFetched;
  await loadText(lastSearch.chunks);
  post({ type: FROM_WORKER.texts, id, all: true, cards: JSON.parse(engine.cards()), stats: { bytes: bytesFetched - before } });
}

// The answer prompt of the last search, with core's answer defaults, both
// from the answer module (`answer`). The context completes chunks into
// whole units (the rest of a class, a section's subsections, a file's
// text): their text is loaded first, and before it the text of the chunks
// whose lines say what a unit holds (lines arrive with text). The context
// may look up the edges or names of entities not loaded yet: those are
// fetched, and the context built again.
async function lastPrompt(answer) {
  const defaults = JSON.parse(answer.answerDefaults());
  for (let round = 0; round < 12; round++) {
    const built = JSON.parse(engine.answerContext(defaults.context_tokens, defaults.evidence_tokens));
    if (built.need_text) await loadText(built.need_text);
    else if (built.need_shards) await fetchNeeded(built);
    else return { prompt: JSON.parse(answer.prompt(built.question, JSON.stringify(built.context))), defaults };
  }
  throw new Error('the text, name and edge shards of the answer context did not settle');
}

// The answer module, loaded once (a failed load is tried again at the next
// answer; the handler below also keeps it from being an unhandled rejection).
function loadAnswerModule() {
  if (!answerModule) {
    const url = new URL('./answer/codegloss_wasm_answer.js', import.meta.url).href;
    answerModule = import(url).then(async (m) => { await m.default(); return m; });
    answerModule.catch(() => { answerModule = null; });
  }
  return answerModule;
}

async function handleAsk(id, query, settings) {
  const endpoint = (settings && settings.endpoint || '').trim();
  const model = (settings && settings.model || '').trim();
  // The page's policy may refuse the endpoint: then nothing is loaded for
  // an answer that cannot be asked.
  const refused = endpoint ? endpointRefusal(endpoint, policies, self.location.href) : '';
  // Fetched while the search runs (when there is a model to ask): it
  // renders the prompt and checks the answer.
  const answerLoad = endpoint && !refused ? loadAnswerModule() : null;
  let answer;
  let loadFailure;
  let prompt;
  // The answer's budget, temperature, length, timeout, streaming and seed are
  // the answer module's (core's) defaults, the same as `codegloss ask`'s.
  let defaults;
  // The search and prompt run in the chain; the answer streams outside it.
  await (chain = chain.then(async () => {
    await handleSearch(id, query);
    await handleText(id);
    if (!answerLoad) return;
    try {
      answer = await answerLoad;
    } catch (e) {
      loadFailure = e;
      return;
    }
    ({ prompt, defaults } = await lastPrompt(answer));
  }));
  if (!endpoint) throw Object.assign(new Error('no answer endpoint is set (open the settings)'), { answer: true });
  if (refused) throw Object.assign(new Error(refused), { answer: true });
  if (loadFailure) throw Object.assign(new Error(`cannot load the answer module: ${message(loadFailure)}`), { answer: true });
  post({ type: FROM_WORKER.answerStart, id, model, prompt_signature: prompt.prompt_signature });
  // The answer opens with the lead core wrote from the fact sheet; the
  // model's words stream after it (the answer module's citations composes
  // the same).
  if (prompt.context.lead) post({ type: FROM_WORKER.answerDelta, id, text: `${prompt.context.lead}\n` });
  let reply;
  const cancel = new AbortController();
  answering.set(id, cancel);
  const asked = performance.now();
  try {
    reply = JSON.parse(await answer.chatCompletion(
      endpoint, model, settings.apiKey || undefined, JSON.stringify(prompt.messages),
      defaults.temperature, defaults.max_tokens, defaults.timeout_ms, defaults.stream, defaults.seed,
      (text) => post({ type: FROM_WORKER.answerDelta, id, text }),
      cancel.signal,
    ));
  } catch (e) {
    throw Object.assign(new Error((await blockedByPolicy(endpoint, asked)) || message(e)), { answer: true });
  } finally {
    answering.delete(id);
  }
  const checked = JSON.parse(answer.citations(reply.text, query, JSON.stringify(prompt.context)));
  post({
    // The text shown carries the sources the check inferred as [n] too.
    type: FROM_WORKER.answerDone, id, text: checked.checked_text, model_text: reply.text, citations: checked.citations, invalid: checked.invalid,
    cited_share: checked.cited_share, support: checked.support, prompt_tokens: reply.prompt_tokens, completion_tokens: reply.completion_tokens,
    cut_repetition: reply.cut_repetition === true,
  });
}

// When the site's header policy blocked the call to `endpoint`, why (a
// blocked request fails like an unreachable server; the violation event
// follows the failure).
async function blockedByPolicy(endpoint, since) {
  await new Promise((resolve) => setTimeout(resolve, 100));
  const origin = (u) => { try { return new URL(u).origin; } catch { return null; } };
  const v = violations.find((x) => x.at >= since && x.directive === 'connect-src' && origin(x.blocked) === origin(endpoint));
  return v ? endpointRefusal(endpoint, [v.policy], self.location.href) : null;
}

// Answers streaming now, by request id: `cancel` stops one.
const answering = new Map();

let opened = null;
self.onmessage = async (event) => {
  const msg = event.data || {};
  try {
    if (msg.type === TO_WORKER.cancel) {
      const c = answering.get(msg.id);
      if (c) c.abort();
      return;
    }
    if (msg.type === TO_WORKER.init) {
      if (msg.semantic === 'manual') semanticMode = 'manual';
      if (Array.isArray(msg.policies)) policies = msg.policies.map(String);
      opened = open(msg.index);
      await opened;
      return;
    }
    if (!opened) throw new Error('the worker was not initialised');
    await opened;
    if (msg.type === TO_WORKER.search) {
      await (chain = chain.then(() => handleSearch(msg.id, msg.query)));
    } else if (msg.type === TO_WORKER.text) {
      await (chain = chain.then(() => handleText(msg.id)));
    } else if (msg.type === TO_WORKER.ask) {
      await handleAsk(msg.id, msg.query, msg.settings);
    } else if (msg.type === TO_WORKER.semantic) {
      // Load semantic search now (benchmarks and parity checks).
      await startSemantic();
      post({ type: FROM_WORKER.semanticDone, id: msg.id, on: semantic !== null });
    } else if (msg.type === TO_WORKER.prompt) {
      // Parity: the answer prompt the worker would send, without sending it.
      await (chain = chain.then(async () => {
        const vector = msg.semantic === false ? undefined : await embed(msg.query);
        await retrieveLoaded(msg.query, vector);
        const { prompt } = await lastPrompt(await loadAnswerModule());
        post({ type: FROM_WORKER.prompted, id: msg.id, prompt });
      }));
    } else if (msg.type === TO_WORKER.rank) {
      // Parity and benchmarks: ranked context only, no text fetched;
      // `ms` is retrieval alone, `embed_ms` the query embedding.
      await (chain = chain.then(async () => {
        const t0 = performance.now();
        const vector = msg.semantic === false ? undefined : await embed(msg.query);
        const t1 = performance.now();
        const { result, ms } = await retrieveLoaded(msg.query, vector);
        post({ type: FROM_WORKER.ranked, id: msg.id, ms, total_ms: performance.now() - t1, embed_ms: t1 - t0, result });
      }));
    }
  } catch (err) {
    const e = forReader(err);
    if (e && e.answer) post({ type: FROM_WORKER.answerError, id: msg.id, message: message(e) });
    else post({ type: FROM_WORKER.error, id: msg.id, message: message(e), detail: e instanceof Damaged ? e.detail : undefined });
    chain = Promise.resolve();
  }
};
