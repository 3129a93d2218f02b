// Shared by the browser scripts: load playwright-core from the npm cache
// that `cargo xtask` fills, and launch Debian's headless Chromium with the
// flags this machine needs (no sandbox as root, no background networking:
// the network is closed and Chromium would retry it without end).

import { createRequire } from 'node:module';
import path from 'node:path';

export function playwright() {
  const dir = process.env.CODEGLOSS_NPM;
  if (!dir) throw new Error('CODEGLOSS_NPM is not set (the folder holding node_modules/playwright-core; `cargo xtask ci` sets it)');
  const require = createRequire(path.join(dir, 'package.json'));
  return require('playwright-core');
}

export async function launch() {
  const { chromium } = playwright();
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

// Rank every question in the page's own worker (the site's worker.js and
// wasm module) and return [{question, ms, embed_ms, result}], in order.
// With `semantic`, the embedding model is loaded first (and must load), so
// ranking is hybrid as in `codegloss query`; without, keyword and structure.
export async function rankInBrowser(page, questions, { semantic = false } = {}) {
  return page.evaluate(async ({ questions, semantic }) => {
    const worker = new Worker(new URL('codegloss/worker.js', document.baseURI), { type: 'module' });
    const replies = new Map();
    let ready;
    const isReady = new Promise((resolve, reject) => { ready = { resolve, reject }; });
    worker.onmessage = (e) => {
      const m = e.data;
      if (m.type === 'ready') ready.resolve();
      else if (m.type === 'error' && m.id === undefined) ready.reject(new Error(m.message));
      else if (m.id !== undefined && replies.has(m.id)) replies.get(m.id)(m);
    };
    worker.postMessage({ type: 'init', index: new URL('index/codegloss.json', document.baseURI).href });
    await isReady;
    const ask = (msg) => new Promise((resolve) => {
      replies.set(msg.id, resolve);
      worker.postMessage(msg);
    });
    if (semantic) {
      const done = await ask({ type: 'semantic', id: -1 });
      if (!done.on) throw new Error('semantic search did not load in the browser');
    }
    const out = [];
    for (let i = 0; i < questions.length; i++) {
      const reply = await ask({ type: 'rank', id: i, query: questions[i], semantic });
      if (reply.type === 'error') throw new Error(`${questions[i]}: ${reply.message}`);
      out.push({ question: questions[i], ms: reply.ms, embed_ms: reply.embed_ms, result: reply.result });
    }
    worker.terminate();
    return out;
  }, { questions, semantic });
}
