import { describe, expect, it } from 'vitest'
import { deferred, drain, inRecordedScope, rejectionOf, ticks } from '../test/support.js'
import { GroupInputError } from './group-input-error.js'
import { WorkflowGroupFailureError } from './group-failure-error.js'
import { pipeline } from './pipeline.js'

async function groupFailureOf(promise: Promise<unknown>): Promise<WorkflowGroupFailureError> {
  const error = await rejectionOf(promise)
  expect(WorkflowGroupFailureError.isInstance(error)).toBe(true)
  return error as WorkflowGroupFailureError
}

describe('pipeline(): "If every slot succeeds, both primitives preserve input order and return the same success arrays"', () => {
  it('chains stages per item and returns the last stage outputs in input order', async () => {
    const result = await pipeline(
      [3, 1, 2],
      [
        async (value: number) => {
          await ticks(value)
          return value * 10
        },
        (value: number, context) => `${context.index}:${String(context.item)}:${value}:${context.stageIndex}`,
      ],
    )
    expect(result).toEqual(['0:3:30:1', '1:1:10:1', '2:2:20:1'])
  })

  it('passes the item itself to stage 0 and raw outputs between stages', async () => {
    const item = { id: 'a', at: new Date(0) }
    const seen: unknown[] = []
    const [out] = await pipeline(
      [item],
      [
        (value: typeof item) => {
          seen.push(value)
          return value
        },
        (value: typeof item) => {
          seen.push(value)
          return value
        },
      ],
    )
    expect(seen).toEqual([item, item])
    expect(seen[1]).toBe(item)
    expect(out).toBe(item)
  })

  it('accepts a fulfilled null as a stage value', async () => {
    await expect(pipeline([1], [() => null, (value: null) => value])).resolves.toEqual([null])
  })
})

describe('pipeline(): "pipeline() stops later stages for that item while other items continue to the barrier"', () => {
  it('does not run later stages for a failed item; other items finish all stages', async () => {
    const calls: string[] = []
    const error = await groupFailureOf(
      pipeline(
        ['a', 'b', 'c'],
        [
          (item: string) => {
            calls.push(`0:${item}`)
            if (item === 'b') throw new Error('b broke')
            return item
          },
          async (item: string) => {
            await ticks(2)
            calls.push(`1:${item}`)
            return item.toUpperCase()
          },
        ],
      ),
    )
    expect(calls).not.toContain('1:b')
    expect(calls).toEqual(expect.arrayContaining(['0:a', '0:b', '0:c', '1:a', '1:c']))
    expect(error.partialResults).toEqual(['A', null, 'C'])
    expect(error.failures).toEqual([{ index: 1, kind: 'thrown', error: expect.any(Error), stageIndex: 0 }])
  })

  it('waits for slower items after an early failure before rejecting', async () => {
    const slow = deferred<string>()
    let settled = false
    const group = pipeline(['fail', 'slow'], [(item: string) => (item === 'fail' ? { ok: false } : slow.promise)]).catch(
      (error: unknown) => {
        settled = true
        return error
      },
    )
    await drain()
    expect(settled).toBe(false)
    slow.resolve('done')
    expect(((await group) as WorkflowGroupFailureError).partialResults).toEqual([{ ok: false }, 'done'])
  })
})

describe('pipeline(): "A pipeline failure also carries stageIndex; a returned failure may carry its status"', () => {
  it('fails a { status: "blocked" } stage value at its stageIndex and keeps the status', async () => {
    const error = await groupFailureOf(
      pipeline(
        [1, 2],
        [(value: number) => value, (value: number) => (value === 2 ? { status: 'blocked', summary: 'Owner decision required' } : value), (value: number) => value],
      ),
    )
    expect(error.groupKind).toBe('pipeline')
    expect(error.stageIndex).toBe(1)
    expect(error.failures).toEqual([{ index: 1, kind: 'returned', reasons: ['status'], status: 'blocked', stageIndex: 1 }])
    expect(error.slots[1]).toMatchObject({ status: 'failed', value: { status: 'blocked', summary: 'Owner decision required' } })
  })

  it('puts the stage of the first failed item in input order on the error and on group_end', async () => {
    const { result, events } = await inRecordedScope(() =>
      pipeline(
        [0, 1, 2],
        [
          (index: number) => (index === 2 ? Promise.reject(new Error('stage 0')) : index),
          (index: number) => (index === 1 ? { partial: true } : index),
        ],
      ),
    )
    const error = (result as PromiseRejectedResult).reason as WorkflowGroupFailureError
    expect(error.failures.map((failure) => [failure.index, failure.stageIndex])).toEqual([
      [1, 1],
      [2, 0],
    ])
    expect(error.stageIndex).toBe(1)
    expect(events.at(-1)).toMatchObject({ type: 'group_end', outcome: 'failed', stageIndex: 1, completed: 1, failed: 2 })
  })

  it('judges every stage value, not only the last: a BigInt at stage 0 is a boundary failure there', async () => {
    let laterRan = false
    const error = await groupFailureOf(
      pipeline(
        [1],
        [
          () => ({ amount: 5n }),
          () => {
            laterRan = true
            return 1
          },
        ],
      ),
    )
    expect(error.failures[0]).toMatchObject({ kind: 'boundary', stageIndex: 0 })
    expect(laterRan).toBe(false)
  })
})

describe('pipeline(): "A concurrency option (queues branches and pipeline items)"', () => {
  it('holds one concurrency slot per item across all its stages', async () => {
    let active = 0
    let peak = 0
    const enter = async (value: number): Promise<number> => {
      active += 1
      peak = Math.max(peak, active)
      await ticks(3)
      active -= 1
      return value
    }
    const items = [1, 2, 3, 4, 5]
    await expect(pipeline(items, [enter, enter], { concurrency: 2 })).resolves.toEqual(items)
    expect(peak).toBe(2)
  })

  it('starts queued items in input order', async () => {
    const started: number[] = []
    await pipeline(
      [0, 1, 2, 3],
      [
        async (value: number) => {
          started.push(value)
          await ticks(4 - value)
          return value
        },
      ],
      { concurrency: 1 },
    )
    expect(started).toEqual([0, 1, 2, 3])
  })
})

describe('pipeline(): bad input is a typed error before anything runs', () => {
  const one = (): number => 1
  it.each<[string, unknown, unknown, string]>([
    ['items not an array', 'x', [one], 'pipeline items'],
    ['stages not an array', [1], 'x', 'pipeline stages'],
    ['a stage that is not a function', [1], [one, 2], 'pipeline stages[1]'],
    ['no stages', [1], [], 'pipeline stages'],
  ])('rejects %s', async (_label, items, stages, field) => {
    const error = await rejectionOf(pipeline(items as never, stages as never))
    expect(GroupInputError.isInstance(error)).toBe(true)
    expect((error as GroupInputError).field).toBe(field)
  })
})
