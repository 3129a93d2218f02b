// settings.js: the widget's answer model settings (endpoint, model, API
// key), for widget.js.
//
// Why it exists: which model answers is the reader's choice, kept in this
// browser's localStorage (`codegloss.endpoint`, `codegloss.model`,
// `codegloss.apiKey`), over the defaults the page sets with the element's
// `endpoint` and `model` attributes. A value equal to the page's default is
// not stored, so that a later default applies; where storage is blocked the
// settings last for the page. Kept apart from widget.js, which only reads
// the settings when a question is asked.

import { h } from './dom.js';

const DEFAULT_ENDPOINT = 'http://127.0.0.1:11434/v1';
const STORAGE_KEYS = {
  endpoint: 'codegloss.endpoint',
  model: 'codegloss.model',
  apiKey: 'codegloss.apiKey',
};

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

/**
 * The Settings button and the form it opens, not yet in the document.
 * `attribute(name)`: the element's attribute `name` (the page's defaults).
 */
export class Settings {
  #attribute;

  constructor(attribute) {
    this.#attribute = attribute;
    this.button = h(
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
    this.form = h(
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
    this.fields = {
      endpoint: this.form.querySelector('#cg-endpoint'),
      model: this.form.querySelector('#cg-model'),
      apiKey: this.form.querySelector('#cg-key'),
    };
    for (const key of ['endpoint', 'model', 'apiKey']) {
      this.fields[key].value = storage.get(STORAGE_KEYS[key]) ?? '';
      this.fields[key].addEventListener('input', () => this.#save(key));
    }
    this.button.addEventListener('click', () => this.toggle());
    this.form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.toggle(false);
    });
  }

  #defaults() {
    return {
      endpoint: this.#attribute('endpoint') || DEFAULT_ENDPOINT,
      model: this.#attribute('model') || '',
    };
  }

  /** Show the page's defaults (as placeholders, and as values where the reader stored none). */
  refreshDefaults() {
    const d = this.#defaults();
    this.fields.endpoint.placeholder = d.endpoint;
    this.fields.model.placeholder = d.model || 'model name, e.g. qwen2.5-coder:1.5b';
    for (const key of ['endpoint', 'model']) {
      if (storage.get(STORAGE_KEYS[key]) == null && !this.fields[key].matches(':focus')) this.fields[key].value = d[key];
    }
  }

  #save(key) {
    const value = this.fields[key].value.trim();
    const d = this.#defaults();
    // A value equal to the page's default is not stored, so a later default applies.
    storage.set(STORAGE_KEYS[key], value && value !== d[key] ? value : '');
  }

  /** The settings an answer uses: `{endpoint, model, apiKey}`. */
  values() {
    const d = this.#defaults();
    return {
      endpoint: this.fields.endpoint.value.trim() || d.endpoint,
      model: this.fields.model.value.trim() || d.model,
      apiKey: this.fields.apiKey.value.trim(),
    };
  }

  /** Open or close the form (open: focus its first field). */
  toggle(open = this.form.hidden) {
    this.form.hidden = !open;
    this.button.setAttribute('aria-expanded', String(open));
    if (open) this.fields.endpoint.focus();
  }
}
