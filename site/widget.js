// widget.js: the <codegloss-search> element of a codegloss site.
//
// Why it exists: a documentation page gets search and question answering
// over its codebase from one script tag and one element. This module only
// renders and handles input; loading the index, retrieval and the call to
// the answer model happen in worker.js (the WebAssembly client), which it
// reaches through a small message protocol:
//   to the worker:   init {index} · search {id, query} · ask {id, query, settings}
//   from the worker: ready · semantic · results · answer-start · answer-delta
//                    · answer-done · answer-error · error
//
// Security: every string that comes from the index or from the model is
// rendered as text (text nodes, textContent, attributes set one by one),
// never parsed as HTML. Syntax highlighting builds spans; citations are made
// by splitting the text.

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
/** `[3]` or `[1, 4]`: the citation forms the answer prompt asks for. */
const CITATION = /\[(\s*\d+\s*(?:,\s*\d+\s*)*)\]/g;

// ---------------------------------------------------------------- helpers

/**
 * Create an element. Attribute values are set with setAttribute and
 * children are appended as nodes or text nodes, so nothing is parsed as HTML.
 */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false || value == null) continue;
    el.setAttribute(name, value === true ? '' : String(value));
  }
  el.append(...children.filter((c) => c != null && c !== false && c !== ''));
  return el;
}

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

/** `path:start-end`, or the bare path for a whole file (lines 0). */
function location(card) {
  return card.start_line > 0 ? `${card.path}:${card.start_line}-${card.end_line}` : card.path;
}

/** The name a card is shown under. */
function title(card) {
  return card.qualified_name || card.symbol || card.path.split('/').pop() || card.path;
}

function plural(n, word) {
  return `${n.toLocaleString('en')} ${word}${n === 1 ? '' : 's'}`;
}

function formatBytes(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(bytes < 10240 ? 1 : 0)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** Text with `code` spans as <code> elements; other pieces go through `plain` (text by default). */
function inlineCode(text, plain = (piece) => [piece]) {
  const nodes = [];
  text.split(/(`[^`\n]+`)/).forEach((part, k) => {
    if (k % 2 === 1) nodes.push(h('code', {}, part.slice(1, -1)));
    else if (part) nodes.push(...plain(part));
  });
  return nodes;
}

/** A message from the worker, without the trailing full stop, for use inside a sentence. */
function clause(message) {
  return String(message ?? '').trim().replace(/[.\s]+$/, '');
}

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
 * A `<pre>` of the code with line numbers from `firstLine` (1 for a whole
 * file); C++ is highlighted, other languages are plain. Line numbers are
 * excluded from selection and from the accessibility tree.
 */
function renderCode(code, language, firstLine, label) {
  const text = String(code ?? '').replace(/\r\n?/g, '\n').replace(/\n$/, '');
  const tokens = language === 'cpp' ? tokenizeCpp(text) : [['', text]];
  const first = Math.max(1, firstLine || 1);
  const last = first + text.split('\n').length - 1;
  const codeEl = h('code', { class: 'cg-code-text' });
  codeEl.style.setProperty('--cg-ln-digits', String(String(last).length));
  let line = first;
  const number = () => h('span', { class: 'cg-ln', 'aria-hidden': 'true' }, String(line));
  codeEl.append(number());
  for (const [kind, value] of tokens) {
    value.split('\n').forEach((part, k) => {
      if (k > 0) {
        line += 1;
        codeEl.append('\n', number());
      }
      if (part) codeEl.append(kind ? h('span', { class: `cg-tok-${kind}` }, part) : part);
    });
  }
  // Focusable, so that keyboard users can scroll long lines.
  return h('pre', { class: 'cg-pre', tabindex: '0', 'aria-label': label, 'data-language': language }, codeEl);
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
      h(
        'div',
        { class: 'cg-bar' },
        h('label', { for: 'cg-input', class: 'cg-visually-hidden' }, 'Search or ask about the code'),
        h('div', { class: 'cg-combo' }, input, listbox),
        askButton,
        settingsButton,
      ),
      settings,
      h('div', { class: 'cg-alert', role: 'alert', 'data-testid': 'cg-alert' }),
      h(
        'div',
        { class: 'cg-status', role: 'status', 'data-testid': 'cg-status' },
        h('span', { class: 'cg-status-text' }, 'Loading index…'),
        ' ',
        h('span', { class: 'cg-semantic' }),
      ),
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
    this.#worker.postMessage({ type: 'init', index });
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
    this.#showAlert(String(msg.message ?? 'Unknown error'));
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
    this.#renderCards(cards, msg.id, msg.query ?? '', askResults);
    const focused = this.shadowRoot.activeElement === this.#el.input;
    this.#expand(!askResults && focused && cards.length > 0);
    const ms = Math.round(msg.stats?.ms ?? 0);
    const bytes = msg.stats?.bytes ?? 0;
    let text = cards.length
      ? `${plural(cards.length, 'result')} in ${ms} ms`
      : `No results for “${msg.query ?? ''}”`;
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
    this.#cards.clear();
    const items = cards.map((card) => {
      const el = this.#renderCard(card);
      this.#cards.set(card.n, { card, el, details: el.querySelector('details') });
      return h('li', {}, el);
    });
    this.#el.cards.replaceChildren(...items);
    this.#el.evidence.hidden = cards.length === 0;
    this.#el.evidenceHeading.textContent = `${isEvidence ? 'Evidence for' : 'Results for'} “${query}”`;
    this.#renderOptions(cards);
  }

  #renderCard(card) {
    const n = card.n;
    const lines = card.start_line > 0 ? `${card.start_line}-${card.end_line}` : '';
    const lineCount = card.start_line > 0 ? Math.max(1, card.end_line - card.start_line + 1) : 0;
    const meta = [card.kind, card.role].filter(Boolean).join(' · ');
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
        h('h3', { id: `cg-card-${n}-title`, class: 'cg-symbol' }, title(card)),
        meta && h('span', { class: 'cg-kind' }, meta),
      ),
      h(
        'div',
        { class: 'cg-loc' },
        h('span', { class: 'cg-path', 'data-testid': 'cg-path' }, card.path),
        lines && h('span', { class: 'cg-lines' }, `:${lines}`),
      ),
      card.gloss && h('p', { class: 'cg-gloss' }, ...inlineCode(card.gloss)),
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
    details.append(renderCode(card.code, card.language, card.start_line, `Code of ${title(card)}`));
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
        h('span', { class: 'cg-option-title' }, title(card)),
        h('span', { class: 'cg-option-path' }, location(card)),
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
    el.answerMeta.textContent = 'Finding evidence…';
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
        el.answerMeta.textContent = answer.model ? `from ${answer.model}…` : 'Answering…';
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
    el.answerMeta.textContent = answer.model ? `from ${answer.model}` : '';
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
    const answer = this.#answer;
    if (!answer) return;
    const nodes = [];
    const text = answer.text.replace(/^\s+/, '');
    const fence = /```[^\n]*\n?([\s\S]*?)(?:```|$)/g;
    let at = 0;
    for (const m of text.matchAll(fence)) {
      // The block is its own box: drop the line breaks that only delimit it.
      nodes.push(...this.#inline(text.slice(at, m.index).replace(/\n$/, '')));
      nodes.push(h('pre', { class: 'cg-answer-code', tabindex: '0' }, h('code', {}, m[1].replace(/\n$/, ''))));
      at = m.index + m[0].length;
      if (text[at] === '\n') at += 1;
    }
    nodes.push(...this.#inline(text.slice(at)));
    if (!text && answer.state === 'done') nodes.push(h('span', { class: 'cg-note' }, 'The model returned no text.'));
    this.#el.answerText.replaceChildren(...nodes);
  }

  /** Inline code, **bold** and citations of a piece of answer text. */
  #inline(text) {
    return inlineCode(text, (part) =>
      part
        .split(/\*\*([^*\n]+)\*\*/)
        .flatMap((piece, j) => (j % 2 === 1 ? [h('strong', {}, ...this.#citations(piece))] : this.#citations(piece))),
    );
  }

  #citations(text) {
    const answer = this.#answer;
    const nodes = [];
    let at = 0;
    for (const m of text.matchAll(CITATION)) {
      if (m.index > at) nodes.push(text.slice(at, m.index));
      const numbers = m[1].split(',').map((s) => Number(s.trim()));
      const cite = h('span', { class: 'cg-cite-group' }, '[');
      numbers.forEach((n, k) => {
        if (k > 0) cite.append(', ');
        const card = answer.cards.get(n);
        if (card && !answer.invalid.has(n)) {
          cite.append(
            h('a', { class: 'cg-cite', href: `#cg-card-${n}`, title: location(card), 'aria-label': `source ${n}, ${location(card)}` }, String(n)),
          );
        } else {
          cite.append(
            h(
              'span',
              { class: 'cg-cite-invalid', title: `No evidence card ${n}: this citation is not valid` },
              h('s', {}, String(n)),
              h('span', { class: 'cg-visually-hidden' }, ' (invalid citation)'),
            ),
          );
        }
      });
      cite.append(']');
      nodes.push(cite);
      at = m.index + m[0].length;
    }
    if (at < text.length) nodes.push(text.slice(at));
    return nodes;
  }

  /** The cited cards, in citation order; locations come from the cards themselves. */
  /** What the evidence does not back: sentences given an inferred source or none, and names no card shows. */
  #renderSupport() {
    const el = this.#el.support;
    const s = this.#answer.support;
    const sentences = Array.isArray(s?.sentences) ? s.sentences : [];
    const inferred = sentences.filter((x) => Number.isInteger(x?.inferred) && this.#answer.cards.has(x.inferred));
    const unsupported = sentences.filter((x) => x?.unsupported === true);
    const unknown = Array.isArray(s?.unknown_identifiers) ? s.unknown_identifiers.map(String) : [];
    const items = [];
    if (inferred.length) {
      items.push(h('li', { class: 'cg-support-inferred' },
        `${inferred.length} sentence${inferred.length === 1 ? '' : 's'} without a citation restate `,
        ...inferred.flatMap((x, i) => [i ? ', ' : '', h('a', { class: 'cg-cite', href: `#cg-card-${x.inferred}` }, `[${x.inferred}]`)])));
    }
    if (unsupported.length) {
      items.push(h('li', { class: 'cg-support-unsupported' },
        `${unsupported.length} sentence${unsupported.length === 1 ? '' : 's'} match no evidence card: `,
        ...unsupported.flatMap((x, i) => [i ? ' ' : '', h('q', {}, String(x.text))])));
    }
    if (unknown.length) {
      items.push(h('li', { class: 'cg-support-unknown' }, 'Names no evidence card shows: ',
        ...unknown.flatMap((name, i) => [i ? ', ' : '', h('code', {}, name)])));
    }
    el.hidden = items.length === 0;
    el.replaceChildren(...(items.length ? [h('h3', { class: 'cg-heading' }, 'Check'), h('ul', {}, ...items)] : []));
  }

  #renderSources() {
    const answer = this.#answer;
    const numbers = [...new Set(answer.citations.map((c) => Number(c?.n ?? c)))];
    const cited = numbers.filter((n) => answer.cards.has(n) && !answer.invalid.has(n)).map((n) => answer.cards.get(n));
    const el = this.#el.sources;
    if (!cited.length) {
      el.hidden = true;
      el.replaceChildren();
      return;
    }
    el.replaceChildren(
      h('h3', { class: 'cg-heading' }, 'Sources'),
      h(
        'ul',
        {},
        ...cited.map((c) =>
          h(
            'li',
            {},
            h('a', { class: 'cg-cite', href: `#cg-card-${c.n}` }, `[${c.n}]`),
            ' ',
            h('span', { class: 'cg-source-loc' }, location(c)),
          ),
        ),
      ),
    );
    el.hidden = false;
  }

  // ------------------------------------------------------ status, alert

  #setStatus(text, state) {
    this.#el.statusText.textContent = text;
    this.#el.status.dataset.state = state;
  }

  #setSemantic(state, message) {
    const el = this.#el.semantic;
    el.dataset.state = state;
    if (state === 'loading') {
      el.textContent = 'Semantic search is loading…';
    } else if (state === 'off') {
      const why = clause(message);
      el.textContent = why
        ? `Semantic search is off: ${why}. Keyword and structure search still work.`
        : 'Semantic search is off. Keyword and structure search still work.';
    } else {
      el.textContent = '';
    }
  }

  #showAlert(message) {
    this.#el.alert.replaceChildren(h('p', {}, message));
  }

  #clearAlert() {
    this.#el.alert.replaceChildren();
  }
}

if (!customElements.get(TAG)) customElements.define(TAG, CodeglossSearch);
