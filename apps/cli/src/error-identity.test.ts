import { JOURNAL_FILE_ERROR_CODES, RUN_ID_INVALID, RunIdError } from '@locus/journal'
import { LocusError } from '@locus/outcome'
import { PARTIAL_ERROR_CODES } from '@locus/partial'
import { REPLAY_ERROR_CODES } from '@locus/replay'
import {
  AgentCallError,
  ChildWorkflowError,
  HostError,
  RUNTIME_ERROR_CODES,
  RunCompletedError,
  RuntimeInputError,
  SchemaValidationError,
  ToolCallError,
  TransportRetryRefusedError,
} from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { CLI_ERROR_CODES, CliError, type CliErrorCode } from './cli-error.js'

/** One error class of the runtime or the CLI: the codes it owns, how to make one, and how it recognises its own. */
interface Owner {
  readonly name: string
  readonly codes: readonly string[]
  readonly make: (code: string) => LocusError
  readonly isInstance: (value: unknown) => boolean
}

type RuntimeInputCode = ConstructorParameters<typeof RuntimeInputError>[0]

const OWNERS: readonly Owner[] = [
  { name: 'CliError', codes: CLI_ERROR_CODES, make: (code) => new CliError(code as CliErrorCode, 'x'), isInstance: (value) => CliError.isInstance(value) },
  {
    name: 'RuntimeInputError',
    codes: ['UNKNOWN_TOOL', 'UNKNOWN_WORKFLOW', 'TOOL_INPUT_INVALID', 'RUN_OPTIONS_INVALID', 'WORKFLOW_INPUT_INVALID', 'WORKFLOW_DEFINITION_INVALID', 'SLEEP_DURATION_INVALID', 'SCHEDULE_INVALID', 'CONCURRENCY_KEY_INVALID', 'DEFERRED_TOOL_INVALID'],
    make: (code) => new RuntimeInputError(code as RuntimeInputCode, 'x'),
    isInstance: (value) => RuntimeInputError.isInstance(value),
  },
  {
    name: 'AgentCallError',
    codes: ['AGENT_CALL_FAILED'],
    make: () => new AgentCallError('x', { failureCause: 'unclassified', callId: 'c', logicalCallId: 'l', attempt: 1, attempts: 1, agent: 'a' }),
    isInstance: (value) => AgentCallError.isInstance(value),
  },
  {
    name: 'SchemaValidationError',
    codes: ['SCHEMA_VALIDATION'],
    make: () => new SchemaValidationError({ choices: ['a'], answers: ['b'], callId: 'c', logicalCallId: 'l' }),
    isInstance: (value) => SchemaValidationError.isInstance(value),
  },
  {
    name: 'TransportRetryRefusedError',
    codes: ['TRANSPORT_RETRY_REFUSED'],
    make: () => new TransportRetryRefusedError(2, 'a worktree'),
    isInstance: (value) => TransportRetryRefusedError.isInstance(value),
  },
  {
    name: 'ToolCallError',
    codes: ['TOOL_CALL_FAILED'],
    make: () => new ToolCallError({ tool: 't', toolCallId: 'tool-1', failure: { error: 'x', retryable: false }, attempts: [], stopReason: 'terminal' }),
    isInstance: (value) => ToolCallError.isInstance(value),
  },
  {
    name: 'ChildWorkflowError',
    codes: ['CHILD_WORKFLOW_FAILED'],
    make: () =>
      new ChildWorkflowError({
        workflow: 'w',
        childCallId: 'child-1',
        childExecutionId: 'child-1-a1',
        attempt: 1,
        disposition: 'failed',
        result: null,
        childError: undefined,
        failure: { error: 'x', retryable: false },
        stopReason: 'terminal',
      }),
    isInstance: (value) => ChildWorkflowError.isInstance(value),
  },
  { name: 'RunCompletedError', codes: ['RUN_COMPLETED'], make: () => new RunCompletedError('r', 'resume-001'), isInstance: (value) => RunCompletedError.isInstance(value) },
  { name: 'HostError', codes: ['HOST_ERROR'], make: () => new HostError('unclassified', 'x'), isInstance: (value) => HostError.isInstance(value) },
  { name: 'RunIdError', codes: [RUN_ID_INVALID], make: () => new RunIdError('run id', '../x'), isInstance: (value) => RunIdError.isInstance(value) },
]

describe('error identity: every code has one owner', () => {
  it('no code is owned by two error classes across the runtime and the CLI', () => {
    const ownerOf = new Map<string, string[]>()
    for (const owner of OWNERS) for (const code of owner.codes) ownerOf.set(code, [...(ownerOf.get(code) ?? []), owner.name])
    const shared = [...ownerOf].filter(([, names]) => names.length > 1)
    expect(shared).toEqual([])
  })

  it('every code the runtime and the CLI list has exactly one owner here', () => {
    const owned = new Set(OWNERS.flatMap((owner) => owner.codes))
    expect(RUNTIME_ERROR_CODES.filter((code) => !owned.has(code))).toEqual([])
    expect(CLI_ERROR_CODES.filter((code) => !owned.has(code))).toEqual([])
  })

  it('the code lists of the runtime, the CLI and the packages the CLI reports from are disjoint', () => {
    const lists: Record<string, readonly string[]> = {
      runtime: RUNTIME_ERROR_CODES,
      cli: CLI_ERROR_CODES,
      replay: REPLAY_ERROR_CODES,
      partial: PARTIAL_ERROR_CODES,
      journal: [...JOURNAL_FILE_ERROR_CODES, RUN_ID_INVALID],
    }
    const seen = new Map<string, string>()
    const collisions: string[] = []
    for (const [list, codes] of Object.entries(lists)) {
      for (const code of codes) {
        const first = seen.get(code)
        if (first !== undefined) collisions.push(`${code} in ${first} and ${list}`)
        seen.set(code, list)
      }
    }
    expect(collisions).toEqual([])
  })

  it("each class's isInstance recognises its own errors and no other class's", () => {
    for (const owner of OWNERS) {
      for (const other of OWNERS) {
        for (const code of other.codes) {
          const error = other.make(code)
          expect(error.code).toBe(code)
          expect({ checker: owner.name, error: other.name, code, recognised: owner.isInstance(error) }).toEqual({
            checker: owner.name,
            error: other.name,
            code,
            recognised: owner === other,
          })
        }
      }
    }
  })

  it('the runtime\'s invalid workflow input is not a CliError (the collision this guards against)', () => {
    const error = new RuntimeInputError('WORKFLOW_INPUT_INVALID', 'Invalid input')
    expect(CliError.isInstance(error)).toBe(false)
    expect(RuntimeInputError.isInstance(error)).toBe(true)
    // A bare Locus error with a CLI code is not a CliError either: the brand decides, not the code.
    expect(CliError.isInstance(new LocusError('x', { code: 'CLI_USAGE' }))).toBe(false)
    expect(RuntimeInputError.isInstance(new LocusError('x', { code: 'RUN_OPTIONS_INVALID' }))).toBe(false)
  })

  it('an error from another installed copy of a package is still recognised by its brand', () => {
    const fromAnotherCopy = Object.assign(new LocusError('x', { code: 'INIT_FILE_EXISTS' }), { [Symbol.for('@locus/cli:CliError')]: true })
    expect(CliError.isInstance(fromAnotherCopy)).toBe(true)
    const runtimeCopy = Object.assign(new LocusError('x', { code: 'WORKFLOW_INPUT_INVALID' }), { [Symbol.for('@locus/runtime:RuntimeInputError')]: true })
    expect(RuntimeInputError.isInstance(runtimeCopy)).toBe(true)
    expect(CliError.isInstance(runtimeCopy)).toBe(false)
  })
})
