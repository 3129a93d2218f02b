// widget.test.mjs: drives the <codegloss-search> widget of a served codegloss
// site in headless Chromium, end to end (widget, worker, index, answer model).
//
// Why it exists: the widget's behaviour (keyboard use, text-only rendering,
// answer streaming, errors, small screens) can only be checked in a real
// browser. A plain Node script, so it needs nothing but playwright-core.
//
// Environment:
//   SITE_URL        the served site, e.g. http://127.0.0.1:8700/   (required)
//   CODEGLOSS_NPM   folder with node_modules/playwright-core        (required)
//   LLM_URL         OpenAI-compatible base URL of a running model server;
//                   empty: the streaming-answer check is skipped
//                   (hardening.test.mjs streams one from a fake server)
//   LLM_MODEL       its model name (default smollm2)
//   DOWN_URL        a base URL where nothing listens (default http://127.0.0.1:9/v1)
//   SCREENSHOT_DIR  where the PNGs go (none are written when unset)
//   CHROMIUM        the browser binary (default /usr/bin/chromium)
//
// Prints `ok <check>` per check; on the first failure prints
// `FAIL <check>: <reason>` and exits 1. The last check asserts that the
// site's Content-Security-Policy blocked nothing in all the others.

import fs from 'node:fs';
import path from 'node:path';
import { CheckFailure, cardText, fail, launch, playwright, ready, until, watchPolicy } from './lib.mjs';

const env = process.env;
const SITE_URL = env.SITE_URL ?? '';
const LLM_URL = env.LLM_URL ?? '';
const LLM_MODEL = env.LLM_MODEL || 'smollm2';
const DOWN_URL = env.DOWN_URL || 'http://127.0.0.1:9/v1';
const SCREENSHOT_DIR = env.SCREENSHOT_DIR ?? '';
const CHECK_TIMEOUT_MS = 60_000;
// A limit, not a timing: SmolLM2 on two shared cores can take minutes when
// other jobs load the machine; the worker's own answer timeout is 300 s.
const ANSWER_TIMEOUT_MS = 300_000;

if (!SITE_URL) {
  console.error('FAIL setup: SITE_URL is not set (the served site, e.g. http://127.0.0.1:8700/)');
  process.exit(1);
}
if (!env.CODEGLOSS_NPM) {
  console.error('FAIL setup: CODEGLOSS_NPM is not set (a folder with node_modules/playwright-core)');
  process.exit(1);
}
try {
  playwright();
} catch (err) {
  console.error(`FAIL setup: cannot load playwright-core from ${env.CODEGLOSS_NPM}: ${err.message}`);
  process.exit(1);
}
if (SCREENSHOT_DIR) fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });

// ---------------------------------------------------------------- helpers

const sel = {
  input: '[data-testid="cg-input"]',
  ask: '[data-testid="cg-ask"]',
  results: '[data-testid="cg-results"]',
  card: '[data-testid="cg-card"]',
  path: '[data-testid="cg-path"]',
  answer: '[data-testid="cg-answer"]',
  answerError: '[data-testid="cg-answer-error"]',
  status: '[data-testid="cg-status"]',
  settings: '[data-testid="cg-settings"]',
  endpoint: '[data-testid="cg-endpoint"]',
  model: '[data-testid="cg-model"]',
  key: '[data-testid="cg-key"]',
};

/** State of the widget, read inside its shadow root. */
function widgetState() {
  const root = document.querySelector('codegloss-search')?.shadowRoot;
  if (!root) return null;
  const q = (s) => root.querySelector(s);
  const cards = [...root.querySelectorAll('[data-testid="cg-card"]')];
  return {
    status: q('[data-testid="cg-status"]')?.textContent ?? '',
    heading: q('.cg-evidence .cg-heading')?.textContent ?? '',
    paths: cards.map((c) => c.querySelector('[data-testid="cg-path"]')?.textContent ?? ''),
    expanded: q('[data-testid="cg-input"]')?.getAttribute('aria-expanded'),
    alert: q('[role="alert"]')?.textContent ?? '',
  };
}

async function state(page) {
  return page.evaluate(widgetState);
}

/** Wait until the cards shown are those of `query` (search results or ask evidence). */
async function waitForCards(page, query) {
  await until(
    page,
    `cards for “${query}”`,
    (q) => {
      const root = document.querySelector('codegloss-search')?.shadowRoot;
      const heading = root?.querySelector('.cg-evidence .cg-heading')?.textContent ?? '';
      const cards = root?.querySelectorAll('[data-testid="cg-card"]').length ?? 0;
      const alert = root?.querySelector('[role="alert"]')?.textContent ?? '';
      if (alert) return true; // reported below
      return heading.endsWith(`“${q}”`) && cards > 0;
    },
    query,
  );
  const s = await state(page);
  if (s.alert) fail(`the widget shows an error: ${s.alert}`);
  return s;
}

async function waitForReady(page) {
  const alert = await ready(page);
  if (alert) fail(`the index did not load: ${alert}`);
}

async function screenshot(page, name) {
  if (SCREENSHOT_DIR) await page.screenshot({ path: path.join(SCREENSHOT_DIR, name), fullPage: true });
}

async function openSettings(page) {
  const button = page.locator(sel.settings);
  if ((await button.getAttribute('aria-expanded')) !== 'true') await button.click();
  await page.locator(sel.endpoint).waitFor({ state: 'visible' });
}

async function ask(page, question) {
  await page.locator(sel.input).fill(question);
  await page.locator(sel.ask).click();
}

// ------------------------------------------------------------------ setup

// A hung browser fails the run instead of stalling CI.
setTimeout(() => { console.log('FAIL watchdog: the browser test did not finish within 600 s'); process.exit(1); }, 600000).unref();

const pageErrors = [];
function watch(page, label) {
  page.on('pageerror', (err) => pageErrors.push(`${label}: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') console.log(`  console error (${label}): ${msg.text()}`);
  });
  page.setDefaultTimeout(CHECK_TIMEOUT_MS);
}

const browser = await launch();
const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
const policyViolations = await watchPolicy(context);
const page = await context.newPage();
watch(page, 'desktop');

const checks = [];
const check = (name, fn) => checks.push({ name, fn });

// ----------------------------------------------------------------- checks

check('search', async () => {
  await page.goto(SITE_URL);
  await waitForReady(page);
  const question = 'Where is BareField::accumulateHalo defined?';
  await page.locator(sel.input).fill(question);
  const s = await waitForCards(page, question);
  if (s.paths[0] !== 'src/Field/BareField.hpp') {
    fail(`first card is ${JSON.stringify(s.paths[0])}, expected "src/Field/BareField.hpp" (cards: ${s.paths.join(', ')})`);
  }
  await screenshot(page, 'search.png');
});

check('keyboard', async () => {
  await page.evaluate(() => {
    document.activeElement?.blur();
    document.querySelector('codegloss-search').shadowRoot.activeElement?.blur();
  });
  await page.keyboard.press('/');
  const focused = await page.evaluate(() => {
    const host = document.querySelector('codegloss-search');
    return document.activeElement === host && host.shadowRoot.activeElement?.dataset.testid === 'cg-input';
  });
  if (!focused) fail('pressing / on the page did not focus the search box');

  const query = 'halo cells exchange';
  await page.keyboard.type(query);
  await waitForCards(page, query);
  await until(page, 'the result list to open (aria-expanded="true")', (s) =>
    document.querySelector('codegloss-search').shadowRoot.querySelector(s).getAttribute('aria-expanded') === 'true',
  sel.input);

  // ArrowDown to the first option whose card has code (file, module and
  // call-chain cards carry only a gloss).
  const options = await page.locator('[role="option"]').count();
  let active;
  for (let step = 0; step < options; step += 1) {
    await page.keyboard.press('ArrowDown');
    active = await page.evaluate((s) => {
      const root = document.querySelector('codegloss-search').shadowRoot;
      const id = root.querySelector(s).getAttribute('aria-activedescendant');
      const option = id ? root.getElementById(id) : null;
      const card = option ? root.getElementById(`cg-card-${option.dataset.n}`) : null;
      return {
        id,
        role: option?.getAttribute('role'),
        selected: option?.getAttribute('aria-selected'),
        code: Boolean(card?.querySelector('details')),
      };
    }, sel.input);
    if (!active.id) fail('ArrowDown set no aria-activedescendant');
    if (active.role !== 'option' || active.selected !== 'true') {
      fail(`aria-activedescendant ${active.id} is not a selected option (${JSON.stringify(active)})`);
    }
    if (active.code) break;
  }
  if (!active.code) fail(`none of the ${options} results for “${query}” has code to open`);

  await page.keyboard.press('Enter');
  const opened = await page.evaluate(() => {
    const root = document.querySelector('codegloss-search').shadowRoot;
    const details = root.querySelector('[data-testid="cg-card"] details[open]');
    const card = details?.closest('[data-testid="cg-card"]');
    // A split part's repeated signature has blank gutters: it is not
    // lines of the file. The numbered lines are the card's own range.
    const numbers = details
      ? [...details.querySelectorAll('.cg-ln')].map((n) => n.textContent).filter((t) => t !== '')
      : [];
    const range = (card?.querySelector('.cg-lines')?.textContent ?? '').match(/^:(\d+)-(\d+)$/);
    return {
      open: Boolean(details),
      focused: root.activeElement === card,
      numbers: numbers.slice(0, 3),
      last: numbers[numbers.length - 1],
      range: range ? [range[1], range[2]] : null,
      count: numbers.length,
      code: details?.querySelector('pre')?.textContent.length ?? 0,
    };
  });
  if (!opened.open) fail('Enter on the active option opened no code view');
  if (!opened.count || !/^\d+$/.test(opened.numbers[0])) fail(`the code view shows no line numbers (${JSON.stringify(opened)})`);
  if (opened.count > 1 && Number(opened.numbers[1]) !== Number(opened.numbers[0]) + 1) {
    fail(`line numbers do not count up: ${opened.numbers.join(', ')}`);
  }
  if (opened.range && (opened.numbers[0] !== opened.range[0] || opened.last !== opened.range[1])) {
    fail(`the code view numbers lines ${opened.numbers[0]}-${opened.last}, the card says ${opened.range.join('-')}`);
  }
  if (!opened.focused) fail('Enter did not move focus to the opened card');

  await page.keyboard.press('Escape');
  const back = await page.evaluate((s) => {
    const root = document.querySelector('codegloss-search').shadowRoot;
    const input = root.querySelector(s);
    return { focused: root.activeElement === input, expanded: input.getAttribute('aria-expanded') };
  }, sel.input);
  if (!back.focused) fail('Escape did not return focus to the search box');
  if (back.expanded !== 'false') fail(`after Escape aria-expanded is ${back.expanded}, expected "false"`);
  await screenshot(page, 'keyboard.png');
});

check('more-text', async () => {
  // The first six cards come with their text; the rest load on request.
  const question = 'halo';
  await page.locator(sel.input).fill(question);
  const s = await waitForCards(page, question);
  if (s.paths.length <= 6) fail(`expected more than 6 cards for "${question}", got ${s.paths.length}`);
  await page.locator(sel.input).press('Escape');
  // On the small fixture one text shard may already hold every card's text;
  // then there is nothing left to load and no button.
  await page.waitForTimeout(300);
  const more = page.locator('[data-testid="cg-more"]').first();
  if (await more.count()) await more.click();
  await until(page, 'every card to have its text', () => {
    const root = document.querySelector('codegloss-search')?.shadowRoot;
    return root && root.querySelectorAll('[data-testid="cg-more"]').length === 0
      && [...root.querySelectorAll('[data-testid="cg-card"]')].every((c) => c.querySelector('.cg-gloss, details'));
  });
});

check('xss', async () => {
  const query = 'inert markup sanitizer';
  await page.locator(sel.input).fill(query);
  const s = await waitForCards(page, query);
  const target = 'src/Unsafe/Markup.h';
  if (!s.paths.includes(target)) fail(`no card for ${target} among the results: ${s.paths.join(', ')}`);
  await page.keyboard.press('Escape'); // close the result list that covers the cards
  await cardText(page, sel.path, target);
  const card = page
    .locator(sel.card)
    .filter({ has: page.locator(sel.path, { hasText: target }) })
    .filter({ has: page.locator('summary') })
    .first();
  if (!(await card.count())) fail(`no ${target} card has a code view`);
  await card.locator('summary').click();
  await card.locator('pre').waitFor({ state: 'visible' });
  await page.waitForTimeout(500); // give an injected handler time to run, were there one
  const result = await page.evaluate(() => {
    const root = document.querySelector('codegloss-search').shadowRoot;
    return {
      xss: window.__xss,
      imgs: root.querySelectorAll('img').length + document.querySelectorAll('img').length,
      scripts: root.querySelectorAll('script').length,
    };
  });
  if (result.xss !== undefined) fail(`window.__xss is ${JSON.stringify(result.xss)}: markup from the index ran`);
  if (result.imgs) fail(`${result.imgs} <img> element(s) were created from index text`);
  if (result.scripts) fail(`${result.scripts} <script> element(s) were created inside the widget`);
  const text = await card.innerText();
  if (!text.includes('<img src=x')) fail(`the literal text "<img src=x" is not visible in the ${target} card`);
  await screenshot(page, 'xss.png');
});

check('answer', async () => {
  if (!LLM_URL) {
    console.log('  skipped: LLM_URL is empty, so no streaming answer was checked');
    return 'skipped';
  }
  await openSettings(page);
  await page.locator(sel.endpoint).fill(LLM_URL);
  await page.locator(sel.model).fill(LLM_MODEL);
  // The worker's request carries core's answer defaults, the seed among
  // them, as `codegloss ask` sends them.
  const bodies = [];
  const onRequest = (request) => {
    if (request.url().endsWith('/chat/completions')) bodies.push(request.postData());
  };
  page.context().on('request', onRequest);
  const question = 'What does accumulateHalo do?';
  await ask(page, question);
  await waitForCards(page, question);

  // Poll the answer panel: its text must grow while the answer streams.
  const lengths = [];
  let final = null;
  const t0 = Date.now();
  while (Date.now() - t0 < ANSWER_TIMEOUT_MS) {
    const now = await page.evaluate(() => {
      const root = document.querySelector('codegloss-search').shadowRoot;
      const panel = root.querySelector('[data-testid="cg-answer"]');
      return {
        state: panel.dataset.state,
        length: root.querySelector('[data-testid="cg-answer-text"]').textContent.length,
        error: root.querySelector('[data-testid="cg-answer-error"]').textContent,
      };
    });
    if (now.state === 'error') fail(`the answer failed: ${now.error}`);
    if (now.state === 'done') {
      final = now;
      break;
    }
    if (now.length > (lengths.at(-1) ?? 0)) lengths.push(now.length);
    await new Promise((r) => setTimeout(r, 25));
  }
  if (!final) fail(`no finished answer after ${ANSWER_TIMEOUT_MS / 1000} s`);
  page.context().off('request', onRequest);
  if (bodies.length !== 1) fail(`${bodies.length} chat requests were seen, expected 1`);
  const body = JSON.parse(bodies[0] || '{}');
  if (body.seed !== 0 || body.stream !== true || body.model !== LLM_MODEL) {
    fail(`the chat request has seed ${body.seed}, stream ${body.stream}, model ${body.model}; expected 0, true, ${LLM_MODEL}`);
  }
  if (lengths.length < 2) fail(`the answer text grew ${lengths.length} time(s) before it finished; expected a stream (at least 2)`);

  const answer = await page.evaluate(() => {
    const root = document.querySelector('codegloss-search').shadowRoot;
    const panel = root.querySelector('[data-testid="cg-answer"]');
    const links = [...root.querySelectorAll('[data-testid="cg-answer-text"] a')].map((a) => ({
      href: a.getAttribute('href'),
      target: Boolean(root.getElementById(a.getAttribute('href').slice(1))),
    }));
    const support = root.querySelector('[data-testid="cg-support"]');
    return {
      text: root.querySelector('[data-testid="cg-answer-text"]').textContent,
      links,
      live: panel.getAttribute('aria-live'),
      support: support && {
        hidden: support.hidden,
        text: support.textContent,
        links: [...support.querySelectorAll('a')].map((a) => Boolean(root.getElementById(a.getAttribute('href').slice(1)))),
      },
    };
  });
  if (!answer.text.trim()) fail('the finished answer is empty');
  if (!answer.support) fail('the answer panel has no support check');
  if (!answer.support.hidden && !answer.support.text.startsWith('Check')) fail(`the support check reads ${JSON.stringify(answer.support.text)}`);
  if (answer.support.links.some((ok) => !ok)) fail('a support link goes to no card');
  if (answer.live !== 'polite') fail(`the answer panel has aria-live=${answer.live}, expected "polite"`);
  for (const link of answer.links) {
    if (!/^#cg-card-\d+$/.test(link.href)) fail(`an answer link goes to ${link.href}, not to a card`);
    if (!link.target) fail(`citation ${link.href} has no card`);
  }
  if (answer.links.length) {
    // Following a citation opens and focuses its card inside the shadow root.
    const href = answer.links[0].href;
    await page.locator(`${sel.answer} a[href="${href}"]`).first().click();
    const ok = await page.evaluate((id) => {
      const root = document.querySelector('codegloss-search').shadowRoot;
      const card = root.getElementById(id);
      const details = card.querySelector('details');
      return root.activeElement === card && (!details || details.open);
    }, href.slice(1));
    if (!ok) fail(`clicking citation ${href} did not open and focus its card`);
  }
  console.log(
    `  answer: ${answer.text.trim().length} chars, grew ${lengths.length} times while streaming, ${answer.links.length} citation link(s); check: ${answer.support.hidden ? 'nothing flagged' : answer.support.text.slice(0, 160)}`,
  );
  await screenshot(page, 'answer.png');
});

check('endpoint-down', async () => {
  await openSettings(page);
  await page.locator(sel.endpoint).fill(DOWN_URL);
  if (LLM_URL) await page.locator(sel.model).fill(LLM_MODEL);
  const question = 'What does accumulateHalo do?';
  await ask(page, question);
  // The worker sends this ask's evidence before its answer error, so once the
  // error shows, the cards are this ask's (the last check asked the same).
  const error = page.locator(sel.answerError);
  try {
    await error.waitFor({ state: 'visible', timeout: CHECK_TIMEOUT_MS });
  } catch {
    fail(`no answer error became visible for endpoint ${DOWN_URL}`);
  }
  const message = (await error.innerText()).trim();
  if (!message) fail('the answer error is empty');
  const s = await state(page);
  if (!s.paths.length) fail('no evidence cards are shown with the answer error');
  if (s.heading !== `Evidence for “${question}”`) fail(`the cards shown are not the ask's evidence (heading: ${s.heading})`);
  console.log(`  answer error: ${message.replace(/\s+/g, ' ')}`);
  await screenshot(page, 'down.png');
});

check('mobile', async () => {
  const phone = await browser.newContext({
    viewport: { width: 390, height: 844 },
    deviceScaleFactor: 2,
    isMobile: true,
    hasTouch: true,
  });
  await watchPolicy(phone, policyViolations);
  const small = await phone.newPage();
  watch(small, 'mobile');
  try {
    await small.goto(SITE_URL);
    await waitForReady(small);
    const query = 'halo';
    await small.locator(sel.input).fill(query);
    await waitForCards(small, query);
    await small.keyboard.press('Escape'); // close the result list that covers the cards
    // Open the first card's code too: long code lines must scroll inside it.
    await small.locator(`${sel.card} summary`).first().click();
    await small.locator(`${sel.card} pre`).first().waitFor({ state: 'visible' });
    const layout = await small.evaluate((s) => {
      const root = document.querySelector('codegloss-search').shadowRoot;
      const box = root.querySelector(s).getBoundingClientRect();
      return { scrollWidth: document.documentElement.scrollWidth, left: box.left, right: box.right };
    }, sel.card);
    if (layout.scrollWidth > 390) fail(`the page scrolls sideways: scrollWidth ${layout.scrollWidth} > 390`);
    if (layout.left < 0 || layout.right > 390) {
      fail(`the first card spans ${layout.left}–${layout.right} px, outside the 390 px viewport`);
    }
    await screenshot(small, 'mobile.png');
  } finally {
    await phone.close();
  }
});

check('policy-endpoint', async () => {
  // The site's policy allows answers from this computer and the one origin
  // its configuration lists; the widget says so rather than "cannot reach".
  await openSettings(page);
  await page.locator(sel.endpoint).fill('https://llm.example.net/v1');
  await ask(page, 'What does accumulateHalo do?');
  const error = page.locator(sel.answerError);
  try {
    await error.waitFor({ state: 'visible', timeout: CHECK_TIMEOUT_MS });
  } catch {
    fail('no answer error became visible for an endpoint the policy does not allow');
  }
  const message = (await error.innerText()).replace(/\s+/g, ' ').trim();
  if (!message.includes("This site's security policy only allows answer models on this computer")) {
    fail(`the answer error does not explain the policy: ${message}`);
  }
  if (!message.includes('https://llm.example.org')) fail(`the answer error does not name the allowed origin: ${message}`);
  if (/OLLAMA_ORIGINS/.test(message)) fail(`the answer error gives the unreachable-server hint: ${message}`);
  await openSettings(page);
  await page.locator(sel.endpoint).fill(DOWN_URL);
});

check('no-policy-violations', async () => {
  // Search, keyboard, code views, answers (streamed when LLM_URL is set),
  // errors and the phone layout: the site's policy blocked nothing.
  if (policyViolations.length) fail(`the Content-Security-Policy reported:\n  ${policyViolations.join('\n  ')}`);
});

// -------------------------------------------------------------------- run

let failed = false;
for (const { name, fn } of checks) {
  const before = pageErrors.length;
  try {
    const result = await fn();
    if (pageErrors.length > before) fail(`uncaught error in the page: ${pageErrors.slice(before).join(' | ')}`);
    console.log(result === 'skipped' ? `ok ${name} (skipped)` : `ok ${name}`);
  } catch (err) {
    const reason = err instanceof CheckFailure ? err.message : err.stack || String(err);
    console.log(`FAIL ${name}: ${reason}`);
    if (SCREENSHOT_DIR) {
      await page.screenshot({ path: path.join(SCREENSHOT_DIR, `fail-${name}.png`), fullPage: true }).catch(() => {});
    }
    failed = true;
    break;
  }
}
await browser.close();
process.exit(failed ? 1 : 0);
