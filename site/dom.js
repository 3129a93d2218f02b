// dom.js: how widget.js turns index and model text into elements.
//
// Why it exists: every string the widget shows comes from the index or
// from a model, so it is shown as text only (text nodes, attributes set
// one by one, never parsed as HTML), with its bidirectional controls made
// visible (bidi.js), and text of any length (a generated 200 KB name, a
// gloss listing it) is cut to a readable size with the rest one click
// away. Kept apart from widget.js so that these rules live in one place.

import { bidiNodes, markBidi } from './bidi.js';

/** Longest name (symbol, qualified name) shown before it is cut. */
export const NAME_MAX = 160;
/** Longest gloss shown before it is cut. */
export const GLOSS_MAX = 800;
/** Longest path or location shown before it is cut. */
export const PATH_MAX = 300;

/** Strings as text nodes and visible bidi markers; elements as they are. */
function nodes(children) {
  return children
    .filter((c) => c != null && c !== false && c !== '')
    .flatMap((c) => (typeof c === 'string' ? bidiNodes(c) : [c]));
}

/**
 * Create an element. Attribute values are set with setAttribute and
 * children are appended as nodes or text nodes, so nothing is parsed as
 * HTML; bidirectional controls in either are shown as markers.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false || value == null) continue;
    el.setAttribute(name, value === true ? '' : markBidi(value));
  }
  el.append(...nodes(children));
  return el;
}

/** Replace an element's content by `text` (bidi controls shown as markers). */
export function setText(el, text) {
  el.replaceChildren(...nodes([String(text ?? '')]));
}

/** `text` cut to `max` characters, with an ellipsis when cut. */
export function short(text, max = NAME_MAX) {
  const s = String(text ?? '');
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

/** `text` with every word (run of characters other than spaces and backticks) longer than `max` cut. */
function shortWords(text, max) {
  return text.replace(new RegExp(`[^\\s\`]{${max + 1},}`, 'g'), (word) => `${word.slice(0, max)}…`);
}

/**
 * Text that may be very long: `{text, toggle}`, where `text` is a span of
 * at most `max` characters, no word in it longer than `words` (an ellipsis
 * where cut), and `toggle`, when it was cut, a button that shows the whole
 * text in a scrolling box and back. `render` turns a piece of text into
 * nodes (plain text by default).
 */
export function clamped(text, max, { words = max, render = (piece) => [piece] } = {}) {
  const s = String(text ?? '');
  const cut = short(shortWords(s, words), max);
  const body = h('span', { class: 'cg-clamp' }, ...render(cut));
  if (cut === s) return { text: body, toggle: null };
  const more = `Show all ${s.length.toLocaleString('en')} characters`;
  const toggle = h('button', { type: 'button', class: 'cg-clamp-toggle', 'aria-expanded': 'false' }, more);
  toggle.addEventListener('click', (e) => {
    e.stopPropagation();
    const open = toggle.getAttribute('aria-expanded') !== 'true';
    body.replaceChildren(...nodes(render(open ? s : cut)));
    body.classList.toggle('cg-clamp-open', open);
    toggle.setAttribute('aria-expanded', String(open));
    toggle.textContent = open ? 'Show less' : more;
  });
  return { text: body, toggle };
}

/** `path:start-end`, or the bare path for a whole file (lines 0). */
export function location(card) {
  return card.start_line > 0 ? `${card.path}:${card.start_line}-${card.end_line}` : card.path;
}

/** The name a card is shown under (whole: cut it with `short` or `clamped`). */
export function title(card) {
  return card.qualified_name || card.symbol || card.path.split('/').pop() || card.path;
}

export function plural(n, word) {
  return `${n.toLocaleString('en')} ${word}${n === 1 ? '' : 's'}`;
}

export function formatBytes(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(bytes < 10240 ? 1 : 0)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** Text with `code` spans as <code> elements; other pieces go through `plain` (text by default). */
export function inlineCode(text, plain = (piece) => [piece]) {
  const out = [];
  text.split(/(`[^`\n]+`)/).forEach((part, k) => {
    if (k % 2 === 1) out.push(h('code', {}, part.slice(1, -1)));
    else if (part) out.push(...plain(part));
  });
  return out;
}

/** A message from the worker, without the trailing full stop, for use inside a sentence. */
export function clause(message) {
  return String(message ?? '').trim().replace(/[.\s]+$/, '');
}

/** Whether keys pressed in `node` are typing (a text field, an editable element). */
export function isTypingTarget(node) {
  return (
    node instanceof Element &&
    (node.isContentEditable || node.matches('input, textarea, select, [role="textbox"]'))
  );
}
