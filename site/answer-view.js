// answer-view.js: the widget's answer panel, for widget.js.
//
// Why it exists: the answer text comes from a model, so it is turned into
// elements here, as text only (dom.js): fenced and inline code as code,
// **bold**, and `[n]` as links to the evidence cards (struck out where no
// card backs them), plus the "Check" list (sentences the evidence does
// not back, names no card shows), the cited sources, and the panel itself
// (its states while the answer streams, its error with a hint when the
// browser was not let through). Kept apart from widget.js, which owns the
// answer's state (which question, which cards) and the worker.

import { revealBidi } from './bidi.js';
import { PATH_MAX, h, inlineCode, location, setText, short } from './dom.js';

/** `[3]` or `[1, 4]`: the citation forms the answer prompt asks for. */
const CITATION = /\[(\s*\d+\s*(?:,\s*\d+\s*)*)\]/g;
/** An answer error that means the browser was not allowed to call the server. */
const REFUSED = /OLLAMA_ORIGINS|CORS|refused|Failed to fetch/i;

/**
 * The answer text as nodes. `answer`: {text, state, cards: Map n -> card,
 * invalid: Set of numbers}.
 */
export function answerNodes(answer) {
  const nodes = [];
  const text = answer.text.replace(/^\s+/, '');
  const fence = /```[^\n]*\n?([\s\S]*?)(?:```|$)/g;
  let at = 0;
  for (const m of text.matchAll(fence)) {
    // The block is its own box: drop the line breaks that only delimit it.
    nodes.push(...inline(answer, text.slice(at, m.index).replace(/\n$/, '')));
    nodes.push(h('pre', { class: 'cg-answer-code', tabindex: '0' }, h('code', {}, m[1].replace(/\n$/, ''))));
    at = m.index + m[0].length;
    if (text[at] === '\n') at += 1;
  }
  nodes.push(...inline(answer, text.slice(at)));
  if (!text && answer.state === 'done') nodes.push(h('span', { class: 'cg-note' }, 'The model returned no text.'));
  if (answer.cutRepetition) {
    nodes.push(h('p', { class: 'cg-note' }, 'The model began to repeat itself; the answer stops where the copy began.'));
  }
  return nodes;
}

/** Inline code, **bold** and citations of a piece of answer text. */
function inline(answer, text) {
  return inlineCode(text, (part) =>
    part
      .split(/\*\*([^*\n]+)\*\*/)
      .flatMap((piece, j) => (j % 2 === 1 ? [h('strong', {}, ...citations(answer, piece))] : citations(answer, piece))),
  );
}

function citations(answer, text) {
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
        const where = short(location(card), PATH_MAX);
        cite.append(h('a', { class: 'cg-cite', href: `#cg-card-${n}`, title: where, 'aria-label': `source ${n}, ${where}` }, String(n)));
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

/** The "Check" list: sentences given an inferred source or none, and names no card shows; [] when none. */
export function supportNodes(answer) {
  const s = answer.support;
  const sentences = Array.isArray(s?.sentences) ? s.sentences : [];
  const inferred = sentences.filter((x) => Number.isInteger(x?.inferred) && answer.cards.has(x.inferred));
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
      ...unknown.flatMap((name, i) => [i ? ', ' : '', h('code', { dir: 'ltr' }, short(name))])));
  }
  return items.length ? [h('h3', { class: 'cg-heading' }, 'Check'), h('ul', {}, ...items)] : [];
}

/** The cited cards, in citation order (`answer.citations`); [] when none. */
export function sourceNodes(answer) {
  const numbers = [...new Set(answer.citations.map((c) => Number(c?.n ?? c)))];
  const cited = numbers.filter((n) => answer.cards.has(n) && !answer.invalid.has(n)).map((n) => answer.cards.get(n));
  if (!cited.length) return [];
  return [
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
          h('span', { class: 'cg-source-loc', dir: 'ltr' }, short(location(c), PATH_MAX)),
        ),
      ),
    ),
  ];
}

/**
 * The answer panel (`el`, hidden until the first question). `current()`
 * returns the answer on screen, `{text, state, model, cards, invalid,
 * citations, support}`, or null; the widget changes it, the panel shows it.
 */
export class AnswerPanel {
  #current;
  #renderQueued = false;

  /** `el`: the panel's live region, which the widget made empty. */
  constructor(current, el) {
    this.#current = current;
    this.text = h('div', { class: 'cg-answer-text', 'data-testid': 'cg-answer-text' });
    this.error = h('div', { class: 'cg-answer-error', 'data-testid': 'cg-answer-error', hidden: true });
    this.el = el;
    el.replaceChildren(
      h(
        'div',
        { class: 'cg-answer-head' },
        h('h2', { id: 'cg-answer-heading', class: 'cg-heading' }, 'Answer'),
        h('span', { class: 'cg-answer-meta' }),
      ),
      this.text,
      this.error,
      h('div', { class: 'cg-support', 'data-testid': 'cg-support', hidden: true }),
      h('div', { class: 'cg-sources', hidden: true }),
    );
    this.meta = this.el.querySelector('.cg-answer-meta');
    this.sources = this.el.querySelector('.cg-sources');
    this.support = this.el.querySelector('.cg-support');
  }

  /** A new question: the panel shows that evidence is being found. */
  start() {
    const el = this.el;
    el.hidden = false;
    el.dataset.state = 'pending';
    el.setAttribute('aria-busy', 'true');
    setText(this.meta, 'Finding evidence…');
    this.text.replaceChildren();
    this.error.hidden = true;
    this.error.replaceChildren();
    this.sources.hidden = true;
    this.support.hidden = true;
    this.support.replaceChildren();
    this.sources.replaceChildren();
  }

  /** The model started answering (`signature`: the prompt's, shown on hover). */
  streaming(model, signature) {
    this.el.dataset.state = 'streaming';
    setText(this.meta, model ? `from ${short(model)}…` : 'Answering…');
    if (signature) this.meta.title = `prompt ${signature}`;
  }

  /** Render the answer text at the next frame (once, however many deltas come before it). */
  queueRender() {
    if (this.#renderQueued) return;
    this.#renderQueued = true;
    requestAnimationFrame(() => {
      this.#renderQueued = false;
      this.render();
    });
  }

  /** Render the answer text: fenced and inline code as code, `[n]` as links to cards. */
  render() {
    const answer = this.#current();
    if (!answer) return;
    this.text.replaceChildren(...answerNodes(answer));
    revealBidi(this.text); // the model's bidi controls too
  }

  /** The answer ended (`state` 'done' or 'error', with the error's `message`), its text rendered: the rest of the panel. */
  finish(answer, state, message) {
    setText(this.meta, answer.model ? `from ${short(answer.model)}` : '');
    if (state === 'error') {
      const hint = REFUSED.test(message)
        ? h(
            'p',
            { class: 'cg-hint' },
            'If the server is running, it may not allow this page to call it. For Ollama, start it with ',
            h('code', {}, `OLLAMA_ORIGINS=${origin()} ollama serve`),
            ' so that the browser may call it.',
          )
        : null;
      this.error.replaceChildren(h('p', { class: 'cg-error-message' }, message), ...(hint ? [hint] : []));
      this.error.hidden = false;
    } else {
      // The cited cards, in citation order; then what the evidence does not back.
      const sources = sourceNodes(answer);
      this.sources.hidden = sources.length === 0;
      this.sources.replaceChildren(...sources);
      const support = supportNodes(answer);
      this.support.hidden = support.length === 0;
      this.support.replaceChildren(...support);
    }
    this.el.dataset.state = state;
    this.el.setAttribute('aria-busy', 'false');
  }
}

function origin() {
  return window.location.origin && window.location.origin !== 'null' ? window.location.origin : '*';
}
