import { WorkflowResultPreparationError } from '@locus/outcome'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { deferred, drain, rejectionOf, ticks } from '../test/support.js'
import { GroupInputError } from './group-input-error.js'
import { WorkflowGroupFailureError } from './group-failure-error.js'
import { parallel } from './parallel.js'

async function groupFailureOf(promise: Promise<unknown>): Promise<WorkflowGroupFailureError> {
  const error = await rejectionOf(promise)
  expect(WorkflowGroupFailureError.isInstance(error)).toBe(true)
  return error as WorkflowGroupFailureError
}

describe('parallel(): "If every slot succeeds, both primitives preserve input order and return the same success arrays"', () => {
  it('returns values in input order, not completion order', async () => {
    const result = await parallel([
      async () => {
        await ticks(5)
        return 'slow'
      },
      () => 'sync',
      async () => {
        await ticks(1)
        return 'fast'
      },
    ])
    expect(result).toEqual(['slow', 'sync', 'fast'])
  })

  it('returns the raw values the thunks returned, not detached copies', async () => {
    const when = new Date(0)
    const record = { at: when, skip: undefined }
    const [first, second] = await parallel([() => record, async () => when])
    expect(first).toBe(record)
    expect(second).toBe(when)
  })

  it('resolves an empty group to an empty array', async () => {
    await expect(parallel([])).resolves.toEqual([])
  })

  it('keeps input order over random delays and concurrency (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.nat(6), { maxLength: 12 }),
        fc.oneof(fc.constant(Number.POSITIVE_INFINITY), fc.integer({ min: 1, max: 4 })),
        async (delays, concurrency) => {
          const result = await parallel(
            delays.map((delay, index) => async () => {
              await ticks(delay)
              return index
            }),
            { concurrency },
          )
          expect(result).toEqual(delays.map((_delay, index) => index))
        },
      ),
    )
  })
})

describe('parallel(): "an explicitly fulfilled null is a valid value"', () => {
  it('succeeds with null (sync and async) and with undefined', async () => {
    await expect(parallel([() => null, async () => null, () => undefined])).resolves.toEqual([null, null, undefined])
  })

  it('reports a fulfilled null as { index, status: "completed", value: null } in a failed group', async () => {
    const error = await groupFailureOf(parallel([async () => null, () => Promise.reject(new Error('down'))]))
    expect(error.slots[0]).toEqual({ index: 0, status: 'completed', value: null })
    expect(error.partialResults[0]).toBeNull()
    expect(error.completed).toBe(1)
  })
})

describe('parallel(): "An ordinary branch ... fails when it throws"', () => {
  it('fails a branch that throws synchronously, rejects asynchronously, or rejects with a non-error', async () => {
    const thrown = new Error('sync boom')
    const error = await groupFailureOf(
      parallel([
        () => {
          throw thrown
        },
        () => Promise.reject(new Error('async boom')),
        () => Promise.reject('a string'),
        () => 'fine',
      ]),
    )
    expect(error.failures.map((failure) => [failure.index, failure.kind])).toEqual([
      [0, 'thrown'],
      [1, 'thrown'],
      [2, 'thrown'],
    ])
    expect(error.failures[0]?.error).toBe(thrown)
    expect(error.failures[2]?.error).toBe('a string')
  })

  it('fails a branch whose thenable rejects', async () => {
    const thenable = {
      then: (_resolve: unknown, reject: (reason: unknown) => void) => {
        reject(new Error('thenable'))
      },
    }
    const error = await groupFailureOf(parallel([() => thenable]))
    expect(error.failures[0]?.kind).toBe('thrown')
  })
})

describe('parallel(): "when its direct return value cannot cross the JSON preparation boundary" (fails closed as a typed boundary error)', () => {
  it('fails a BigInt branch value as a boundary error, not a semantic kind', async () => {
    const value = { total: 23_100n }
    const error = await groupFailureOf(parallel([() => value, () => 1]))
    const failure = error.failures[0]
    expect(failure?.kind).toBe('boundary')
    expect(WorkflowResultPreparationError.isInstance(failure?.error)).toBe(true)
    expect((failure?.error as WorkflowResultPreparationError).reason).toBe('bigint')
    expect(failure).not.toHaveProperty('reasons')
    expect(failure).not.toHaveProperty('status')
    // The raw value stays on the slot as evidence; the convenience view shows null so it always detaches.
    expect(error.slots[0]).toMatchObject({ status: 'failed', value })
    expect(error.partialResults[0]).toBeNull()
  })

  it('fails a bare BigInt, a circular value and a throwing toJSON', async () => {
    const circular: Record<string, unknown> = {}
    circular.self = circular
    const error = await groupFailureOf(
      parallel([
        () => 7n,
        () => circular,
        () => ({
          toJSON() {
            throw new Error('no')
          },
        }),
      ]),
    )
    expect(error.failures.map((failure) => (failure.error as WorkflowResultPreparationError).reason)).toEqual([
      'bigint',
      'circular',
      'to-json-threw',
    ])
  })
})

describe('parallel(): "or when the successfully detached value matches the shared returned-outcome contract"', () => {
  it('rejects the group for a { partial: true } branch value', async () => {
    const error = await groupFailureOf(parallel([() => ({ partial: true }), () => ({ ok: true })]))
    expect(error.failures).toEqual([{ index: 0, kind: 'returned', reasons: ['partial'] }])
  })

  it('rejects for ok:false and for each failure status, keeping the status', async () => {
    const error = await groupFailureOf(
      parallel([
        () => ({ ok: false }),
        () => ({ status: 'failed' }),
        () => ({ status: 'blocked', summary: 'Owner decision required' }),
        async () => ({ status: 'cancelled' }),
      ]),
    )
    expect(error.failures.map((failure) => failure.status)).toEqual([undefined, 'failed', 'blocked', 'cancelled'])
    expect(error.failures[0]?.reasons).toEqual(['ok-false'])
  })

  it('classifies the detached value: a toJSON that returns a failure record fails the branch', async () => {
    const error = await groupFailureOf(parallel([() => ({ toJSON: () => ({ ok: false }) })]))
    expect(error.failures[0]?.reasons).toEqual(['ok-false'])
  })

  it('keeps legacy success for missing fields, non-boolean ok/partial, other statuses, and nested failures', async () => {
    const values = [{ summary: 'x' }, { ok: 'false' }, { partial: 1 }, { status: 'error' }, { items: [{ ok: false }] }, [{ ok: false }]]
    await expect(parallel(values.map((value) => () => value))).resolves.toEqual(values)
  })
})

describe('parallel(): "They let already scheduled independent siblings settle before reporting the group outcome" and "Ordinary branch failures keep their existing full-barrier behavior, including queued independent siblings"', () => {
  it('waits for a slow started sibling after an early failure', async () => {
    const slow = deferred<string>()
    let settledGroup = false
    const group = parallel([() => Promise.reject(new Error('early')), () => slow.promise]).catch((error: unknown) => {
      settledGroup = true
      return error
    })
    await drain()
    expect(settledGroup).toBe(false)
    slow.resolve('late')
    const error = (await group) as WorkflowGroupFailureError
    expect(error.slots[1]).toEqual({ index: 1, status: 'completed', value: 'late' })
  })

  it('still runs queued siblings after a failure (concurrency 1)', async () => {
    const ran: number[] = []
    const error = await groupFailureOf(
      parallel(
        [0, 1, 2, 3].map((index) => async () => {
          ran.push(index)
          await ticks(1)
          if (index === 0) throw new Error('first fails')
          return index
        }),
        { concurrency: 1 },
      ),
    )
    expect(ran).toEqual([0, 1, 2, 3])
    expect(error.completed).toBe(3)
    expect(error.partialResults).toEqual([null, 1, 2, 3])
  })
})

describe('parallel(): "rejects one WorkflowGroupFailureError with stable code, groupKind, groupId, total/completed/failed, ordered slots, ordered partialResults, and indexed failures"', () => {
  it('carries every field in input order', async () => {
    const returned = { ok: false, why: 'no data' }
    const error = await groupFailureOf(
      parallel([
        () => 'a',
        () => {
          throw new Error('b')
        },
        () => returned,
        () => null,
      ]),
    )
    expect(error.code).toBe('WORKFLOW_GROUP_FAILURE')
    expect(error.name).toBe('WorkflowGroupFailureError')
    expect(error.groupKind).toBe('parallel')
    expect(typeof error.groupId).toBe('string')
    expect(error.stageIndex).toBeUndefined()
    expect([error.total, error.completed, error.failed]).toEqual([4, 2, 2])
    expect(error.slots.map((slot) => [slot.index, slot.status])).toEqual([
      [0, 'completed'],
      [1, 'failed'],
      [2, 'failed'],
      [3, 'completed'],
    ])
    expect(error.failures.map((failure) => failure.index)).toEqual([1, 2])
    expect(error.partialResults).toEqual(['a', null, returned, null])
  })

  it('shows a thrown position as { index, status: "failed", failure } with no value', async () => {
    const error = await groupFailureOf(parallel([() => Promise.reject(new Error('x'))]))
    expect(error.slots[0]).not.toHaveProperty('value')
    expect(Object.keys(error.slots[0] ?? {}).sort()).toEqual(['failure', 'index', 'status'])
  })

  it('keeps the original raw returned failure as evidence, in slots and partialResults', async () => {
    const raw = { status: 'blocked', at: new Date(0), note: undefined }
    const error = await groupFailureOf(parallel([() => raw]))
    expect(error.slots[0]).toEqual({ index: 0, status: 'failed', failure: error.failures[0], value: raw })
    expect((error.slots[0] as { value: unknown }).value).toBe(raw)
    expect(error.partialResults[0]).toBe(raw)
  })

  it('names the group, the counts and the way out in its message', async () => {
    const error = await groupFailureOf(parallel([() => ({ status: 'blocked' })]))
    expect(error.message).toContain(`group ${error.groupId} failed: 1 of 1`)
    expect(error.message).toContain('status "blocked"')
    expect(error.message).toContain('WORKFLOW_GROUP_FAILURE')
  })

  it('keeps the first thrown error as cause', async () => {
    const first = new Error('first')
    const error = await groupFailureOf(parallel([() => ({ ok: false }), () => Promise.reject(first)]))
    expect(error.cause).toBe(first)
  })
})

describe('parallel(): bad input is a typed error before anything runs', () => {
  it.each([
    ['a non-array', 'nope', 'parallel thunks'],
    ['a promise instead of a thunk', [Promise.resolve(1)], 'parallel thunks[0]'],
  ])('rejects %s naming the field', async (_label, thunks, field) => {
    const error = await rejectionOf(parallel(thunks as never))
    expect(GroupInputError.isInstance(error)).toBe(true)
    expect((error as GroupInputError).field).toBe(field)
  })

  it.each([0, -1, 1.5, Number.NaN, '4'])('rejects concurrency %s', async (concurrency) => {
    let ran = false
    const error = await rejectionOf(
      parallel(
        [
          () => {
            ran = true
          },
        ],
        { concurrency: concurrency as number },
      ),
    )
    expect((error as GroupInputError).field).toBe('parallel options.concurrency')
    expect((error as Error).message).toContain('positive integer')
    expect(ran).toBe(false)
  })

  it('rejects a non-string label', async () => {
    const error = await rejectionOf(parallel([], { label: 3 as unknown as string }))
    expect((error as GroupInputError).field).toBe('parallel options.label')
  })
})
