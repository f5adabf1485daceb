/** HTML that is already escaped: the only thing {@link html} inserts unescaped. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value
  }
}

const ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/** Escapes text for an element body or a quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ESCAPES[char] ?? char)
}

/** A value as it goes into {@link html}: text is escaped, {@link SafeHtml} kept, arrays joined, nullish and `false` dropped. */
export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[]

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false || value === true) return ''
  if (value instanceof SafeHtml) return value.value
  if (typeof value === 'number') return String(value)
  if (typeof value === 'string') return escapeHtml(value)
  let out = ''
  for (const item of value) out += render(item)
  return out
}

/**
 * A tagged template that escapes every interpolated value unless it is
 * {@link SafeHtml}: the inspector's only way to build markup, so journal text
 * (prompts, answers, error messages) can never inject HTML.
 */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0] ?? ''
  for (let index = 0; index < values.length; index += 1) out += render(values[index]) + (strings[index + 1] ?? '')
  return new SafeHtml(out)
}

/** Markup from trusted constant text (CSS, the page script). */
export function raw(text: string): SafeHtml {
  return new SafeHtml(text)
}
