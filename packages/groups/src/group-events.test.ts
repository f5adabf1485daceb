import { describe, expect, it } from 'vitest'
import { deferred, drain, inRecordedScope, rejectionOf, ticks } from '../test/support.js'
import { GroupObserverError } from './group-observer-error.js'
import { parallel } from './parallel.js'
import { pipeline } from './pipeline.js'
import { createRunScope } from './run-scope.js'
import { runInScope, withSlotLabels } from './slot-context.js'

describe('events: group_start and group_end to the run scope observer', () => {
  it('emits group_start before any branch runs, and group_end with the outcome after', async () => {
    const log: string[] = []
    const scope = createRunScope({ observer: (event) => log.push(event.type), concurrency: 3 })
    await runInScope(scope, () =>
      parallel([
        () => {
          log.push('branch')
        },
      ]),
    )
    expect(log).toEqual(['group_start', 'branch', 'group_end'])
  })

  it('names the parent group, label, phase and a bounded concurrency on group_start', async () => {
    const { events } = await inRecordedScope(() =>
      withSlotLabels({ phase: 'research' }, () =>
        parallel([() => pipeline([1], [(value: number) => value], { label: 'inner', concurrency: 2 })], { label: 'outer' }),
      ),
    )
    expect(events).toEqual([
      { type: 'group_start', groupId: '1', groupKind: 'parallel', total: 1, label: 'outer', phase: 'research' },
      { type: 'group_start', groupId: '1[0].1', groupKind: 'pipeline', total: 1, parentGroupId: '1', label: 'inner', phase: 'research', concurrency: 2 },
      { type: 'group_end', groupId: '1[0].1', groupKind: 'pipeline', total: 1, completed: 1, failed: 0, notDispatched: 0, outcome: 'completed', label: 'inner', phase: 'research' },
      { type: 'group_end', groupId: '1', groupKind: 'parallel', total: 1, completed: 1, failed: 0, notDispatched: 0, outcome: 'completed', label: 'outer', phase: 'research' },
    ])
  })

  it('"The failed group_end line records the actual completed/failed counts"', async () => {
    const { events } = await inRecordedScope(() => parallel([() => 1, () => ({ ok: false }), () => Promise.reject(new Error('x')), () => null]))
    expect(events.at(-1)).toMatchObject({ type: 'group_end', completed: 2, failed: 2, notDispatched: 0, outcome: 'failed' })
  })

  it('"Every started branch still settles before group_end": group_end never precedes the settling of a started branch', async () => {
    const log: string[] = []
    const slow = deferred<string>()
    const scope = createRunScope({ observer: (event) => log.push(event.type) })
    const group = runInScope(scope, () =>
      parallel([
        async () => {
          await ticks(1)
          log.push('fast failed')
          throw new Error('fast')
        },
        async () => {
          const value = await slow.promise
          log.push('slow settled')
          return value
        },
      ]),
    )
    await drain()
    expect(log).toEqual(['group_start', 'fast failed'])
    slow.resolve('late')
    await rejectionOf(group)
    expect(log).toEqual(['group_start', 'fast failed', 'slow settled', 'group_end'])
  })

  it('emits group_end before the group promise settles', async () => {
    const log: string[] = []
    const scope = createRunScope({ observer: (event) => log.push(event.type) })
    await runInScope(scope, () => parallel([async () => 1]).then(() => log.push('resolved')))
    expect(log).toEqual(['group_start', 'group_end', 'resolved'])
  })

  it('an observer that throws on group_start fails the group before anything runs', async () => {
    const broken = new Error('journal disk full')
    let ran = false
    const scope = createRunScope({
      observer: () => {
        throw broken
      },
    })
    const error = await runInScope(scope, () =>
      rejectionOf(
        parallel([
          () => {
            ran = true
          },
        ]),
      ),
    )
    expect(ran).toBe(false)
    expect(GroupObserverError.isInstance(error)).toBe(true)
    expect((error as GroupObserverError).cause).toBe(broken)
    expect((error as GroupObserverError).eventType).toBe('group_start')
  })

  it('an observer that throws on group_end fails an otherwise successful group after its barrier', async () => {
    const scope = createRunScope({
      observer: (event) => {
        if (event.type === 'group_end') throw new Error('lost line')
      },
    })
    const error = await runInScope(scope, () => rejectionOf(parallel([() => 1])))
    expect((error as GroupObserverError).code).toBe('GROUP_OBSERVER_FAILED')
    expect((error as GroupObserverError).eventType).toBe('group_end')
    expect((error as GroupObserverError).message).toContain('group_end of group 1')
  })
})
