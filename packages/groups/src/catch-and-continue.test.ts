import { classifyOutcome, prepareWorkflowResult } from '@locus/outcome'
import { describe, expect, it } from 'vitest'
import { WorkflowGroupFailureError } from './group-failure-error.js'
import { WorkflowInvocationCapError } from './invocation-cap-error.js'
import { parallel } from './parallel.js'

// The supported authoring pattern: catch only the stable code, rethrow the
// rest, and return an explicit partial result.
async function gather(thunks: readonly (() => unknown)[]): Promise<unknown> {
  try {
    const results = await parallel(thunks)
    return { ok: true, results }
  } catch (error) {
    if (!WorkflowGroupFailureError.isInstance(error)) throw error
    return { ok: false, partial: true, completed: error.completed, failed: error.failed, failures: error.failures }
  }
}

describe('"Partial continuation is an explicit author decision, not the default"', () => {
  it('an uncaught branch failure rejects the group; nothing resolves as success by default', async () => {
    await expect(parallel([() => 'fine', () => ({ partial: true })])).rejects.toSatisfy(WorkflowGroupFailureError.isInstance)
  })

  it('"Catch only the stable code ... and return a JSON-safe top-level result with partial:true", which the classifier treats as failure', async () => {
    const result = await gather([() => 'fine', () => Promise.reject(new Error('source down'))])
    expect(result).toMatchObject({ ok: false, partial: true, completed: 1, failed: 1 })
    expect(classifyOutcome(prepareWorkflowResult(result)).failed).toBe(true)
  })

  it('"rethrow every other error": a hard stop passes through the pattern untouched', async () => {
    const hard = new WorkflowInvocationCapError({ limit: 1, attempted: 2 })
    await expect(gather([() => Promise.reject(hard)])).rejects.toBe(hard)
  })
})
