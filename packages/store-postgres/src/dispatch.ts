import type { AgentHost, QueuedInfo, RateLimit, RunBudgets, RunHandle, RunOptions, RunResult, WorkflowDefinition } from '@locus/runtime'
import { checkPriority, checkRateLimits, createRuntime, parseWorkflowInput, recordRunOutcome, resolveFlowKeys } from '@locus/runtime'
import type { JournalLineInput, OpenSignalWaitView, OpenTimerView } from '@locus/journal'
import { type CreateExecutionOptions, type ExecutionWriter, LeaseLostError, StoreOptionsError } from '@locus/store'
import { EventEmitter } from 'node:events'
import { Logger, type Runner, type Task, type WorkerEvents, type WorkerPool, run as runGraphileWorker, runMigrations } from 'graphile-worker'
import pg from 'pg'
import { type PostgresRunStore, type RunLease, createPostgresRunStore } from './postgres-run-store.js'
import { REQUEUE_SQL, RUN_TASK, TIMER_JOB_SQL } from './run-task.js'
import { isConnectionError, reconnectDelayMs, withReconnect } from './connection-errors.js'
import { createPostgresRateLimiter } from './rate-limiter.js'
import { type LeaseGuard, createLeaseGuard } from './lease-guard.js'
import { patchGraphileWorker } from './graphile-patches.js'
import { admit, recordFlow, wakeWaiting } from './flow.js'

export { RUN_TASK } from './run-task.js'

/** The job payload: the run id, plus what a first start needs. */
interface RunJobPayload {
  readonly runId: string
  readonly workflow?: string
  readonly input?: unknown
  /** Set on a job that wakes a parked run when this `sleep()` timer is due (see TIMER_JOB_SQL). */
  readonly timerId?: string
}

/** Options of {@link enqueueRun}. */
export interface EnqueueRunOptions {
  readonly runId: string
  /**
   * The workflow: its name, or its definition. Given the definition, the
   * input is checked and the run's concurrency keys are computed from it
   * now: a key function that throws or returns a non-string refuses the
   * enqueue (`CONCURRENCY_KEY_INVALID`) and nothing is queued.
   */
  readonly workflow: string | WorkflowDefinition
  readonly input?: unknown
  /** Stands in for the value of the workflow's first concurrency key; with none declared, a key without a limit that takes turns with the others. */
  readonly concurrencyKey?: string | undefined
  /** 0 to 9: among runs waiting on the same key, a higher one starts first. @default 0 */
  readonly priority?: number | undefined
  /** The run's budgets: kept on its row, they win over the defaults of the worker that runs it, field by field. */
  readonly budgets?: RunBudgets | undefined
  /** Schema of the Locus tables. @default 'public' */
  readonly schema?: string | undefined
}

/**
 * Queues a run for the workers: the run row and its graphile-worker job
 * commit in one transaction, and the job's key is the run id, so a run is
 * queued once however often this is called. Run {@link migrateDispatch}
 * (or start a worker) once before.
 */
export async function enqueueRun(client: pg.ClientBase, options: EnqueueRunOptions): Promise<void> {
  const schema = options.schema ?? 'public'
  const definition = typeof options.workflow === 'string' ? undefined : options.workflow
  const workflow = typeof options.workflow === 'string' ? options.workflow : options.workflow.name
  // Before the transaction: a bad key or priority queues nothing.
  const priority = checkPriority(options.priority)
  const keys =
    definition === undefined
      ? options.concurrencyKey === undefined
        ? []
        : resolveFlowKeys({ name: workflow }, options.input, options.concurrencyKey)
      : resolveFlowKeys(definition, definition.concurrency === undefined ? options.input : parseWorkflowInput(definition, options.input), options.concurrencyKey)
  await client.query('begin')
  try {
    const inserted = await client.query(`insert into "${schema}".locus_runs (run_id, workflow, input, budgets) values ($1, $2, $3::jsonb, $4::jsonb) on conflict do nothing`, [
      options.runId,
      workflow,
      options.input === undefined ? null : JSON.stringify(options.input),
      options.budgets === undefined ? null : JSON.stringify(options.budgets),
    ])
    // Its turn among the queued runs: its keys' lane, and the job's priority that carries it.
    const jobPriority = inserted.rowCount === 1 ? await recordFlow(client, schema, options.runId, keys, priority) : null
    const payload: RunJobPayload = { runId: options.runId }
    await client.query(`select graphile_worker.add_job($1, $2::json, job_key := $3, job_key_mode := 'preserve_run_at', priority := $4::int)`, [
      RUN_TASK,
      JSON.stringify(payload),
      options.runId,
      jobPriority,
    ])
    await client.query('commit')
  } catch (error) {
    await client.query('rollback').catch(() => undefined)
    throw error
  }
}

/** Applies the Locus store's migrations and graphile-worker's. */
export async function migrateDispatch(connectionString: string, schema?: string): Promise<void> {
  const store = createPostgresRunStore({ connectionString, schema, maxConnections: 1, migrate: false })
  try {
    await store.migrate()
  } finally {
    await store.close()
  }
  await runMigrations({ connectionString, logger: quietLogger() })
}

/** The NOTIFY channel of cancel requests; the payload is the run id. */
export const CANCEL_CHANNEL = 'locus_cancel'

/**
 * Asks for a run to stop, wherever it runs: a flag on the run row (seen by the
 * owner's next heartbeat, or by the next worker to take the run) and a
 * `NOTIFY locus_cancel` that the owning worker acts on at once. A run parked
 * while it waits on a deferral (`waiting`) is queued again, so a worker
 * resumes it and ends it `cancelled`. `request` says why and who asked; the
 * worker journals them as `run_cancel_requested` (a later request's replace
 * an earlier one's until the worker acts).
 */
export async function requestCancel(client: pg.ClientBase | pg.Pool, runId: string, schema = 'public', request: CancelRequest = {}): Promise<boolean> {
  const runs = `"${schema}".locus_runs`
  const { rowCount } = await client.query(
    `with before as (select status from ${runs} where run_id = $1 for update),
     flagged as (
       update ${runs} r set cancel_requested_at = clock_timestamp(), status = 'running', updated_at = clock_timestamp(), cancel_reason = $4, cancel_by = $5
       from before where r.run_id = $1 and before.status in ('running', 'waiting') returning before.status as was
     )
     select pg_notify($2, $1),
       case when was = 'waiting' then (select graphile_worker.add_job($3, json_build_object('runId', $1::text), job_key := $1::text, job_key_mode := 'preserve_run_at')) is not null end
     from flagged`,
    [runId, CANCEL_CHANNEL, RUN_TASK, request.reason ?? null, request.by ?? null],
  )
  return rowCount === 1
}

/** Why a cancel was asked for and by whom, as {@link requestCancel} records it on the run row. */
export interface CancelRequest {
  readonly reason?: string | undefined
  /** Who asked: an API key's name, `cli`... The worker journals `worker` when none is given. */
  readonly by?: string | undefined
}

/** `text` for a LIKE pattern, its `%`, `_` and `\` taken literally. */
function likeEscaped(text: string): string {
  return text.replace(/[\\%_]/g, (found) => `\\${found}`)
}

/**
 * Queues the run's job again (`$1` the task, `$2` the run id) for when its
 * lease lapses (at once when it is free): the job being run gets a fresh one
 * behind it, and a job still queued keeps its place.
 */
const requeueWhenLeaseLapsesSql = (schema: string): string =>
  `select graphile_worker.add_job($1, json_build_object('runId', $2::text), job_key := $2::text, job_key_mode := 'preserve_run_at',
     run_at := (select greatest(expires_at, clock_timestamp()) from "${schema}".locus_leases where run_id = $2))`

/**
 * How often every worker looks for expired leases, whatever the lease (a
 * quarter lease when that is shorter): a takeover waits for the lease to lapse
 * and then for the next sweep, so this bounds the second wait. A sweep is two
 * indexed reads when nothing expired.
 */
const SWEEP_MS = 200

/** Options of {@link startRunWorker}. */
export interface RunWorkerOptions {
  readonly connectionString: string
  readonly workflows: readonly WorkflowDefinition[]
  readonly host?: AgentHost | undefined
  /** Runs this worker executes at once. @default 4 */
  readonly concurrency?: number | undefined
  /** How long a lease lasts without a heartbeat; heartbeats go every third of it. @default 10000 */
  readonly leaseMs?: number | undefined
  /**
   * How long a run may wait only on deferred tools (every call in flight a
   * deferral waiting for its answer) before the worker parks it: suspends its
   * execution, marks it `waiting`, releases its lease and frees its slot. An
   * answer queues it again. @default 1000
   */
  readonly parkAfterMs?: number | undefined
  readonly schema?: string | undefined
  /**
   * Told, once per outage, when the worker cannot reach the database and
   * waits for it (at start, or while running): a line for an operator. The
   * worker keeps its process and retries with backoff.
   */
  readonly onWaiting?: ((message: string) => void) | undefined
  /**
   * Budgets and the retry budget of the runs this worker starts or resumes,
   * unless the run says otherwise: a run's own budgets (given at enqueue, or
   * recorded by its start) win, field by field.
   */
  readonly defaults?: RunWorkerDefaults | undefined
  /**
   * Where each run's outcome goes (an outcome store of `@locus/partial`, on
   * the same database for `locus worker`): recorded by the worker whose
   * `run_end` committed under its lease, after that commit, so a holder that
   * lost its run to a takeover records nothing, and the run has one row.
   */
  readonly metrics?: NonNullable<RunOptions['metrics']> | undefined
  /** Told when a run's outcome could not be recorded; the run's own ending stands. */
  readonly onMetricsError?: ((runId: string, error: unknown) => void) | undefined
  /**
   * Rate limits on the LLM calls of every run this worker executes, shared
   * with every worker on the database that declares them (migration 14):
   * `[{ match: { provider?, model? }, requestsPerMinute?, tokensPerMinute? }]`.
   * @default the host's own `rateLimits`, shared the same way
   */
  readonly rateLimits?: readonly RateLimit[] | undefined
}

/** What {@link RunWorkerOptions.defaults} may set. */
export interface RunWorkerDefaults {
  readonly budgets?: RunBudgets | undefined
  /** Retries the whole run may make, tool and agent alike. */
  readonly retryBudget?: number | undefined
  /** Prices every LLM request of the runs it executes (`loadPriceTable` of `@locus/cost`); a run with `budgets.maxCostUsd` needs them. */
  readonly prices?: RunOptions['prices']
  /** A run with a money budget starts although a model has no price (its requests reserve nothing). */
  readonly allowUnpriced?: boolean | undefined
}

/** A run's budgets laid over the worker's defaults: the run's fields win, `perCall` merged field by field too. */
function mergeRunBudgets(defaults: RunBudgets | undefined, own: RunBudgets | undefined): RunBudgets | undefined {
  if (defaults === undefined) return own
  if (own === undefined) return defaults
  const perCall = defaults.perCall === undefined && own.perCall === undefined ? undefined : { ...defaults.perCall, ...own.perCall }
  return { ...defaults, ...own, ...(perCall === undefined ? {} : { perCall }) }
}

/** A running worker; its leases carry graphile-worker's worker id (a job's `locked_by`). */
export interface RunWorker {
  /**
   * Stops taking jobs and hands every live run over: each execution is
   * suspended (no `run_end`), its lease released and its job queued again at
   * once, so another worker resumes it; then graphile-worker stops.
   */
  stop(): Promise<void>
}

/**
 * Runs graphile-worker with a task that takes a run's lease, heartbeats it
 * and starts or resumes the run through the runtime on a store fenced by the
 * lease. Every worker also sweeps: a lease whose holder stopped
 * heartbeating gets its jobs unlocked (`force_unlock_workers`) and its run
 * re-queued, and the next worker to take it writes `worker_takeover`.
 */
export async function startRunWorker(options: RunWorkerOptions): Promise<RunWorker> {
  const leaseMs = options.leaseMs ?? 10_000
  const concurrency = options.concurrency ?? 4
  const parkAfterMs = options.parkAfterMs ?? 1000
  if (!Number.isSafeInteger(leaseMs) || leaseMs < 100) throw new StoreOptionsError(`startRunWorker: leaseMs must be a whole number of at least 100, not ${String(leaseMs)}.`)
  if (!Number.isSafeInteger(parkAfterMs) || parkAfterMs < 0) throw new StoreOptionsError(`startRunWorker: parkAfterMs must be a whole number of milliseconds, 0 or more, not ${String(parkAfterMs)}.`)
  if (!Number.isSafeInteger(concurrency) || concurrency < 1) throw new StoreOptionsError(`startRunWorker: concurrency must be a whole number of at least 1, not ${String(concurrency)}.`)
  const schema = options.schema ?? 'public'
  // Refused before the worker connects: a limit with neither number, or a bad one, throws RUN_OPTIONS_INVALID.
  // A host's own limits are shared too: kept in process only, each worker would allow the whole limit by itself.
  const declaredLimits = options.rateLimits ?? options.host?.rateLimits
  const rateLimits = declaredLimits === undefined ? undefined : checkRateLimits(declaredLimits)
  const runDefaults =
    options.defaults === undefined
      ? undefined
      : {
          ...(options.defaults.budgets === undefined ? {} : { budgets: options.defaults.budgets }),
          ...(options.defaults.retryBudget === undefined ? {} : { retryBudget: options.defaults.retryBudget }),
          ...(options.defaults.prices === undefined ? {} : { prices: options.defaults.prices }),
          ...(options.defaults.allowUnpriced === undefined ? {} : { allowUnpriced: options.defaults.allowUnpriced }),
        }
  patchGraphileWorker()
  const waiting = (what: string) => (error: unknown) => {
    options.onWaiting?.(`${what}: ${error instanceof Error ? error.message : String(error)}; retrying with backoff until it is back`)
  }
  // A database that is not up yet (or restarting) is waited for, not a reason to exit.
  await withReconnect(() => migrateDispatch(options.connectionString, schema), Number.POSITIVE_INFINITY, waiting('waiting for PostgreSQL to migrate'))
  // A worker stopped mid-transaction (SIGSTOP, a frozen VM) would hold its row locks, and so block the
  // takeover of its runs, for as long as it is stopped; the server ends such a session after one lease.
  const pool = new pg.Pool({ connectionString: options.connectionString, max: concurrency + 4, options: `-c idle_in_transaction_session_timeout=${String(leaseMs)}` })
  // Every pooled client has an error listener, idle or checked out (graphile-worker's among them): a session the
  // server ends (a restart, a terminated backend) fails its query in flight and is replaced, and never takes the
  // worker down. graphile-worker sees both listeners and installs no handlers (and prints no warning) of its own.
  pool.on('error', () => undefined)
  pool.on('connect', (client) => {
    client.on('error', () => undefined)
  })
  const store: PostgresRunStore = createPostgresRunStore({ pool, schema })
  // Shared with every worker on the database (migration 14): a sliding minute per limit, and Retry-After closings.
  const rateLimiter = rateLimits === undefined ? undefined : createPostgresRateLimiter({ pool, schema, limits: rateLimits })
  const live = new Map<string, RunHandle>()
  /** Hands a live run over (suspends it, then releases and re-queues it), by run id. */
  const handOvers = new Map<string, () => Promise<void>>()
  let stopping = false
  // A freed slot wakes the runs waiting for it (their put-back jobs), at most one wake query in flight.
  let waking: Promise<unknown> | undefined
  let wakeAgain = false
  const wakeSoon = (): void => {
    if (waking !== undefined) {
      wakeAgain = true
      return
    }
    waking = wakeWaiting(pool, schema)
      .catch(() => undefined)
      .finally(() => {
        waking = undefined
        if (wakeAgain && !stopping) {
          wakeAgain = false
          wakeSoon()
        }
      })
  }

  const task: Task = async (rawPayload, helpers) => {
    const payload = rawPayload as RunJobPayload
    const owner = helpers.job.locked_by ?? 'unknown-worker'
    // A timer's job wakes a parked run: it goes from waiting to running here (a job run again after a crash
    // finds it running already, and goes on). A run that ended is left alone below, like any job's.
    if (payload.timerId !== undefined) {
      await withReconnect(
        () => pool.query(`update "${schema}".locus_runs set status = 'running', updated_at = clock_timestamp() where run_id = $1 and status = 'waiting'`, [payload.runId]),
        Number.POSITIVE_INFINITY,
      )
    }
    // A job fetched while this worker stops goes straight back to the queue, for another worker.
    if (stopping) {
      await pool.query(REQUEUE_SQL, [RUN_TASK, payload.runId])
      return
    }
    // Flow control first: a run whose keys are full is put back (no attempt spent), and on its lane's turn the
    // lane's best waiting run starts instead of this one. The lease comes with the admission, in one transaction.
    let takenAt = performance.now()
    const admission = await withReconnect(async () => {
      takenAt = performance.now()
      const client = await pool.connect()
      try {
        return await admit(client, schema, { runId: payload.runId, owner, leaseMs, task: RUN_TASK })
      } finally {
        client.release()
      }
    }, Number.POSITIVE_INFINITY)
    if (admission.kind === 'parked' || admission.kind === 'ended') return
    if (admission.kind === 'leased') {
      try {
        await executeUnderLease(admission.lease, admission.runId === payload.runId ? payload : { runId: admission.runId }, takenAt, admission.queued)
      } finally {
        wakeSoon()
      }
      return
    }
    // A job taken while the database is away waits for it here instead of failing (and using up an attempt).
    const lease = await withReconnect(() => {
      takenAt = performance.now()
      return store.acquireLease(payload.runId, owner, leaseMs)
    }, Number.POSITIVE_INFINITY)
    // Someone holds a live lease: that worker runs it, and the sweeper re-queues it if that worker dies. A holder
    // ending its execution releases the lease without looking for a job that came meanwhile (a resume queued as
    // the run ended), so the job comes back when the lease would lapse, and whoever is free then takes the run.
    if (lease === undefined) {
      // A live holder fires the run's timers itself (and if it dies, the sweeper queues the run): a timer's job is moot.
      if (payload.timerId !== undefined) return
      await withReconnect(() => pool.query(requeueWhenLeaseLapsesSql(schema), [RUN_TASK, payload.runId]), Number.POSITIVE_INFINITY)
      return
    }
    await executeUnderLease(lease, payload, takenAt)
  }

  async function executeUnderLease(first: RunLease, payload: RunJobPayload, takenAt: number, waited?: QueuedInfo): Promise<void> {
    let lease = first
    let handle: RunHandle | undefined
    const state: { lost: boolean; leaving: 'park' | 'stop' | undefined } = { lost: false, leaving: undefined }
    // Nothing is dispatched unless the last heartbeat that succeeded was sent less than a lease ago.
    const guard = createLeaseGuard({ runId: lease.runId, epoch: lease.epoch, leaseMs, takenAt, now: () => performance.now() })
    const onLost = (error: Error): void => {
      if (state.lost) return
      state.lost = true
      guard.lost(error)
      handle?.cancel('lease lost')
    }
    const fenced = guarded(announcing(store.fenced(lease), lease, leaseMs), guard, onLost)
    // The worker's defaults apply where a run's start recorded no budgets of its own (a resume reads them back).
    // Flow control was the admission's (across workers); the runtime keeps no limiter of its own.
    const runtime = createRuntime({ store: fenced, workflows: options.workflows, flowControl: 'none', ...(rateLimiter === undefined ? {} : { rateLimiter }), ...(options.host === undefined ? {} : { host: options.host }), ...(runDefaults === undefined ? {} : { defaults: runDefaults }) })
    // Started means the root's run_start committed; a root without lines is started afresh. Ended means
    // the latest execution with lines ends with run_end.
    const { rows: queued } = await pool.query<{ workflow: string | null; input: unknown; budgets: RunBudgets | null; status: string; started: boolean; ended: boolean }>(
      `select workflow, input, budgets, status, exists (select 1 from "${schema}".locus_journal j where j.run_id = r.run_id and j.execution_id = r.run_id) as started,
         coalesce((select (select j.line->>'type' from "${schema}".locus_journal j where j.run_id = e.run_id and j.execution_id = e.execution_id order by j.seq desc limit 1) = 'run_end'
           from "${schema}".locus_executions e
           where e.run_id = r.run_id and e.kind in ('root', 'resume')
             and exists (select 1 from "${schema}".locus_journal j where j.run_id = e.run_id and j.execution_id = e.execution_id)
           order by (e.kind = 'root'), e.position desc limit 1), false) as ended
       from "${schema}".locus_runs r where run_id = $1`,
      [payload.runId],
    )
    // A job for a run whose latest execution ended (a job delivered again after the run_end committed, say)
    // does nothing. Only an explicit resume (which sets the row back to running under its lock) continues an
    // ended run; the run_end that ends it sets the row's status in the same statement.
    if (queued[0]?.ended === true && queued[0].status !== 'running') {
      // The lease goes back at once: left to expire, a sweeper would queue the run again for nothing.
      await store.releaseLease(lease).catch(() => undefined)
      return
    }
    const started = queued[0]?.started === true
    const workflow = queued[0]?.workflow ?? payload.workflow
    const input = queued[0]?.input ?? payload.input
    let parkTimer: NodeJS.Timeout | undefined
    const leave = (why: 'park' | 'stop'): void => {
      if (state.leaving !== undefined || state.lost || handle === undefined) return
      state.leaving = why
      clearTimeout(parkTimer)
      handle.suspend(
        why === 'park'
          ? `worker ${lease.owner} parked the run after it had only waited for ${String(parkAfterMs)} ms (on deferrals, timers, signals or updates), and released its lease (epoch ${String(lease.epoch)}); what it waits for queues it again: an answer, a signal or update, or a timer's job when it is due`
          : `worker ${lease.owner} is stopping: it released the run's lease (epoch ${String(lease.epoch)}) and queued the run for another worker`,
      )
    }
    let beating = false
    const beat = setInterval(() => {
      if (beating) return
      beating = true
      void (async () => {
        const sentAt = performance.now()
        try {
          lease = await store.heartbeatLease(lease, leaseMs)
          guard.renewed(sentAt)
          const request = await cancelRequested(payload.runId)
          if (request !== undefined) handle?.cancel(request.reason, request.by)
        } catch (error) {
          // A connection error leaves the lease as it was: dispatches wait (the guard) until a beat gets through.
          if (LeaseLostError.isInstance(error)) onLost(error)
        } finally {
          beating = false
        }
      })()
    }, Math.max(10, Math.floor(leaseMs / 3)))
    try {
      if (started) {
        handle = await runtime.resume(payload.runId)
      } else {
        if (workflow === undefined) throw new StoreOptionsError(`Run "${payload.runId}" was not queued by enqueueRun: it names no workflow.`)
        const budgets = mergeRunBudgets(options.defaults?.budgets, queued[0]?.budgets ?? undefined)
        handle = await runtime.start(workflow, {
          runId: payload.runId,
          ...(input === undefined || input === null ? {} : { input }),
          ...(budgets === undefined ? {} : { budgets }),
          ...(waited === undefined ? {} : { queued: waited }),
        })
      }
      live.set(payload.runId, handle)
      const running = handle
      const finished = running.done.then(
        () => undefined,
        () => undefined,
      )
      handOvers.set(payload.runId, async () => {
        leave('stop')
        await finished
      })
      // A run that only waits on deferrals for parkAfterMs gives its slot and lease up.
      const onWaiting = (waitingOnly: boolean): void => {
        clearTimeout(parkTimer)
        parkTimer = waitingOnly
          ? setTimeout(() => {
              leave('park')
            }, parkAfterMs)
          : undefined
      }
      const stopListening = running.onWaitingChange(onWaiting)
      if (running.waitingOnly()) onWaiting(true)
      if (stopping) leave('stop')
      const request = await cancelRequested(payload.runId)
      if (request !== undefined) running.cancel(request.reason, request.by)
      let result
      try {
        result = await running.done
      } catch (error) {
        if (!state.lost) throw error
      } finally {
        stopListening()
        clearTimeout(parkTimer)
      }
      if (result !== undefined && result.suspended !== true && !state.lost && options.metrics !== undefined) {
        await recordOutcome(options.metrics, result).catch((error: unknown) => options.onMetricsError?.(payload.runId, error))
      }
      if (result !== undefined && result.suspended !== true && !state.lost) {
        // The run ended: its timers' jobs still to come (a sleep cut short by a cancel, say) would only wake an ended
        // run, which does nothing, on their due date, maybe weeks away. They go now; a failure leaves them harmless.
        await pool
          .query(`select graphile_worker.remove_job(key) from graphile_worker.jobs where key like $1 and locked_at is null`, [`${likeEscaped(payload.runId)}:timer:%`])
          .catch(() => undefined)
      }
      if (result?.suspended === true && !state.lost && state.leaving !== undefined) {
        clearInterval(beat)
        const pending = state.leaving === 'park' ? await runtime.pendingDeferrals(payload.runId) : []
        const open = pending.map((deferral) => deferral.deferredId)
        // A deferral whose deadline applies its onTimeout wakes the run then, as a timer does: the resume applies it.
        const deadlines = pending.flatMap((deferral) => (deferral.onTimeout !== undefined && deferral.expiresAt !== null ? [{ deferredId: deferral.deferredId, dueAt: deferral.expiresAt }] : []))
        const view = state.leaving === 'park' ? (await runtime.get(payload.runId)).view : undefined
        // Its sleep() timers still to fire: each gets a job at its dueAt, so the parked run wakes then.
        const timers = view?.openTimers() ?? []
        // Its waitForSignal() waits: a signal kept after the last one it journaled wakes it, and a timeout is a timer.
        const signalWaits = view?.openSignalWaits() ?? []
        const signalsFrom = (view?.signals().at(-1)?.signalSeq ?? -1) + 1
        // An update kept after the last one it journaled (its process read the mailbox before the update came) wakes it too.
        const updatesFrom = (view?.updates().at(-1)?.updateSeq ?? -1) + 1
        await handOver(lease, state.leaving, { open, timers, signalWaits, signalsFrom, updatesFrom, deadlines })
      }
    } finally {
      clearInterval(beat)
      clearTimeout(parkTimer)
      live.delete(payload.runId)
      handOvers.delete(payload.runId)
      if (!state.lost) await store.releaseLease(lease).catch(() => undefined)
    }
  }

  /**
   * Gives a suspended run up in one transaction: releases its lease and, when
   * stopping (or when an answer came while it was being parked), queues its
   * job again; a parked run with no answer yet becomes `waiting`, and the
   * answer queues it (see putDeferredAnswer). The run row's lock orders this
   * against an answer being kept.
   */
  async function handOver(
    lease: RunLease,
    why: 'park' | 'stop',
    waitsOn: {
      readonly open: readonly string[]
      readonly timers: readonly OpenTimerView[]
      readonly signalWaits?: readonly OpenSignalWaitView[]
      readonly signalsFrom?: number
      readonly updatesFrom?: number
      readonly deadlines?: readonly { readonly deferredId: string; readonly dueAt: string }[]
    },
  ): Promise<void> {
    const { open, timers } = waitsOn
    const signalWaits = waitsOn.signalWaits ?? []
    const client = await pool.connect()
    let broken: Error | undefined
    const onError = (error: Error): void => {
      broken = error
    }
    client.on('error', onError)
    try {
      await client.query('begin')
      await client.query(`select 1 from "${schema}".locus_runs where run_id = $1 for update`, [lease.runId])
      let requeue = why === 'stop'
      if (why === 'park') {
        const answered =
          open.length > 0 &&
          (await client.query(`select 1 from "${schema}".locus_deferred_answers where run_id = $1 and deferred_id = any($2::text[]) limit 1`, [lease.runId, [...open]])).rowCount !== 0
        const cancelled = (await client.query(`select 1 from "${schema}".locus_runs where run_id = $1 and cancel_requested_at is not null`, [lease.runId])).rowCount !== 0
        // A signal kept in the run's mailbox after the last one its journal holds (see keepSignal of @locus/runtime).
        const signalled =
          signalWaits.length > 0 &&
          (
            await client.query(
              `select 1 from "${schema}".locus_deferred_answers where run_id = $1 and case when deferred_id ~ '^signal-[0-9]{1,15}$' then substring(deferred_id from 8)::bigint >= $2 else false end limit 1`,
              [lease.runId, waitsOn.signalsFrom ?? 0],
            )
          ).rowCount !== 0
        // An update kept after the last one its journal holds (see keepUpdate of @locus/runtime): its sender waits for the handler.
        const updated =
          (
            await client.query(
              `select 1 from "${schema}".locus_deferred_answers where run_id = $1 and case when deferred_id ~ '^update-[0-9]{1,15}$' then substring(deferred_id from 8)::bigint >= $2 else false end limit 1`,
              [lease.runId, waitsOn.updatesFrom ?? 0],
            )
          ).rowCount !== 0
        // A run that waits on nothing from outside and on no timer has nothing to wake it: it goes straight back to the queue.
        requeue = answered || signalled || updated || cancelled || (open.length === 0 && timers.length === 0 && signalWaits.length === 0)
        if (!requeue) {
          await client.query(`update "${schema}".locus_runs set status = 'waiting', updated_at = clock_timestamp() where run_id = $1 and status = 'running'`, [lease.runId])
          for (const timer of timers) await client.query(TIMER_JOB_SQL, [RUN_TASK, lease.runId, timer.timerId, timer.dueAt])
          // A signal wait's timeout wakes the run like a timer.
          for (const wait of signalWaits) if (wait.dueAt !== undefined) await client.query(TIMER_JOB_SQL, [RUN_TASK, lease.runId, wait.waitId, wait.dueAt])
          // So does a deferral's deadline with an onTimeout policy.
          for (const deadline of waitsOn.deadlines ?? []) await client.query(TIMER_JOB_SQL, [RUN_TASK, lease.runId, deadline.deferredId, deadline.dueAt])
        }
      }
      const released = await client.query(
        `update "${schema}".locus_leases set owner = null, expires_at = '-infinity', updated_at = clock_timestamp() where run_id = $1 and epoch = $2 and owner = $3`,
        [lease.runId, lease.epoch, lease.owner],
      )
      if (released.rowCount !== 1) {
        // Lost meanwhile: whoever holds the run now owns it.
        await client.query('rollback')
        return
      }
      if (requeue) await client.query(REQUEUE_SQL, [RUN_TASK, lease.runId])
      await client.query('commit')
    } catch (error) {
      if (broken === undefined) await client.query('rollback').catch(() => undefined)
      throw error
    } finally {
      client.removeListener('error', onError)
      client.release(broken)
    }
  }

  /**
   * Records a run's outcome once its execution's `run_end` committed: only
   * the holder whose fenced write of it went through gets here with a row to
   * write (a holder that lost the lease wrote no `run_end`). The row's
   * `started_at` is the run's first start, whichever worker ended it.
   */
  async function recordOutcome(metrics: NonNullable<RunOptions['metrics']>, result: RunResult): Promise<void> {
    const { rows } = await pool.query<{ workflow: string | null; started: string | null; ended: boolean }>(
      `select (select j.line->>'workflow' from "${schema}".locus_journal j where j.run_id = $1 and j.execution_id = $1 and j.line->>'type' = 'run_start' limit 1) as workflow,
         (select j.line->>'ts' from "${schema}".locus_journal j where j.run_id = $1 and j.execution_id = $1 and j.line->>'type' = 'run_start' limit 1) as started,
         exists (select 1 from "${schema}".locus_journal j where j.run_id = $1 and j.execution_id = $2 and j.line->>'type' = 'run_end') as ended`,
      [result.runId, result.executionId],
    )
    const row = rows[0]
    if (row?.ended !== true || row.workflow === null || row.started === null) return
    await recordRunOutcome(metrics, { runId: result.runId, workflow: row.workflow, startedAt: new Date(row.started), disposition: result.disposition, result: result.result, cost: result.cost })
  }

  /** The run's cancel request, if one was made: why, and who asked (`worker` when the request named nobody). */
  async function cancelRequested(runId: string): Promise<{ reason: string; by: string } | undefined> {
    const { rows } = await pool.query<{ requested: boolean; reason: string | null; by: string | null }>(
      `select cancel_requested_at is not null as requested, cancel_reason as reason, cancel_by as by from "${schema}".locus_runs where run_id = $1`,
      [runId],
    )
    const row = rows[0]
    return row?.requested === true ? { reason: row.reason ?? 'cancelled on request', by: row.by ?? 'worker' } : undefined
  }

  const workers = `"${schema}".locus_workers`
  // The worker's own row lasts one lease, like a run's lease, and is renewed as often (every third of it).
  const workerBeatMs = Math.max(10, Math.floor(leaseMs / 3))
  let workerBeatAt = Number.NEGATIVE_INFINITY
  async function beatWorker(): Promise<void> {
    if (poolId === undefined) return
    const at = performance.now()
    await pool.query(
      `insert into ${workers} (worker_id, expires_at) values ($1, clock_timestamp() + $2 * interval '1 millisecond')
       on conflict (worker_id) do update set expires_at = excluded.expires_at`,
      [poolId, leaseMs],
    )
    workerBeatAt = at
  }

  /** Jobs this worker will nudge itself for when they come due, by job id: one timer each. */
  const dueNudges = new Map<string, NodeJS.Timeout>()
  /**
   * graphile-worker finds a job that comes due later (a `sleep()` timer's, a
   * run queued behind a lapsing lease) only at its next poll, a quarter lease
   * away, because its insert notified the workers when it was not due yet.
   * Each sweep looks one sweep ahead and nudges this worker's own pool at the
   * moment each such job comes due, so a parked run wakes on time on every
   * worker that is up, after a takeover too.
   */
  async function nudgeWhenDue(aheadMs: number): Promise<void> {
    if (workerPool === undefined || stopping) return
    const { rows } = await pool.query<{ id: string; ms: string }>(
      `select id::text, (extract(epoch from (run_at - now())) * 1000)::text as ms from graphile_worker.jobs
       where locked_at is null and run_at > now() and run_at <= now() + $1 * interval '1 millisecond' order by run_at limit 256`,
      [aheadMs],
    )
    for (const { id, ms } of rows) {
      if (dueNudges.has(id)) continue
      const timer = setTimeout(
        () => {
          dueNudges.delete(id)
          if (!stopping) workerPool?.nudge(1)
        },
        // A hair past the due time, so the job is due by the database's clock when the worker asks.
        Math.max(0, Math.ceil(Number(ms))) + 2,
      )
      timer.unref()
      dueNudges.set(id, timer)
    }
  }

  async function sweep(): Promise<void> {
    if (performance.now() - workerBeatAt >= workerBeatMs) await beatWorker()
    // Slots freed by a worker that died (its leases lapsed) or missed by a wake: the waiting runs are woken here.
    wakeSoon()
    const [{ rows: dead }, expired] = await Promise.all([
      // Jobs locked by a worker that stopped heartbeating (killed between taking a job and taking its lease, say).
      pool.query<{ locked_by: string }>(
        `select distinct locked_by from graphile_worker.jobs
         where locked_by is not null and locked_at < now() - $1 * interval '1 millisecond'
           and locked_by not in (select worker_id from ${workers} where expires_at > clock_timestamp())`,
        [leaseMs],
      ),
      store.expiredLeases(),
      nudgeWhenDue(sweepMs * 2),
    ])
    const owners = [...new Set([...dead.map((row) => row.locked_by), ...expired.map((lease) => lease.owner).filter((owner): owner is string => owner !== undefined)])]
    if (owners.length === 0) return
    await pool.query('select graphile_worker.force_unlock_workers($1::text[])', [owners])
    for (const lease of expired) {
      // A job still queued keeps its payload (the workflow and input a first start needs); a missing one is re-created.
      await pool.query(`select graphile_worker.add_job($1, $2::json, job_key := $3, job_key_mode := 'unsafe_dedupe')`, [
        RUN_TASK,
        JSON.stringify({ runId: lease.runId }),
        lease.runId,
      ])
    }
    // Neither unlocking a job nor re-adding one whose key exists wakes the workers (graphile-worker
    // notifies on a new row only), so they would find the runs at their next poll. Nudge them on
    // graphile-worker's own channel, in its payload format, so a takeover starts in milliseconds.
    await pool.query(`select pg_notify('jobs:insert', $1)`, [JSON.stringify({ r: Math.random(), count: Math.max(1, expired.length + dead.length) })])
  }

  let poolId: string | undefined
  /** graphile-worker's pool of this worker, to nudge when a job comes due (see nudgeWhenDue). */
  let workerPool: WorkerPool | undefined
  const sweepMs = Math.max(25, Math.min(SWEEP_MS, Math.floor(leaseMs / 4)))
  const events: WorkerEvents = new EventEmitter()
  events.on('pool:create', ({ workerPool: created }) => {
    workerPool = created
    poolId = created.id
    beatWorker().catch(() => undefined)
  })
  const runner: Runner = await withReconnect(
    () =>
      runGraphileWorker({
        pgPool: pool,
        events,
        concurrency,
        noHandleSignals: true,
        pollInterval: Math.max(100, Math.floor(leaseMs / 4)),
        logger: quietLogger(),
        taskList: { [RUN_TASK]: task },
      }),
    Number.POSITIVE_INFINITY,
    waiting('waiting for PostgreSQL to start taking jobs'),
  )
  // graphile-worker reconnects its LISTEN client and retries its job queries by itself; its pool's end is the worker's.
  runner.promise.catch(() => undefined)
  // Says once per outage that the database is out of reach, and once it is back.
  let outage = false
  events.on('pool:listen:error', ({ error }) => {
    if (!outage && isConnectionError(error)) {
      outage = true
      options.onWaiting?.(`lost PostgreSQL (${error instanceof Error ? error.message : String(error)}): no call starts until it is back; retrying with backoff`)
    }
  })
  events.on('pool:listen:success', () => {
    if (outage) options.onWaiting?.('PostgreSQL is back: taking jobs again')
    outage = false
  })
  // A takeover waits for the lease to lapse and then for the next sweep: sweeping on a short fixed
  // interval, not a fraction of the lease, keeps that second wait under SWEEP_MS at any lease. A sweep
  // still running when the next is due (a slow database) is not joined by another.
  let sweeping: Promise<void> | undefined
  const sweeper = setInterval(
    () => {
      sweeping ??= sweep()
        .catch(() => undefined)
        .finally(() => {
          sweeping = undefined
        })
    },
    sweepMs,
  )
  // A session connection for cancel requests, connected again with backoff when it drops; meanwhile heartbeats see the flag.
  let listener: pg.Client | undefined
  let listenTimer: NodeJS.Timeout | undefined
  const listenForCancels = async (attempt: number): Promise<void> => {
    if (stopping) return
    const client = new pg.Client({ connectionString: options.connectionString })
    let retried = false
    const retry = (): void => {
      if (retried) return
      retried = true
      if (listener === client) listener = undefined
      client.end().catch(() => undefined)
      if (!stopping) listenTimer = setTimeout(() => void listenForCancels(attempt + 1), reconnectDelayMs(attempt))
    }
    client.on('error', retry)
    client.on('notification', (message) => {
      const runId = message.payload
      if (message.channel !== CANCEL_CHANNEL || runId === undefined || !live.has(runId)) return
      // The payload is the run id only; why and who asked are on the run row.
      void cancelRequested(runId)
        .catch(() => undefined)
        .then((request) => live.get(runId)?.cancel(request?.reason ?? 'cancelled on request', request?.by ?? 'worker'))
    })
    try {
      await client.connect()
      await client.query(`listen ${CANCEL_CHANNEL}`)
      listener = client
    } catch {
      retry()
    }
  }
  await listenForCancels(1)

  return {
    async stop() {
      stopping = true
      clearInterval(sweeper)
      for (const timer of dueNudges.values()) clearTimeout(timer)
      dueNudges.clear()
      await sweeping
      await waking
      clearTimeout(listenTimer)
      await listener?.end().catch(() => undefined)
      // No new jobs from here; the live runs are handed over while graphile-worker waits for their tasks.
      const stopped = runner.stop()
      await Promise.all([...handOvers.values()].map((handOver) => handOver().catch(() => undefined)))
      await stopped
      // graphile-worker marks a finished job done without awaiting it: give those deletes (of the jobs just
      // handed over) a moment to land before the pool ends, or the jobs would stay locked by this worker.
      const settleBy = performance.now() + leaseMs
      while (poolId !== undefined && performance.now() < settleBy) {
        const { rowCount } = await pool.query('select 1 from graphile_worker.jobs where locked_by = $1 limit 1', [poolId]).catch(() => ({ rowCount: 0 }))
        if (rowCount === 0) break
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      await store.close()
      await pool.end()
    },
  }
}

/**
 * The fenced store, whose root or resume execution records right after its
 * `run_start` who holds the run at which epoch: `lease_acquired`, or
 * `worker_takeover` when the lease replaced an expired one.
 */
function announcing(store: PostgresRunStore, lease: RunLease, leaseMs: number): PostgresRunStore {
  const line: JournalLineInput =
    lease.previousOwner === undefined || lease.previousEpoch === undefined
      ? { type: 'lease_acquired', owner: lease.owner, epoch: lease.epoch, leaseMs }
      : { type: 'worker_takeover', owner: lease.owner, epoch: lease.epoch, previousOwner: lease.previousOwner, previousEpoch: lease.previousEpoch }
  return Object.assign(Object.create(store) as PostgresRunStore, {
    async createExecution(create: CreateExecutionOptions): Promise<ExecutionWriter> {
      const writer = await store.createExecution(create)
      if (create.kind !== 'root' && create.kind !== 'resume') return writer
      let announced = false
      return {
        runId: writer.runId,
        executionId: writer.executionId,
        kind: writer.kind,
        location: writer.location,
        runLocation: writer.runLocation,
        artifacts: writer.artifacts,
        get lastSeq() {
          return writer.lastSeq
        },
        append(input) {
          const written = writer.append(input)
          if (!announced && written.type === 'run_start') {
            announced = true
            writer.append(line)
          }
          return written
        },
        flush: () => writer.flush(),
        close: () => writer.close(),
        beforeDispatch: () => writer.beforeDispatch?.() ?? Promise.resolve(),
      }
    },
  })
}

/**
 * The leased store whose every execution (root, resume, child) holds each call
 * until it may start: its start line committed through the fence, and the
 * lease live by the worker's own reckoning before and after that commit (the
 * last heartbeat that got through was sent less than a lease ago). A worker
 * that was paused past its lease, or that cannot reach the database, starts
 * nothing until a heartbeat succeeds; one whose lease was taken starts nothing
 * at all, and `onLost` cancels its run.
 */
function guarded(store: PostgresRunStore, guard: LeaseGuard, onLost: (error: Error) => void): PostgresRunStore {
  const live = async (): Promise<void> => {
    const waiting = guard.whenLive()
    if (waiting !== undefined) await waiting
  }
  return Object.assign(Object.create(store) as PostgresRunStore, {
    async createExecution(create: CreateExecutionOptions): Promise<ExecutionWriter> {
      const writer = await store.createExecution(create)
      return {
        runId: writer.runId,
        executionId: writer.executionId,
        kind: writer.kind,
        location: writer.location,
        runLocation: writer.runLocation,
        artifacts: writer.artifacts,
        get lastSeq() {
          return writer.lastSeq
        },
        append: (input) => writer.append(input),
        flush: () => writer.flush(),
        close: () => writer.close(),
        async beforeDispatch() {
          try {
            await live()
            await writer.beforeDispatch?.()
            await live()
          } catch (error) {
            if (LeaseLostError.isInstance(error)) onLost(error)
            throw error
          }
        },
      }
    },
  })
}

function quietLogger(): Logger {
  // Errors of a task surface through the run's journal; graphile-worker's own chatter is not wanted on stdout.
  return new Logger(() => (level, message) => {
    if (process.env.LOCUS_WORKER_DEBUG === '1') console.error(`[graphile-worker ${level}] ${message}`)
  })
}
