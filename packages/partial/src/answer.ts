import type { Gap } from './gap.js'

/** A successful step result the answer was built from, described for a reader. */
export interface GatheredResult {
  readonly step: number
  readonly tool: string
  /** What the step checks, in words. */
  readonly description: string
  /** `found` with data, or `empty`: checked and nothing there. */
  readonly state: 'found' | 'empty'
  readonly data: unknown
  /** `checked X` or `checked X: none found`. */
  readonly summary: string
}

/** Where a degraded answer came from instead of the intended route. */
export interface DegradedRoute {
  /** The route that could not answer, such as `planning` or `live`. */
  readonly from: string
  /** The route that answered instead, such as `documents`. */
  readonly to: string
  /** Tools whose failure forced the detour. */
  readonly reason: readonly string[]
}

/**
 * An answer with its honesty kept in fields, not in prose.
 *
 * `caveats` never live inside `text`: they are rendered by
 * {@link renderAnswer} outside anything a model may rewrite, so a later pass
 * that shortens or tidies `text` cannot remove them.
 */
export interface Answer {
  /** The prose of the answer; a model may rewrite it. */
  readonly text: string
  /** What the reader must be told, one sentence each; rendered outside `text`. */
  readonly caveats: readonly string[]
  /** Steps the answer had to do without. */
  readonly gaps: readonly Gap[]
  /** True when the answer was given without every step. */
  readonly partial: boolean
  /**
   * False exactly when the run could not answer (`cannot_answer`). Returned as
   * a workflow's root result, such an answer therefore fails closed, as a
   * partial one does through `partial: true`.
   */
  readonly ok: boolean
  /** False when the run could not answer at all. */
  readonly found: boolean
  /** What the run did gather; returned even when it could not answer, so the work is not lost. */
  readonly gathered: readonly GatheredResult[]
  /** Set when a fallback route answered instead of the intended one. */
  readonly degraded?: DegradedRoute
}
