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
export async function rankInBrowser(page, questions, { semantic = false, prompts = false } = {}) {
  return page.evaluate(async ({ questions, semantic, prompts }) => {
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
      const row = { question: questions[i], latency_ms: reply.ms, embed_ms: reply.embed_ms, result: reply.result };
      if (prompts) {
        const p = await ask({ type: 'prompt', id: questions.length + i, query: questions[i], semantic });
        if (p.type === 'error') throw new Error(`${questions[i]}: ${p.message}`);
        row.prompt = p.prompt;
      }
      out.push(row);
    }
    worker.terminate();
    return out;
  }, { questions, semantic, prompts });
}

// Every Content-Security-Policy violation and policy error of a browser
// context, in `into`: an init script reports the page's
// `securitypolicyviolation` events, the widget logs what its worker
// reports, and the browser logs each violation (and each source it cannot
// read) to the console of the page or worker where it happened.
export async function watchPolicy(context, into = []) {
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      console.error(`Content-Security-Policy violation: ${e.effectiveDirective} blocked ${e.blockedURI || '(inline)'}`);
    });
  });
  const listen = (where) => (msg) => {
    if (/Content[- ]Security[- ]Policy/i.test(msg.text())) into.push(`${where}: ${msg.text()}`);
  };
  context.on('page', (page) => {
    page.on('console', listen('page'));
    page.on('worker', (worker) => worker.on('console', listen('worker')));
  });
  return into;
}

// ------------------------- widget checks (hardening.test.mjs, widget.test.mjs)

export class CheckFailure extends Error {}

export function fail(message) {
  throw new CheckFailure(message);
}

/** Poll `fn` in the page until it returns a truthy value; fail with `what` after `ms`. */
export async function until(page, what, fn, arg, ms = 60_000) {
  try {
    const handle = await page.waitForFunction(fn, arg, { timeout: ms, polling: 50 });
    return await handle.jsonValue();
  } catch (err) {
    if (err.name === 'TimeoutError' || /Timeout/.test(err.message)) fail(`timed out after ${ms / 1000} s waiting for ${what}`);
    throw err;
  }
}

/**
 * Waits until the card whose `selector` element contains `text` has its
 * code view. A card's gloss and code arrive together, in a message after the
 * cards, so a check that reads them right after `search` races that message.
 */
export async function cardText(page, selector, text) {
  await until(page, `the code view of a card whose ${selector} holds ${JSON.stringify(text)}`, ([sel, want]) => {
    const root = document.querySelector('codegloss-search')?.shadowRoot;
    return [...(root?.querySelectorAll(sel) ?? [])]
      .filter((e) => e.textContent.includes(want))
      .some((e) => e.closest('[data-testid="cg-card"]')?.querySelector('details'));
  }, [selector, text], 30_000);
}

/** The widget's status line and alert (inside its shadow root). */
export function widgetText(page) {
  return page.evaluate(() => {
    const root = document.querySelector('codegloss-search')?.shadowRoot;
    return {
      status: root?.querySelector('[data-testid="cg-status"]')?.textContent ?? '',
      alert: root?.querySelector('[role="alert"]')?.textContent ?? '',
    };
  });
}

/** Wait until the index is ready, or an alert shows (returned). */
export async function ready(page) {
  await until(page, 'the index to be ready or an alert', () => {
    const root = document.querySelector('codegloss-search')?.shadowRoot;
    const status = root?.querySelector('[data-testid="cg-status"]')?.textContent ?? '';
    return /ready/i.test(status) || (root?.querySelector('[role="alert"]')?.textContent ?? '') !== '';
  });
  return (await widgetText(page)).alert;
}

/** Type `query` and wait for its cards; fails on an alert. */
export async function search(page, query) {
  await page.locator('[data-testid="cg-input"]').fill(query);
  await until(page, `cards for “${query}”`, (q) => {
    const root = document.querySelector('codegloss-search')?.shadowRoot;
    const heading = root?.querySelector('.cg-evidence .cg-heading')?.textContent ?? '';
    return (root?.querySelector('[role="alert"]')?.textContent ?? '') !== ''
      || (heading.endsWith(`“${q}”`) && root.querySelectorAll('[data-testid="cg-card"]').length > 0);
  }, query);
  const { alert } = await widgetText(page);
  if (alert) fail(`the widget shows an error: ${alert}`);
}
