import type { ExecutionKind } from './run-store.js'

/** Prefixes of execution ids: those a store allocates (`resume-NNN`, `replay-NNN`) and a spawned child's (`child-<position>-a<n>`). */
export const EXECUTION_ID_PREFIX = { resume: 'resume-', replay: 'replay-', child: 'child-' } as const

/** `resume-001`, `replay-012`: the id of the `n`th allocated execution of a kind. */
export function allocatedExecutionId(kind: 'resume' | 'replay', n: number): string {
  return `${EXECUTION_ID_PREFIX[kind]}${String(n).padStart(3, '0')}`
}

/** True for the kinds whose ids the store allocates itself. */
export function isAllocatedKind(kind: ExecutionKind): kind is 'resume' | 'replay' {
  return kind === 'resume' || kind === 'replay'
}

/** The kind an execution id was allocated for, read back from its prefix. */
export function kindOfExecutionId(runId: string, executionId: string): ExecutionKind {
  if (executionId === runId) return 'root'
  if (executionId.startsWith(EXECUTION_ID_PREFIX.resume)) return 'resume'
  if (executionId.startsWith(EXECUTION_ID_PREFIX.replay)) return 'replay'
  return 'child'
}
