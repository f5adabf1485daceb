/**
 * Example: continuing with partial results, explicitly.
 *
 * What it shows: the supported pattern catches only `WORKFLOW_GROUP_FAILURE`,
 * rethrows everything else, and returns `partial: true`, which the classifier
 * counts as a failure. For comparison, the JSON-safe envelope the runtime would
 * persist had the error escaped.
 *
 * Run: node --conditions=@locus/source --import tsx examples/catch-and-continue.ts
 */
import { parallel, toGroupFailureEnvelope, WorkflowGroupFailureError } from '@locus/groups'
import { fileURLToPath } from 'node:url'

export async function gatherSources(thunks: readonly (() => unknown)[]): Promise<unknown> {
  try {
    const results = await parallel(thunks)
    return { ok: true, results }
  } catch (error) {
    if (!WorkflowGroupFailureError.isInstance(error)) throw error // hard stops, cancellation, bugs
    return {
      ok: false,
      partial: true,
      completed: error.completed,
      failed: error.failed,
      results: error.partialResults,
      failures: toGroupFailureEnvelope(error).failures, // JSON-safe failure metadata
    }
  }
}

export async function main(): Promise<unknown> {
  return gatherSources([() => ({ source: 'wiki', text: 'Net 45' }), () => Promise.reject(new Error('CRM unreachable'))])
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await main(), null, 2))
}
