import type { Gap } from './gap.js'
import type { PlanStep } from './plan.js'
import { type ToolResultInput, parseToolResult } from './tool-result.js'

/** What a step checks, in words: its `description`, else its tool name. */
export function describeStep(step: PlanStep): string {
  return step.description ?? step.tool
}

/**
 * One sentence fragment that keeps empty and failed apart:
 * `checked X` (found), `checked X: none found` (a fact), `could not check X`
 * (a gap, also for a step with no result). A plain `{ ok: true, data }` is
 * `none found` exactly when `toolOk` would call its data empty, and a
 * plain `{ ok: false, error }` is a gap, as in every other reader. Throws
 * `PartialInputError` for a value that is no tool result.
 *
 * @example
 * ```ts
 * describeOutcome({ n: 2, tool: 'search_tickets', criticality: 'enriching', description: 'open tickets' }, toolEmpty())
 * // 'checked open tickets: none found'
 * ```
 */
export function describeOutcome(step: PlanStep, given: ToolResultInput | undefined): string {
  const described = describeStep(step)
  const result = given === undefined ? undefined : parseToolResult(given)
  if (result === undefined || !result.ok) return `could not check ${described}`
  if (result.state === 'empty') return `checked ${described}: none found`
  return `checked ${described}`
}

/** `could not check X (reason)`, the line a gap contributes to a prompt. */
export function describeGap(gap: Gap): string {
  return `could not check ${gap.description} (${gap.reason})`
}

/** The caveat a gap puts in front of the reader: a full sentence. */
export function gapCaveat(gap: Gap): string {
  return `Could not check ${gap.description} (${gap.reason}).`
}
