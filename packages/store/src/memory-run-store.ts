import { createMemoryScheduleStore } from './schedule-store.js'
import { JournalClosedError, type JournalLine, createLineStamper, validateRunId } from '@locus/journal'
import { allocatedExecutionId, isAllocatedKind } from './execution-ids.js'
import type {
  ArtifactWriter,
  CreateExecutionOptions,
  ExecutionInfo,
  ExecutionKind,
  ExecutionRef,
  ExecutionWriter,
  ListRunsFilter,
  Ownership,
  ReadLinesOptions,
  RunInfo,
  RunStore,
  TailOptions,
} from './run-store.js'
import {
  ArtifactExistsError,
  ExecutionExistsError,
  RunExistsError,
  RunNotFoundError,
  RunOwnedError,
  StoreOptionsError,
  validateArtifactKey,
  validateDeferredId,
} from './store-errors.js'
import { settle } from './poll.js'
import { createMemoryStreams } from './memory-streams.js'
import { streamRetentionOf } from './stream-store.js'
import { IdempotencyTable, validateIdempotencyKey, validateIdempotencyRecord } from './idempotency-keys.js'
import { type RunRow, foldRunRow, newRunRow, pageOfRows } from './run-rows.js'

interface MemoryExecution {
  readonly kind: ExecutionKind
  readonly lines: JournalLine[]
  readonly artifacts: Map<string, string>
  readonly waiters: Set<() => void>
}

interface MemoryRun {
  readonly createdAt: number
  readonly executions: Map<string, MemoryExecution>
  readonly deferredAnswers: Map<string, string>
  /** The summary row, folded from every appended line. */
  row: RunRow
}

/** Options of {@link createMemoryRunStore}. */
export interface MemoryRunStoreOptions {
  /** Clock for `createdAt` of runs. @default Date.now */
  readonly now?: (() => number) | undefined
  /** How long a run's token stream is kept after the run ends, in milliseconds. @default 7 days */
  readonly streamRetention?: number | undefined
}

/**
 * A store that keeps everything in this process's memory: for tests and for
 * embedding Locus where nothing should touch the disk. It follows the same
 * contract as the file store (exclusive creation, allocated execution ids,
 * whole artifacts, gap-free tails); what it holds is gone with the process.
 *
 * @example
 * ```ts
 * const store = createMemoryRunStore()
 * const writer = await store.createExecution({ runId: 'run-1', kind: 'root' })
 * writer.append({ type: 'log', level: 'info', message: 'hello' })
 * for await (const line of store.readLines({ runId: 'run-1', executionId: 'run-1' })) console.log(line.seq)
 * ```
 */
export function createMemoryRunStore(options: MemoryRunStoreOptions = {}): RunStore {
  const clock = options.now ?? Date.now
  const runs = new Map<string, MemoryRun>()
  /** The runs claimed now, with the execution that holds each: ownership within this process. */
  const owners = new Map<string, { executionId: string; readonly token: symbol }>()
  let order = 0

  function runOf(runId: string): MemoryRun {
    const run = runs.get(runId)
    if (run === undefined) throw new RunNotFoundError(runId, 'the memory store')
    return run
  }

  function executionOf(ref: ExecutionRef): MemoryExecution {
    const execution = runOf(ref.runId).executions.get(ref.executionId)
    if (execution === undefined) throw new RunNotFoundError(`${ref.runId}/${ref.executionId}`, 'the memory store')
    return execution
  }

  function createExecutionSync(create: CreateExecutionOptions): ExecutionWriter {
    const runId = validateRunId(create.runId, 'runId')
    let run: MemoryRun
    let executionId: string
    if (create.kind === 'root') {
      if (create.executionId !== undefined && create.executionId !== runId) {
        throw new StoreOptionsError(`createExecution: a root execution's id is its run id ("${runId}"), not "${create.executionId}".`)
      }
      if (runs.has(runId)) throw new RunExistsError(runId, `memory:${runId}`)
      // Creation order breaks ties between runs created in the same millisecond.
      const createdAt = clock() + (order += 1) * 1e-6
      run = { createdAt, executions: new Map(), deferredAnswers: new Map(), row: newRunRow(runId, runId, createdAt) }
      runs.set(runId, run)
      executionId = runId
    } else {
      run = runOf(runId)
      if (isAllocatedKind(create.kind) && create.executionId === undefined) {
        let n = 1
        while (run.executions.has(allocatedExecutionId(create.kind, n))) n += 1
        executionId = allocatedExecutionId(create.kind, n)
      } else {
        if (create.executionId === undefined) throw new StoreOptionsError(`createExecution: a ${create.kind} execution needs its executionId.`)
        executionId = validateRunId(create.executionId, 'executionId')
        if (run.executions.has(executionId)) throw new ExecutionExistsError(runId, executionId)
      }
    }
    const execution: MemoryExecution = { kind: create.kind, lines: [], artifacts: new Map(), waiters: new Set() }
    run.executions.set(executionId, execution)
    const now = create.now
    const stamper = createLineStamper({ runId, executionId, now: now === undefined ? undefined : () => new Date(now()) })
    let closed = false
    const location = `memory:${runId}/${executionId}`
    return {
      runId,
      executionId,
      kind: create.kind,
      location,
      runLocation: `memory:${runId}`,
      artifacts: memoryArtifacts(execution.artifacts),
      get lastSeq() {
        return stamper.lastSeq
      },
      append(input) {
        if (closed) throw new JournalClosedError(location, input.type)
        const line = stamper.stamp(input)
        execution.lines.push(line)
        run.row = foldRunRow(run.row, line, create.kind)
        for (const wake of execution.waiters) wake()
        create.onLine?.(line)
        return line
      },
      flush: () => Promise.resolve(),
      close() {
        closed = true
        return Promise.resolve()
      },
    }
  }

  function claimSync(ref: ExecutionRef): Ownership {
    runOf(ref.runId)
    const held = owners.get(ref.runId)
    if (held !== undefined) {
      throw new RunOwnedError(
        ref.runId,
        `Run "${ref.runId}" is owned by its execution "${held.executionId}" in this process; only one execution continues a run at a time: wait for it to end, or stop it.`,
        { location: `memory:${ref.runId}` },
      )
    }
    const mine = { executionId: ref.executionId, token: Symbol(ref.runId) }
    owners.set(ref.runId, mine)
    return {
      runId: ref.runId,
      setExecutionId: (executionId) => {
        mine.executionId = executionId
      },
      release: () => {
        if (owners.get(ref.runId)?.token === mine.token) owners.delete(ref.runId)
        return Promise.resolve()
      },
    }
  }

  async function* readLines(ref: ExecutionRef, read: ReadLinesOptions = {}): AsyncGenerator<JournalLine> {
    // Unknown runs are refused at the first `next()`, as with every adapter.
    const execution = await settle(() => executionOf(ref))
    const afterSeq = read.afterSeq ?? -1
    let left = read.limit ?? Number.POSITIVE_INFINITY
    // A snapshot: lines appended while the reader is paused belong to a tail, not to this read.
    const lines = execution.lines.slice()
    for (const line of lines) {
      if (left <= 0) return
      if (line.seq <= afterSeq) continue
      yield line
      left -= 1
    }
  }

  async function* tail(ref: ExecutionRef, tailOptions: TailOptions = {}): AsyncGenerator<JournalLine> {
    const execution = executionOf(ref)
    let lastSeq = tailOptions.afterSeq ?? -1
    let left = tailOptions.limit ?? Number.POSITIVE_INFINITY
    const signal = tailOptions.signal
    let index = 0
    while (left > 0 && signal?.aborted !== true) {
      while (index < execution.lines.length) {
        const line = execution.lines[index] as JournalLine
        index += 1
        if (line.seq <= lastSeq) continue
        lastSeq = line.seq
        yield line
        left -= 1
        if (left <= 0 || line.type === 'run_end') return
      }
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          execution.waiters.delete(wake)
          signal?.removeEventListener('abort', wake)
          resolve()
        }
        execution.waiters.add(wake)
        signal?.addEventListener('abort', wake, { once: true })
      })
    }
  }

  const idempotency = new IdempotencyTable()
  const streams = createMemoryStreams((runId) => runs.has(runId), streamRetentionOf('createMemoryRunStore', options.streamRetention))

  return {
    kind: 'memory',
    schedules: createMemoryScheduleStore(),
    createExecution: (create) => settle(() => createExecutionSync(create)),
    claim: (ref) => settle(() => claimSync(ref)),
    hasRun: (runId) => Promise.resolve(runs.has(runId)),
    listExecutions: (runId) =>
      settle(() => {
        const infos: ExecutionInfo[] = []
        for (const [executionId, execution] of runOf(runId).executions) {
          infos.push({ runId, executionId, kind: execution.kind, location: `memory:${runId}/${executionId}` })
        }
        return infos
      }),
    listRuns(filter: ListRunsFilter = {}) {
      const infos: RunInfo[] = []
      for (const [runId, run] of runs) {
        if (filter.since !== undefined && run.createdAt < filter.since) continue
        infos.push({ runId, createdAt: Math.floor(run.createdAt), location: `memory:${runId}` })
      }
      infos.reverse()
      return Promise.resolve(filter.limit === undefined ? infos : infos.slice(0, filter.limit))
    },
    readLines,
    tail,
    readRunRow: (runId) => Promise.resolve(runs.get(runId)?.row),
    listRunRows: (filter = {}) => settle(() => pageOfRows([...runs.values()].map((run) => run.row), filter)),
    readArtifact: (ref, key) => settle(() => executionOf(ref)).then((execution) => memoryArtifacts(execution.artifacts).read(key)),
    putDeferredAnswer: (runId, deferredId, answer) =>
      settle(() => {
        const answers = runOf(runId).deferredAnswers
        const kept = answers.get(validateDeferredId(deferredId))
        if (kept !== undefined) return { stored: false, answer: kept }
        answers.set(deferredId, answer)
        return { stored: true, answer }
      }),
    withdrawDeferredAnswer: (runId, deferredId, answer) =>
      settle(() => {
        const answers = runs.get(validateRunId(runId, 'runId'))?.deferredAnswers
        if (answers?.get(validateDeferredId(deferredId)) !== answer) return false
        answers.delete(deferredId)
        return true
      }),
    readDeferredAnswers: (runId, ids) =>
      settle(() => {
        const answers = runs.get(validateRunId(runId, 'runId'))?.deferredAnswers
        if (answers === undefined || ids === undefined) return new Map(answers)
        const picked = new Map<string, string>()
        for (const id of ids) {
          const answer = answers.get(id)
          if (answer !== undefined) picked.set(id, answer)
        }
        return picked
      }),
    putIdempotencyKey: (key, record, now) =>
      settle(() => {
        const result = idempotency.put(key, validateIdempotencyRecord(key, record), now)
        if (result.stored) idempotency.sweep(now)
        return result
      }),
    readIdempotencyKey: (key, now) => settle(() => idempotency.read(validateIdempotencyKey(key), now)),
    releaseIdempotencyKey: (key, runId) => settle(() => idempotency.release(validateIdempotencyKey(key), runId)),
    streams,
  }
}

function memoryArtifacts(artifacts: Map<string, string>): ArtifactWriter {
  return {
    write: (key, content, writeOptions) =>
      settle(() => {
        validateArtifactKey(key)
        if (writeOptions?.exclusive === true && artifacts.has(key)) throw new ArtifactExistsError(key)
        artifacts.set(key, content)
      }),
    read: (key) => settle(() => artifacts.get(validateArtifactKey(key))),
  }
}
