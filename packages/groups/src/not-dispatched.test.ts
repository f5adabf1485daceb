import { describe, expect, it } from 'vitest'
import { rejectionOf } from '../test/support.js'
import type { GroupEvent } from './group-event.js'
import { WorkflowGroupFailureError } from './group-failure-error.js'
import { toGroupFailureEnvelope } from './group-failure-envelope.js'
import { notDispatchedReasonOf } from './not-dispatched.js'
import { parallel } from './parallel.js'
import { pipeline } from './pipeline.js'
import { createRunScope } from './run-scope.js'
import { runInScope } from './slot-context.js'

const REASON = "not run: the run's cost budget of $2.50 was spent"

/** What a runtime throws for a call it could not afford. */
function unaffordable(): Error {
  return Object.assign(new Error('agent "default" was not dispatched'), { notDispatchedReason: REASON })
}

describe('not-dispatched slots: a branch that ended on work it never dispatched', () => {
  it('reads the reason an error carries, and nothing else', () => {
    expect(notDispatchedReasonOf(unaffordable())).toBe(REASON)
    for (const value of [new Error('x'), null, 'text', { notDispatchedReason: '' }, { notDispatchedReason: 3 }]) expect(notDispatchedReasonOf(value)).toBeUndefined()
  })

  it('reports such a parallel() position as not-dispatched with its reason, apart from the failed ones', async () => {
    const events: GroupEvent[] = []
    const scope = createRunScope({ observer: (event) => events.push(event) })
    const error = await rejectionOf(
      runInScope(scope, () =>
        parallel([
          () => 'done',
          () => {
            throw unaffordable()
          },
          () => Promise.reject(new Error('boom')),
          async () => Promise.reject(unaffordable()),
        ]),
      ),
    )
    expect(WorkflowGroupFailureError.isInstance(error)).toBe(true)
    const failure = error as WorkflowGroupFailureError
    expect([failure.completed, failure.failed, failure.notDispatched]).toEqual([1, 1, 2])
    expect(failure.slots.map((slot) => slot.status)).toEqual(['completed', 'not-dispatched', 'failed', 'not-dispatched'])
    expect(failure.slots[1]).toMatchObject({ status: 'not-dispatched', reason: REASON })
    expect(failure.failures.map((item) => item.index)).toEqual([2])
    expect(failure.partialResults).toEqual(['done', null, null, null])
    expect(failure.message).toContain(`2 of 4 position(s) not dispatched (#1, #3: ${REASON})`)
    expect(events.at(-1)).toMatchObject({ type: 'group_end', completed: 1, failed: 1, notDispatched: 2, outcome: 'failed' })
    const envelope = toGroupFailureEnvelope(failure)
    expect(envelope).toMatchObject({ completed: 1, failed: 1, notDispatched: 2 })
    expect(envelope.slots[3]).toEqual({ index: 3, status: 'not-dispatched', reason: REASON })
  })

  it('fails a group whose only unfinished positions were not dispatched', async () => {
    const error = (await rejectionOf(parallel([() => 1, () => Promise.reject(unaffordable())]))) as WorkflowGroupFailureError
    expect([error.completed, error.failed, error.notDispatched]).toEqual([1, 0, 1])
    expect(error.message).toMatch(/failed: 1 of 2 position\(s\) not dispatched/)
    expect(toGroupFailureEnvelope(error).failures).toEqual([])
  })

  it('marks a pipeline item whose later stage was not dispatched', async () => {
    const error = (await rejectionOf(
      pipeline([1, 2], [(item: number) => item * 10, (item: number) => (item === 20 ? Promise.reject(unaffordable()) : item)]),
    )) as WorkflowGroupFailureError
    expect(error.slots.map((slot) => slot.status)).toEqual(['completed', 'not-dispatched'])
  })
})
