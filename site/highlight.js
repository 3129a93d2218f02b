// highlight.js: C++ code as the widget shows it, for widget.js.
//
// Why it exists: a card's code is index text shown in a `<pre>` with the
// file's own line numbers and C++ syntax highlighting. The highlighter is
// a small tokenizer (comments, directives, strings with their prefixes and
// raw strings, numbers, keywords) that builds spans and text nodes through
// dom.js, so code is never parsed as HTML. Kept apart from widget.js, which
// decides when a card's code is rendered.

import { h } from './dom.js';

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
export function tokenizeCpp(src) {
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
export function renderCode(code, language, firstLine, label, frame) {
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
