// widget.js: the <codegloss-search> element of a codegloss site.
//
// Why it exists: a documentation page gets search and question answering
// over its codebase from one script tag and one element. This module only
// renders and handles input; loading the index, retrieval and the call to
// the answer model happen in worker.js (the WebAssembly client), which it
// reaches through a small message protocol:
//   to the worker:   init {index, policies} · search {id, query} · ask {id, query, settings}
//                    · text · cancel
//   from the worker: ready · semantic · results · texts · answer-start · answer-delta
//                    · answer-done · answer-error · error · policy-violation
// (site/README.md documents them).
//
// Security: every string that comes from the index or from the model is
// rendered as text (text nodes, textContent, attributes set one by one),
// never parsed as HTML, with its bidirectional controls shown as visible
// markers (bidi.js) and very long names and glosses cut (dom.js). Syntax
// highlighting builds spans; citations are made by splitting the text.

import { answerNodes, sourceNodes, supportNodes } from './answer-view.js';
import { revealBidi } from './bidi.js';
import {
  GLOSS_MAX, NAME_MAX, PATH_MAX, clamped, clause, formatBytes, h, inlineCode, location, plural, setText, short, title,
} from './dom.js';

const TAG = 'codegloss-search';
const DEFAULT_INDEX = 'index/codegloss.json';
const DEFAULT_ENDPOINT = 'http://127.0.0.1:11434/v1';
const SEARCH_DEBOUNCE_MS = 150;
const STORAGE_KEYS = {
  endpoint: 'codegloss.endpoint',
  model: 'codegloss.model',
  apiKey: 'codegloss.apiKey',
};
/** An answer error that means the browser was not allowed to call the server. */
const REFUSED = /OLLAMA_ORIGINS|CORS|refused|Failed to fetch/i;

// ---------------------------------------------------------------- helpers

/** localStorage that degrades to nothing where storage is blocked. */
const storage = {
  get(key) {
    try {
      return localStorage.getItem(key);
    } catch {
      return null;
    }
  },
  set(key, value) {
    try {
      if (value) localStorage.setItem(key, value);
      else localStorage.removeItem(key);
    } catch {
      // Storage blocked (sandboxed frame, privacy mode): the value lasts for this page only.
    }
  },
};

// ---------------------------------------------------------- highlighting

const CPP_KEYWORDS = new Set(
  (
    'alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t ' +
    'char16_t char32_t class compl concept const consteval constexpr constinit const_cast ' +
    'continue co_await co_return co_yield decltype default delete do double dynamic_cast else ' +
    'enum explicit export extern false final float for friend goto if inline int long mutable ' +
    'namespace new noexcept not not_eq nullptr operator or or_eq override private protected ' +
    'public register reinterpret_cast requires return short signed sizeof static static_assert ' +
    'static_cast struct switch template this thread_local throw true try typedef typeid typename ' +
    'union unsigned using virtual void volatile wchar_t while xor xor_eq ' +
    '__global__ __device__ __host__ __shared__ __constant__'
  ).split(' '),
);
const STRING_PREFIXES = new Set(['L', 'u', 'U', 'u8', 'R', 'LR', 'uR', 'UR', 'u8R']);
const IDENT = /[A-Za-z_$][\w$]*/y;
const NUMBER =
  /(?:0[xX][\da-fA-F']*\.?[\da-fA-F']*(?:[pP][+-]?\d+)?|0[bB][01']+|(?:\d[\d']*\.?[\d']*|\.\d[\d']*)(?:[eE][+-]?\d+)?)[uUlLfFzZ]*/y;
const DIRECTIVE = /#[ \t]*[A-Za-z_]*/y;
const HEADER_NAME = /[ \t]*<[^>\n]*>/y;

/** End of a line, following backslash continuations (comments, directives). */
function endOfLogicalLine(src, from) {
  let i = from;
  for (;;) {
    const nl = src.indexOf('\n', i);
    if (nl < 0) return src.length;
    const before = src[nl - 1] === '\r' ? src[nl - 2] : src[nl - 1];
    if (before !== '\\') return nl;
    i = nl + 1;
  }
}

/** End of a quoted literal opened at `open`; an unterminated one stops at the line end. */
function endOfQuoted(src, open, quote) {
  let i = open + 1;
  while (i < src.length) {
    const c = src[i];
    if (c === '\\') i += 2;
    else if (c === quote) return i + 1;
    else if (c === '\n') return i;
    else i += 1;
  }
  return src.length;
}

/** End of a raw string `R"delim( ... )delim"` whose quote is at `quote`. */
function endOfRawString(src, quote) {
  const paren = src.indexOf('(', quote + 1);
  const delim = paren < 0 ? '' : src.slice(quote + 1, paren);
  if (paren < 0 || delim.length > 16 || /[\s"\\)]/.test(delim)) return endOfQuoted(src, quote, '"');
  const close = src.indexOf(`)${delim}"`, paren + 1);
  return close < 0 ? src.length : close + delim.length + 2;
}

/** Split C++ source into [kind, text] tokens; kind '' is plain text. */
function tokenizeCpp(src) {
  const tokens = [];
  const emit = (kind, text) => {
    const last = tokens[tokens.length - 1];
    if (last && last[0] === kind) last[1] += text;
    else tokens.push([kind, text]);
  };
  let i = 0;
  let lineStart = true; // only blanks since the last newline: a `#` starts a directive
  while (i < src.length) {
    const c = src[i];
    const next = src[i + 1] ?? '';
    let end = i + 1;
    let kind = '';
    if (c === '/' && next === '/') {
      end = endOfLogicalLine(src, i);
      kind = 'comment';
    } else if (c === '/' && next === '*') {
      const close = src.indexOf('*/', i + 2);
      end = close < 0 ? src.length : close + 2;
      kind = 'comment';
    } else if (c === '#' && lineStart) {
      DIRECTIVE.lastIndex = i;
      DIRECTIVE.exec(src);
      end = DIRECTIVE.lastIndex;
      kind = 'preproc';
      if (/^#\s*(include|import)/.test(src.slice(i, end))) {
        HEADER_NAME.lastIndex = end;
        if (HEADER_NAME.exec(src)) {
          emit(kind, src.slice(i, end));
          i = end;
          end = HEADER_NAME.lastIndex;
          kind = 'string';
        }
      }
    } else if (c === '"' || c === "'") {
      end = endOfQuoted(src, i, c);
      kind = 'string';
    } else if ((c >= '0' && c <= '9') || (c === '.' && next >= '0' && next <= '9')) {
      NUMBER.lastIndex = i;
      NUMBER.exec(src);
      end = Math.max(NUMBER.lastIndex, i + 1);
      kind = 'number';
    } else if (/[A-Za-z_$]/.test(c)) {
      IDENT.lastIndex = i;
      IDENT.exec(src);
      end = IDENT.lastIndex;
      const word = src.slice(i, end);
      if (src[end] === '"' && STRING_PREFIXES.has(word)) {
        end = word.endsWith('R') ? endOfRawString(src, end) : endOfQuoted(src, end, '"');
        kind = 'string';
      } else if (CPP_KEYWORDS.has(word)) {
        kind = 'keyword';
      }
    }
    emit(kind, src.slice(i, end));
    if (c === '\n') lineStart = true;
    else if (c !== ' ' && c !== '\t' && c !== '\r') lineStart = false;
    i = end;
  }
  return tokens;
}

/**
 * A `<pre>` of the code with the file's line numbers from `firstLine` (1 for
 * a whole file); C++ is highlighted, other languages are plain. `frame` is
 * the card's `{prelude_lines, prelude_from, trailer_lines}`: the lines of
 * `code` that are not the file's own (a part of a split function repeats
 * its signature and a `// [part i/n]` marker first, and ends with
 * `// [continues in part j/n]`). Those are dimmed and unnumbered, under a
 * note saying where the signature is, so that every number shown is the
 * file's line. Line numbers and the note are excluded from selection and
 * from the accessibility tree (the label says what the prelude is).
 */
function renderCode(code, language, firstLine, label, frame) {
  // Lines as the index counts them: split at \n only (a lone \r stays).
  const text = String(code ?? '').replace(/\r\n/g, '\n').replace(/\n$/, '');
  const tokens = language === 'cpp' ? tokenizeCpp(text) : [['', text]];
  const count = text.split('\n').length;
  const lines = (n) => Math.max(0, Math.floor(Number(n) || 0));
  const prelude = Math.min(count, lines(frame?.prelude_lines));
  const trailer = Math.min(count - prelude, lines(frame?.trailer_lines));
  const from = lines(frame?.prelude_from);
  const note = prelude === 0 ? '' : from > 0 ? `signature repeated from line ${from}` : 'signature repeated from the first part';
  const first = Math.max(1, firstLine || 1);
  const last = first + Math.max(0, count - prelude - trailer - 1);
  const codeEl = h('code', { class: 'cg-code-text' });
  codeEl.style.setProperty('--cg-ln-digits', String(String(last).length));
  const gutter = (number) => h('span', { class: 'cg-ln', 'aria-hidden': 'true' }, number);
  const dimmed = (el) => {
    el.style.opacity = '0.6';
    return el;
  };
  if (note) {
    const noteEl = dimmed(h('span', { class: 'cg-frame-note', 'aria-hidden': 'true' }, `(${note}; not lines of this part)`));
    noteEl.style.fontStyle = 'italic';
    noteEl.style.userSelect = 'none';
    codeEl.append(gutter(''), noteEl, '\n');
  }
  let index = 0; // line of `code`, from 0
  let target = codeEl; // where the text of the current line goes
  const startLine = () => {
    if (index < prelude || index >= count - trailer) {
      target = dimmed(h('span', { class: 'cg-frame', title: index < prelude ? note : 'added by codegloss: not a line of the file' }));
      codeEl.append(gutter(''), target);
    } else {
      target = codeEl;
      codeEl.append(gutter(String(first + index - prelude)));
    }
  };
  startLine();
  for (const [kind, value] of tokens) {
    value.split('\n').forEach((part, k) => {
      if (k > 0) {
        index += 1;
        codeEl.append('\n');
        startLine();
      }
      if (part) target.append(kind ? h('span', { class: `cg-tok-${kind}` }, part) : part);
    });
  }
  const described = note ? `${label} (the first ${prelude} lines: ${note})` : label;
  // Focusable, so that keyboard users can scroll long lines.
  return h('pre', { class: 'cg-pre', tabindex: '0', 'aria-label': described, 'data-language': language }, codeEl);
}

// ------------------------------------------------------ the "/" shortcut

/** Connected widgets in connection order; `/` focuses the first. */
const instances = new Set();

function isTypingTarget(node) {
  return (
    node instanceof Element &&
    (node.isContentEditable || node.matches('input, textarea, select, [role="textbox"]'))
  );
}

document.addEventListener('keydown', (event) => {
  if (event.key !== '/' || event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.defaultPrevented || event.isComposing) return;
  if (isTypingTarget(event.composedPath()[0])) return;
  const first = instances.values().next().value;
  if (!first) return;
  event.preventDefault();
  first.focusInput();
});

// ------------------------------------------------------------- the element

class CodeglossSearch extends HTMLElement {
  static observedAttributes = ['index', 'endpoint', 'model'];

  #worker = null;
  #ready = false;
  #pending = new Map(); // type -> the newest search and ask made before the index was ready
  #seq = 0;
  #latestId = 0; // replies for any other id are stale
  #debounce = 0;
  #indexInfo = null;
  #cards = new Map(); // n -> {card, el, details} of the cards shown
  #cardsOwner = 0; // the request id the shown cards belong to
  #shownQuery = ''; // the query of the shown cards
  #shownSemantic = false; // whether they were ranked with semantic search
  #rerankId = 0; // the search that ranks the shown results again once semantic search is on
  #options = []; // listbox options, in order
  #active = -1; // index into #options
  #answer = null; // {id, query, cards, text, state, citations, invalid, model, t0}
  #answerRenderQueued = false;
  #el = {};

  constructor() {
    super();
    this.attachShadow({ mode: 'open' });
    this.#build();
  }

  connectedCallback() {
    instances.add(this);
    this.#refreshSettingsDefaults();
    if (!this.#worker) this.#start();
  }

  disconnectedCallback() {
    instances.delete(this);
    this.#stop();
  }

  attributeChangedCallback(name, oldValue, newValue) {
    if (oldValue === newValue) return;
    if (name === 'index' && this.#worker) {
      this.#stop();
      this.#start();
    } else if (name === 'endpoint' || name === 'model') {
      this.#refreshSettingsDefaults();
    }
  }

  /** Focus the search box and select its text (used by the `/` shortcut). */
  focusInput() {
    this.#el.input.focus();
    this.#el.input.select();
  }

  // ------------------------------------------------------------ markup

  #build() {
    const root = this.shadowRoot;
    const css = h('link', { rel: 'stylesheet', href: new URL('widget.css', import.meta.url).href });
    const input = h('input', {
      id: 'cg-input',
      class: 'cg-input',
      type: 'text',
      role: 'combobox',
      'aria-autocomplete': 'list',
      'aria-expanded': 'false',
      'aria-controls': 'cg-results',
      autocomplete: 'off',
      autocapitalize: 'off',
      spellcheck: 'false',
      enterkeyhint: 'search',
      placeholder: 'Search or ask about the code (press /)',
      'data-testid': 'cg-input',
    });
    const listbox = h('ul', {
      id: 'cg-results',
      class: 'cg-listbox',
      role: 'listbox',
      'aria-label': 'Results',
      'data-testid': 'cg-results',
      hidden: true,
    });
    const askButton = h('button', { type: 'button', class: 'cg-button cg-ask', 'data-testid': 'cg-ask' }, 'Ask');
    const settingsButton = h(
      'button',
      {
        type: 'button',
        class: 'cg-button cg-settings-button',
        'aria-expanded': 'false',
        'aria-controls': 'cg-settings',
        'data-testid': 'cg-settings',
      },
      'Settings',
    );

    const field = (id, label, attrs) =>
      h(
        'div',
        { class: 'cg-field' },
        h('label', { for: id }, label),
        h('input', { id, class: 'cg-field-input', autocomplete: 'off', spellcheck: 'false', ...attrs }),
      );
    const settings = h(
      'form',
      { id: 'cg-settings', class: 'cg-settings', 'aria-label': 'Answer model settings', hidden: true },
      field('cg-endpoint', 'Endpoint (OpenAI-compatible)', { type: 'url', 'data-testid': 'cg-endpoint' }),
      field('cg-model', 'Model', { type: 'text', 'data-testid': 'cg-model' }),
      field('cg-key', 'API key', { type: 'password', 'data-testid': 'cg-key' }),
      h(
        'p',
        { class: 'cg-note' },
        'Saved in this browser only. Questions and the evidence are sent to this endpoint; nothing else is.',
      ),
    );

    const answerText = h('div', { class: 'cg-answer-text', 'data-testid': 'cg-answer-text' });
    const answerError = h('div', { class: 'cg-answer-error', 'data-testid': 'cg-answer-error', hidden: true });
    const answer = h(
      'section',
      {
        class: 'cg-answer',
        'aria-live': 'polite',
        'aria-labelledby': 'cg-answer-heading',
        'data-testid': 'cg-answer',
        hidden: true,
      },
      h(
        'div',
        { class: 'cg-answer-head' },
        h('h2', { id: 'cg-answer-heading', class: 'cg-heading' }, 'Answer'),
        h('span', { class: 'cg-answer-meta' }),
      ),
      answerText,
      answerError,
      h('div', { class: 'cg-support', 'data-testid': 'cg-support', hidden: true }),
      h('div', { class: 'cg-sources', hidden: true }),
    );

    const cards = h('ol', { class: 'cg-cards' });
    const evidence = h(
      'section',
      { class: 'cg-evidence', 'aria-labelledby': 'cg-evidence-heading', hidden: true },
      h('h2', { id: 'cg-evidence-heading', class: 'cg-heading' }),
      cards,
    );

    const wrapper = h(
      'div',
      { class: 'cg' },
      // The result list opens below the alert and the status line, so that
      // it never hides them.
      h(
        'div',
        { class: 'cg-top' },
        h(
          'div',
          { class: 'cg-bar' },
          h('label', { for: 'cg-input', class: 'cg-visually-hidden' }, 'Search or ask about the code'),
          h('div', { class: 'cg-combo' }, input),
          askButton,
          settingsButton,
        ),
        h('div', { class: 'cg-alert', role: 'alert', 'data-testid': 'cg-alert' }),
        h(
          'div',
          { class: 'cg-status', role: 'status', 'data-testid': 'cg-status' },
          h('span', { class: 'cg-status-text' }, 'Loading index…'),
          ' ',
          h('span', { class: 'cg-semantic' }),
        ),
        listbox,
      ),
      settings,
      answer,
      evidence,
    );
    // Keep the widget unstyled for no more than the stylesheet's load.
    wrapper.style.visibility = 'hidden';
    const reveal = () => wrapper.style.removeProperty('visibility');
    css.addEventListener('load', reveal);
    css.addEventListener('error', reveal);
    root.append(css, wrapper);

    this.#el = {
      input,
      listbox,
      askButton,
      settingsButton,
      settings,
      endpoint: settings.querySelector('#cg-endpoint'),
      model: settings.querySelector('#cg-model'),
      apiKey: settings.querySelector('#cg-key'),
      alert: wrapper.querySelector('.cg-alert'),
      status: wrapper.querySelector('.cg-status'),
      statusText: wrapper.querySelector('.cg-status-text'),
      semantic: wrapper.querySelector('.cg-semantic'),
      answer,
      answerMeta: answer.querySelector('.cg-answer-meta'),
      answerText,
      answerError,
      sources: answer.querySelector('.cg-sources'),
      support: answer.querySelector('.cg-support'),
      evidence,
      evidenceHeading: evidence.querySelector('.cg-heading'),
      cards,
    };

    for (const key of ['endpoint', 'model', 'apiKey']) {
      this.#el[key].value = storage.get(STORAGE_KEYS[key]) ?? '';
      this.#el[key].addEventListener('input', () => this.#saveSetting(key));
    }

    input.addEventListener('input', () => this.#onInput());
    input.addEventListener('keydown', (e) => this.#onInputKey(e));
    input.addEventListener('blur', (e) => {
      if (!listbox.contains(e.relatedTarget)) this.#expand(false);
    });
    // Clicking an option must not take focus from the box before the click lands.
    listbox.addEventListener('mousedown', (e) => e.preventDefault());
    listbox.addEventListener('click', (e) => {
      const option = e.target.closest('[role="option"]');
      if (option) this.#openCard(Number(option.dataset.n));
    });
    askButton.addEventListener('click', () => this.#ask());
    settingsButton.addEventListener('click', () => this.#toggleSettings());
    settings.addEventListener('submit', (e) => {
      e.preventDefault();
      this.#toggleSettings(false);
    });
    root.addEventListener('click', (e) => this.#onClick(e));
    root.addEventListener('keydown', (e) => this.#onKey(e));
    cards.addEventListener('toggle', (e) => this.#onCodeToggle(e), true);
  }

  // ------------------------------------------------------------ worker

  #start() {
    const index = new URL(this.getAttribute('index') || DEFAULT_INDEX, document.baseURI).href;
    this.#ready = false;
    this.#setStatus('Loading index…', 'loading');
    try {
      this.#worker = new Worker(new URL('worker.js', import.meta.url), { type: 'module' });
    } catch (err) {
      this.#worker = null;
      this.#showAlert(`The search worker could not start: ${err.message || err}`);
      this.#setStatus('Search is unavailable.', 'error');
      return;
    }
    this.#worker.addEventListener('message', (e) => this.#onMessage(e.data));
    this.#worker.addEventListener('error', (e) => {
      e.preventDefault();
      this.#showAlert(`The search worker failed: ${e.message || 'it could not be loaded'}.`);
      this.#setStatus('Search is unavailable.', 'error');
    });
    this.#worker.addEventListener('messageerror', () => this.#showAlert('A message from the search worker could not be read.'));
    // A <meta> policy does not reach the worker: it checks answer endpoints against these.
    const policies = [...document.querySelectorAll('meta[http-equiv]')]
      .filter((m) => m.httpEquiv.toLowerCase() === 'content-security-policy')
      .map((m) => m.content);
    this.#worker.postMessage({ type: 'init', index, policies });
  }

  #stop() {
    this.#worker?.terminate();
    this.#worker = null;
    this.#ready = false;
  }

  /** Send a request, or keep it (the newest of its type) until the index is ready. */
  #send(message) {
    this.#latestId = message.id;
    if (this.#ready && this.#worker) this.#worker.postMessage(message);
    else this.#pending.set(message.type, message);
  }

  #onMessage(msg) {
    if (!msg || typeof msg !== 'object') return;
    switch (msg.type) {
      case 'ready':
        this.#onReady(msg.info ?? {});
        break;
      case 'semantic':
        this.#setSemantic(msg.state, msg.message);
        if (msg.state === 'on') this.#rerank();
        break;
      case 'policy-violation':
        console.warn(`codegloss: the site's Content-Security-Policy blocked ${msg.blocked} (${msg.directive})`);
        break;
      case 'results':
        this.#onResults(msg);
        break;
      case 'texts':
        this.#onTexts(msg);
        break;
      case 'answer-start':
      case 'answer-delta':
      case 'answer-done':
      case 'answer-error':
        if (this.#answer && msg.id === this.#answer.id) this.#onAnswer(msg);
        break;
      case 'error':
        this.#onError(msg);
        break;
      default:
        break;
    }
  }

  #onReady(info) {
    this.#ready = true;
    this.#indexInfo = info;
    this.#setSemantic(info.semantic ?? 'off', info.semantic_message);
    this.#setStatus(this.#readyText(), 'ready');
    // Requests made while loading go out now, oldest first; the newest id stays the one to show.
    const latest = this.#latestId;
    for (const message of [...this.#pending.values()].sort((a, b) => a.id - b.id)) this.#send(message);
    this.#pending.clear();
    this.#latestId = latest;
  }

  #readyText() {
    const counts = this.#indexInfo?.counts ?? {};
    const parts = [];
    if (Number.isFinite(counts.files)) parts.push(plural(counts.files, 'file'));
    if (Number.isFinite(counts.chunks)) parts.push(plural(counts.chunks, 'chunk'));
    return parts.length ? `Index ready: ${parts.join(', ')}.` : 'Index ready.';
  }

  #onError(msg) {
    const isAsk = this.#answer && msg.id != null && msg.id === this.#answer.id;
    if (msg.id != null && msg.id !== this.#latestId && !isAsk) return;
    this.#showAlert(String(msg.message ?? 'Unknown error'), msg.detail);
    if (isAsk) this.#finishAnswer('error', String(msg.message ?? 'Unknown error'));
    this.#setStatus(this.#ready ? 'Search failed.' : 'The index could not be loaded.', 'error');
  }

  // ------------------------------------------------------------ search

  #onInput() {
    clearTimeout(this.#debounce);
    const query = this.#el.input.value.trim();
    if (!query) {
      this.#latestId = ++this.#seq; // drop replies still on their way
      this.#pending.delete('search');
      this.#clearResults();
      return;
    }
    this.#debounce = setTimeout(() => this.#search(query), SEARCH_DEBOUNCE_MS);
  }

  #search(query) {
    clearTimeout(this.#debounce);
    this.#send({ type: 'search', id: ++this.#seq, query });
    if (!this.#ready) this.#setStatus('Loading index…', 'loading');
  }

  #onResults(msg) {
    const askResults = this.#answer && msg.id === this.#answer.id;
    if (msg.id !== this.#latestId && !askResults) return;
    const cards = Array.isArray(msg.cards) ? msg.cards : [];
    this.#clearAlert();
    if (askResults) {
      this.#answer.cards = new Map(cards.map((c) => [c.n, c]));
      this.#answer.query = msg.query ?? this.#answer.query;
      this.#renderAnswer();
    }
    if (msg.id !== this.#latestId) return; // an older ask's evidence: kept for its citations only
    const view = msg.id === this.#rerankId ? this.#viewState() : null;
    this.#renderCards(cards, msg.id, msg.query ?? '', askResults);
    this.#shownSemantic = Boolean(msg.semantic);
    const focused = this.shadowRoot.activeElement === this.#el.input;
    if (view) this.#restoreView(view);
    else this.#expand(!askResults && focused && cards.length > 0);
    const ms = Math.round(msg.stats?.ms ?? 0);
    const bytes = msg.stats?.bytes ?? 0;
    let text = cards.length
      ? `${plural(cards.length, 'result')} in ${ms} ms`
      : `No results for “${short(msg.query ?? '', PATH_MAX)}”`;
    if (cards.length && msg.semantic) text += ' (keyword, structure and semantic)';
    if (bytes > 0) text += `, ${formatBytes(bytes)} fetched`;
    text += '.';
    if (askResults) text += ` Asking ${this.#answer.model || 'the model'}…`;
    this.#setStatus(text, 'results');
  }

  /** Glosses and code of the cards already shown, fetched after them. */
  #onTexts(msg) {
    const cards = Array.isArray(msg.cards) ? msg.cards : [];
    if (this.#answer && msg.id === this.#answer.id) {
      this.#answer.cards = new Map(cards.map((c) => [c.n, c]));
    }
    if (msg.id !== this.#cardsOwner) return;
    for (const card of cards) {
      const entry = this.#cards.get(card.n);
      if (!entry) continue;
      entry.card = card;
      const fresh = this.#renderCard(card);
      const gloss = fresh.querySelector('.cg-gloss');
      const details = fresh.querySelector('details');
      if (gloss && !entry.el.querySelector('.cg-gloss')) entry.el.querySelector('.cg-loc').after(gloss);
      if (details && !entry.details) {
        entry.el.append(details);
        entry.details = details;
      }
      if ((gloss || details || msg.all) && !fresh.querySelector('.cg-more')) {
        entry.el.querySelector('.cg-more')?.remove();
      }
      if (msg.all) entry.el.querySelector('.cg-more')?.remove();
      if (entry.wantsOpen && entry.details) {
        entry.wantsOpen = false;
        this.#ensureCode(entry.details);
        entry.details.open = true;
      }
    }
  }

  /** Semantic search is on: rank the results on screen again, with it. */
  #rerank() {
    const query = this.#el.input.value.trim();
    if (!this.#ready || !query || !this.#cardsOwner || this.#cardsOwner !== this.#latestId) return;
    if (this.#answer && this.#answer.id === this.#cardsOwner) return; // evidence stays as the answer cited it
    if (query !== this.#shownQuery || this.#shownSemantic) return;
    this.#rerankId = ++this.#seq;
    this.#send({ type: 'search', id: this.#rerankId, query });
  }

  /** A card's identity across rankings (its number changes with its rank). */
  #cardKey(n) {
    const card = this.#cards.get(n)?.card;
    return card ? `${card.path}\n${card.start_line}\n${card.end_line}\n${title(card)}` : null;
  }

  /** What the reader has open, selected and focused among the shown results. */
  #viewState() {
    const focus = this.shadowRoot.activeElement;
    const option = this.#options[this.#active];
    const card = focus?.closest?.('.cg-card');
    return {
      expanded: this.#isExpanded() && focus === this.#el.input,
      active: option ? this.#cardKey(Number(option.dataset.n)) : null,
      open: new Set([...this.#cards].filter(([, e]) => e.details?.open).map(([n]) => this.#cardKey(n))),
      focused: card ? this.#cardKey(Number(card.dataset.n)) : null,
    };
  }

  /** The same view over re-ranked results, for the cards still among them. */
  #restoreView(view) {
    const find = (key) => [...this.#cards.keys()].find((n) => this.#cardKey(n) === key);
    for (const key of view.open) {
      const entry = this.#cards.get(find(key));
      if (entry?.details) {
        this.#ensureCode(entry.details);
        entry.details.open = true;
      }
    }
    this.#expand(view.expanded);
    const active = view.active && find(view.active);
    if (this.#isExpanded() && active) this.#setActive(this.#options.findIndex((o) => Number(o.dataset.n) === active));
    // A focused card keeps focus where it still is; else focus goes back to the box.
    if (view.focused) (this.#cards.get(find(view.focused))?.el ?? this.#el.input).focus({ preventScroll: true });
  }

  #clearResults() {
    this.#expand(false);
    if (this.#answer?.cards.size) {
      this.#renderCards([...this.#answer.cards.values()], this.#answer.id, this.#answer.query, true);
    } else {
      this.#renderCards([], 0, '', false);
    }
    if (this.#ready) this.#setStatus(this.#readyText(), 'ready');
  }

  // ------------------------------------------------------------ cards

  #renderCards(cards, owner, query, isEvidence) {
    this.#cardsOwner = owner;
    this.#shownQuery = query;
    this.#shownSemantic = false;
    this.#cards.clear();
    const items = cards.map((card) => {
      const el = this.#renderCard(card);
      this.#cards.set(card.n, { card, el, details: el.querySelector('details') });
      return h('li', {}, el);
    });
    this.#el.cards.replaceChildren(...items);
    this.#el.evidence.hidden = cards.length === 0;
    setText(this.#el.evidenceHeading, `${isEvidence ? 'Evidence for' : 'Results for'} “${short(query, PATH_MAX)}”`);
    this.#renderOptions(cards);
  }

  #renderCard(card) {
    const n = card.n;
    const lines = card.start_line > 0 ? `${card.start_line}-${card.end_line}` : '';
    const lineCount = card.start_line > 0 ? Math.max(1, card.end_line - card.start_line + 1) : 0;
    const meta = [card.kind, card.role].filter(Boolean).join(' · ');
    // Names and paths are isolated left-to-right runs: nothing in them
    // reorders the text around them (their bidi controls show as markers).
    const name = clamped(title(card), NAME_MAX);
    const gloss = card.gloss ? clamped(card.gloss, GLOSS_MAX, { words: NAME_MAX, render: (t) => inlineCode(t) }) : null;
    const path = clamped(card.path, PATH_MAX);
    return h(
      'article',
      {
        id: `cg-card-${n}`,
        class: 'cg-card',
        tabindex: '-1',
        'aria-labelledby': `cg-card-${n}-title`,
        'data-testid': 'cg-card',
        'data-n': n,
      },
      h(
        'header',
        { class: 'cg-card-head' },
        h('span', { class: 'cg-n' }, h('span', { class: 'cg-visually-hidden' }, 'Source '), String(n)),
        h('h3', { id: `cg-card-${n}-title`, class: 'cg-symbol', dir: 'ltr' }, name.text),
        name.toggle,
        meta && h('span', { class: 'cg-kind' }, meta),
      ),
      h(
        'div',
        { class: 'cg-loc' },
        h('span', { class: 'cg-path', dir: 'ltr', 'data-testid': 'cg-path' }, path.text),
        lines && h('span', { class: 'cg-lines' }, `:${lines}`),
        path.toggle && ' ',
        path.toggle,
      ),
      gloss && h('p', { class: 'cg-gloss' }, gloss.text, gloss.toggle && ' ', gloss.toggle),
      // Some cards (files, modules, call chains) carry a gloss but no code.
      card.code &&
        h(
          'details',
          { class: 'cg-code', 'data-testid': 'cg-code', 'data-n': n },
          h('summary', {}, lineCount > 0 ? `Code (${plural(lineCount, 'line')})` : 'Code (whole file)'),
        ),
      // Cards further down get their text on request, to keep each query small.
      !card.gloss && !card.code && this.#moreButton(),
    );
  }

  /** A button that fetches the text of every card of the current results. */
  #moreButton() {
    const button = h('button', { type: 'button', class: 'cg-more', 'data-testid': 'cg-more' }, 'Show explanation and code');
    button.addEventListener('click', () => this.#requestText(button));
    return button;
  }

  #requestText(button) {
    if (button) {
      button.disabled = true;
      button.textContent = 'Loading…';
    }
    if (this.#worker && this.#cardsOwner) this.#worker.postMessage({ type: 'text', id: this.#cardsOwner });
  }

  /** Render a card's code the first time it is opened. */
  #ensureCode(details) {
    if (details.querySelector('pre')) return;
    const entry = this.#cards.get(Number(details.dataset.n));
    if (!entry) return;
    const { card } = entry;
    // The code's bidi controls show as markers, as everywhere else.
    details.append(revealBidi(renderCode(card.code, card.language, card.start_line, `Code of ${short(title(card))}`, card.frame)));
  }

  #onCodeToggle(event) {
    const details = event.target;
    if (details instanceof HTMLDetailsElement && details.open) this.#ensureCode(details);
  }

  /** Open card n's code (when it has any), scroll to it and focus it. */
  #openCard(n) {
    const entry = this.#cards.get(n);
    if (!entry) return;
    this.#expand(false);
    if (entry.details) {
      this.#ensureCode(entry.details);
      entry.details.open = true;
    } else if (entry.el.querySelector('.cg-more')) {
      // Its text is not here yet: fetch it, and open the code when it comes.
      entry.wantsOpen = true;
      this.#requestText(entry.el.querySelector('.cg-more'));
    }
    entry.el.scrollIntoView({ block: 'start', behavior: 'auto' });
    entry.el.focus({ preventScroll: true });
  }

  // ----------------------------------------------------------- listbox

  #renderOptions(cards) {
    this.#options = cards.map((card) =>
      h(
        'li',
        { id: `cg-opt-${card.n}`, class: 'cg-option', role: 'option', 'aria-selected': 'false', 'data-n': card.n },
        h('span', { class: 'cg-option-title', dir: 'ltr' }, short(title(card))),
        h('span', { class: 'cg-option-path', dir: 'ltr' }, short(location(card), PATH_MAX)),
        card.kind && h('span', { class: 'cg-option-kind' }, card.kind),
      ),
    );
    this.#el.listbox.replaceChildren(...this.#options);
    this.#setActive(-1);
    if (!this.#options.length) this.#expand(false);
  }

  #expand(open) {
    const expanded = open && this.#options.length > 0;
    this.#el.listbox.hidden = !expanded;
    this.#el.input.setAttribute('aria-expanded', String(expanded));
    if (!expanded) this.#setActive(-1);
  }

  #isExpanded() {
    return this.#el.input.getAttribute('aria-expanded') === 'true';
  }

  #setActive(index) {
    this.#options[this.#active]?.setAttribute('aria-selected', 'false');
    this.#active = index;
    const option = this.#options[index];
    if (option) {
      option.setAttribute('aria-selected', 'true');
      this.#el.input.setAttribute('aria-activedescendant', option.id);
      option.scrollIntoView({ block: 'nearest' });
    } else {
      this.#el.input.removeAttribute('aria-activedescendant');
    }
  }

  #moveActive(step) {
    const count = this.#options.length;
    if (!count) return;
    if (!this.#isExpanded()) {
      this.#expand(true);
      this.#setActive(step > 0 ? 0 : count - 1);
      return;
    }
    const from = this.#active < 0 ? (step > 0 ? -1 : count) : this.#active;
    this.#setActive((from + step + count) % count);
  }

  // ---------------------------------------------------------- keyboard

  #onInputKey(e) {
    if (e.isComposing) return;
    switch (e.key) {
      case 'ArrowDown':
      case 'ArrowUp':
        e.preventDefault();
        this.#moveActive(e.key === 'ArrowDown' ? 1 : -1);
        break;
      case 'Enter':
        e.preventDefault();
        if (e.ctrlKey || e.metaKey) this.#ask();
        else if (this.#isExpanded() && this.#active >= 0) this.#openCard(Number(this.#options[this.#active].dataset.n));
        else if (this.#el.input.value.trim()) this.#search(this.#el.input.value.trim());
        break;
      case 'Escape':
        // Consumed only when it closes the list or clears the box, so that an
        // enclosing dialog still sees an Escape pressed in an empty box.
        if (this.#isExpanded()) {
          this.#expand(false);
        } else if (this.#el.input.value) {
          this.#el.input.value = '';
          this.#onInput();
        } else {
          break;
        }
        e.preventDefault();
        e.stopPropagation();
        break;
      default:
        break;
    }
  }

  /** Escape from anywhere else in the widget goes back to the box. */
  #onKey(e) {
    if (e.key !== 'Escape' || e.defaultPrevented) return;
    if (this.#el.settings.contains(e.target)) {
      e.preventDefault();
      this.#toggleSettings(false);
      this.#el.settingsButton.focus();
      return;
    }
    if (e.target === this.#el.input) return;
    e.preventDefault();
    this.#expand(false);
    this.#el.input.focus();
  }

  #onClick(e) {
    const link = e.target.closest?.('a[href^="#cg-card-"]');
    if (!link) return;
    e.preventDefault();
    const n = Number(link.getAttribute('href').slice('#cg-card-'.length));
    // A citation may refer to an earlier ask's evidence while later search
    // results are shown: bring that evidence back first.
    const answer = this.#answer;
    if (answer && this.#el.answer.contains(link) && this.#cardsOwner !== answer.id) {
      this.#renderCards([...answer.cards.values()], answer.id, answer.query, true);
      this.#setStatus('Showing the evidence of the answer.', 'results');
    }
    this.#openCard(n);
  }

  // ---------------------------------------------------------- settings

  #defaults() {
    return {
      endpoint: this.getAttribute('endpoint') || DEFAULT_ENDPOINT,
      model: this.getAttribute('model') || '',
    };
  }

  #refreshSettingsDefaults() {
    const d = this.#defaults();
    this.#el.endpoint.placeholder = d.endpoint;
    this.#el.model.placeholder = d.model || 'model name, e.g. qwen2.5-coder:1.5b';
    for (const key of ['endpoint', 'model']) {
      if (storage.get(STORAGE_KEYS[key]) == null && !this.#el[key].matches(':focus')) this.#el[key].value = d[key];
    }
  }

  #saveSetting(key) {
    const value = this.#el[key].value.trim();
    const d = this.#defaults();
    // A value equal to the page's default is not stored, so a later default applies.
    storage.set(STORAGE_KEYS[key], value && value !== d[key] ? value : '');
  }

  #settings() {
    const d = this.#defaults();
    return {
      endpoint: this.#el.endpoint.value.trim() || d.endpoint,
      model: this.#el.model.value.trim() || d.model,
      apiKey: this.#el.apiKey.value.trim(),
    };
  }

  #toggleSettings(open = this.#el.settings.hidden) {
    this.#el.settings.hidden = !open;
    this.#el.settingsButton.setAttribute('aria-expanded', String(open));
    if (open) this.#el.endpoint.focus();
  }

  // ------------------------------------------------------------ answer

  #ask() {
    const query = this.#el.input.value.trim();
    if (!query) {
      this.#setStatus('Type a question first, then press Ask.', this.#ready ? 'ready' : 'loading');
      this.#el.input.focus();
      return;
    }
    clearTimeout(this.#debounce);
    this.#expand(false);
    // A newer question replaces the one still streaming: stop that one.
    const previous = this.#answer;
    if (previous && ['pending', 'streaming'].includes(previous.state) && this.#worker) {
      this.#worker.postMessage({ type: 'cancel', id: previous.id });
    }
    const settings = this.#settings();
    const id = ++this.#seq;
    this.#answer = {
      id,
      query,
      cards: new Map(),
      text: '',
      state: 'pending',
      citations: [],
      invalid: new Set(),
      model: settings.model,
      t0: performance.now(),
    };
    const el = this.#el;
    el.answer.hidden = false;
    el.answer.dataset.state = 'pending';
    el.answer.setAttribute('aria-busy', 'true');
    setText(el.answerMeta, 'Finding evidence…');
    el.answerText.replaceChildren();
    el.answerError.hidden = true;
    el.answerError.replaceChildren();
    el.sources.hidden = true;
    el.support.hidden = true;
    el.support.replaceChildren();
    el.sources.replaceChildren();
    this.#send({ type: 'ask', id, query, settings });
    this.#setStatus(this.#ready ? 'Finding evidence…' : 'Loading index…', 'asking');
  }

  #onAnswer(msg) {
    const answer = this.#answer;
    const el = this.#el;
    switch (msg.type) {
      case 'answer-start':
        answer.state = 'streaming';
        answer.model = msg.model || answer.model;
        el.answer.dataset.state = 'streaming';
        setText(el.answerMeta, answer.model ? `from ${short(answer.model)}…` : 'Answering…');
        if (msg.prompt_signature) el.answerMeta.title = `prompt ${msg.prompt_signature}`;
        break;
      case 'answer-delta':
        answer.text += String(msg.text ?? '');
        this.#queueAnswerRender();
        break;
      case 'answer-done': {
        answer.text = String(msg.text ?? answer.text);
        answer.citations = Array.isArray(msg.citations) ? msg.citations : [];
        answer.invalid = new Set(Array.isArray(msg.invalid) ? msg.invalid : []);
        answer.support = msg.support && typeof msg.support === 'object' ? msg.support : null;
        this.#finishAnswer('done');
        break;
      }
      case 'answer-error':
        this.#finishAnswer('error', String(msg.message ?? 'The answer failed.'));
        break;
      default:
        break;
    }
  }

  #finishAnswer(state, message) {
    const answer = this.#answer;
    const el = this.#el;
    answer.state = state;
    this.#renderAnswer();
    const seconds = ((performance.now() - answer.t0) / 1000).toFixed(1);
    setText(el.answerMeta, answer.model ? `from ${short(answer.model)}` : '');
    if (state === 'error') {
      const hint = REFUSED.test(message)
        ? h(
            'p',
            { class: 'cg-hint' },
            'If the server is running, it may not allow this page to call it. For Ollama, start it with ',
            h('code', {}, `OLLAMA_ORIGINS=${this.#origin()} ollama serve`),
            ' so that the browser may call it.',
          )
        : null;
      el.answerError.replaceChildren(h('p', { class: 'cg-error-message' }, message), ...(hint ? [hint] : []));
      el.answerError.hidden = false;
      if (answer.id === this.#latestId || this.#cardsOwner === answer.id) this.#setStatus('The answer failed.', 'error');
    } else {
      this.#renderSources();
      this.#renderSupport();
      if (this.#cardsOwner === answer.id) this.#setStatus(`Answered in ${seconds} s.`, 'answered');
    }
    el.answer.dataset.state = state;
    el.answer.setAttribute('aria-busy', 'false');
  }

  #origin() {
    return window.location.origin && window.location.origin !== 'null' ? window.location.origin : '*';
  }

  #queueAnswerRender() {
    if (this.#answerRenderQueued) return;
    this.#answerRenderQueued = true;
    requestAnimationFrame(() => {
      this.#answerRenderQueued = false;
      this.#renderAnswer();
    });
  }

  /** Render the answer text: fenced and inline code as code, `[n]` as links to cards. */
  #renderAnswer() {
    if (!this.#answer) return;
    this.#el.answerText.replaceChildren(...answerNodes(this.#answer));
    revealBidi(this.#el.answerText); // the model's bidi controls too
  }

  /** What the evidence does not back: sentences given an inferred source or none, and names no card shows. */
  #renderSupport() {
    const nodes = supportNodes(this.#answer);
    this.#el.support.hidden = nodes.length === 0;
    this.#el.support.replaceChildren(...nodes);
  }

  /** The cited cards, in citation order; locations come from the cards themselves. */
  #renderSources() {
    const nodes = sourceNodes(this.#answer);
    this.#el.sources.hidden = nodes.length === 0;
    this.#el.sources.replaceChildren(...nodes);
  }

  // ------------------------------------------------------ status, alert

  #setStatus(text, state) {
    setText(this.#el.statusText, text);
    this.#el.status.dataset.state = state;
  }

  #setSemantic(state, message) {
    const el = this.#el.semantic;
    el.dataset.state = state;
    if (state === 'loading') {
      el.textContent = 'Semantic search is loading…';
    } else if (state === 'off') {
      const why = clause(message);
      setText(el, why
        ? `Semantic search is off: ${why}. Keyword and structure search still work.`
        : 'Semantic search is off. Keyword and structure search still work.');
    } else {
      el.textContent = '';
    }
  }

  /** An error for the reader; `detail`, when given, is for the site's maintainer. */
  #showAlert(message, detail) {
    this.#el.alert.replaceChildren(
      h('p', {}, message),
      detail ? h('details', { class: 'cg-alert-detail' }, h('summary', {}, 'Details for the maintainer'), String(detail)) : null,
    );
  }

  #clearAlert() {
    this.#el.alert.replaceChildren();
  }
}

if (!customElements.get(TAG)) customElements.define(TAG, CodeglossSearch);
