import { mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import type { JournalLine, JournalLineInput, JournalWriter, RunPaths } from '@locus/journal'
import { type RunScope, WorkflowCancelledError, WorkflowInvocationCapError, WorkflowRunDeadlineError } from '@locus/groups'
import type { ReplaySession } from '@locus/replay'
import type { RetryClock } from '@locus/retry'
import type { CallBudgets } from './host.js'
import type { WorkflowDefinition } from './define.js'
import type { AgentHost, HostTool } from './host.js'

/** Everything one executing run shares between its calls. Internal. */
export class RunState {
  invocations = 0
  readonly lines: JournalLine[] = []
  scope!: RunScope
  /** The workflow's full tool surface as hosts see it; calls go through tool() so they are journaled. */
  hostTools: HostTool[] = []
  /** Set on a resumed or replayed execution: recorded calls answer from it while their keys match. */
  replay: ReplaySession | undefined

  constructor(
    readonly runId: string,
    readonly executionId: string,
    readonly paths: RunPaths,
    readonly writer: JournalWriter,
    readonly workflow: WorkflowDefinition,
    readonly host: AgentHost | undefined,
    readonly clock: RetryClock,
    readonly signal: AbortSignal,
    readonly startedAt: number,
    readonly deadlineMs: number | undefined,
    readonly maxInvocations: number | undefined,
    readonly callDefaults: Required<CallBudgets>,
  ) {}

  emit(line: JournalLineInput): JournalLine {
    return this.writer.append(line)
  }

  /** Refuses new work once the run is cancelled or past its deadline. */
  checkDispatch(): void {
    if (this.signal.aborted) throw new WorkflowCancelledError({ notDispatched: [] })
    if (this.deadlineMs !== undefined) {
      const elapsedMs = this.clock.now() - this.startedAt
      if (elapsedMs >= this.deadlineMs) this.hardStop(new WorkflowRunDeadlineError({ deadlineMs: this.deadlineMs, elapsedMs }))
    }
  }

  /** Charges one physical agent attempt against the invocation cap. */
  chargeInvocation(): void {
    this.checkDispatch()
    if (this.maxInvocations !== undefined && this.invocations + 1 > this.maxInvocations) {
      this.hardStop(new WorkflowInvocationCapError({ limit: this.maxInvocations, attempted: this.invocations + 1 }))
    }
    this.invocations += 1
  }

  private hardStop(error: Error): never {
    // Latch first, so queued branches anywhere in the group tree stop dispatching.
    this.scope.latchHardStop(error)
    throw error
  }
}

/** Writes a JSON file so that a reader sees the old content or the new, never half. */
export function writeJsonAtomic(path: string, value: unknown): void {
  mkdirSync(dirname(path), { recursive: true })
  const temporary = `${path}.${process.pid}.tmp`
  writeFileSync(temporary, JSON.stringify(value, null, 2) + '\n')
  renameSync(temporary, path)
}
