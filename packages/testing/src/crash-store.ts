import type { JournalLine, JournalLineInput } from '@locus/journal'
import { RuntimeInputError } from '@locus/runtime'
import type { ArtifactWriter, CreateExecutionOptions, ExecutionKind, ExecutionWriter, RunStore } from '@locus/store'

/** Where {@link crashAt} stops an execution. */
export interface CrashPoint {
  /**
   * The call position to die at, as the journal writes it (`3`, or `g1[2].1`
   * inside a group): the execution dies once the first start line of that call
   * (`tool_start`, `agent_start`, `timer_start`, `child_start`) is written,
   * before the call is dispatched.
   */
  readonly ordinal: number | string
}

/** A crash point for `start` or `resume` of a test runtime: `runtime.start(workflow, { input, crashAt: crashAt({ ordinal: 2 }) })`. */
export function crashAt(point: CrashPoint): CrashPoint {
  const { ordinal } = point
  const valid = typeof ordinal === 'number' ? Number.isSafeInteger(ordinal) && ordinal >= 1 : typeof ordinal === 'string' && ordinal.trim() !== ''
  if (!valid) {
    throw new RuntimeInputError(
      'RUN_OPTIONS_INVALID',
      `crashAt: ordinal must be a call position, a whole number from 1 (as 3) or the journal's text (as "g1[2].1"); got ${typeof ordinal === 'string' ? JSON.stringify(ordinal) : String(ordinal)}.`,
      [`crashAt.ordinal: ${String(ordinal)}`],
    )
  }
  return { ordinal }
}

/** The start lines of a call: the first one of an ordinal is the crash line. */
const CALL_START_TYPES: ReadonlySet<JournalLine['type']> = new Set(['tool_start', 'agent_start', 'timer_start', 'child_start'])

interface CrashPlan {
  readonly ordinal: string
  readonly kind: ExecutionKind
  readonly onCrash: () => void
}

/** A store that counts what is written and kills planned executions at their crash point. */
export interface CrashingStore {
  readonly store: RunStore
  /** Lines written so far, across every execution: the test runtime's measure of progress. */
  linesWritten(): number
  /** Kills the next `kind` execution of `runId` at `point`; `onCrash` is called once it died, to stop it in this process. */
  plan(runId: string, kind: ExecutionKind, point: CrashPoint, onCrash: () => void): void
}

const CRASHED = 'the execution was killed by crashAt; nothing after its crash point is written'

/**
 * Wraps a store so that an execution can die as a SIGKILL would leave it:
 * every line up to and including the crash line is kept, and from then on
 * nothing of that execution reaches the store (no line, no artifact, no
 * `run_end`), and no call is dispatched. Every other execution and every read
 * goes straight to the store. Journal lines are stamped on `now`.
 */
export function crashingStore(inner: RunStore, now: () => number): CrashingStore {
  const plans = new Map<string, CrashPlan>()
  let written = 0

  function wrapWriter(writer: ExecutionWriter, plan: CrashPlan | undefined): ExecutionWriter {
    let crashed = false
    const append = (line: JournalLineInput): JournalLine => {
      // What the runtime itself hands back once an execution is muted: a line that never reached the store.
      if (crashed) return { ...line, seq: -1, ts: new Date(now()).toISOString() } as unknown as JournalLine
      const written_ = writer.append(line)
      written += 1
      if (plan !== undefined && CALL_START_TYPES.has(written_.type) && 'ordinal' in written_ && written_.ordinal === plan.ordinal) {
        crashed = true
        // After the line is back with the runtime: it stops the execution, whose later writes all fall here.
        queueMicrotask(plan.onCrash)
      }
      return written_
    }
    const artifacts: ArtifactWriter = {
      write: (key, content, options) => (crashed ? Promise.resolve() : writer.artifacts.write(key, content, options)),
      read: (key) => writer.artifacts.read(key),
    }
    // The call after the crash line is never dispatched: the process is gone.
    const beforeDispatch = (): Promise<void> => (crashed ? Promise.reject(new Error(CRASHED)) : (writer.beforeDispatch?.() ?? Promise.resolve()))
    return new Proxy(writer, {
      get(target, property, receiver) {
        if (property === 'append') return append
        if (property === 'artifacts') return artifacts
        if (property === 'beforeDispatch') return beforeDispatch
        const value: unknown = Reflect.get(target, property, receiver)
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
      },
    })
  }

  async function createExecution(options: CreateExecutionOptions): Promise<ExecutionWriter> {
    const writer = await inner.createExecution({ ...options, now: options.now ?? now })
    const key = `${options.kind}\u0000${options.runId}`
    const plan = plans.get(key)
    if (plan !== undefined) plans.delete(key)
    return wrapWriter(writer, plan)
  }

  const store = new Proxy(inner, {
    get(target, property, receiver) {
      if (property === 'createExecution') return createExecution
      const value: unknown = Reflect.get(target, property, receiver)
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    },
  })

  return {
    store,
    linesWritten: () => written,
    plan(runId, kind, point, onCrash) {
      plans.set(`${kind}\u0000${runId}`, { ordinal: String(point.ordinal), kind, onCrash })
    },
  }
}
