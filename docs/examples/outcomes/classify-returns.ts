/**
 * Example: how Locus judges the values a workflow returns.
 *
 * What it shows: every returned value first crosses the JSON boundary
 * (`prepareWorkflowResult`), then one classifier decides success or failure
 * (`classifyOutcome`). Look for: `{ partial: true }` and `{ status: "blocked" }`
 * failing even without `ok: false`; `ok: "false"` (a string) succeeding; a
 * BigInt failing at the boundary with the path where it sits.
 *
 * Run: pnpm --filter @locus/examples exec tsx outcomes/classify-returns.ts
 */
import { classifyOutcome, isWorkflowResultPreparationError, prepareWorkflowResult } from '@locus/outcome'

export interface Verdict {
  readonly label: string
  readonly verdict: 'success' | 'failure' | 'boundary error'
  readonly detail: string
}

export const samples: ReadonlyArray<readonly [string, unknown]> = [
  ['a plain answer', { ok: true, answer: 'Net 45 per amendment 2' }],
  ['an explicit failure', { ok: false, error: 'ticket system down' }],
  ['a partial answer', { partial: true, found: 3, missing: ['payment history'] }],
  ['a blocked decision', { status: 'blocked', summary: 'Owner decision required' }],
  ['ok as a string', { ok: 'false' }],
  ['an unknown status', { status: 'error' }],
  ['a fulfilled null', null],
  ['a BigInt deep inside', { invoices: [{ total: 23_100n }] }],
]

export function judge(label: string, value: unknown): Verdict {
  try {
    const detached = prepareWorkflowResult(value)
    const outcome = classifyOutcome(detached)
    if (!outcome.failed) return { label, verdict: 'success', detail: JSON.stringify(detached) }
    const status = outcome.status === undefined ? '' : ` (status ${outcome.status})`
    return { label, verdict: 'failure', detail: `${outcome.reasons.join(', ')}${status}` }
  } catch (error) {
    if (!isWorkflowResultPreparationError(error)) throw error
    return { label, verdict: 'boundary error', detail: `${error.reason} at ${error.path}` }
  }
}

export function main(): Verdict[] {
  const verdicts = samples.map(([label, value]) => judge(label, value))
  for (const { label, verdict, detail } of verdicts) {
    console.log(`${label.padEnd(22)} ${verdict.padEnd(15)} ${detail}`)
  }
  return verdicts
}

if (import.meta.url === `file://${process.argv[1] ?? ''}`) main()
