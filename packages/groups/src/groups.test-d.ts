import { describe, expectTypeOf, it } from 'vitest'
import type { GroupSlot } from './group-failure-error.js'
import { parallel } from './parallel.js'
import { type PipelineStage, pipeline } from './pipeline.js'

describe('parallel() types', () => {
  it('types a tuple of thunks position by position', () => {
    const result = parallel([() => 1, async () => 'text', () => null])
    expectTypeOf(result).toEqualTypeOf<Promise<[number, string, null]>>()
  })

  it('types an array of thunks as an array of their awaited values', () => {
    const thunks: (() => Promise<number>)[] = []
    expectTypeOf(parallel(thunks)).toEqualTypeOf<Promise<number[]>>()
  })

  it('accepts the generic shape the runtime wraps it with', () => {
    function wrapped<T>(thunks: ReadonlyArray<() => T | Promise<T>>): Promise<Awaited<T>[]> {
      return parallel(thunks)
    }
    expectTypeOf(wrapped([() => 1])).toEqualTypeOf<Promise<number[]>>()
  })

  it('drops union members that are always a returned failure', () => {
    const thunk = (): Promise<{ id: string } | { ok: false; why: string } | { status: 'blocked' }> => Promise.resolve({ id: 'a' })
    expectTypeOf(parallel([thunk])).toEqualTypeOf<Promise<[{ id: string }]>>()
    const undecided = (): { ok: boolean } => ({ ok: true })
    expectTypeOf(parallel([undecided])).toEqualTypeOf<Promise<[{ ok: boolean }]>>()
  })

  it('rejects something that is not a thunk', () => {
    // @ts-expect-error a promise is not a thunk
    void parallel([Promise.resolve(1)])
  })
})

describe('pipeline() types', () => {
  it('chains stage types from the item type without annotations', () => {
    const result = pipeline(
      [1, 2],
      [
        (value) => {
          expectTypeOf(value).toEqualTypeOf<number>()
          return String(value)
        },
        async (value, context) => {
          expectTypeOf(value).toEqualTypeOf<string>()
          expectTypeOf(context.item).toEqualTypeOf<number>()
          return value.length
        },
      ],
    )
    expectTypeOf(result).toEqualTypeOf<Promise<number[]>>()
  })

  it('does not pass a failure-shaped member on to the next stage', () => {
    const result = pipeline(
      ['T-1'],
      [
        (id) => (id === 'T-2' ? { status: 'blocked' as const } : { id }),
        (ticket) => {
          // With the blocked member still there, id would be string | undefined.
          expectTypeOf(ticket.id).toEqualTypeOf<string>()
          return ticket.id
        },
      ],
    )
    expectTypeOf(result).toEqualTypeOf<Promise<string[]>>()
  })

  it('falls back to unknown[] for a stage list built at run time', () => {
    const stages: PipelineStage[] = []
    expectTypeOf(pipeline(['a'], stages)).toEqualTypeOf<Promise<unknown[]>>()
  })
})

describe('GroupSlot', () => {
  it('narrows on status; only failed slots have a failure', () => {
    const slot = {} as GroupSlot
    if (slot.status === 'failed') expectTypeOf(slot.failure.kind).toEqualTypeOf<'thrown' | 'returned' | 'boundary'>()
    else expectTypeOf(slot).not.toHaveProperty('failure')
  })
})
