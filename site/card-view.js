// card-view.js: one evidence card of the widget (a search result or a
// source of an answer), for widget.js.
//
// Why it exists: a card shows index text only (name, kind, path and lines,
// gloss, and a folded code view), each piece through dom.js: names and
// paths as isolated left-to-right runs, long ones cut with the rest one
// click away. Kept apart from widget.js, which owns the list of cards, when
// their text arrives and when their code is opened (highlight.js renders it).

import { GLOSS_MAX, NAME_MAX, PATH_MAX, clamped, h, inlineCode, plural, title } from './dom.js';

/**
 * The card's `<article>` (`id="cg-card-<n>"`). A card whose gloss and code
 * are not loaded yet gets a button that calls `onMore(button)`; its code
 * view is an empty `<details>` until it is first opened.
 */
export function cardNode(card, onMore) {
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
    !card.gloss && !card.code && moreButton(onMore),
  );
}

/** A button that fetches the text of every card of the current results. */
function moreButton(onMore) {
  const button = h('button', { type: 'button', class: 'cg-more', 'data-testid': 'cg-more' }, 'Show explanation and code');
  button.addEventListener('click', () => onMore(button));
  return button;
}

/**
 * Shows whole the cut text in the `part` (`cg-card-head`, `cg-loc` or
 * `cg-gloss`) of a card, as its toggle does. False while the card has no
 * such part yet (a gloss arrives after its card).
 */
export function showWhole(cardEl, part) {
  const toggle = cardEl.querySelector(`.${part} > .cg-clamp-toggle`);
  if (!toggle) return false;
  if (toggle.getAttribute('aria-expanded') !== 'true') toggle.click();
  return true;
}
