import { describe, expect, it } from 'vitest'
import { rejectionOf, ticks } from '../test/support.js'
import { GroupInputError } from './group-input-error.js'
import type { WorkflowGroupFailureError } from './group-failure-error.js'
import { parallel } from './parallel.js'
import { pipeline } from './pipeline.js'
import { createRunScope } from './run-scope.js'
import { currentScope, currentSlot, runInScope, withSlotLabels } from './slot-context.js'

describe('currentSlot(): the innermost running branch', () => {
  it('is undefined at the run root and outside any run', async () => {
    expect(currentSlot()).toBeUndefined()
    expect(runInScope(createRunScope(), () => currentSlot())).toBeUndefined()
  })

  it('knows its group, index and stage, also after awaits', async () => {
    const seen = await runInScope(createRunScope(), () =>
      pipeline(
        ['x', 'y'],
        [
          async () => {
            await ticks(2)
            return currentSlot()
          },
        ],
      ),
    )
    expect(seen).toEqual([
      { groupId: '1', groupKind: 'pipeline', index: 0, stageIndex: 0 },
      { groupId: '1', groupKind: 'pipeline', index: 1, stageIndex: 0 },
    ])
  })
})

describe('labels: "Their error journal records retain each branch\'s own phase, even after an await or inside nested groups"', () => {
  it('keeps each concurrent branch\'s own phase across interleaved awaits', async () => {
    const seen = await parallel(
      ['alpha', 'beta', 'gamma'].map((phase, index) => () =>
        withSlotLabels({ phase, label: `call-${index}` }, async () => {
          await ticks(3 - index)
          const afterAwait = currentSlot()
          await ticks(index)
          return [afterAwait?.phase, currentSlot()?.label]
        }),
      ),
    )
    expect(seen).toEqual([
      ['alpha', 'call-0'],
      ['beta', 'call-1'],
      ['gamma', 'call-2'],
    ])
  })

  it('failure records carry the failing branch\'s own phase and label, even when siblings set others', async () => {
    const error = (await rejectionOf(
      parallel(
        ['fetch', 'rank', 'write'].map((phase, index) => () =>
          withSlotLabels({ phase, label: `step-${index}` }, async () => {
            await ticks(3 - index)
            if (index !== 1) throw new Error(`${phase} failed`)
            return 'ok'
          }),
        ),
      ),
    )) as WorkflowGroupFailureError
    expect(error.failures.map((failure) => [failure.index, failure.phase, failure.label])).toEqual([
      [0, 'fetch', 'step-0'],
      [2, 'write', 'step-2'],
    ])
  })

  it('inside nested groups: inner branches inherit the outer branch\'s phase, set their own, and the outer record keeps the outer phase', async () => {
    const error = (await rejectionOf(
      parallel([
        () =>
          withSlotLabels({ phase: 'research', label: 'outer-0' }, async () => {
            const inherited = await parallel([() => currentSlot()?.phase])
            expect(inherited).toEqual(['research'])
            await parallel([
              () =>
                withSlotLabels({ phase: 'verify' }, async () => {
                  await ticks(1)
                  throw new Error('inner failed')
                }),
            ])
          }),
      ]),
    )) as WorkflowGroupFailureError
    expect(error.failures[0]).toMatchObject({ phase: 'research', label: 'outer-0' })
    const inner = error.failures[0]?.error as WorkflowGroupFailureError
    expect(inner.failures[0]).toMatchObject({ phase: 'verify', label: 'outer-0' })
  })

  it('group options label and phase are the default for its branches', async () => {
    const error = (await rejectionOf(parallel([() => ({ ok: false })], { label: 'sources', phase: 'gather' }))) as WorkflowGroupFailureError
    expect(error.failures[0]).toMatchObject({ label: 'sources', phase: 'gather' })
  })

  it('rejects labels that are not strings, naming the field', () => {
    expect(() => withSlotLabels({ phase: 1 as unknown as string }, () => 0)).toThrow(GroupInputError)
    try {
      withSlotLabels({ label: [] as unknown as string }, () => 0)
    } catch (error) {
      expect((error as GroupInputError).field).toBe('withSlotLabels labels.label')
    }
  })
})

describe('currentScope() and runInScope()', () => {
  it('returns the scope entered with runInScope, inside branches too', async () => {
    const scope = createRunScope({ concurrency: 3 })
    const [inside] = await runInScope(scope, () => parallel([async () => {
      await ticks(1)
      return currentScope()
    }]))
    expect(inside).toBe(scope)
    expect(scope.concurrency).toBe(3)
  })

  it('outside any run, returns an implicit scope with no signal and unbounded concurrency', () => {
    const scope = currentScope()
    expect(scope.signal).toBeUndefined()
    expect(scope.concurrency).toBe(Number.POSITIVE_INFINITY)
  })

  it('refuses a scope that createRunScope did not make', () => {
    expect(() => runInScope({ signal: undefined } as never, () => 0)).toThrow(GroupInputError)
  })

  it('createRunScope validates its options, naming the field', () => {
    const fieldOf = (make: () => unknown): string => {
      try {
        make()
      } catch (error) {
        return (error as GroupInputError).field
      }
      return 'no error'
    }
    expect(fieldOf(() => createRunScope({ concurrency: 0 }))).toBe('createRunScope options.concurrency')
    expect(fieldOf(() => createRunScope({ signal: {} as AbortSignal }))).toBe('createRunScope options.signal')
    expect(fieldOf(() => createRunScope({ observer: 'x' as never }))).toBe('createRunScope options.observer')
  })
})
