import type { JsonValue } from '@locus/outcome'

/**
 * JSON for reading in a terminal: like `JSON.stringify(value, null, 2)`, but
 * any object or array whose one-line form fits in `width` columns (indent
 * included) stays on one line.
 *
 * @example
 * ```ts
 * formatJson({ ok: true, items: [{ id: 'T-1', priority: 'P2' }] }, 80)
 * // { "ok": true, "items": [{ "id": "T-1", "priority": "P2" }] }
 * ```
 */
export function formatJson(value: JsonValue, width = 100): string {
  return render(value, 0, width)
}

function inline(value: JsonValue): string {
  if (Array.isArray(value)) return value.length === 0 ? '[]' : `[${value.map(inline).join(', ')}]`
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value)
    return entries.length === 0 ? '{}' : `{ ${entries.map(([key, entry]) => `${JSON.stringify(key)}: ${inline(entry)}`).join(', ')} }`
  }
  return JSON.stringify(value)
}

/** `prefix` is how many columns precede the value on its first line (an object key). */
function render(value: JsonValue, indent: number, width: number, prefix = 0): string {
  const oneLine = inline(value)
  if (typeof value !== 'object' || value === null || indent + prefix + oneLine.length <= width) return oneLine
  const pad = ' '.repeat(indent + 2)
  const close = ' '.repeat(indent)
  if (Array.isArray(value)) return `[\n${value.map((entry) => pad + render(entry, indent + 2, width)).join(',\n')}\n${close}]`
  const entries = Object.entries(value).map(([key, entry]) => {
    const name = `${JSON.stringify(key)}: `
    return `${pad}${name}${render(entry, indent + 2, width, name.length)}`
  })
  return `{\n${entries.join(',\n')}\n${close}}`
}
