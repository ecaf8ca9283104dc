/**
 * The console's HTML, written with one tagged template that escapes every value it is
 * handed: `html\`<td>${payload}</td>\`` can only ever put text where a value goes, so a
 * payload holding `<script>` renders as the characters it holds. Markup passes through
 * only as a {@link SafeHtml} another `html` template built (or a constant of this module's
 * callers wrapped in {@link trusted}).
 *
 * Why not handlebars (an optional peer the catalogue's Markdown uses): the console ships in
 * the runtime package and must run where the toolchain is not installed, and a template
 * function per page keeps the escaping rule in one place a reviewer can read, where a
 * template's `{{{ }}}` is one brace away from raw output.
 */

/** Markup that is already escaped (built by {@link html}), inserted as it is. */
export class SafeHtml {
  /** The markup. */
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

/** Text as HTML text or a quoted attribute's value: `& < > " ' \`` escaped. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => ESCAPES[c]);
}

/** One interpolated value as markup: escaped text, nested markup, or nothing. */
function render(value: unknown): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof SafeHtml) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/**
 * A piece of HTML: the literal parts as written, every value escaped (arrays rendered item
 * by item; `null`, `undefined` and `false` render nothing).
 */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new SafeHtml(out);
}

/** Markup the caller wrote itself (a constant, never data), inserted as it is. */
export function trusted(markup: string): SafeHtml {
  return new SafeHtml(markup);
}
