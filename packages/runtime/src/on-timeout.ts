import type { OnTimeoutPolicyJson } from '@locus/journal'
import { prepareWorkflowResult } from '@locus/outcome'
import type { z } from 'zod'
import { DURATION_FORMS, durationMs } from './duration.js'
import { RuntimeInputError } from './errors.js'
import { describeZodIssues } from './zod-issues.js'

function refuse(message: string, issues: readonly string[]): never {
  throw new RuntimeInputError('DEFERRED_TOOL_INVALID', `Invalid deferred tool: ${message}`, issues)
}

/** How long an escalation waits, in milliseconds, or null to wait as long as it takes. */
export function escalationWaitMs(after: string | number | undefined): number | null {
  if (after === undefined) return null
  if (typeof after === 'number') return Number.isFinite(after) && after >= 0 ? Math.round(after) : refuse(`onTimeout.escalate.after must be milliseconds, 0 or more, not ${String(after)}.`, ['onTimeout.escalate.after: invalid'])
  const ms = durationMs(after)
  return ms ?? refuse(`onTimeout.escalate.after must be a duration (${DURATION_FORMS}) or milliseconds, not ${JSON.stringify(after)}.`, ['onTimeout.escalate.after: invalid'])
}

/**
 * Checks a deferred tool's `onTimeout` where it is declared and returns it as
 * the journal records it: `'reject'`, `{ default }` (the default detached to
 * JSON and checked against the tool's `output`), or `{ escalate: { to, after } }`
 * (a party named, and a duration or milliseconds). Scripts are plain
 * JavaScript too: anything else is refused, not trusted to match the type.
 *
 * @throws RuntimeInputError `DEFERRED_TOOL_INVALID`, naming what is wrong
 */
export function checkOnTimeout(policy: unknown, output: z.ZodType | undefined): OnTimeoutPolicyJson {
  if (policy === 'reject') return 'reject'
  if (typeof policy !== 'object' || policy === null || Array.isArray(policy)) {
    return refuse(`onTimeout must be 'reject', { default: value } or { escalate: { to, after } }, not ${(JSON.stringify(policy) as string | undefined) ?? String(policy)}.`, ['onTimeout: invalid'])
  }
  const keys = Object.keys(policy)
  if (keys.length !== 1 || (keys[0] !== 'default' && keys[0] !== 'escalate')) {
    return refuse(`onTimeout takes exactly one of "default" or "escalate", not ${keys.length === 0 ? 'an empty object' : keys.map((key) => `"${key}"`).join(', ')}.`, ['onTimeout: invalid'])
  }
  if (keys[0] === 'default') {
    const value = (policy as { readonly default: unknown }).default
    let json
    try {
      json = prepareWorkflowResult(value)
    } catch (error) {
      return refuse(`onTimeout.default cannot be kept as JSON: ${error instanceof Error ? error.message : String(error)}.`, ['onTimeout.default: not JSON'])
    }
    if (output !== undefined) {
      const parsed = output.safeParse(json)
      if (!parsed.success) {
        const issues = describeZodIssues(parsed.error, 'onTimeout.default')
        return refuse(`onTimeout.default does not fit the tool's output schema:\n  ${issues.join('\n  ')}`, issues)
      }
    }
    return { default: json }
  }
  const escalate = (policy as { readonly escalate: unknown }).escalate
  if (typeof escalate !== 'object' || escalate === null) return refuse('onTimeout.escalate must be { to, after }.', ['onTimeout.escalate: invalid'])
  const { to, after } = escalate as { readonly to?: unknown; readonly after?: unknown }
  if (typeof to !== 'string' || to.trim() === '') return refuse('onTimeout.escalate.to must name who the new deferral is for (a non-empty string).', ['onTimeout.escalate.to: invalid'])
  if (after !== undefined && typeof after !== 'string' && typeof after !== 'number') {
    return refuse(`onTimeout.escalate.after must be a duration (${DURATION_FORMS}) or milliseconds.`, ['onTimeout.escalate.after: invalid'])
  }
  escalationWaitMs(after)
  return { escalate: { to, ...(after === undefined ? {} : { after }) } }
}
