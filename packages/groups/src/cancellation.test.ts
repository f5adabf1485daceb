import { describe, expect, it } from 'vitest'
import { deferred, drain, inRecordedScope, rejectionOf } from '../test/support.js'
import { WorkflowInvocationCapError } from './invocation-cap-error.js'
import { parallel } from './parallel.js'
import { pipeline } from './pipeline.js'
import { createRunScope } from './run-scope.js'
import { runInScope } from './slot-context.js'
import { WorkflowCancelledError } from './workflow-cancelled-error.js'

describe('cancellation: "Host cancellation also stops new group work" and "host cancellation retains the runner\'s cancelled disposition"', () => {
  it('lets started branches settle and still ends the group as cancelled when the abort came after every dispatch', async () => {
    const controller = new AbortController()
    const running = deferred<string>()
    const started: number[] = []
    const { result, events } = await inRecordedScope(
      async (events) => {
        const group = parallel(
          [0, 1, 2, 3].map((index) => () => {
            started.push(index)
            return index === 1 ? running.promise : 'done'
          }),
          { concurrency: 2 },
        )
        // Branch 0 finished and branch 2 took its place; branch 1 is still running.
        await drain()
        controller.abort(new Error('operator pressed stop'))
        await drain()
        expect(events.some((event) => event.type === 'group_end')).toBe(false)
        running.resolve('finished after the abort')
        return group
      },
      { signal: controller.signal },
    )
    expect(started).toEqual([0, 1, 2, 3])
    // Everything had been dispatched, but the run is cancelled: the group says so instead of succeeding.
    const error = (result as PromiseRejectedResult).reason as WorkflowCancelledError
    expect(WorkflowCancelledError.isInstance(error)).toBe(true)
    expect(error.notDispatched).toEqual([])
    expect(events.at(-1)).toMatchObject({ type: 'group_end', completed: 4, failed: 0, notDispatched: 0, outcome: 'cancelled' })
  })

  it('never starts positions queued behind a running branch after the abort, and lists them on the WorkflowCancelledError', async () => {
    const controller = new AbortController()
    const running = deferred<string>()
    const started: number[] = []
    const { result, events } = await inRecordedScope(
      async () => {
        const group = parallel(
          [0, 1, 2].map((index) => () => {
            started.push(index)
            return running.promise
          }),
          { concurrency: 1 },
        )
        await drain()
        controller.abort(new Error('operator pressed stop'))
        running.resolve('settled anyway')
        return group
      },
      { signal: controller.signal },
    )
    expect(started).toEqual([0])
    const error = (result as PromiseRejectedResult).reason as WorkflowCancelledError
    expect(WorkflowCancelledError.isInstance(error)).toBe(true)
    expect(error.code).toBe('WORKFLOW_CANCELLED')
    expect(error.groupId).toBe('1')
    expect(error.notDispatched).toEqual([1, 2])
    expect((error.cause as Error).message).toBe('operator pressed stop')
    expect(error.message).toContain('indexes 1, 2')
    expect(events.at(-1)).toEqual({
      type: 'group_end',
      groupId: '1',
      groupKind: 'parallel',
      total: 3,
      completed: 1,
      failed: 0,
      notDispatched: 2,
      outcome: 'cancelled',
    })
  })

  it('a group created after the abort dispatches nothing', async () => {
    const controller = new AbortController()
    controller.abort()
    let ran = false
    const scope = createRunScope({ signal: controller.signal })
    const error = await runInScope(scope, () =>
      rejectionOf(
        pipeline(
          [1, 2],
          [
            () => {
              ran = true
            },
          ],
        ),
      ),
    )
    expect(ran).toBe(false)
    expect((error as WorkflowCancelledError).notDispatched).toEqual([0, 1])
    expect((error as WorkflowCancelledError).groupKind).toBe('pipeline')
  })

  it('stops a pipeline item between stages and lists it as not dispatched', async () => {
    const controller = new AbortController()
    const stageRuns: string[] = []
    const scope = createRunScope({ signal: controller.signal })
    const error = await runInScope(scope, () =>
      rejectionOf(
        pipeline(
          ['a', 'b'],
          [
            (item: string) => {
              stageRuns.push(`0:${item}`)
              if (item === 'a') controller.abort()
              return item
            },
            (item: string) => {
              stageRuns.push(`1:${item}`)
              return item
            },
          ],
          { concurrency: 1 },
        ),
      ),
    )
    expect(stageRuns).toEqual(['0:a'])
    expect((error as WorkflowCancelledError).notDispatched).toEqual([0, 1])
  })

  it('rejects as cancelled even when a failure or a cap hit happened while draining after the abort', async () => {
    const controller = new AbortController()
    const scope = createRunScope({ signal: controller.signal })
    const cap = new WorkflowInvocationCapError({ limit: 1, attempted: 2 })
    const error = await runInScope(scope, () =>
      rejectionOf(
        parallel([
          async () => {
            controller.abort()
            await Promise.resolve()
            throw cap
          },
        ]),
      ),
    )
    expect(WorkflowCancelledError.isInstance(error)).toBe(true)
    expect(scope.hardStop).toBe(cap)
    expect(scope.stopCause).toBe('cancelled')
  })

  it('a cap hit before the abort stays a hard stop', async () => {
    const controller = new AbortController()
    const scope = createRunScope({ signal: controller.signal })
    const cap = new WorkflowInvocationCapError({ limit: 1, attempted: 2 })
    const error = await runInScope(scope, () =>
      rejectionOf(
        parallel([
          () => Promise.reject(cap),
          async () => {
            await Promise.resolve()
            controller.abort()
          },
        ]),
      ),
    )
    expect(error).toBe(cap)
    expect(scope.stopCause).toBe('hard-stop')
  })
})
