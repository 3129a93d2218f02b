// combobox.js: the widget's search box and its list of results, for
// widget.js.
//
// Why it exists: the box and the list are an ARIA combobox (the box keeps
// focus; `aria-expanded`, `aria-activedescendant` and `aria-selected` say
// which option the arrows reached), with its keyboard rules: arrows move
// through the results, Enter opens the active one (Ctrl/Cmd+Enter asks),
// Escape closes the list and then clears the box, and `/` anywhere on the
// page focuses the box. Kept apart from widget.js, which decides what the
// options are and what opening one does.

import { PATH_MAX, h, isTypingTarget, location, short, title } from './dom.js';

// ------------------------------------------------------ the "/" shortcut

/** Connected widgets in connection order; `/` focuses the first (its `focusInput`). */
export const shortcutTargets = new Set();

document.addEventListener('keydown', (event) => {
  if (event.key !== '/' || event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.defaultPrevented || event.isComposing) return;
  if (isTypingTarget(event.composedPath()[0])) return;
  const first = shortcutTargets.values().next().value;
  if (!first) return;
  event.preventDefault();
  first.focusInput();
});

// ------------------------------------------------------------ the combobox

/** The search box: the combobox of the listbox `cg-results`. */
function inputElement() {
  return h('input', {
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
}

function listboxElement() {
  return h('ul', {
    id: 'cg-results',
    class: 'cg-listbox',
    role: 'listbox',
    'aria-label': 'Results',
    'data-testid': 'cg-results',
    hidden: true,
  });
}

/**
 * The box (`input`) and the list (`listbox`), not yet in the document.
 * `on`: what the keys and clicks do, `{pick(n), search(query), ask(), clear()}`:
 * open card n, search now, ask the question in the box, and react to the
 * box emptied by Escape.
 */
export class Combobox {
  input = inputElement();
  listbox = listboxElement();
  #on;
  #options = []; // listbox options, in order
  #active = -1; // index into #options

  constructor(on) {
    this.#on = on;
    const { input, listbox } = this;
    input.addEventListener('keydown', (e) => this.#onKey(e));
    input.addEventListener('blur', (e) => {
      if (!listbox.contains(e.relatedTarget)) this.expand(false);
    });
    // Clicking an option must not take focus from the box before the click lands.
    listbox.addEventListener('mousedown', (e) => e.preventDefault());
    listbox.addEventListener('click', (e) => {
      const option = e.target.closest('[role="option"]');
      if (option) on.pick(Number(option.dataset.n));
    });
  }

  /** One option per card, none active. */
  render(cards) {
    this.#options = cards.map((card) =>
      h(
        'li',
        { id: `cg-opt-${card.n}`, class: 'cg-option', role: 'option', 'aria-selected': 'false', 'data-n': card.n },
        h('span', { class: 'cg-option-title', dir: 'ltr' }, short(title(card))),
        h('span', { class: 'cg-option-path', dir: 'ltr' }, short(location(card), PATH_MAX)),
        card.kind && h('span', { class: 'cg-option-kind' }, card.kind),
      ),
    );
    this.listbox.replaceChildren(...this.#options);
    this.#setActive(-1);
    if (!this.#options.length) this.expand(false);
  }

  /** Open the list (when it has options) or close it. */
  expand(open) {
    const expanded = open && this.#options.length > 0;
    this.listbox.hidden = !expanded;
    this.input.setAttribute('aria-expanded', String(expanded));
    if (!expanded) this.#setActive(-1);
  }

  get expanded() {
    return this.input.getAttribute('aria-expanded') === 'true';
  }

  /** The card number of the active option, or null. */
  get activeCard() {
    const option = this.#options[this.#active];
    return option ? Number(option.dataset.n) : null;
  }

  /** Make the option of card `n` the active one. */
  activateCard(n) {
    this.#setActive(this.#options.findIndex((o) => Number(o.dataset.n) === n));
  }

  #setActive(index) {
    this.#options[this.#active]?.setAttribute('aria-selected', 'false');
    this.#active = index;
    const option = this.#options[index];
    if (option) {
      option.setAttribute('aria-selected', 'true');
      this.input.setAttribute('aria-activedescendant', option.id);
      option.scrollIntoView({ block: 'nearest' });
    } else {
      this.input.removeAttribute('aria-activedescendant');
    }
  }

  #moveActive(step) {
    const count = this.#options.length;
    if (!count) return;
    if (!this.expanded) {
      this.expand(true);
      this.#setActive(step > 0 ? 0 : count - 1);
      return;
    }
    const from = this.#active < 0 ? (step > 0 ? -1 : count) : this.#active;
    this.#setActive((from + step + count) % count);
  }

  #onKey(e) {
    if (e.isComposing) return;
    const input = this.input;
    switch (e.key) {
      case 'ArrowDown':
      case 'ArrowUp':
        e.preventDefault();
        this.#moveActive(e.key === 'ArrowDown' ? 1 : -1);
        break;
      case 'Enter':
        e.preventDefault();
        if (e.ctrlKey || e.metaKey) this.#on.ask();
        else if (this.expanded && this.#active >= 0) this.#on.pick(Number(this.#options[this.#active].dataset.n));
        else if (input.value.trim()) this.#on.search(input.value.trim());
        break;
      case 'Escape':
        // Consumed only when it closes the list or clears the box, so that an
        // enclosing dialog still sees an Escape pressed in an empty box.
        if (this.expanded) {
          this.expand(false);
        } else if (input.value) {
          input.value = '';
          this.#on.clear();
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
}
