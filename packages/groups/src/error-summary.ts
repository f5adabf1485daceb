import { toLocusError } from '@locus/outcome'

/** A JSON-safe summary of anything thrown. */
export interface ErrorSummary {
  readonly name: string
  /** The error's own string `code`, when it has one (a Locus code, or a Node code like `ENOENT`). */
  readonly code?: string
  readonly message: string
}

function asText(value: unknown): string {
  return typeof value === 'string' ? value : String(value)
}

/**
 * Summarises a thrown value as strings only. Never throws: getters that throw
 * and exotic values degrade to a generic description.
 */
export function summarizeError(error: unknown): ErrorSummary {
  try {
    const locus = toLocusError(error)
    const name = error instanceof Error ? asText((error as { name: unknown }).name) : 'NonErrorThrown'
    const message = asText((locus as { message: unknown }).message)
    const rawCode: unknown = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined
    return typeof rawCode === 'string' ? { name, code: rawCode, message } : { name, message }
  } catch {
    return { name: 'UnreadableError', message: 'the thrown value could not be read' }
  }
}
