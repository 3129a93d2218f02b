// Parity: rank questions in headless Chromium through the site's own
// worker and wasm module, and write the ranked contexts as JSON, for the
// Rust test (indexer/tests/site.rs) to compare with `codegloss query --json`.
// Env: SITE_URL, QUESTIONS (JSON file: array of strings), OUT (JSON file),
// SEMANTIC=1 to load the embedding model first (hybrid ranking).

import fs from 'node:fs';
import { launch, rankInBrowser } from './lib.mjs';

const questions = JSON.parse(fs.readFileSync(process.env.QUESTIONS, 'utf8'));
const browser = await launch();
try {
  const page = await browser.newPage();
  page.on('pageerror', (e) => { console.error(`page error: ${e.message}`); process.exitCode = 1; });
  page.on('console', (m) => { if (m.type() === 'error') console.error(`console: ${m.text()}`); });
  await page.goto(process.env.SITE_URL);
  const ranked = await rankInBrowser(page, questions, { semantic: process.env.SEMANTIC === '1' });
  fs.writeFileSync(process.env.OUT, JSON.stringify(ranked, null, 1));
  console.log(`ranked ${ranked.length} questions in the browser`);
} finally {
  await browser.close();
}
