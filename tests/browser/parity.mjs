// Parity: rank questions in headless Chromium through the site's own
// worker and wasm module, and write the ranked contexts as JSON, for the
// Rust test (indexer/tests/site.rs) to compare with `codegloss query --json`.
// Env: SITE_URL, QUESTIONS (JSON file: array of strings), OUT (JSON file),
// SEMANTIC=1 to load the embedding model first (hybrid ranking). Each row
// also carries the answer prompt the worker would send for the question.

import fs from 'node:fs';
import { launch, rankInBrowser } from './lib.mjs';

// A hung browser fails the run instead of stalling CI.
setTimeout(() => { console.error('parity: no result within 240 s'); process.exit(1); }, 240000).unref();

const questions = JSON.parse(fs.readFileSync(process.env.QUESTIONS, 'utf8'));

async function attempt() {
  const browser = await launch();
  try {
    const page = await browser.newPage();
    page.on('pageerror', (e) => { console.error(`page error: ${e.message}`); process.exitCode = 1; });
    page.on('console', (m) => { if (m.type() === 'error') console.error(`console: ${m.text()}`); });
    await page.goto(process.env.SITE_URL);
    return await rankInBrowser(page, questions, { semantic: process.env.SEMANTIC === '1', prompts: true });
  } finally {
    await browser.close();
  }
}

// Headless Chromium on a loaded 2-core machine now and then loses a page
// at start ("Target page, context or browser has been closed"): one retry.
let ranked;
try {
  ranked = await attempt();
} catch (e) {
  console.error(`parity: first attempt failed (${e.message.split('\n')[0]}); retrying once`);
  ranked = await attempt();
}
fs.writeFileSync(process.env.OUT, JSON.stringify(ranked, null, 1));
console.log(`ranked ${ranked.length} questions in the browser`);
