// Properties over random trees of nested groups with random delays (counted
// in microtask turns, never timers), outcomes and concurrency.
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ticks } from '../test/support.js'
import type { GroupEndEvent, GroupEvent } from './group-event.js'
import { WorkflowGroupFailureError } from './group-failure-error.js'
import { WorkflowInvocationCapError } from './invocation-cap-error.js'
import { parallel } from './parallel.js'
import { pipeline } from './pipeline.js'
import { createRunScope } from './run-scope.js'
import { currentSlot, runInScope } from './slot-context.js'

type Action = 'value' | 'null' | 'returned-failure' | 'throw' | 'bigint' | 'hard' | 'abort' | GroupSpec
interface Step {
  readonly before: number
  readonly after: number
  readonly action: Action
}
interface GroupSpec {
  readonly kind: 'parallel' | 'pipeline'
  readonly concurrency: number
  /** parallel: one step per branch; pipeline: one list of stage steps per item. */
  readonly positions: readonly (readonly Step[])[]
}

const leaf = fc.constantFrom<Action>('value', 'value', 'value', 'null', 'returned-failure', 'throw', 'bigint', 'hard', 'abort')
const { group } = fc.letrec<{ group: GroupSpec; step: Step }>((tie) => ({
  step: fc.record({
    before: fc.nat(4),
    after: fc.nat(3),
    action: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, tie('group')),
  }),
  group: fc.record({
    kind: fc.constantFrom<GroupSpec['kind'][]>('parallel', 'pipeline'),
    concurrency: fc.constantFrom(1, 2, 3, Number.POSITIVE_INFINITY),
    positions: fc.array(fc.array(tie('step'), { minLength: 1, maxLength: 2 }), { maxLength: 4 }),
  }),
}))

interface Probe {
  lastStarted: string
  readonly started: Map<string, number>
  readonly settled: Map<string, number>
  readonly problems: string[]
  readonly controller: AbortController
}

const count = (map: Map<string, number>, key: string): void => {
  map.set(key, (map.get(key) ?? 0) + 1)
}

async function perform(step: Step, probe: Probe, hard: Error): Promise<unknown> {
  const groupId = currentSlot()?.groupId ?? 'root'
  count(probe.started, groupId)
  try {
    await ticks(step.before)
    let value: unknown
    switch (step.action) {
      case 'value':
        value = { ok: true, n: step.before }
        break
      case 'null':
        value = null
        break
      case 'returned-failure':
        value = { status: 'blocked' }
        break
      case 'throw':
        throw new Error('branch failed')
      case 'bigint':
        value = { amount: 1n }
        break
      case 'hard':
        throw hard
      case 'abort':
        probe.controller.abort()
        value = 'aborted the run'
        break
      default:
        value = await runGroup(step.action, probe, hard)
    }
    await ticks(step.after)
    return value
  } finally {
    count(probe.settled, groupId)
  }
}

async function runGroup(spec: GroupSpec, probe: Probe, hard: Error): Promise<unknown> {
  const options = { concurrency: spec.concurrency }
  const promise =
    spec.kind === 'parallel'
      ? parallel(spec.positions.map((steps) => () => perform(steps[0] as Step, probe, hard)), options)
      : pipeline(
          spec.positions.map((_steps, index) => index),
          [0, 1].map((stageIndex) => (value: unknown, context: { index: number }) => {
            const step = spec.positions[context.index]?.[stageIndex]
            return step === undefined ? value : perform(step, probe, hard)
          }),
          options,
        )
  // group_start is emitted synchronously by the call above.
  const groupId = probe.lastStarted
  const checkSettled = (): void => {
    const running = (probe.started.get(groupId) ?? 0) - (probe.settled.get(groupId) ?? 0)
    if (running !== 0) probe.problems.push(`group ${groupId} settled with ${running} branch(es) still running`)
  }
  try {
    const value = await promise
    checkSettled()
    return value
  } catch (error) {
    checkSettled()
    if (WorkflowGroupFailureError.isInstance(error)) {
      error.slots.forEach((slot, index) => {
        if (slot.index !== index) probe.problems.push(`slot ${index} of ${error.groupId} has index ${slot.index}`)
      })
      if (error.slots.length !== error.total) probe.problems.push(`${error.groupId}: ${error.slots.length} slots for total ${error.total}`)
    }
    throw error
  }
}

describe('group trees (property): counts add up, slots stay in input order, no started branch outlives its group', () => {
  it('holds over random nested trees, delays, outcomes and concurrency', async () => {
    await fc.assert(
      fc.asyncProperty(group, async (spec) => {
        const controller = new AbortController()
        const probe: Probe = { lastStarted: '', started: new Map(), settled: new Map(), problems: [], controller }
        const ends: GroupEndEvent[] = []
        const observer = (event: GroupEvent): void => {
          if (event.type === 'group_start') probe.lastStarted = event.groupId
          if (event.type !== 'group_end') return
          ends.push(event)
          const started = probe.started.get(event.groupId) ?? 0
          const settled = probe.settled.get(event.groupId) ?? 0
          if (started !== settled) probe.problems.push(`group_end of ${event.groupId} with ${started - settled} branch(es) still running`)
          if (event.completed + event.failed + event.notDispatched !== event.total) {
            probe.problems.push(`${event.groupId}: ${event.completed} + ${event.failed} + ${event.notDispatched} != ${event.total}`)
          }
          if (event.outcome === 'completed' && (event.failed !== 0 || event.notDispatched !== 0)) {
            probe.problems.push(`${event.groupId} completed with failures or undispatched positions`)
          }
          if (event.outcome === 'failed' && (event.failed === 0 || event.notDispatched !== 0)) {
            probe.problems.push(`${event.groupId} failed without failures, or with undispatched positions`)
          }
        }
        const hard = new WorkflowInvocationCapError({ limit: 1, attempted: 2 })
        const scope = createRunScope({ signal: controller.signal, observer })
        const [outcome] = await Promise.allSettled([runInScope(scope, () => runGroup(spec, probe, hard))])

        expect(probe.problems).toEqual([])
        // When the root group settled, every branch anywhere in the tree had settled.
        expect(Object.fromEntries(probe.settled)).toEqual(Object.fromEntries(probe.started))
        // A hard stop surfaces unwrapped unless the host cancelled first.
        if (outcome.status === 'rejected' && scope.stopCause === 'hard-stop') expect(outcome.reason).toBe(hard)
        if (scope.stopCause === undefined && outcome.status === 'rejected') {
          expect(WorkflowGroupFailureError.isInstance(outcome.reason)).toBe(true)
        }
        // One group_end per created group, root last.
        expect(ends.at(-1)?.groupId).toBe('1')
        expect(new Set(ends.map((end) => end.groupId)).size).toBe(ends.length)
      }),
      { numRuns: 300 },
    )
  })
})
