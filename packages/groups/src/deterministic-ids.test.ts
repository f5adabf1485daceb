import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ticks } from '../test/support.js'
import { parallel } from './parallel.js'
import { pipeline } from './pipeline.js'
import { createRunScope } from './run-scope.js'
import { allocateChildId, currentSlot, runInScope } from './slot-context.js'

describe('deterministic ids: "derived from the tree of groups: the parent group, the slot index, and the order of creation within that slot"', () => {
  it('numbers the root slot\'s children 1, 2, ... and slots as G[i]', async () => {
    const ids = await runInScope(createRunScope(), async () => {
      const first = allocateChildId()
      const inGroup = await parallel([() => allocateChildId(), () => [allocateChildId(), allocateChildId()]])
      const third = allocateChildId()
      return { first, inGroup, third }
    })
    expect(ids).toEqual({ first: '1', inGroup: ['2[0].1', ['2[1].1', '2[1].2']], third: '3' })
  })

  it('gives nested groups ids like 2[3].1 and 2[3].1[0].2', async () => {
    const groupIds = await runInScope(createRunScope(), async () => {
      allocateChildId()
      const [, , , nested] = await parallel([
        () => null,
        () => null,
        () => null,
        () =>
          parallel([
            async () => {
              allocateChildId()
              return parallel([() => currentSlot()?.groupId])
            },
          ]),
      ])
      return nested
    })
    expect(groupIds).toEqual([['2[3].1[0].2']])
  })

  it('shares one slot across the stages of a pipeline item', async () => {
    const ids = await runInScope(createRunScope(), () =>
      pipeline(['a', 'b'], [() => allocateChildId(), (first: string) => [first, allocateChildId()]]),
    )
    expect(ids).toEqual([
      ['1[0].1', '1[0].2'],
      ['1[1].1', '1[1].2'],
    ])
  })

  it('each run scope starts its own numbering', async () => {
    const first = runInScope(createRunScope(), () => allocateChildId())
    const second = runInScope(createRunScope(), () => allocateChildId())
    expect([first, second]).toEqual(['1', '1'])
  })

  it('"A run replayed with different latencies gets the same ids" (property)', async () => {
    // A fixed tree shape; each run draws different delays for every branch.
    const shape = fc.array(fc.array(fc.nat(2), { maxLength: 3 }), { minLength: 1, maxLength: 4 })
    await fc.assert(
      fc.asyncProperty(shape, fc.infiniteStream(fc.nat(8)), fc.infiniteStream(fc.nat(8)), async (tree, delaysA, delaysB) => {
        const run = async (delays: IterableIterator<number>): Promise<string[]> => {
          const seen: string[] = []
          const next = (): number => delays.next().value as number
          await runInScope(createRunScope(), () =>
            parallel(
              tree.map((children, outer) => async () => {
                await ticks(next())
                seen.push(`call ${outer}: ${allocateChildId()}`)
                await parallel(
                  children.map((calls, inner) => async () => {
                    await ticks(next())
                    for (let call = 0; call < calls; call += 1) {
                      seen.push(`call ${outer}.${inner}.${call}: ${allocateChildId()}`)
                      await ticks(next())
                    }
                  }),
                )
              }),
            ),
          )
          return seen.sort()
        }
        expect(await run(delaysA)).toEqual(await run(delaysB))
      }),
      { numRuns: 60 },
    )
  })
})

describe('allocateChildId outside any run', () => {
  it('still allocates ids, from an implicit root that never repeats one', async () => {
    const first = allocateChildId()
    const second = allocateChildId()
    expect(Number(second)).toBe(Number(first) + 1)
    const [inside] = await parallel([() => allocateChildId()])
    expect(inside).toMatch(/^\d+\[0\]\.1$/)
  })
})
