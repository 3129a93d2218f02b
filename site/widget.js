// widget.js: the <codegloss-search> element of a codegloss site.
//
// Why it exists: a documentation page gets search and question answering
// over its codebase from one script tag and one element. This module only
// renders and handles input; loading the index, retrieval and the call to
// the answer model happen in worker.js (the WebAssembly client), which it
// reaches through a small message protocol (protocol.js holds the names;
// site/README.md documents them):
//   to the worker:   init {index, policies} · search {id, query} · ask {id, query, settings}
//                    · text · cancel
//   from the worker: ready · semantic · results · texts · answer-start · answer-delta
//                    · answer-done · answer-error · error · policy-violation
// The parts of the element are modules of their own: the search box and
// its result list (combobox.js), the cards (card-view.js) and their code
// (highlight.js), the answer panel (answer-view.js, fetched with the first
// question asked: a reader who only searches never needs it) and the
// settings (settings.js); this module wires them to the worker and keeps
// the state.
//
// Security: every string that comes from the index or from the model is
// rendered as text (text nodes, textContent, attributes set one by one),
// never parsed as HTML, with its bidirectional controls shown as visible
// markers (bidi.js) and very long names and glosses cut (dom.js). Syntax
// highlighting builds spans; citations are made by splitting the text.

import { revealBidi } from './bidi.js';
import { cardNode, showWhole } from './card-view.js';
import { Combobox, shortcutTargets } from './combobox.js';
import { PATH_MAX, clause, formatBytes, h, plural, setText, short, title } from './dom.js';
import { renderCode } from './highlight.js';
import { FROM_WORKER, SEMANTIC, TO_WORKER } from './protocol.js';
import { Settings } from './settings.js';

const TAG = 'codegloss-search';
const DEFAULT_INDEX = 'index/codegloss.json';
const SEARCH_DEBOUNCE_MS = 150;

// ------------------------------------------------------- the answer panel

/**
 * The answer panel, its code (answer-view.js, a module of its own beside
 * this one) imported at the first question: a reader who only searches
 * never fetches it, and it is not among the bytes before the first
 * results. Its live region is in the page from the start, so that screen
 * readers announce what arrives in it; calls made while the module loads
 * are replayed in order once it has.
 */
class LazyAnswerPanel {
  #current;
  #panel = null;
  #loading = null;
  #calls = [];

  constructor(current) {
    this.#current = current;
    this.el = h('section', {
      class: 'cg-answer',
      'aria-live': 'polite',
      'aria-labelledby': 'cg-answer-heading',
      'data-testid': 'cg-answer',
      hidden: true,
    });
  }

  #load() {
    this.#loading ??= import(new URL('./answer-view.js', import.meta.url).href).then(
      ({ AnswerPanel }) => {
        this.#panel = new AnswerPanel(this.#current, this.el);
        for (const [name, args] of this.#calls.splice(0)) this.#panel[name](...args);
      },
      (e) => {
        this.#calls = [];
        this.el.hidden = false;
        this.el.removeAttribute('aria-busy');
        this.el.dataset.state = 'error';
        this.el.replaceChildren(
          h('div', { class: 'cg-answer-error', 'data-testid': 'cg-answer-error' }, `The answer view could not be loaded (${e?.message ?? e}); reload the page to try again.`),
        );
      },
    );
  }

  #call(name, args) {
    if (this.#panel) this.#panel[name](...args);
    else if (this.#loading) this.#calls.push([name, args]);
  }

  start() {
    this.#load();
    this.#call('start', []);
  }

  streaming(...args) {
    this.#call('streaming', args);
  }

  render() {
    this.#call('render', []);
  }

  queueRender() {
    this.#call('queueRender', []);
  }

  finish(...args) {
    this.#call('finish', args);
  }
}

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
  #answer = null; // {id, query, cards, text, state, citations, invalid, model, t0}
  #combo;
  #settings;
  #panel;
  #el = {};

  constructor() {
    super();
    this.attachShadow({ mode: 'open' });
    this.#build();
  }

  connectedCallback() {
    shortcutTargets.add(this);
    this.#settings.refreshDefaults();
    if (!this.#worker) this.#start();
  }

  disconnectedCallback() {
    shortcutTargets.delete(this);
    this.#stop();
  }

  attributeChangedCallback(name, oldValue, newValue) {
    if (oldValue === newValue) return;
    if (name === 'index' && this.#worker) {
      this.#stop();
      this.#start();
    } else if (name === 'endpoint' || name === 'model') {
      this.#settings.refreshDefaults();
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
    const combo = new Combobox({
      pick: (n) => this.#openCard(n),
      search: (query) => this.#search(query),
      ask: () => this.#ask(),
      clear: () => this.#onInput(),
    });
    const { input, listbox } = combo;
    const askButton = h('button', { type: 'button', class: 'cg-button cg-ask', 'data-testid': 'cg-ask' }, 'Ask');
    const settings = new Settings((name) => this.getAttribute(name));
    const panel = new LazyAnswerPanel(() => this.#answer);

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
          settings.button,
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
      settings.form,
      panel.el,
      evidence,
    );
    // Keep the widget unstyled for no more than the stylesheet's load.
    wrapper.style.visibility = 'hidden';
    const reveal = () => wrapper.style.removeProperty('visibility');
    css.addEventListener('load', reveal);
    css.addEventListener('error', reveal);
    root.append(css, wrapper);

    this.#combo = combo;
    this.#settings = settings;
    this.#panel = panel;
    this.#el = {
      input,
      alert: wrapper.querySelector('.cg-alert'),
      status: wrapper.querySelector('.cg-status'),
      statusText: wrapper.querySelector('.cg-status-text'),
      semantic: wrapper.querySelector('.cg-semantic'),
      evidence,
      evidenceHeading: evidence.querySelector('.cg-heading'),
      cards,
    };

    input.addEventListener('input', () => this.#onInput());
    askButton.addEventListener('click', () => this.#ask());
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
    this.#worker.postMessage({ type: TO_WORKER.init, index, policies });
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
      case FROM_WORKER.ready:
        this.#onReady(msg.info ?? {});
        break;
      case FROM_WORKER.semantic:
        this.#setSemantic(msg.state, msg.message);
        if (msg.state === SEMANTIC.on) this.#rerank();
        break;
      case FROM_WORKER.policyViolation:
        console.warn(`codegloss: the site's Content-Security-Policy blocked ${msg.blocked} (${msg.directive})`);
        break;
      case FROM_WORKER.results:
        this.#onResults(msg);
        break;
      case FROM_WORKER.texts:
        this.#onTexts(msg);
        break;
      case FROM_WORKER.answerStart:
      case FROM_WORKER.answerDelta:
      case FROM_WORKER.answerDone:
      case FROM_WORKER.answerError:
        if (this.#answer && msg.id === this.#answer.id) this.#onAnswer(msg);
        break;
      case FROM_WORKER.error:
        this.#onError(msg);
        break;
      default:
        break;
    }
  }

  #onReady(info) {
    this.#ready = true;
    this.#indexInfo = info;
    this.#setSemantic(info.semantic ?? SEMANTIC.off, info.semantic_message);
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
    this.#send({ type: TO_WORKER.search, id: ++this.#seq, query });
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
      this.#panel.render();
    }
    if (msg.id !== this.#latestId) return; // an older ask's evidence: kept for its citations only
    const view = msg.id === this.#rerankId ? this.#viewState() : null;
    this.#renderCards(cards, msg.id, msg.query ?? '', askResults);
    this.#shownSemantic = Boolean(msg.semantic);
    const focused = this.shadowRoot.activeElement === this.#el.input;
    if (view) this.#restoreView(view);
    else this.#combo.expand(!askResults && focused && cards.length > 0);
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
      // A chunk's lines arrive with its text.
      const lines = fresh.querySelector('.cg-lines');
      if (lines && !entry.el.querySelector('.cg-lines')) entry.el.querySelector('.cg-path').after(lines);
      if (gloss && !entry.el.querySelector('.cg-gloss')) entry.el.querySelector('.cg-loc').after(gloss);
      if (details && !entry.details) {
        entry.el.append(details);
        entry.details = details;
      }
      if ((gloss || details || msg.all) && !fresh.querySelector('.cg-more')) {
        entry.el.querySelector('.cg-more')?.remove();
      }
      if (msg.all) entry.el.querySelector('.cg-more')?.remove();
      for (const part of entry.wantsWhole ?? []) if (showWhole(entry.el, part)) entry.wantsWhole.delete(part);
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
    this.#send({ type: TO_WORKER.search, id: this.#rerankId, query });
  }

  /** A card's identity across rankings (its number changes with its rank). */
  #cardKey(n) {
    const card = this.#cards.get(n)?.card;
    return card ? `${card.chunk}` : null;
  }

  /** What the reader has open, selected and focused among the shown results. */
  #viewState() {
    const focus = this.shadowRoot.activeElement;
    const active = this.#combo.activeCard;
    const card = focus?.closest?.('.cg-card');
    return {
      expanded: this.#combo.expanded && focus === this.#el.input,
      active: active != null ? this.#cardKey(active) : null,
      open: new Set([...this.#cards].filter(([, e]) => e.details?.open).map(([n]) => this.#cardKey(n))),
      // Names, paths and glosses the reader has shown whole.
      whole: [...this.#cards].flatMap(([n, e]) =>
        [...e.el.querySelectorAll('.cg-clamp-toggle[aria-expanded="true"]')].map((t) => [this.#cardKey(n), t.parentElement.classList[0]])),
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
    for (const [key, part] of view.whole) {
      const entry = this.#cards.get(find(key));
      if (entry && !showWhole(entry.el, part)) (entry.wantsWhole ??= new Set()).add(part);
    }
    this.#combo.expand(view.expanded);
    const active = view.active && find(view.active);
    if (this.#combo.expanded && active) this.#combo.activateCard(active);
    // A focused card keeps focus where it still is; else focus goes back to the box.
    if (view.focused) (this.#cards.get(find(view.focused))?.el ?? this.#el.input).focus({ preventScroll: true });
  }

  #clearResults() {
    this.#combo.expand(false);
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
    this.#combo.render(cards);
  }

  #renderCard(card) {
    return cardNode(card, (button) => this.#requestText(button));
  }

  #requestText(button) {
    if (button) {
      button.disabled = true;
      button.textContent = 'Loading…';
    }
    if (this.#worker && this.#cardsOwner) this.#worker.postMessage({ type: TO_WORKER.text, id: this.#cardsOwner });
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
    this.#combo.expand(false);
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

  // ---------------------------------------------------------- keyboard

  /** Escape from anywhere else in the widget goes back to the box. */
  #onKey(e) {
    if (e.key !== 'Escape' || e.defaultPrevented) return;
    if (this.#settings.form.contains(e.target)) {
      e.preventDefault();
      this.#settings.toggle(false);
      this.#settings.button.focus();
      return;
    }
    if (e.target === this.#el.input) return;
    e.preventDefault();
    this.#combo.expand(false);
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
    if (answer && this.#panel.el.contains(link) && this.#cardsOwner !== answer.id) {
      this.#renderCards([...answer.cards.values()], answer.id, answer.query, true);
      this.#setStatus('Showing the evidence of the answer.', 'results');
    }
    this.#openCard(n);
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
    this.#combo.expand(false);
    // A newer question replaces the one still streaming: stop that one.
    const previous = this.#answer;
    if (previous && ['pending', 'streaming'].includes(previous.state) && this.#worker) {
      this.#worker.postMessage({ type: TO_WORKER.cancel, id: previous.id });
    }
    const settings = this.#settings.values();
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
    this.#panel.start();
    this.#send({ type: TO_WORKER.ask, id, query, settings });
    this.#setStatus(this.#ready ? 'Finding evidence…' : 'Loading index…', 'asking');
  }

  #onAnswer(msg) {
    const answer = this.#answer;
    switch (msg.type) {
      case FROM_WORKER.answerStart:
        answer.state = 'streaming';
        answer.model = msg.model || answer.model;
        this.#panel.streaming(answer.model, msg.prompt_signature);
        break;
      case FROM_WORKER.answerDelta:
        answer.text += String(msg.text ?? '');
        this.#panel.queueRender();
        break;
      case FROM_WORKER.answerDone: {
        answer.text = String(msg.text ?? answer.text);
        answer.citations = Array.isArray(msg.citations) ? msg.citations : [];
        answer.invalid = new Set(Array.isArray(msg.invalid) ? msg.invalid : []);
        answer.support = msg.support && typeof msg.support === 'object' ? msg.support : null;
        answer.cutRepetition = msg.cut_repetition === true;
        this.#finishAnswer('done');
        break;
      }
      case FROM_WORKER.answerError:
        this.#finishAnswer('error', String(msg.message ?? 'The answer failed.'));
        break;
      default:
        break;
    }
  }

  #finishAnswer(state, message) {
    const answer = this.#answer;
    answer.state = state;
    this.#panel.render();
    const seconds = ((performance.now() - answer.t0) / 1000).toFixed(1);
    this.#panel.finish(answer, state, message);
    if (state === 'error') {
      if (answer.id === this.#latestId || this.#cardsOwner === answer.id) this.#setStatus('The answer failed.', 'error');
    } else if (this.#cardsOwner === answer.id) {
      this.#setStatus(`Answered in ${seconds} s.`, 'answered');
    }
  }

  // ------------------------------------------------------ status, alert

  #setStatus(text, state) {
    setText(this.#el.statusText, text);
    this.#el.status.dataset.state = state;
  }

  #setSemantic(state, message) {
    const el = this.#el.semantic;
    el.dataset.state = state;
    if (state === SEMANTIC.loading) {
      el.textContent = 'Semantic search is loading…';
    } else if (state === SEMANTIC.off) {
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
