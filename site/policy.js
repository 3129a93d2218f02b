// policy.js: which answer endpoints the site's Content-Security-Policy
// allows, for worker.js.
//
// Why it exists: a codegloss site declares a policy (`codegloss serve`
// sends it as a header, the landing page carries it as a <meta>) whose
// connect-src lets the page reach only the site itself, answer models on
// this computer and the origins its maintainer listed (`[site]
// answer_origins`). A <meta> policy does not reach the worker, and a
// request the policy blocks fails like an unreachable server; so the
// worker checks the reader's endpoint against the policy first and says
// why it refuses, in words a reader can act on.

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** The source list of `connect-src` (else `default-src`) of one policy; null: no restriction. */
export function connectSources(policy) {
  const directives = new Map();
  for (const part of String(policy).split(';')) {
    const [name, ...values] = part.trim().split(/\s+/);
    if (name && !directives.has(name.toLowerCase())) directives.set(name.toLowerCase(), values);
  }
  return directives.get('connect-src') ?? directives.get('default-src') ?? null;
}

function hostMatches(pattern, host) {
  if (pattern === '*') return true;
  if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1));
  return pattern === host;
}

/** Whether one source expression (CSP Level 3, the forms a site uses) matches `url`. */
function sourceMatches(source, url, self) {
  const s = source.toLowerCase();
  if (s === "'self'") return url.origin === self.origin;
  if (s === "'none'" || s.startsWith("'")) return false;
  if (s === '*') return ['http:', 'https:', 'ws:', 'wss:'].includes(url.protocol);
  if (/^[a-z][a-z0-9+.-]*:$/.test(s)) return url.protocol === s;
  const m = /^(?:([a-z][a-z0-9+.-]*):\/\/)?(\*|\*\.[^:/]+|[^:/]+)(?::(\*|\d+))?(\/.*)?$/.exec(s);
  if (!m) return false;
  const [, scheme, host, port] = m;
  if (scheme ? url.protocol !== `${scheme}:` : !['http:', 'https:'].includes(url.protocol)) return false;
  if (!hostMatches(host, url.hostname.toLowerCase())) return false;
  const defaultPort = url.protocol === 'https:' ? '443' : '80';
  const urlPort = url.port || defaultPort;
  if (port === '*') return true;
  return (port ?? defaultPort) === urlPort;
}

/**
 * Check an answer endpoint against the policies in force (the texts of
 * the page's <meta> policies, or the one a blocked request reported).
 * Returns null when every policy allows it, else the reader's message.
 */
export function endpointRefusal(endpoint, policies, base) {
  let url;
  try {
    url = new URL(endpoint);
  } catch {
    return null; // the transport reports a malformed URL
  }
  const self = new URL(base);
  for (const policy of policies) {
    const sources = connectSources(policy);
    if (!sources || sources.some((s) => sourceMatches(s, url, self))) continue;
    return refusal(url, sources);
  }
  return null;
}

function refusal(url, sources) {
  const others = [];
  let loopback = false;
  for (const s of sources) {
    if (s.startsWith("'")) continue;
    const host = /^(?:[a-z][a-z0-9+.-]*:\/\/)?([^:/]+)/i.exec(s)?.[1]?.toLowerCase();
    if (host && LOOPBACK.has(host)) loopback = true;
    else others.push(s);
  }
  const where = [loopback ? 'on this computer (localhost or 127.0.0.1, any port)' : '', ...others.map((o) => `at ${o}`)]
    .filter(Boolean);
  const allowed = where.length
    ? `only allows answer models ${where.join(' or ')}`
    : 'allows no answer model';
  const advice = loopback
    ? 'Use a model server on this computer, or ask the site\'s maintainer to allow this one.'
    : 'Ask the site\'s maintainer to allow this one.';
  return `This site's security policy ${allowed}; ${url.origin} is not allowed. ${advice}`;
}
