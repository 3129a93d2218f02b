// policy.test.mjs: site/policy.js (which answer endpoints the site's
// Content-Security-Policy allows) in plain Node, no browser.
//
// Why it exists: the worker refuses an endpoint the page's <meta> policy
// does not allow, before the browser would (a <meta> policy does not reach
// a worker); the source-expression matching must agree with the browser's
// on the forms a codegloss site uses. Prints `ok` or `FAIL <reason>`.

import assert from 'node:assert/strict';
import { connectSources, endpointRefusal } from '../../site/policy.js';

// POLICY: the site's policy with https://llm.example.org listed (indexer/tests/site.rs passes
// the one `content_security_policy` writes).
const policy = process.env.POLICY || "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; connect-src 'self' "
  + 'http://localhost:* http://127.0.0.1:* https://localhost:* https://127.0.0.1:* https://llm.example.org';
const base = 'http://127.0.0.1:8700/';
const allowed = (url, policies = [policy]) => endpointRefusal(url, policies, base) === null;

try {
  assert.deepEqual(connectSources("default-src 'self'"), ["'self'"]);
  assert.equal(connectSources("script-src 'self'"), null);
  for (const url of [
    'http://127.0.0.1:11434/v1', 'http://localhost:8080/v1', 'https://127.0.0.1:1/v1',
    'http://127.0.0.1:8700/v1', 'https://llm.example.org/v1', 'https://LLM.example.org:443/v1',
  ]) assert.ok(allowed(url), url);
  for (const url of [
    'https://llm.example.net/v1', 'http://llm.example.org/v1', 'https://llm.example.org:8443/v1',
    'http://[::1]:11434/v1', 'http://10.0.0.2:11434/v1', 'https://sub.llm.example.org/v1',
  ]) assert.ok(!allowed(url), url);
  const message = endpointRefusal('https://llm.example.net/v1', [policy], base);
  assert.equal(message, "This site's security policy only allows answer models on this computer "
    + '(localhost or 127.0.0.1, any port) or at https://llm.example.org; https://llm.example.net is not allowed. '
    + "Use a model server on this computer, or ask the site's maintainer to allow this one.");
  // Wildcards, scheme sources, default-src, several policies, none.
  assert.ok(allowed('https://a.example.net:9/v1', ["connect-src https://*.example.net:*"]));
  assert.ok(!allowed('https://example.net/v1', ["connect-src https://*.example.net"]));
  assert.ok(allowed('https://anything.test/v1', ['connect-src https:']));
  assert.ok(!allowed('https://anything.test/v1', ["default-src 'self'"]));
  assert.ok(!allowed('http://127.0.0.1:11434/v1', [policy, "connect-src 'self'"]));
  assert.ok(allowed('https://anything.test/v1', []));
  assert.match(endpointRefusal('http://127.0.0.1:11434/v1', ["connect-src 'self'"], base), /allows no answer model/);
  console.log('ok policy');
} catch (e) {
  console.log(`FAIL policy: ${e.message}`);
  process.exit(1);
}
