// hardening.test.mjs: the widget of a served codegloss site against hostile
// or broken input, in headless Chromium.
//
// Why it exists: what an index or a model can put on a reader's screen
// (bidirectional controls, names of any length), what a damaged file of
// the site leaves in a reader's browser, the layout of the open result
// list, the re-ranking once semantic search is on, and the site's
// Content-Security-Policy can only be checked in a real browser.
// widget.test.mjs checks the ordinary use.
//
// Environment:
//   SITE_URL        the served fixture site (required)
//   COPY_URL        a served copy of it, which this script damages and
//                   restores; it also serves plain.html, a page with the
//                   widget and no policy of its own (required)
//   COPY_DIR        the copy's folder (required)
//   ANSWER_ORIGIN   the origin besides this computer the site's policy allows
//   CODEGLOSS_NPM   folder with node_modules/playwright-core (required)
//   SCREENSHOT_DIR  where the PNGs go (none are written when unset)
//   CHECKS          comma-separated names of the checks to run (default: all)
//
// Prints `ok <check>` per check; on the first failure prints
// `FAIL <check>: <reason>` and exits 1.

import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { CheckFailure, cardText, fail, launch, ready, search, until, watchPolicy, widgetText } from './lib.mjs';

const env = process.env;
for (const name of ['SITE_URL', 'COPY_URL', 'COPY_DIR', 'CODEGLOSS_NPM']) {
  if (!env[name]) {
    console.error(`FAIL setup: ${name} is not set`);
    process.exit(1);
  }
}
const { SITE_URL, COPY_URL, COPY_DIR } = env;
const ANSWER_ORIGIN = env.ANSWER_ORIGIN || 'https://llm.example.org';
const SCREENSHOT_DIR = env.SCREENSHOT_DIR ?? '';
if (SCREENSHOT_DIR) fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });

/** The fixture file whose path holds a right-to-left override, and how the widget must show it. */
const TROJAN_SHOWN = 'src/Unsafe/Access<U+202E>Check.hpp';
const CONTROLS = '[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]';
/** The fixture's 49 KB function name. */
const LONG_NAME_LENGTH = 'trojanLongName'.length + 'Segment'.length * 7000;
const MAX_CARD_PX = 500;

setTimeout(() => { console.log('FAIL watchdog: the hardening test did not finish within 480 s'); process.exit(1); }, 480000).unref();

const browser = await launch();
const pageErrors = [];
const violations = [];

async function newPage(context, label) {
  const page = await context.newPage();
  page.on('pageerror', (err) => pageErrors.push(`${label}: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') console.log(`  console error (${label}): ${msg.text()}`);
  });
  page.setDefaultTimeout(60_000);
  return page;
}

async function screenshot(page, name) {
  if (SCREENSHOT_DIR) await page.screenshot({ path: path.join(SCREENSHOT_DIR, name), fullPage: true });
}

const inWidget = (page, fn, arg) => page.evaluate(fn, arg);

async function openSettings(page) {
  const button = page.locator('[data-testid="cg-settings"]');
  if ((await button.getAttribute('aria-expanded')) !== 'true') await button.click();
  await page.locator('[data-testid="cg-endpoint"]').waitFor({ state: 'visible' });
}

async function askWith(page, endpoint, question) {
  await openSettings(page);
  await page.locator('[data-testid="cg-endpoint"]').fill(endpoint);
  await page.locator('[data-testid="cg-model"]').fill('fake');
  await page.locator('[data-testid="cg-input"]').fill(question);
  await page.locator('[data-testid="cg-ask"]').click();
  await until(page, 'the answer to finish', () => {
    const state = document.querySelector('codegloss-search').shadowRoot.querySelector('[data-testid="cg-answer"]').dataset.state;
    return state === 'done' || state === 'error';
  }, undefined, 90_000);
  return inWidget(page, () => {
    const root = document.querySelector('codegloss-search').shadowRoot;
    return {
      state: root.querySelector('[data-testid="cg-answer"]').dataset.state,
      text: root.querySelector('[data-testid="cg-answer-text"]').textContent,
      error: root.querySelector('[data-testid="cg-answer-error"]').textContent.replace(/\s+/g, ' ').trim(),
      links: root.querySelectorAll('[data-testid="cg-answer-text"] a.cg-cite').length,
    };
  });
}

/** An OpenAI-compatible answer server on loopback that streams `text` in pieces. */
function fakeAnswerServer(text) {
  const cors = {
    'Access-Control-Allow-Origin': '*',
    'Access-Control-Allow-Headers': 'content-type, authorization',
    'Access-Control-Allow-Methods': 'POST, OPTIONS',
  };
  const server = http.createServer((req, res) => {
    if (req.method === 'OPTIONS') {
      res.writeHead(204, cors).end();
      return;
    }
    req.resume();
    req.on('end', async () => {
      res.writeHead(200, { ...cors, 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
      for (const piece of [...text].join('').match(/[\s\S]{1,10}/gu)) {
        res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: piece } }] })}\n\n`);
        await new Promise((r) => setTimeout(r, 20));
      }
      res.end('data: [DONE]\n\n');
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const checks = [];
const only = env.CHECKS ? new Set(env.CHECKS.split(',')) : null;
const check = (name, fn) => { if (!only || only.has(name)) checks.push({ name, fn }); };

// ------------------------------------------------------- on the fixture site

const desk = await browser.newContext({ viewport: { width: 1280, height: 900 } });
await watchPolicy(desk, violations);
const page = await newPage(desk, 'desktop');

/** The fixture site in `page`, loaded by the first check that runs (CHECKS may pick any). */
async function loaded() {
  if (page.url() !== 'about:blank') return;
  await page.goto(SITE_URL);
  const alert = await ready(page);
  if (alert) fail(`the index did not load: ${alert}`);
}

check('trojan-source', async () => {
  await loaded();
  await search(page, 'admin access check');
  await cardText(page, '.cg-symbol', 'isAdminAccessCheck');
  const shown = await inWidget(page, (expected) => {
    const root = document.querySelector('codegloss-search').shadowRoot;
    const paths = [...root.querySelectorAll('[data-testid="cg-path"]')];
    const el = paths.find((p) => p.textContent === expected);
    return {
      paths: paths.map((p) => p.textContent),
      found: Boolean(el),
      markers: el ? [...el.querySelectorAll('.cg-bidi')].map((m) => m.textContent) : [],
      dir: el?.getAttribute('dir'),
      isolate: el ? getComputedStyle(el).unicodeBidi : '',
      name: el ? getComputedStyle(el.closest('.cg-card').querySelector('.cg-symbol')).unicodeBidi : '',
      glosses: [...root.querySelectorAll('.cg-gloss')].map((g) => g.textContent),
    };
  }, TROJAN_SHOWN);
  if (!shown.found) fail(`no card shows the path as ${JSON.stringify(TROJAN_SHOWN)}; paths: ${JSON.stringify(shown.paths)}`);
  if (shown.markers.join() !== '<U+202E>') fail(`the path's marker spans are ${JSON.stringify(shown.markers)}`);
  if (shown.dir !== 'ltr' || shown.isolate !== 'isolate' || shown.name !== 'isolate') {
    fail(`path and name are not isolated left-to-right runs (${JSON.stringify(shown)})`);
  }
  if (!shown.glosses.some((g) => g.includes('<U+2066>reviewed<U+2069>'))) {
    fail(`no gloss shows the doc comment's isolates as markers: ${JSON.stringify(shown.glosses)}`);
  }
  await page.keyboard.press('Escape');
  const card = page.locator('[data-testid="cg-card"]')
    .filter({ has: page.locator('.cg-symbol', { hasText: 'isAdminAccessCheck' }) })
    .filter({ has: page.locator('summary') })
    .first();
  if (!(await card.count())) fail('the isAdminAccessCheck card has no code view');
  await card.locator('summary').click();
  const code = await card.locator('pre').textContent();
  if (!code.includes('/* <U+202E> } <U+2066>if (isAdmin)<U+2069> <U+2066> begin admins only */')) {
    fail(`the code does not show its controls as markers: ${JSON.stringify(code)}`);
  }
  // Nowhere in the widget (cards, code, the result list, titles, labels)
  // is a control left to act.
  const left = await inWidget(page, (controls) => {
    const re = new RegExp(controls);
    const root = document.querySelector('codegloss-search').shadowRoot;
    const found = [];
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (n.nodeType === Node.TEXT_NODE && re.test(n.data)) found.push(`text ${JSON.stringify(n.data)}`);
      if (n.nodeType === Node.ELEMENT_NODE) {
        for (const a of n.attributes) if (re.test(a.value)) found.push(`${n.localName}[${a.name}] ${JSON.stringify(a.value)}`);
      }
    }
    return found;
  }, CONTROLS);
  if (left.length) fail(`bidirectional controls reach the screen: ${left.slice(0, 5).join('; ')}`);
  await screenshot(page, 'trojan-source.png');
});

check('long-name', async () => {
  await loaded();
  // Semantic search loads after the first results, then ranks the results
  // on screen again, which draws the cards anew: let it settle first, so
  // the card clicked below is still the one measured.
  await until(page, 'semantic search to settle', () =>
    ['on', 'off'].includes(document.querySelector('codegloss-search').shadowRoot.querySelector('.cg-semantic').dataset.state),
  undefined, 120_000);
  await search(page, 'trojan long name segment');
  await page.keyboard.press('Escape');
  await cardText(page, '.cg-symbol', 'trojanLongName'); // measured with its gloss and code
  const sizes = await inWidget(page, () => {
    const root = document.querySelector('codegloss-search').shadowRoot;
    const cards = [...root.querySelectorAll('[data-testid="cg-card"]')];
    const long = cards.find((c) => c.querySelector('.cg-symbol').textContent.startsWith('trojanLongName'));
    return {
      found: Boolean(long),
      cards: cards.map((c) => Math.round(c.getBoundingClientRect().height)),
      options: [...root.querySelectorAll('[role="option"]')].map((o) => o.textContent.length),
      toggle: Boolean(long?.querySelector('.cg-card-head .cg-clamp-toggle')),
    };
  });
  if (!sizes.found) fail('no card for the function with the 49 KB name');
  const tallest = Math.max(...sizes.cards);
  if (tallest > MAX_CARD_PX) fail(`a card is ${tallest} px tall (heights: ${sizes.cards.join(', ')}), more than ${MAX_CARD_PX}`);
  if (Math.max(...sizes.options) > 800) fail(`a result option holds ${Math.max(...sizes.options)} characters`);
  if (!sizes.toggle) fail('the cut name has no button that shows it whole');
  const card = page.locator('[data-testid="cg-card"]').filter({ has: page.locator('.cg-symbol', { hasText: 'trojanLongName' }) }).first();
  await card.locator('.cg-card-head .cg-clamp-toggle').click();
  const whole = await card.evaluate((el) => {
    const box = el.querySelector('.cg-symbol .cg-clamp');
    return { length: box.textContent.length, height: box.getBoundingClientRect().height, scrolls: box.scrollHeight > box.clientHeight };
  });
  if (whole.length !== LONG_NAME_LENGTH) fail(`the name shown whole has ${whole.length} characters, expected ${LONG_NAME_LENGTH}`);
  if (whole.height > 240 || !whole.scrolls) fail(`the whole name is not in a scrolling box of bounded height (${JSON.stringify(whole)})`);
  await screenshot(page, 'long-name.png');
});

check('list-layout', async () => {
  // The open result list must not hide the status line or an alert.
  await loaded();
  await search(page, 'halo');
  await until(page, 'the result list to open', () =>
    document.querySelector('codegloss-search').shadowRoot.querySelector('[data-testid="cg-input"]').getAttribute('aria-expanded') === 'true');
  const boxes = await inWidget(page, () => {
    const root = document.querySelector('codegloss-search').shadowRoot;
    const alert = root.querySelector('[data-testid="cg-alert"]');
    const p = document.createElement('p');
    p.textContent = 'An alert shown while the result list is open.';
    alert.replaceChildren(p);
    const box = (el) => {
      const r = el.getBoundingClientRect();
      return { top: r.top, bottom: r.bottom, left: r.left, right: r.right, height: r.height };
    };
    const out = {
      list: box(root.querySelector('[data-testid="cg-results"]')),
      status: box(root.querySelector('[data-testid="cg-status"]')),
      alert: box(alert),
      viewport: innerHeight,
    };
    alert.replaceChildren();
    return out;
  });
  const overlap = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  for (const what of ['status', 'alert']) {
    const b = boxes[what];
    if (!b.height || b.top < 0 || b.bottom > boxes.viewport) fail(`the ${what} is not on screen (${JSON.stringify(b)})`);
    if (overlap(boxes.list, b)) fail(`the open result list covers the ${what}: list ${JSON.stringify(boxes.list)}, ${what} ${JSON.stringify(b)}`);
  }
  await page.keyboard.press('Escape');
});

check('answer-stream', async () => {
  // A model's answer with bidirectional controls, streamed from loopback.
  const answer = 'The check `isAdminAccessCheck` compares the level\u202E with 9 [1]. \u2067Nothing else\u2069 is checked [1].';
  await loaded();
  const server = await fakeAnswerServer(answer);
  try {
    const r = await askWith(page, `http://127.0.0.1:${server.address().port}/v1`, 'admin access check');
    if (r.state !== 'done') fail(`the answer failed: ${r.error}`);
    // The answer is the lead core wrote from the fact sheet (the hostile
    // path's control shown written out), then the model's words.
    const expected = 'The check isAdminAccessCheck compares the level<U+202E> with 9 [1]. <U+2067>Nothing else<U+2069> is checked [1].';
    const text = r.text.trim();
    if (!text.endsWith(expected)) fail(`the answer reads ${JSON.stringify(r.text)}, expected it to end with ${JSON.stringify(expected)}`);
    const lead = text.slice(0, text.length - expected.length);
    if (!lead.startsWith('- [1] ') || !lead.includes('Access<U+202E>Check.hpp')) fail(`the answer's lead reads ${JSON.stringify(lead)}`);
    if (/[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/.test(text)) fail(`the answer shows a raw bidirectional control: ${JSON.stringify(r.text)}`);
    if (r.links < 1) fail('the answer has no citation link');
  } finally {
    server.close();
  }
});

// --------------------------------------------- semantic search, fresh profile

check('rerank', async () => {
  // The first results come before semantic search loads: once it is on,
  // the results on screen are ranked again, the list stays open, focus and
  // the selected result stay where they were.
  const fresh = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await watchPolicy(fresh, violations);
  try {
    const p = await newPage(fresh, 'rerank');
    await p.goto(SITE_URL);
    const alert = await ready(p);
    if (alert) fail(`the index did not load: ${alert}`);
    const query = 'how are particles moved each time step';
    await search(p, query);
    const first = await widgetText(p);
    await p.keyboard.press('ArrowDown');
    const view = () => inWidget(p, () => {
      const root = document.querySelector('codegloss-search').shadowRoot;
      const input = root.querySelector('[data-testid="cg-input"]');
      const id = input.getAttribute('aria-activedescendant');
      const key = (o) => o && `${o.querySelector('.cg-option-title').textContent} ${o.querySelector('.cg-option-path').textContent}`;
      return {
        focused: root.activeElement === input,
        expanded: input.getAttribute('aria-expanded'),
        active: key(id ? root.getElementById(id) : null),
        options: [...root.querySelectorAll('[role="option"]')].map(key),
        semantic: root.querySelector('.cg-semantic').dataset.state,
      };
    });
    const before = await view();
    if (!before.active) fail(`ArrowDown selected no result (${JSON.stringify(before)})`);
    await until(p, 'the results on screen to be ranked with semantic search', () => {
      const root = document.querySelector('codegloss-search').shadowRoot;
      return /semantic\)/.test(root.querySelector('[data-testid="cg-status"]').textContent)
        || root.querySelector('.cg-semantic').dataset.state === 'off';
    }, undefined, 120_000);
    const after = await view();
    if (after.semantic === 'off') fail(`semantic search did not load: ${(await widgetText(p)).status}`);
    if (!after.focused) fail('re-ranking took focus from the search box');
    if (after.expanded !== 'true') fail('re-ranking closed the result list');
    if (after.options.includes(before.active) && after.active !== before.active) {
      fail(`the selected result was ${before.active}, after re-ranking ${after.active}`);
    }
    console.log(`  first: ${first.status.trim()} then: ${(await widgetText(p)).status.trim()}`);
  } finally {
    await fresh.close();
  }
});

check('refused-endpoint-loads-nothing', async () => {
  // The site's own page declares its policy: the worker refuses an
  // endpoint the policy does not list before anything is fetched for the
  // answer (the answer module is not loaded). The worker's fetches are
  // reported as the page's requests.
  const fresh = await browser.newContext();
  await watchPolicy(fresh, violations);
  const answerModule = [];
  fresh.on('request', (req) => {
    if (req.url().includes('codegloss_wasm_answer')) answerModule.push(req.url());
  });
  try {
    const p = await newPage(fresh, 'refused endpoint');
    await p.goto(SITE_URL);
    const alert = await ready(p);
    if (alert) fail(`the index did not load: ${alert}`);
    const r = await askWith(p, 'https://llm.example.net/v1', 'how are particles moved each time step');
    if (r.state !== 'error') fail('the answer from an endpoint the policy does not allow did not fail');
    if (!r.error.includes("This site's security policy only allows answer models on this computer")) {
      fail(`the answer error does not explain the policy: ${r.error}`);
    }
    if (answerModule.length) fail(`the answer module was fetched for a refused endpoint: ${answerModule.join(', ')}`);
  } finally {
    await fresh.close();
  }
});

check('no-policy-violations', async () => {
  if (violations.length) fail(`the Content-Security-Policy reported:\n  ${violations.join('\n  ')}`);
});

// ------------------------------------------------------------- on the copy

check('policy-header', async () => {
  // A maintainer's own page with no policy of its own: the server's header
  // policy blocks an endpoint it does not list, and the widget says why.
  const other = await browser.newContext();
  try {
    const p = await newPage(other, 'plain page');
    await p.goto(new URL('plain.html', COPY_URL).href);
    const alert = await ready(p);
    if (alert) fail(`the index did not load: ${alert}`);
    const r = await askWith(p, 'https://llm.example.net/v1', 'admin access check');
    if (r.state !== 'error') fail('the answer from an endpoint the policy does not allow did not fail');
    if (!r.error.includes("This site's security policy only allows answer models on this computer") || !r.error.includes(ANSWER_ORIGIN)) {
      fail(`the answer error does not explain the policy: ${r.error}`);
    }
  } finally {
    await other.close();
  }
});

/**
 * Damage `file` (a path under the copy's index folder), load the page in a
 * fresh profile: the widget must say the index is damaged. Then restore
 * the file and reload in the same profile: the page must work, so nothing
 * damaged stayed in the reader's browser. `what` names the file in the
 * failures; `shot`, when given, is the screenshot of the damaged page.
 */
async function damagedFileRecovers(file, what, shot) {
  const good = fs.readFileSync(file);
  const bad = Buffer.from(good);
  bad[bad.length >> 1] ^= 0xff;
  const profile = await browser.newContext();
  const problems = [];
  try {
    const p = await newPage(profile, `damaged ${what}`);
    fs.writeFileSync(file, bad);
    try {
      await p.goto(COPY_URL);
      await ready(p);
      const said = await inWidget(p, () => document.querySelector('codegloss-search').shadowRoot.querySelector('[role="alert"] p')?.textContent ?? '');
      if (said !== "This site's index is damaged; tell its maintainer.") problems.push(`with a damaged ${what} the widget says ${JSON.stringify(said)}`);
      if (shot) await screenshot(p, shot);
    } finally {
      fs.writeFileSync(file, good);
    }
    await p.reload();
    const alert = await ready(p);
    if (alert) problems.push(`after the ${what} was fixed and the page reloaded, the widget says ${JSON.stringify(alert)}`);
    else await search(p, 'halo');
  } finally {
    await profile.close();
  }
  if (problems.length) fail(problems.join('; '));
}

check('damaged-shard', async () => {
  // A damaged shard must not stay in the reader's browser: once the file
  // is fixed, reloading the page in the same profile works.
  const manifest = JSON.parse(fs.readFileSync(path.join(COPY_DIR, 'index/codegloss.json'), 'utf8'));
  const shard = path.join(COPY_DIR, 'index', manifest.shards.find((s) => s.kind === 'search').name);
  await damagedFileRecovers(shard, 'shard', 'damaged.png');
});

check('damaged-sealed-shard', async () => {
  // The shards the search shard's directory lists (sealed, fetched for a
  // question): damaged, the question is answered with the damage
  // reported, nothing damaged stays in the browser, and once the files
  // are fixed the same profile answers.
  const dir = path.join(COPY_DIR, 'index/shards');
  const files = fs.readdirSync(dir).filter((n) => /^postings-[0-9a-f]{16}-\d+\.bin$/.test(n)).map((n) => path.join(dir, n));
  if (!files.length) fail('the site has no sealed postings shards');
  const good = files.map((f) => fs.readFileSync(f));
  const profile = await browser.newContext();
  const problems = [];
  try {
    const p = await newPage(profile, 'damaged sealed shard');
    try {
      for (const [i, f] of files.entries()) {
        const bad = Buffer.from(good[i]);
        bad[bad.length >> 1] ^= 0xff;
        fs.writeFileSync(f, bad);
      }
      await p.goto(COPY_URL);
      const early = await ready(p);
      if (early) problems.push(`before any question the widget says ${JSON.stringify(early)}`);
      await p.locator('[data-testid="cg-input"]').fill('halo');
      const said = await until(p, 'an alert for the damaged shards', () =>
        document.querySelector('codegloss-search').shadowRoot.querySelector('[role="alert"] p')?.textContent || false);
      if (said !== "This site's index is damaged; tell its maintainer.") problems.push(`with damaged postings shards the widget says ${JSON.stringify(said)}`);
    } finally {
      for (const [i, f] of files.entries()) fs.writeFileSync(f, good[i]);
    }
    await p.reload();
    const alert = await ready(p);
    if (alert) problems.push(`after the shards were fixed and the page reloaded, the widget says ${JSON.stringify(alert)}`);
    else await search(p, 'halo');
  } finally {
    await profile.close();
  }
  if (problems.length) fail(problems.join('; '));
});

check('damaged-manifest', async () => {
  // The binary manifest the worker reads carries its own hash: a damaged
  // one is reported like a damaged shard, and once fixed the page works.
  await damagedFileRecovers(path.join(COPY_DIR, 'index/codegloss.bin'), 'manifest');
});

// -------------------------------------------------------------------- run

let failed = false;
for (const { name, fn } of checks) {
  const before = pageErrors.length;
  try {
    await fn();
    if (pageErrors.length > before) fail(`uncaught error in the page: ${pageErrors.slice(before).join(' | ')}`);
    console.log(`ok ${name}`);
  } catch (err) {
    console.log(`FAIL ${name}: ${err instanceof CheckFailure ? err.message : err.stack || String(err)}`);
    if (SCREENSHOT_DIR) await page.screenshot({ path: path.join(SCREENSHOT_DIR, `fail-${name}.png`), fullPage: true }).catch(() => {});
    failed = true;
    break;
  }
}
await browser.close();
process.exit(failed ? 1 : 0);
