// The site benchmark (`cargo xtask bench site`), in headless Chromium with
// a cold cache: bytes transferred (body + headers, as the browser reports
// them) before the first keyword results and before the first semantic
// results, bytes per later query, time to first results cold and warm,
// and retrieval time per query in wasm, for every question, with the
// ranked chunks for the parity check against the native CLI.
// Env: SITE_URL, QUESTIONS (JSON array of strings), OUT (JSON file),
// COLD (how many questions to also ask each as a cold visitor's first;
// default 10).

import fs from 'node:fs';
import { launch } from './lib.mjs';

setTimeout(() => { console.error('bench: did not finish within 12 min'); process.exit(1); }, 720000).unref();

const questions = JSON.parse(fs.readFileSync(process.env.QUESTIONS, 'utf8'));
const site = process.env.SITE_URL;
const out = { site };
const browser = await launch();

// Files fetched only for semantic search (model, runtime, query encoder,
// vectors: one shard, or the directory and the probed partitions): the
// widget starts them right after its first results.
const SEMANTIC_ONLY = /^(index\/model\/|codegloss\/ort\/|codegloss\/embed\/|index\/shards\/(vectors|vectordir|partition)-)/;
// Text shards and their directory: the worker posts results first and
// fetches their text after.
const TEXT = /^index\/shards\/text(dir)?-/;

function meter(page) {
  const sum = (f) => m.requests.filter(f).reduce((a, r) => a + r.bytes, 0);
  const m = {
    bytes: 0,
    requests: [],
    keywordBytes: () => sum((r) => !SEMANTIC_ONLY.test(r.url) && !TEXT.test(r.url)),
    keywordTextBytes: () => sum((r) => !SEMANTIC_ONLY.test(r.url)),
  };
  page.on('requestfinished', async (r) => {
    const s = await r.sizes().catch(() => null);
    if (!s) return;
    // Chromium reports no body size for a worker's own script (its
    // imports are reported): the body as sent, then, by Content-Length.
    let body = s.responseBodySize;
    if (body === 0) {
      const length = await r.response().then((x) => x?.headerValue('content-length')).catch(() => null);
      body = Number(length) || 0;
    }
    const bytes = body + s.responseHeadersSize;
    m.bytes += bytes;
    m.requests.push({ url: r.url().replace(site, ''), bytes });
  });
  return m;
}
const log = (m) => console.error(`bench: ${m}`);
// A visitor's question on the landing page, until the first card shows.
async function askOnPage(page, q) {
  await page.goto(site);
  await page.locator('[data-testid="cg-input"]').fill(q);
  await page.locator('[data-testid="cg-card"]').first().waitFor({ timeout: 60000 });
}
const settle = () => new Promise((r) => setTimeout(r, 300));
const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

try {
  // 1. The widget as a visitor meets it: cold, then warm (same context, reload).
  const context = await browser.newContext();
  const page = await context.newPage();
  const net = meter(page);
  const firstResults = async () => {
    const t0 = Date.now();
    await askOnPage(page, questions[0]);
    return Date.now() - t0;
  };
  out.cold_first_results_ms = await firstResults();
  log('cold first results');
  await settle();
  // Everything but the semantic-only files, which the widget starts
  // fetching as soon as the first results are shown.
  out.bytes_before_first_keyword_results = net.keywordBytes();
  out.bytes_first_keyword_results_with_text = net.keywordTextBytes();
  out.first_keyword_requests = net.requests.filter((r) => !SEMANTIC_ONLY.test(r.url));
  // The widget now loads semantic search in the background; let it finish.
  await page.waitForTimeout(1000);
  await page.waitForLoadState('networkidle', { timeout: 120000 }).catch(() => {});
  await page.waitForTimeout(5000);
  out.warm_first_results_ms = await firstResults();
  log('warm first results');
  await context.close();

  // 1b. The bytes before the first keyword results depend on which
  // question comes first: its terms' postings, its candidates' names and
  // edges. So each of the first COLD questions is also asked as a cold
  // visitor's first, in a context of its own: the same questions on two
  // indexes tell how that cost grows with the corpus.
  const cold = [];
  for (const q of questions.slice(0, Number(process.env.COLD ?? 10))) {
    const ctx = await browser.newContext();
    const p = await ctx.newPage();
    const m = meter(p);
    await askOnPage(p, q);
    await settle();
    cold.push({ question: q, bytes: m.keywordBytes() });
    await ctx.close();
  }
  const coldBytes = cold.map((c) => c.bytes);
  out.cold_first_keyword_bytes = cold.length ? { n: cold.length, p50: percentile(coldBytes, 50), max: Math.max(...coldBytes), questions: cold } : null;
  log('cold first questions');

  // 2. The worker directly (what the widget drives), cold cache: exact
  // phases, semantic flags and per-query bytes.
  const ctx2 = await browser.newContext();
  const p2 = await ctx2.newPage();
  await p2.goto(new URL('index/codegloss.json', site).href);
  await settle();
  const net2 = meter(p2);
  await p2.evaluate(() => {
    const w = new Worker(new URL('/codegloss/worker.js', location.href), { type: 'module' });
    const waiting = new Map();
    w.onmessage = (e) => { const m = e.data; if (m.id !== undefined && waiting.has(m.id)) { waiting.get(m.id)(m); waiting.delete(m.id); } else if (m.type === 'ready') { waiting.get('ready')(m); } };
    let next = 0;
    window.__ask = (msg) => new Promise((resolve) => { const id = msg.id ?? next++; waiting.set(id, resolve); w.postMessage({ ...msg, id }); });
    window.__ready = new Promise((resolve) => waiting.set('ready', resolve));
    w.postMessage({ type: 'init', semantic: 'manual', index: new URL('/index/codegloss.json', location.href).href });
  });
  await p2.evaluate(() => window.__ready);
  const search = (q) => p2.evaluate((q) => window.__ask({ type: 'search', query: q }), q);
  const r0 = await search(questions[0]);
  log('worker: first keyword results');
  await settle();
  out.worker_bytes_first_keyword_results = net2.keywordBytes();
  out.worker_bytes_first_keyword_results_with_text = net2.bytes;
  out.first_results_semantic = r0.semantic;
  const sem = await p2.evaluate(() => window.__ask({ type: 'semantic' }));
  log('worker: semantic loaded');
  out.semantic_loaded = sem.on;
  const r1 = await search(questions[1]);
  await settle();
  out.worker_bytes_first_semantic_results = net2.bytes;
  out.semantic_results = r1.semantic;
  out.semantic_requests = net2.requests.filter((r) => !out.first_keyword_requests.some((k) => k.url === r.url));
  const later = [];
  const laterRows = [];
  for (const q of questions.slice(2, 22)) {
    const before = net2.bytes;
    const seen = net2.requests.length;
    await search(q);
    await settle();
    later.push(net2.bytes - before);
    // Where the bytes went: keyword shards (postings runs and the qualified
    // names), edge shards, text and vector partition shards, by count and
    // bytes.
    const row = { bytes: net2.bytes - before, postings: [0, 0], edges: [0, 0], text: [0, 0], partitions: [0, 0], other: [0, 0] };
    for (const r of net2.requests.slice(seen)) {
      const kind = /shards\/(postings|qualified)-/.test(r.url) ? 'postings' : /shards\/edges-/.test(r.url) ? 'edges' : TEXT.test(r.url) ? 'text' : /shards\/partition-/.test(r.url) ? 'partitions' : 'other';
      row[kind][0] += 1;
      row[kind][1] += r.bytes;
    }
    laterRows.push(row);
  }
  log('worker: later queries');
  out.later_query_bytes = { n: later.length, mean: later.reduce((a, b) => a + b, 0) / later.length, p50: percentile(later, 50), p95: percentile(later, 95), max: Math.max(...later) };
  out.later_queries = laterRows;

  // 3. Retrieval time per question in wasm, keyword-only and hybrid, with
  // the ranked chunks for the parity check.
  for (const semantic of [false, true]) {
    const rows = [];
    for (const q of questions) {
      const r = await p2.evaluate(({ q, semantic }) => window.__ask({ type: 'rank', query: q, semantic }), { q, semantic });
      rows.push({ question: q, latency_ms: r.ms, embed_ms: r.embed_ms, semantic: r.result.semantic, chunks: r.result.chunks.map((c) => [c.chunk, c.role]), files: r.result.files, context_tokens: r.result.context_tokens });
    }
    out[semantic ? 'hybrid' : 'keyword'] = {
      retrieval_ms: { p50: percentile(rows.map((r) => r.latency_ms), 50), p95: percentile(rows.map((r) => r.latency_ms), 95) },
      embed_ms: semantic ? { p50: percentile(rows.map((r) => r.embed_ms), 50), p95: percentile(rows.map((r) => r.embed_ms), 95) } : null,
      rows,
    };
  }
  await ctx2.close();
} finally {
  await browser.close();
}
fs.writeFileSync(process.env.OUT, JSON.stringify(out, null, 1));
console.log(`bench written to ${process.env.OUT}`);
