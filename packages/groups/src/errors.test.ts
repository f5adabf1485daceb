import { LocusError } from '@locus/outcome'
import { describe, expect, it } from 'vitest'
import { GroupInputError } from './group-input-error.js'
import { WorkflowGroupFailureError, isWorkflowGroupFailureError } from './group-failure-error.js'
import { GroupObserverError } from './group-observer-error.js'
import { WorkflowInvocationCapError } from './invocation-cap-error.js'
import { WorkflowRunDeadlineError } from './run-deadline-error.js'
import { WorkflowCancelledError } from './workflow-cancelled-error.js'

describe('typed errors: stable codes, Locus identity, recognised across installed copies', () => {
  const cases: [string, Error, string, (value: unknown) => boolean][] = [
    ['cap', new WorkflowInvocationCapError({ limit: 1, attempted: 2 }), 'WORKFLOW_INVOCATION_CAP', WorkflowInvocationCapError.isInstance],
    ['deadline', new WorkflowRunDeadlineError({ deadlineMs: 1, elapsedMs: 2 }), 'WORKFLOW_RUN_DEADLINE', WorkflowRunDeadlineError.isInstance],
    ['cancelled', new WorkflowCancelledError(), 'WORKFLOW_CANCELLED', WorkflowCancelledError.isInstance],
    ['group failure', new WorkflowGroupFailureError({ groupKind: 'parallel', groupId: '1', slots: [] }), 'WORKFLOW_GROUP_FAILURE', isWorkflowGroupFailureError],
    ['input', new GroupInputError('options.x', 'bad', 'fix it'), 'GROUP_INVALID_INPUT', GroupInputError.isInstance],
    [
      'observer',
      new GroupObserverError({ type: 'group_start', groupId: '1', groupKind: 'parallel', total: 0 }, new Error('x')),
      'GROUP_OBSERVER_FAILED',
      GroupObserverError.isInstance,
    ],
  ]

  it.each(cases)('%s error has its code and is a LocusError', (_name, error, code, isInstance) => {
    expect((error as { code?: unknown }).code).toBe(code)
    expect(LocusError.isInstance(error)).toBe(true)
    expect(isInstance(error)).toBe(true)
    // Another copy of the package: same marker and code, different class.
    expect(isInstance(new LocusError('copy', { code }))).toBe(true)
    expect(isInstance(new Error('plain'))).toBe(false)
  })

  it('a cancellation outside any group says so and lists nothing', () => {
    const error = new WorkflowCancelledError({ cause: 'stop' })
    expect(error.message).toContain('the run stopped')
    expect(error.notDispatched).toEqual([])
    expect(error.cause).toBe('stop')
  })

  it('GroupInputError names the field, the problem and the fix', () => {
    const error = new GroupInputError('parallel options.concurrency', 'expected a positive integer or Infinity, got 0', 'Pass 1 or more.')
    expect(error.message).toBe('Invalid parallel options.concurrency: expected a positive integer or Infinity, got 0. Pass 1 or more.')
  })
})
