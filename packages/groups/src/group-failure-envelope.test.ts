import { prepareWorkflowResult } from '@locus/outcome'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { rejectionOf } from '../test/support.js'
import { GroupInputError } from './group-input-error.js'
import type { WorkflowGroupFailureError } from './group-failure-error.js'
import { toGroupFailureEnvelope } from './group-failure-envelope.js'
import { parallel } from './parallel.js'
import { pipeline } from './pipeline.js'

describe('toGroupFailureEnvelope: "a JSON-safe WorkflowGroupFailureEnvelope ... contains counts, slot status, and failure metadata but omits potentially non-JSON-safe branch values"', () => {
  it('keeps counts, slot statuses and failure metadata, with ok: false and no values', async () => {
    const error = (await rejectionOf(
      parallel(
        [
          () => ({ secret: 'completed value' }),
          () => ({ status: 'blocked', secret: 'returned value' }),
          () => ({ amount: 3n }),
          () => Promise.reject(new Error('tool down')),
        ],
        { label: 'sources', phase: 'gather' },
      ),
    )) as WorkflowGroupFailureError
    const envelope = toGroupFailureEnvelope(error)
    expect(envelope).toEqual({
      ok: false,
      code: 'WORKFLOW_GROUP_FAILURE',
      groupKind: 'parallel',
      groupId: error.groupId,
      total: 4,
      completed: 1,
      failed: 3,
      slots: [
        { index: 0, status: 'completed' },
        { index: 1, status: 'failed' },
        { index: 2, status: 'failed' },
        { index: 3, status: 'failed' },
      ],
      failures: [
        { index: 1, kind: 'returned', status: 'blocked', reasons: ['status'], label: 'sources', phase: 'gather' },
        {
          index: 2,
          kind: 'boundary',
          label: 'sources',
          phase: 'gather',
          error: { name: 'WorkflowResultPreparationError', code: 'WORKFLOW_RESULT_PREPARATION', message: expect.stringContaining('$.amount') },
        },
        { index: 3, kind: 'thrown', label: 'sources', phase: 'gather', error: { name: 'Error', message: 'tool down' } },
      ],
    })
    expect(JSON.stringify(envelope)).not.toContain('secret')
  })

  it('carries the pipeline stageIndex', async () => {
    const error = (await rejectionOf(pipeline([1], [(value: number) => value, () => ({ ok: false })]))) as WorkflowGroupFailureError
    const envelope = toGroupFailureEnvelope(error)
    expect(envelope.stageIndex).toBe(1)
    expect(envelope.failures[0]?.stageIndex).toBe(1)
  })

  it('is JSON-safe whatever the branches threw or returned (property)', async () => {
    const hostile = fc.oneof(
      fc.anything(),
      fc.bigInt().map((value) => ({ value })),
      fc.constant(
        (() => {
          const cycle: Record<string, unknown> = {}
          cycle.self = cycle
          return cycle
        })(),
      ),
      fc.string().map((message) => Object.assign(new Error(message), { code: 42, extra: 1n })),
      fc.constant(
        Object.defineProperty(new Error('x'), 'message', {
          get() {
            throw new Error('unreadable')
          },
        }),
      ),
    )
    const branch = fc.record({ throws: fc.boolean(), value: hostile })
    await fc.assert(
      fc.asyncProperty(fc.array(branch, { minLength: 1, maxLength: 6 }), async (branches) => {
        const thunks = [...branches.map((b) => () => (b.throws ? Promise.reject(b.value) : b.value)), () => Promise.reject(new Error('always one failure'))]
        const error = (await rejectionOf(parallel(thunks))) as WorkflowGroupFailureError
        const envelope = toGroupFailureEnvelope(error)
        expect(JSON.parse(JSON.stringify(envelope))).toEqual(envelope)
        expect(prepareWorkflowResult(envelope)).toEqual(envelope)
        expect(envelope.completed + envelope.failed).toBe(envelope.total)
        // partialResults is promised to detach as well.
        expect(() => prepareWorkflowResult(error.partialResults)).not.toThrow()
      }),
      { numRuns: 150 },
    )
  })

  it('refuses something that is not a group failure', () => {
    expect(() => toGroupFailureEnvelope(new Error('x') as never)).toThrow(GroupInputError)
  })
})
