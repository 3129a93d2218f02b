// bidi.js: shows the invisible bidirectional controls in index and model
// text, for widget.js.
//
// Why it exists: the Unicode bidirectional controls (U+202A–U+202E,
// U+2066–U+2069, U+200E, U+200F, U+061C) are invisible and reorder the text
// around them, so a path, a name, a comment or an answer can read
// differently from what it is ("Trojan Source", CVE-2021-42574). The widget
// shows each one as a visible marker such as `<U+202E>` in a styled span,
// as code hosts do, so that no control reaches the screen. Everything here
// builds text nodes and elements; nothing is parsed as HTML.

/** Every bidirectional control character: `ANY` tests, `CONTROLS` replaces. */
const ANY = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/;
const CONTROLS = new RegExp(ANY.source, 'g');

const NAMES = {
  0x061c: 'Arabic letter mark',
  0x200e: 'left-to-right mark',
  0x200f: 'right-to-left mark',
  0x202a: 'left-to-right embedding',
  0x202b: 'right-to-left embedding',
  0x202c: 'pop directional formatting',
  0x202d: 'left-to-right override',
  0x202e: 'right-to-left override',
  0x2066: 'left-to-right isolate',
  0x2067: 'right-to-left isolate',
  0x2068: 'first strong isolate',
  0x2069: 'pop directional isolate',
};

/** Whether `text` holds any bidirectional control. */
export function hasBidi(text) {
  return ANY.test(text);
}

/** The visible form of one control: `<U+202E>`. */
export function bidiMarker(ch) {
  return `<U+${ch.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}>`;
}

/** `text` with every control replaced by its marker (for attribute values). */
export function markBidi(text) {
  const s = String(text);
  return hasBidi(s) ? s.replace(CONTROLS, bidiMarker) : s;
}

function markerElement(ch) {
  const el = document.createElement('span');
  el.className = 'cg-bidi';
  const code = ch.codePointAt(0);
  el.title = `${NAMES[code] ?? 'bidirectional control'} (${bidiMarker(ch).slice(1, -1)}): an invisible character that can change the order text is shown in`;
  el.textContent = bidiMarker(ch);
  return el;
}

/** `text` as nodes: plain pieces as strings, each control as a marker span. */
export function bidiNodes(text) {
  const s = String(text);
  if (!hasBidi(s)) return [s];
  const nodes = [];
  let at = 0;
  for (const m of s.matchAll(CONTROLS)) {
    if (m.index > at) nodes.push(s.slice(at, m.index));
    nodes.push(markerElement(m[0]));
    at = m.index + m[0].length;
  }
  if (at < s.length) nodes.push(s.slice(at));
  return nodes;
}

/** Replace the controls in every text node under `root` by markers (for
 * markup built elsewhere, such as highlighted code). Returns `root`. */
export function revealBidi(root) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const found = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (hasBidi(node.data) && !node.parentElement?.closest('.cg-bidi')) found.push(node);
  }
  for (const node of found) node.replaceWith(...bidiNodes(node.data));
  return root;
}
