import { LocusError } from '@locus/outcome'
import { describe, expect, it } from 'vitest'
import { deferred, drain, inRecordedScope, rejectionOf, ticks } from '../test/support.js'
import type { GroupEndEvent } from './group-event.js'
import { isHardStopError } from './hard-stop.js'
import { WorkflowInvocationCapError } from './invocation-cap-error.js'
import { parallel } from './parallel.js'
import { pipeline } from './pipeline.js'
import { createRunScope } from './run-scope.js'
import { WorkflowRunDeadlineError } from './run-deadline-error.js'
import { runInScope } from './slot-context.js'

const endOf = (events: readonly { type: string; groupId: string }[], groupId: string): GroupEndEvent =>
  events.find((event) => event.type === 'group_end' && event.groupId === groupId) as GroupEndEvent

describe('hard stops: "WorkflowInvocationCapError and WorkflowRunDeadlineError remain hard run-level failures instead of partial branch evidence" and "Hard errors remain unwrapped"', () => {
  it.each([
    ['WorkflowInvocationCapError', () => new WorkflowInvocationCapError({ limit: 3, attempted: 4 })],
    ['WorkflowRunDeadlineError', () => new WorkflowRunDeadlineError({ deadlineMs: 1000, elapsedMs: 1002 })],
  ])('rejects with the %s object itself, not a group failure', async (_name, make) => {
    const hard = make()
    const error = await rejectionOf(parallel([() => 'ok', () => Promise.reject(hard), () => ({ ok: false })]))
    expect(error).toBe(hard)
  })
})

describe('hard stops: "Once observed, they stop queued branch and pipeline-stage dispatch throughout the active nested group tree" and "Every started branch still settles before group_end, the group rejection"', () => {
  it('stops queued siblings, lets started ones settle, then rejects with the same object', async () => {
    const hard = new WorkflowInvocationCapError({ limit: 1, attempted: 2 })
    const slow = deferred<string>()
    const started: number[] = []
    const { result, events } = await inRecordedScope(async (events) => {
      const group = parallel(
        [
          async () => {
            started.push(0)
            await ticks(1)
            throw hard
          },
          () => {
            started.push(1)
            return slow.promise
          },
          () => {
            started.push(2)
            return 'queued'
          },
          () => {
            started.push(3)
            return 'queued'
          },
        ],
        { concurrency: 2 },
      )
      await drain()
      // The hard error was observed, the slow branch is still running: nothing settled yet.
      expect(events.some((event) => event.type === 'group_end')).toBe(false)
      slow.resolve('late')
      return group
    })
    expect(started).toEqual([0, 1])
    expect((result as PromiseRejectedResult).reason).toBe(hard)
    expect(endOf(events, '1')).toMatchObject({ completed: 1, failed: 1, notDispatched: 2, outcome: 'hard-stopped' })
  })

  it('a hard error thrown in a nested group stops queued siblings in the outer group; the outer group rejects with that same object after the started ones settle', async () => {
    const hard = new WorkflowRunDeadlineError({ deadlineMs: 50, elapsedMs: 51 })
    const outerSlow = deferred<string>()
    const innerSlow = deferred<string>()
    const started: string[] = []
    const { result, events } = await inRecordedScope(async (events) => {
      const outer = parallel(
        [
          () =>
            parallel([
              async () => {
                started.push('inner-0')
                await ticks(1)
                throw hard
              },
              () => {
                started.push('inner-1')
                return innerSlow.promise
              },
              () => {
                started.push('inner-2')
                return 'never'
              },
            ], { concurrency: 2 }),
          () => {
            started.push('outer-1')
            return outerSlow.promise
          },
          () => {
            started.push('outer-2')
            return 'queued'
          },
        ],
        { concurrency: 2 },
      )
      await drain()
      expect(events.filter((event) => event.type === 'group_end')).toEqual([])
      innerSlow.resolve('inner done')
      await drain()
      // The inner group settled; the outer still waits for its started branch.
      expect(endOf(events, '1[0].1')).toMatchObject({ outcome: 'hard-stopped', completed: 1, failed: 1, notDispatched: 1 })
      expect(endOf(events, '1')).toBeUndefined()
      outerSlow.resolve('outer done')
      return outer
    })
    // The nested group dispatches synchronously inside outer branch 0.
    expect(started).toEqual(['inner-0', 'inner-1', 'outer-1'])
    expect((result as PromiseRejectedResult).reason).toBe(hard)
    expect(endOf(events, '1')).toMatchObject({ outcome: 'hard-stopped', completed: 1, failed: 1, notDispatched: 1 })
  })

  it('a branch already running when the latch is set does not get its next pipeline stage', async () => {
    const hard = new WorkflowInvocationCapError({ limit: 2, attempted: 3 })
    const gate = deferred<number>()
    const stageRuns: string[] = []
    const { result, events } = await inRecordedScope(async () => {
      const group = pipeline(
        [0, 1, 2],
        [
          async (item: number) => {
            stageRuns.push(`0:${item}`)
            if (item === 0) {
              await ticks(1)
              throw hard
            }
            return gate.promise
          },
          (item: number) => {
            stageRuns.push(`1:${item}`)
            return item
          },
        ],
        { concurrency: 2 },
      )
      await drain()
      gate.resolve(1)
      return group
    })
    expect(stageRuns).toEqual(['0:0', '0:1'])
    expect((result as PromiseRejectedResult).reason).toBe(hard)
    // Item 1 started but its next stage was never dispatched; item 2 never started.
    expect(endOf(events, '1')).toMatchObject({ completed: 0, failed: 1, notDispatched: 2, outcome: 'hard-stopped' })
  })

  it('a latch set by the runtime (scope.latchHardStop) stops later groups before they dispatch anything', async () => {
    const hard = new WorkflowInvocationCapError({ limit: 0, attempted: 1 })
    let ran = false
    const { result, events } = await inRecordedScope(async () => {
      const { currentScope } = await import('./slot-context.js')
      currentScope().latchHardStop(hard)
      return parallel([
        () => {
          ran = true
        },
      ])
    })
    expect(ran).toBe(false)
    expect((result as PromiseRejectedResult).reason).toBe(hard)
    expect(events).toEqual([
      { type: 'group_start', groupId: '1', groupKind: 'parallel', total: 1 },
      { type: 'group_end', groupId: '1', groupKind: 'parallel', total: 1, completed: 0, failed: 0, notDispatched: 1, outcome: 'hard-stopped' },
    ])
  })

  it('the first latched hard error wins: later groups reject with that same object', async () => {
    const first = new WorkflowInvocationCapError({ limit: 1, attempted: 2 })
    const second = new WorkflowRunDeadlineError({ deadlineMs: 1, elapsedMs: 2 })
    const scope = createRunScope()
    const reasons = await runInScope(scope, async () => [
      await rejectionOf(parallel([() => Promise.reject(first), () => Promise.reject(second)])),
      await rejectionOf(parallel([() => 'later'])),
    ])
    expect(reasons).toEqual([first, first])
    expect(scope.hardStop).toBe(first)
    expect(scope.stopCause).toBe('hard-stop')
  })

  it('outside any run, a hard stop in one top-level group tree does not poison the next', async () => {
    const hard = new WorkflowInvocationCapError({ limit: 1, attempted: 2 })
    expect(await rejectionOf(parallel([() => Promise.reject(hard)]))).toBe(hard)
    await expect(parallel([() => 'fresh'])).resolves.toEqual(['fresh'])
  })

  it('an ordinary failure elsewhere does not latch anything', async () => {
    const scope = createRunScope()
    await runInScope(scope, () => rejectionOf(parallel([() => Promise.reject(new Error('plain'))])))
    expect(scope.hardStop).toBeUndefined()
    expect(scope.stopCause).toBeUndefined()
  })
})

describe('isHardStopError', () => {
  it('recognises both hard errors, also from another installed copy (by code)', () => {
    expect(isHardStopError(new WorkflowInvocationCapError({ limit: 1, attempted: 2 }))).toBe(true)
    expect(isHardStopError(new WorkflowRunDeadlineError({ deadlineMs: 1, elapsedMs: 2 }))).toBe(true)
    expect(isHardStopError(new LocusError('copy', { code: 'WORKFLOW_RUN_DEADLINE' }))).toBe(true)
    expect(isHardStopError(new LocusError('other', { code: 'WORKFLOW_GROUP_FAILURE' }))).toBe(false)
    expect(isHardStopError({ code: 'WORKFLOW_INVOCATION_CAP' })).toBe(false)
    expect(isHardStopError(undefined)).toBe(false)
  })

  it('hard errors name what was hit and how to change it', () => {
    const cap = new WorkflowInvocationCapError({ limit: 20, attempted: 21 })
    expect(cap.code).toBe('WORKFLOW_INVOCATION_CAP')
    expect(cap.message).toContain('maxTotalAgentInvocations = 20')
    expect(cap.message).toContain('raise maxTotalAgentInvocations')
    expect([cap.limit, cap.attempted]).toEqual([20, 21])
    const deadline = new WorkflowRunDeadlineError({ deadlineMs: 60_000, elapsedMs: 60_012 })
    expect(deadline.code).toBe('WORKFLOW_RUN_DEADLINE')
    expect(deadline.message).toContain('60012 ms elapsed of the 60000 ms allowed')
    expect(WorkflowRunDeadlineError.isInstance(deadline)).toBe(true)
    expect(WorkflowInvocationCapError.isInstance(deadline)).toBe(false)
  })
})
