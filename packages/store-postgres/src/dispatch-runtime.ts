import type { JournalLine } from '@locus/journal'
import {
  type DeferredAnswerOutcome,
  RunCompletedError,
  type RunHandle,
  type RunResult,
  type Runtime,
  RuntimeInputError,
  type RuntimeRunOptions,
  type WorkflowDefinition,
  checkStartSignal,
  createRunId,
  createRuntime,
  keepSignal,
  parseWorkflowInput,
  readStoredRun,
} from '@locus/runtime'
import { RunExistsError, StoreOptionsError, allocatedExecutionId } from '@locus/store'
import pg from 'pg'
import { RUN_TASK, enqueueRun, migrateDispatch, requestCancel } from './dispatch.js'
import { REQUEUE_SQL } from './run-task.js'
import { queueSnapshot } from './flow.js'
import { type PostgresRunStore, createPostgresRunStore } from './postgres-run-store.js'

/** Options of {@link createDispatchRuntime}. */
export interface DispatchRuntimeOptions {
  readonly connectionString: string
  /** The workflows runs may be started of: the names workers run (their code lives with the workers). */
  readonly workflows: readonly WorkflowDefinition[]
  readonly schema?: string | undefined
  /** How often a handle's `done` looks at the run's row. @default 250 */
  readonly pollMs?: number | undefined
  /** Connections of this process. @default 8 */
  readonly maxConnections?: number | undefined
}

/** A runtime whose runs execute on workers; close it to end its connections. */
export interface DispatchRuntime extends Runtime {
  readonly store: PostgresRunStore
  close(): Promise<void>
}

/** The run options a queued run keeps: its input, id, budgets (over the worker's defaults), concurrency key and priority. The rest is the worker's to choose. */
const QUEUED_OPTIONS = new Set(['input', 'runId', 'budgets', 'concurrencyKey', 'priority', 'startSignal'])

/** A deferral answered on a handle of a run that executes on a worker: answers go through `runtime.answerDeferred`. */
const ON_A_WORKER: DeferredAnswerOutcome = { ok: false, status: 'unknown', message: 'the run executes on a worker; answer it with runtime.answerDeferred(runId, deferredId, answer)' }

/**
 * A {@link Runtime} for processes that serve runs but do not execute them
 * (`locus serve --database-url`): `start` validates the input and queues the
 * run for the workers with {@link enqueueRun} (its row and job in one
 * transaction), `requestCancel` reaches the worker that holds a run on any
 * machine, and every read (`get`, `list`, events, deferrals) comes from the
 * same database. Answers to deferrals are kept in the store, where the
 * owning worker, or the next one, finds them.
 *
 * Nothing runs here, so `live(runId)` is always undefined and `cancel` is
 * false: use `requestCancel`. `resume` queues the run again for a worker,
 * which continues it from its journal; `replay` checks a run in this process.
 */
export async function createDispatchRuntime(options: DispatchRuntimeOptions): Promise<DispatchRuntime> {
  const pollMs = options.pollMs ?? 250
  if (!Number.isFinite(pollMs) || pollMs <= 0) throw new StoreOptionsError(`createDispatchRuntime: pollMs must be a positive number of milliseconds, not ${String(pollMs)}.`)
  const schema = options.schema ?? 'public'
  // Idempotent: a server may be the first process to reach a new database.
  await migrateDispatch(options.connectionString, schema)
  const pool = new pg.Pool({ connectionString: options.connectionString, max: options.maxConnections ?? 8 })
  pool.on('error', () => undefined)
  const store = createPostgresRunStore({ pool, schema, migrate: false })
  const reader = createRuntime({ store, workflows: options.workflows })
  const runs = `"${schema}".locus_runs`
  const executions = `"${schema}".locus_executions`

  /** The run's row status once it ended; undefined while it runs, waits in the queue or is parked `waiting` for an answer. */
  async function endedStatus(runId: string): Promise<string | undefined> {
    const { rows } = await pool.query<{ status: string }>(`select status from ${runs} where run_id = $1`, [runId])
    const status = rows[0]?.status
    return status === undefined || status === 'running' || status === 'waiting' ? undefined : status
  }

  function handleOf(runId: string, executionId: string): RunHandle {
    let done: Promise<RunResult> | undefined
    const events = (afterSeq = -1, signal?: AbortSignal): AsyncIterable<JournalLine> => store.tail({ runId, executionId }, { afterSeq, ...(signal === undefined ? {} : { signal }) })
    return {
      runId,
      executionId,
      // The reason stays with the caller: the request is the flag on the run row, which the worker reads.
      cancel: (reason, by) => {
        void requestCancel(pool, runId, schema, { reason, by }).catch(() => undefined)
      },
      // The worker's store commits every line; there is nothing buffered here.
      flush: () => undefined,
      // Lazily: a caller that never waits costs no polling.
      get done() {
        done ??= (async () => {
          for (;;) {
            if ((await endedStatus(runId)) !== undefined) break
            await new Promise((resolve) => setTimeout(resolve, pollMs))
          }
          const latest = (await readStoredRun(store, runId)).latest
          const end = latest.view.runEnd
          return {
            runId,
            executionId: latest.info.executionId,
            runDir: latest.info.location,
            executionDir: latest.info.location,
            journalLocation: latest.info.journalLocation ?? latest.info.location,
            disposition: end?.disposition ?? 'failed',
            ok: end?.ok ?? false,
            result: end?.result ?? null,
            ...(end?.error === undefined ? {} : { error: end.error }),
          }
        })()
        return done
      },
      subscribe(listener, cursor, hooks) {
        const stop = new AbortController()
        void (async () => {
          // The store's tail cannot tell its stored lines from new ones, so onCaughtUp is never called here.
          for await (const line of events(cursor?.afterSeq, stop.signal)) listener(line)
          if (!stop.signal.aborted) hooks?.onEnd?.()
        })().catch((error: unknown) => {
          if (!stop.signal.aborted) hooks?.onError?.(error)
        })
        return () => {
          stop.abort()
        }
      },
      events: (cursor) => events(cursor?.afterSeq),
      // Answers go through the store (answerDeferred of the runtime), where the owning worker looks.
      answerDeferred: () => undefined,
      resolveDeferred: () => ON_A_WORKER,
      rejectDeferred: () => ON_A_WORKER,
      // The open deferrals are the stored run's (runtime.pendingDeferrals), read from the store.
      pendingDeferrals: () => [],
      // The execution runs on a worker: only that worker can suspend it (it parks waiting runs itself).
      suspend: () => undefined,
      waitingOnly: () => false,
      // A worker holds the execution's fold, not this process.
      view: () => undefined,
      onWaitingChange: () => () => undefined,
    }
  }

  return {
    store,
    workflows: reader.workflows,
    async start(workflow, runOptions: RuntimeRunOptions = {}) {
      const definition = typeof workflow === 'string' ? reader.workflows.get(workflow) : workflow
      if (definition === undefined || reader.workflows.get(definition.name) !== definition) {
        const name = typeof workflow === 'string' ? workflow : workflow.name
        throw new RuntimeInputError('RUN_OPTIONS_INVALID', `No workflow "${name}" is registered here; a queued run names a workflow its workers run (${[...reader.workflows.keys()].join(', ') || 'none'}).`, [`workflow: "${name}" unknown`])
      }
      const extra = Object.entries(runOptions).filter(([key, value]) => value !== undefined && !QUEUED_OPTIONS.has(key)).map(([key]) => key)
      if (extra.length > 0) {
        throw new RuntimeInputError(
          'RUN_OPTIONS_INVALID',
          `A run queued for workers takes its input, run id, budgets, concurrency key and priority only; ${extra.join(', ')} ${extra.length === 1 ? 'is' : 'are'} chosen by the worker that runs it (locus worker flags).`,
          extra.map((key) => `${key}: not supported for a queued run`),
        )
      }
      // The same check a worker makes at start, so a bad input is refused here and nothing is queued.
      parseWorkflowInput(definition, runOptions.input)
      const startSignal = checkStartSignal(definition, runOptions.startSignal)
      const runId = runOptions.runId ?? createRunId(new Date())
      if (await store.hasRun(runId)) throw new RunExistsError(runId, 'the PostgreSQL store')
      const client = await pool.connect()
      try {
        await enqueueRun(client, {
          runId,
          workflow: definition,
          ...(runOptions.concurrencyKey === undefined ? {} : { concurrencyKey: runOptions.concurrencyKey }),
          ...(runOptions.priority === undefined ? {} : { priority: runOptions.priority }),
          ...(runOptions.input === undefined ? {} : { input: runOptions.input }),
          ...(runOptions.budgets === undefined ? {} : { budgets: runOptions.budgets }),
          schema,
        })
      } finally {
        client.release()
      }
      // Signal-with-start: the run's first mailbox slot, before the caller learns the run id; the worker journals it on its first look, at the start.
      if (startSignal !== undefined) await keepSignal(store, runId, { kind: 'signal', name: startSignal.name, payload: startSignal.payload, from: startSignal.from, via: 'start' }, 0)
      return handleOf(runId, runId)
    },
    async resume(runId, resumeOptions = {}) {
      // The worker that continues the run reads its options back from its start; nothing given here would reach it.
      const given = Object.entries(resumeOptions).filter(([, value]) => value !== undefined).map(([key]) => key)
      if (given.length > 0) {
        throw new RuntimeInputError(
          'RUN_OPTIONS_INVALID',
          `A run resumed by a worker continues with the budgets and options its start recorded (over the worker's flags); ${given.join(', ')} cannot be given to a queued resume. Resume it without them.`,
          given.map((key) => `${key}: not supported for a queued resume`),
        )
      }
      const stored = await readStoredRun(store, runId)
      // Decided under the run row's lock, which the commit of a run_end also takes (it sets the status in the
      // same statement): a run that completed is refused, however close the two come.
      const client = await pool.connect()
      let broken: Error | undefined
      const onError = (error: Error): void => {
        broken = error
      }
      client.on('error', onError)
      try {
        await client.query('begin')
        const { rows } = await client.query<{ status: string }>(`select status from ${runs} where run_id = $1 for update`, [runId])
        const status = rows[0]?.status
        if (status === 'completed') {
          await client.query('rollback')
          throw new RunCompletedError(runId, stored.latest.info.executionId)
        }
        if (status === undefined || status === 'running' || status === 'waiting') {
          // Running, queued or parked: a worker holds it or will; the sweeper re-queues it if that worker dies.
          await client.query('rollback')
          return handleOf(runId, stored.latest.info.executionId)
        }
        // Failed or cancelled: running again, which is what lets a worker continue an ended run (a job
        // delivered again for an ended run whose row is not running does nothing).
        await client.query(`update ${runs} set status = 'running', cancel_requested_at = null, cancel_reason = null, cancel_by = null, updated_at = clock_timestamp() where run_id = $1`, [runId])
        // Not deduplicated into a job that is still locked: the job of the execution that just ended may be
        // locked until graphile-worker marks it done, and a resume folded into it would never run.
        await client.query(REQUEUE_SQL, [RUN_TASK, runId])
        // The execution the worker that takes the job creates: the store allocates resume ids under this row's
        // lock, the same way, and nothing else creates a resume of an ended run that no worker holds.
        const taken = await client.query<{ execution_id: string }>(`select execution_id from ${executions} where run_id = $1 and kind = 'resume'`, [runId])
        const ids = new Set(taken.rows.map((row) => row.execution_id))
        let next = taken.rows.length + 1
        while (ids.has(allocatedExecutionId('resume', next))) next += 1
        await client.query('commit')
        return handleOf(runId, allocatedExecutionId('resume', next))
      } catch (error) {
        if (broken === undefined) await client.query('rollback').catch(() => undefined)
        throw error
      } finally {
        client.removeListener('error', onError)
        client.release(broken)
      }
    },
    replay: (runId, replayOptions) => reader.replay(runId, replayOptions),
    get: (runId, readOptions) => reader.get(runId, readOptions),
    // Runs execute on workers: every description comes from the store.
    describe: (runId) => reader.describe(runId),
    // Workers run every run: this process holds none.
    held: () => undefined,
    list: (filter) => reader.list(filter),
    cancel: () => false,
    requestCancel: (runId, reason, by) => requestCancel(pool, runId, schema, { reason, by }),
    live: () => undefined,
    queues: () => queueSnapshot(pool, schema),
    pendingDeferrals: (runId) => reader.pendingDeferrals(runId),
    answerDeferred: (runId, deferredId, answer) => reader.answerDeferred(runId, deferredId, answer),
    signal: (runId, name, payload, sender) => reader.signal(runId, name, payload, sender),
    query: (runId, name) => reader.query(runId, name),
    update: (runId, name, input, sender, waitOptions) => reader.update(runId, name, input, sender, waitOptions),
    async close() {
      await store.close()
      await pool.end()
    },
  }
}
