import {
  JournalClosedError,
  JournalWriteError,
  type JournalLine,
  createLineStamper,
  parseJournalLine,
  validateRunId,
} from '@locus/journal'
import {
  ArtifactExistsError,
  type ArtifactWriter,
  type CreateExecutionOptions,
  ExecutionExistsError,
  type ExecutionInfo,
  LeaseLostError,
  type ExecutionKind,
  type ExecutionRef,
  type ExecutionWriter,
  type ListRunsFilter,
  LiveRows,
  type ListRunRowsFilter,
  type RunRow,
  type RunRowPage,
  checkRowFilter,
  encodeRowCursor,
  newRunRow,
  parseRunRow,
  rowFromLines,
  type Ownership,
  type ReadLinesOptions,
  RunExistsError,
  RunOwnedError,
  type RunInfo,
  RunNotFoundError,
  type RunStore,
  StoreOptionsError,
  type TailOptions,
  allocatedExecutionId,
  validateArtifactKey,
  type IdempotencyRecord,
  validateDeferredId,
  validateIdempotencyKey,
  validateIdempotencyRecord,
  writesInIssueOrder,
  StreamWaiters,
  streamRetentionOf,
} from '@locus/store'
import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import pg from 'pg'
import { ANSWER_CHANNEL, JOURNAL_CHANNEL, STORE_MIGRATIONS, STREAM_CHANNEL } from './migrations.js'
import { createPostgresStreams } from './postgres-streams.js'
import { REQUEUE_SQL, RUN_TASK } from './run-task.js'
import { withReconnect } from './connection-errors.js'
import { postgresScheduleStore } from './postgres-schedule-store.js'

/** Options of {@link createPostgresRunStore}: a connection string, or a pool you own. */
export interface PostgresRunStoreOptions {
  /** A `postgres://` URL. It never appears in error messages. */
  readonly connectionString?: string | undefined
  /** A pool to use instead; the store never ends it. */
  readonly pool?: pg.Pool | undefined
  /** Schema of the tables (created by `migrate()`). Letters, digits and `_`. @default 'public' */
  readonly schema?: string | undefined
  /** Most connections the store's own pool opens. @default 8 */
  readonly maxConnections?: number | undefined
  /** A tail re-reads at least this often even without a notification, in milliseconds. @default 1000 */
  readonly tailPollMs?: number | undefined
  /** Run pending migrations before the first operation. @default true */
  readonly migrate?: boolean | undefined
  /**
   * How long a journal commit keeps retrying, with backoff, while the database
   * cannot be reached (a restart, a failover), before the writer fails. @default 30000
   */
  readonly reconnectMs?: number | undefined
  /** How long a run's token stream is kept after the run ends, in milliseconds. @default 7 days */
  readonly streamRetention?: number | undefined
}

/** What {@link PostgresRunStore.migrate} did. */
export interface StoreMigrationResult {
  readonly applied: readonly number[]
  readonly version: number
}

/** A worker's hold on one run: while `epoch` is the run's current epoch, only this holder's writers can append. */
export interface RunLease {
  readonly runId: string
  readonly owner: string
  readonly epoch: number
  /** When the lease lapses without a heartbeat, in ms since the epoch, by the database's clock. */
  readonly expiresAt: number
  /** The owner whose expired lease this one replaced (a takeover), if any. */
  readonly previousOwner?: string | undefined
  readonly previousEpoch?: number | undefined
}

/** A run's lease as the database holds it now. */
export interface LeaseState {
  readonly runId: string
  /** Undefined when the lease was released. */
  readonly owner: string | undefined
  readonly epoch: number
  readonly expired: boolean
}

/** The PostgreSQL {@link RunStore}, plus what only a database store has. */
export interface PostgresRunStore extends RunStore {
  /** Tells `onKept` at commit when any process keeps an answer, signal or update for the run (`NOTIFY locus_answers`); returns the stop function. */
  watchDeferredAnswers(runId: string, onKept: () => void): () => void
  /**
   * Takes the run's lease for `owner` when nobody holds it or the holder's
   * lease expired, with the epoch one higher than before; undefined when a
   * live lease is held (by anyone, this owner included). Expiry is judged by
   * the database's clock, so workers' clocks do not matter.
   */
  acquireLease(runId: string, owner: string, leaseMs: number): Promise<RunLease | undefined>
  /** Extends the lease while its epoch is current; throws {@link LeaseLostError} once it moved on. */
  heartbeatLease(lease: RunLease, leaseMs: number): Promise<RunLease>
  /** Gives the lease up (the epoch stays, so the next holder gets a higher one); false when it was lost already. */
  releaseLease(lease: RunLease): Promise<boolean>
  /** The run's lease now, or undefined when none was ever taken. */
  readLease(runId: string): Promise<LeaseState | undefined>
  /** Leases whose holder stopped heartbeating: the runs a sweeper may take over. */
  expiredLeases(limit?: number): Promise<LeaseState[]>
  /**
   * This store, but every execution it creates and every line it commits is
   * fenced by the lease: in the same transaction as the insert, the run's
   * epoch must still be `lease.epoch`, or nothing commits and the writer's
   * next `append`, `flush` or `close` throws {@link LeaseLostError}.
   */
  fenced(lease: RunLease): PostgresRunStore
  /** Applies pending migrations; safe to call from several processes at once. */
  migrate(): Promise<StoreMigrationResult>
  /** Stops tails and ends the store's own pool (not a pool it was given). */
  close(): Promise<void>
}

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

function checkLeaseMs(where: string, leaseMs: number): void {
  if (!Number.isSafeInteger(leaseMs) || leaseMs < 1) throw new StoreOptionsError(`${where}: leaseMs must be a whole number of milliseconds of at least 1, not ${String(leaseMs)}.`)
}
const READ_PAGE = 1000

/** How long a claim's lease lasts without a heartbeat; it is renewed every third of that while held. */
const CLAIM_LEASE_MS = 30_000

/**
 * The run store on PostgreSQL: journal lines in `locus_journal` keyed by
 * (run, execution, seq) as `jsonb`, executions and run rows, artifacts. A
 * batch of lines and the run row's status change commit in one transaction,
 * and each commit sends `NOTIFY locus_journal, '<runId>:<seq>'`, so a tail on
 * any machine wakes within milliseconds (it also re-reads every
 * `tailPollMs`, so a missed notification only delays it).
 *
 * A sink's `append` stamps and returns the line at once and commits it in the
 * background, in order; `flush()` resolves when everything appended is
 * committed, and a failed commit is thrown by the next `append`, `flush` or
 * `close`.
 *
 * @example
 * ```ts
 * const store = createPostgresRunStore({ connectionString: process.env.DATABASE_URL })
 * const writer = await store.createExecution({ runId: 'run-1', kind: 'root' })
 * writer.append({ type: 'log', level: 'info', message: 'hello' })
 * await writer.close()
 * await store.close()
 * ```
 */
export function createPostgresRunStore(options: PostgresRunStoreOptions): PostgresRunStore {
  return buildStore(options, undefined)
}

function buildStore(options: PostgresRunStoreOptions, fence: RunLease | undefined): PostgresRunStore {
  const schema = options.schema ?? 'public'
  if (!SCHEMA_NAME.test(schema)) {
    throw new StoreOptionsError(`createPostgresRunStore: schema "${schema}" is not a plain identifier; use letters, digits and _ only.`)
  }
  if (options.pool === undefined && (typeof options.connectionString !== 'string' || options.connectionString.length === 0)) {
    throw new StoreOptionsError('createPostgresRunStore: give a connectionString (postgres://...) or a pool.')
  }
  const tailPollMs = options.tailPollMs ?? 1000
  const reconnectMs = options.reconnectMs ?? 30_000
  if (!Number.isFinite(reconnectMs) || reconnectMs < 0) throw new StoreOptionsError(`createPostgresRunStore: reconnectMs must be a number of milliseconds, 0 or more, not ${String(reconnectMs)}.`)
  const ownsPool = options.pool === undefined
  const pool = options.pool ?? new pg.Pool({ connectionString: options.connectionString, max: options.maxConnections ?? 8 })
  // An idle connection the server ends (a restart, a terminated backend) is replaced at the next query; without
  // a listener, the pool's 'error' event would end the process. A pool passed in is its owner's to watch.
  if (options.pool === undefined) pool.on('error', () => undefined)
  const table = (name: string): string => `"${schema}".${name}`
  const runs = table('locus_runs')
  const executions = table('locus_executions')
  const journal = table('locus_journal')
  const artifactsTable = table('locus_artifacts')
  const leases = table('locus_leases')
  const deferredAnswers = table('locus_deferred_answers')
  const idempotencyKeys = table('locus_idempotency_keys')
  // The summary rows of the runs this store writes; each is persisted after the lines that changed it, behind
  // the fence when leased (a stale worker's row never lands), and never over a newer version.
  const rows = new LiveRows(async (row, version) => {
    await ready()
    const params: unknown[] = [row.runId, JSON.stringify(row), version, row.workflow ?? null]
    if (fence !== undefined) params.push(fence.epoch)
    const fenced = fence === undefined ? '' : ` and exists (select 1 from ${leases} where run_id = $1 and epoch = $5 and owner is not null)`
    await withReconnect(
      () =>
        pool.query(
          `update ${runs} set summary = $2::jsonb, summary_version = $3, workflow = coalesce(workflow, $4)
           where run_id = $1 and (summary_version is null or summary_version < $3)${fenced}`,
          params,
        ),
      reconnectMs,
    )
  })
  /** When expired idempotency keys were last deleted; at most once a minute (of the caller's clock). */
  let keysSweptAt = Number.NEGATIVE_INFINITY

  let migrated: Promise<StoreMigrationResult> | undefined
  // A migration that failed (the database was unreachable) is tried again by the next operation, not kept as its answer.
  const ready = (): Promise<unknown> =>
    options.migrate === false
      ? Promise.resolve()
      : (migrated ??= migrate().catch((error: unknown) => {
          migrated = undefined
          throw error
        }))

  async function migrate(): Promise<StoreMigrationResult> {
    return transaction(async (client) => {
      // Serialises concurrent migrations from several processes.
      await client.query("select pg_advisory_xact_lock(hashtext('locus.store.migrate'))")
      await client.query(`create schema if not exists "${schema}"`)
      await client.query(`create table if not exists ${table('locus_store_migrations')} (
        version integer primary key, name text not null, applied_at timestamptz not null default clock_timestamp())`)
      const { rows } = await client.query<{ version: number }>(`select version from ${table('locus_store_migrations')}`)
      const done = new Set(rows.map((row) => row.version))
      const applied: number[] = []
      for (const migration of STORE_MIGRATIONS) {
        if (done.has(migration.version)) continue
        await client.query(migration.sql.replaceAll('$schema', `"${schema}"`))
        await client.query(`insert into ${table('locus_store_migrations')} (version, name) values ($1, $2)`, [migration.version, migration.name])
        applied.push(migration.version)
      }
      return { applied, version: Math.max(...STORE_MIGRATIONS.map((migration) => migration.version)) }
    })
  }

  async function transaction<T>(body: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await pool.connect()
    // A checked-out client has no error listener of the pool's: a session the server ends while this
    // transaction is open (idle_in_transaction_session_timeout after a SIGSTOP, a restart) would emit
    // an unhandled 'error' and take the process down. The query in flight rejects anyway; the broken
    // client is destroyed on release instead of going back to the pool.
    let lost: Error | undefined
    const onError = (error: Error): void => {
      lost = error
    }
    client.on('error', onError)
    try {
      await client.query('begin')
      const value = await body(client)
      await client.query('commit')
      return value
    } catch (error) {
      if (lost === undefined) await client.query('rollback').catch(() => undefined)
      throw error
    } finally {
      client.removeListener('error', onError)
      client.release(lost)
    }
  }

  /** Throws {@link LeaseLostError} unless the fence's epoch holds the run (a no-op without a fence). */
  async function checkFence(client: pg.PoolClient, runId: string): Promise<void> {
    if (fence === undefined) return
    if (runId !== fence.runId) throw new StoreOptionsError(`A store fenced by the lease of run "${fence.runId}" cannot write run "${runId}".`)
    const { rows } = await client.query<{ epoch: string; owner: string | null }>(`select epoch, owner from ${leases} where run_id = $1 for share`, [runId])
    const row = rows[0]
    if (row === undefined || Number(row.epoch) !== fence.epoch || row.owner === null) {
      throw new LeaseLostError(runId, fence.epoch, row === undefined || row.owner === null ? undefined : Number(row.epoch))
    }
  }

  async function acquireLease(runId: string, owner: string, leaseMs: number): Promise<RunLease | undefined> {
    validateRunId(runId, 'runId')
    if (typeof owner !== 'string' || owner.length === 0) throw new StoreOptionsError('acquireLease: owner must be a non-empty string naming the worker.')
    checkLeaseMs('acquireLease', leaseMs)
    await ready()
    return transaction(async (client) => {
      await client.query(`insert into ${leases} (run_id) values ($1) on conflict do nothing`, [runId])
      const { rows } = await client.query<{ owner: string | null; epoch: string; expired: boolean }>(
        `select owner, epoch, expires_at <= clock_timestamp() as expired from ${leases} where run_id = $1 for update`,
        [runId],
      )
      const before = rows[0]
      if (before === undefined || (before.owner !== null && !before.expired)) return undefined
      const updated = await client.query<{ epoch: string; expires_ms: string }>(
        `update ${leases} set owner = $2, epoch = epoch + 1, expires_at = clock_timestamp() + $3 * interval '1 millisecond', updated_at = clock_timestamp()
         where run_id = $1 returning epoch, floor(extract(epoch from expires_at) * 1000)::bigint as expires_ms`,
        [runId, owner, leaseMs],
      )
      const row = updated.rows[0]
      if (row === undefined) return undefined
      return {
        runId,
        owner,
        epoch: Number(row.epoch),
        expiresAt: Number(row.expires_ms),
        ...(before.owner === null ? {} : { previousOwner: before.owner, previousEpoch: Number(before.epoch) }),
      }
    })
  }

  async function heartbeatLease(lease: RunLease, leaseMs: number): Promise<RunLease> {
    checkLeaseMs('heartbeatLease', leaseMs)
    await ready()
    const { rows } = await pool.query<{ expires_ms: string }>(
      `update ${leases} set expires_at = clock_timestamp() + $4 * interval '1 millisecond', updated_at = clock_timestamp()
       where run_id = $1 and epoch = $2 and owner = $3 returning floor(extract(epoch from expires_at) * 1000)::bigint as expires_ms`,
      [lease.runId, lease.epoch, lease.owner, leaseMs],
    )
    const row = rows[0]
    if (row === undefined) throw new LeaseLostError(lease.runId, lease.epoch, (await readLease(lease.runId))?.epoch)
    return { ...lease, expiresAt: Number(row.expires_ms) }
  }

  async function releaseLease(lease: RunLease): Promise<boolean> {
    await ready()
    const { rowCount } = await pool.query(
      `update ${leases} set owner = null, expires_at = '-infinity', updated_at = clock_timestamp() where run_id = $1 and epoch = $2 and owner = $3`,
      [lease.runId, lease.epoch, lease.owner],
    )
    return rowCount === 1
  }

  async function readLease(runId: string): Promise<LeaseState | undefined> {
    await ready()
    const { rows } = await pool.query<{ owner: string | null; epoch: string; expired: boolean }>(
      `select owner, epoch, expires_at <= clock_timestamp() as expired from ${leases} where run_id = $1`,
      [runId],
    )
    const row = rows[0]
    return row === undefined ? undefined : { runId, owner: row.owner ?? undefined, epoch: Number(row.epoch), expired: row.expired }
  }

  async function expiredLeases(limit = 100): Promise<LeaseState[]> {
    await ready()
    const { rows } = await pool.query<{ run_id: string; owner: string; epoch: string }>(
      `select run_id, owner, epoch from ${leases} where owner is not null and expires_at <= clock_timestamp() order by expires_at limit $1`,
      [limit],
    )
    return rows.map((row) => ({ runId: row.run_id, owner: row.owner, epoch: Number(row.epoch), expired: true }))
  }

  /** Queues a parked run's job again, in the caller's transaction, and marks it running. */
  async function requeueParked(client: pg.PoolClient, runId: string): Promise<void> {
    const { rows } = await client.query<{ present: boolean }>(`select to_regproc('graphile_worker.add_job') is not null as present`)
    if (rows[0]?.present !== true) {
      throw new StoreOptionsError(
        `Run "${runId}" is waiting, parked by a worker, but this database has no graphile_worker schema to queue it on: run migrateDispatch() (or start a worker) against it. The answer was not kept.`,
      )
    }
    await client.query(`update ${runs} set status = 'running', updated_at = clock_timestamp() where run_id = $1`, [runId])
    await client.query(REQUEUE_SQL, [RUN_TASK, runId])
  }

  /**
   * Ownership on PostgreSQL is the run's lease: a fenced store (a worker's,
   * which took and heartbeats the lease itself) answers with that lease; any
   * other store takes the lease for this process, keeps it alive while held,
   * and gives it up on release. A live lease held by anyone is `RUN_OWNED`.
   */
  async function claim(ref: ExecutionRef): Promise<Ownership> {
    await requireRun(ref.runId)
    if (fence !== undefined) {
      if (ref.runId !== fence.runId) throw new StoreOptionsError(`A store fenced by the lease of run "${fence.runId}" cannot claim run "${ref.runId}".`)
      const state = await readLease(ref.runId)
      if (state?.owner === undefined || state.epoch !== fence.epoch) throw new LeaseLostError(ref.runId, fence.epoch, state?.owner === undefined ? undefined : state.epoch)
      return { runId: ref.runId, setExecutionId: () => undefined, release: () => Promise.resolve() }
    }
    const owner = `${hostname()}:${process.pid}:${randomBytes(6).toString('hex')}`
    const lease = await acquireLease(ref.runId, owner, CLAIM_LEASE_MS)
    if (lease === undefined) {
      const state = await readLease(ref.runId)
      throw new RunOwnedError(
        ref.runId,
        `Run "${ref.runId}" is owned by ${state?.owner ?? 'another worker'} (lease epoch ${state?.epoch ?? '?'}); only one execution continues a run at a time: wait for it to end, or stop it. A lease whose holder died lapses within ${CLAIM_LEASE_MS / 1000} s and is taken over then.`,
        { location: `postgres:${schema}/${ref.runId}` },
      )
    }
    let held = lease
    const heartbeat = setInterval(() => {
      heartbeatLease(held, CLAIM_LEASE_MS).then(
        (renewed) => {
          held = renewed
        },
        () => {
          clearInterval(heartbeat)
        },
      )
    }, CLAIM_LEASE_MS / 3)
    heartbeat.unref()
    let released = false
    return {
      runId: ref.runId,
      ...(lease.previousOwner === undefined ? {} : { tookOver: { previous: lease.previousOwner } }),
      setExecutionId: () => undefined,
      async release() {
        if (released) return
        released = true
        clearInterval(heartbeat)
        await releaseLease(held)
      },
    }
  }

  async function readIdempotencyKey(key: string, now: number): Promise<IdempotencyRecord | undefined> {
    validateIdempotencyKey(key)
    await ready()
    const { rows } = await pool.query<{ fingerprint: string; run_id: string; expires_at_ms: string }>(
      `select fingerprint, run_id, expires_at_ms from ${idempotencyKeys} where key = $1 and expires_at_ms > $2`,
      [key, now],
    )
    const row = rows[0]
    return row === undefined ? undefined : { fingerprint: row.fingerprint, runId: row.run_id, expiresAt: Number(row.expires_at_ms) }
  }

  async function requireRun(runId: string): Promise<void> {
    await ready()
    const { rowCount } = await pool.query(`select 1 from ${runs} where run_id = $1`, [runId])
    if (rowCount === 0) throw new RunNotFoundError(runId, 'the PostgreSQL store')
  }

  async function requireExecution(ref: ExecutionRef): Promise<void> {
    await ready()
    const { rowCount } = await pool.query(`select 1 from ${executions} where run_id = $1 and execution_id = $2`, [ref.runId, ref.executionId])
    if (rowCount === 0) throw new RunNotFoundError(`${ref.runId}/${ref.executionId}`, 'the PostgreSQL store')
  }

  // ---- One LISTEN connection per store, shared by every tail and every watcher of kept answers.
  const wakers = new Map<string, Set<() => void>>()
  const answerWatchers = new Map<string, Set<() => void>>()
  let listener: Promise<pg.Client> | undefined
  let closed = false
  const streamWaiters = new StreamWaiters()
  const streams = createPostgresStreams({
    pool,
    table,
    ready,
    transaction,
    checkFence,
    listen: () => listen(),
    waiters: streamWaiters,
    retentionMs: streamRetentionOf('createPostgresRunStore', options.streamRetention),
    pollMs: tailPollMs,
  })

  function listen(): Promise<pg.Client> {
    listener ??= (async () => {
      const client = new pg.Client(options.pool === undefined ? { connectionString: options.connectionString } : pool.options)
      await client.connect()
      client.on('notification', (message) => {
        if (message.channel === ANSWER_CHANNEL) {
          for (const onKept of answerWatchers.get(message.payload ?? '') ?? []) onKept()
          return
        }
        const runId = message.payload?.slice(0, message.payload.lastIndexOf(':'))
        if (runId === undefined) return
        if (message.channel === STREAM_CHANNEL) streamWaiters.wake(runId)
        else for (const wake of wakers.get(runId) ?? []) wake()
      })
      client.on('error', () => {
        // A lost LISTEN connection only slows tails to their poll interval; the next tail reconnects.
        listener = undefined
      })
      await client.query(`listen ${JOURNAL_CHANNEL}`)
      await client.query(`listen ${STREAM_CHANNEL}`)
      await client.query(`listen ${ANSWER_CHANNEL}`)
      return client
    })()
    listener.catch(() => {
      listener = undefined
    })
    return listener
  }

  function waitForWake(runId: string, signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve) => {
      let set = wakers.get(runId)
      if (set === undefined) wakers.set(runId, (set = new Set()))
      const done = (): void => {
        clearTimeout(timer)
        set.delete(done)
        if (set.size === 0) wakers.delete(runId)
        signal?.removeEventListener('abort', done)
        resolve()
      }
      const timer = setTimeout(done, tailPollMs)
      set.add(done)
      signal?.addEventListener('abort', done, { once: true })
    })
  }

  async function createExecution(create: CreateExecutionOptions): Promise<ExecutionWriter> {
    const runId = validateRunId(create.runId, 'runId')
    await ready()
    const executionId = await transaction(async (client) => {
      if (create.kind === 'root') {
        if (create.executionId !== undefined && create.executionId !== runId) {
          throw new StoreOptionsError(`createExecution: a root execution's id is its run id ("${runId}"), not "${create.executionId}".`)
        }
        const inserted = await client.query(`insert into ${runs} (run_id) values ($1) on conflict do nothing`, [runId])
        if (fence === undefined) {
          if (inserted.rowCount === 0) throw new RunExistsError(runId, `PostgreSQL run ${runId}`)
          await client.query(`insert into ${executions} (run_id, execution_id, kind) values ($1, $1, 'root')`, [runId])
          return runId
        }
        // Under a lease the run row may exist already (queued by enqueueRun); the root execution may not.
        const root = await client.query(`insert into ${executions} (run_id, execution_id, kind) values ($1, $1, 'root') on conflict do nothing`, [runId])
        await checkFence(client, runId)
        // A root left without a line by a holder that died before its run_start is this holder's to write.
        if (root.rowCount === 0 && (await client.query(`select 1 from ${journal} where run_id = $1 and execution_id = $1 limit 1`, [runId])).rowCount !== 0) {
          throw new RunExistsError(runId, `PostgreSQL run ${runId}`)
        }
        return runId
      }
      // The run row's lock serialises allocation of resume and replay ids.
      const run = await client.query(`select 1 from ${runs} where run_id = $1 for update`, [runId])
      if (run.rowCount === 0) throw new RunNotFoundError(runId, 'the PostgreSQL store')
      await checkFence(client, runId)
      if ((create.kind === 'resume' || create.kind === 'replay') && create.executionId === undefined) {
        const kind = create.kind
        const { rows } = await client.query<{ n: string }>(`select count(*) as n from ${executions} where run_id = $1 and kind = $2`, [runId, kind])
        for (let n = Number(rows[0]?.n ?? 0) + 1; ; n += 1) {
          const id = allocatedExecutionId(kind, n)
          const inserted = await client.query(`insert into ${executions} (run_id, execution_id, kind) values ($1, $2, $3) on conflict do nothing`, [runId, id, kind])
          if (inserted.rowCount === 1) return id
        }
      }
      if (create.executionId === undefined) throw new StoreOptionsError(`createExecution: a ${create.kind} execution needs its executionId.`)
      const id = validateRunId(create.executionId, 'executionId')
      const inserted = await client.query(`insert into ${executions} (run_id, execution_id, kind) values ($1, $2, $3) on conflict do nothing`, [runId, id, create.kind])
      if (inserted.rowCount === 0) throw new ExecutionExistsError(runId, id)
      return id
    })
    await openRow(runId, create.kind)
    return openSink(runId, executionId, create)
  }

  async function listExecutionsOf(runId: string): Promise<ExecutionInfo[]> {
    await requireRun(runId)
    const { rows: found } = await pool.query<{ execution_id: string; kind: ExecutionKind }>(
      `select execution_id, kind from ${executions} where run_id = $1 order by (kind = 'root') desc, position`,
      [runId],
    )
    return found.map((row): ExecutionInfo => ({ runId, executionId: row.execution_id, kind: row.kind, location: `postgres:${schema}/${runId}/${row.execution_id}` }))
  }

  /** A row read back from `locus_runs`; its createdAt is the row's own, so cursors agree with the listing order. */
  function rowOf(found: { run_id: string; summary: unknown; created_ms: number; workflow: string | null }): RunRow | undefined {
    const createdAt = found.created_ms
    // A run enqueued for a worker has its row before any execution wrote one: queued, with the workflow it was given.
    if (found.summary === null) return { ...newRunRow(found.run_id, found.run_id, createdAt), workflow: found.workflow ?? undefined }
    const row = parseRunRow(found.summary)
    return row === undefined ? undefined : { ...row, createdAt }
  }

  /** The lines a run's row folds: every root, resume and child execution's (replays never move a row). */
  async function rowSources(runId: string): Promise<{ executionId: string; kind: ExecutionKind; lines: JournalLine[] }[]> {
    const sources: { executionId: string; kind: ExecutionKind; lines: JournalLine[] }[] = []
    for (const info of await listExecutionsOf(runId)) {
      if (info.kind === 'replay') continue
      const lines: JournalLine[] = []
      for await (const line of readLines(info)) lines.push(line)
      sources.push({ executionId: info.executionId, kind: info.kind, lines })
    }
    return sources
  }

  async function readRunRow(runId: string): Promise<RunRow | undefined> {
    const live = rows.get(runId)
    if (live !== undefined) return live
    await ready()
    const { rows: found } = await pool.query<{ run_id: string; summary: unknown; created_ms: number; workflow: string | null }>(
      `select run_id, summary, workflow, (extract(epoch from created_at) * 1000)::double precision as created_ms from ${runs} where run_id = $1`,
      [runId],
    )
    const first = found[0]
    if (first === undefined) return undefined
    const row = first.summary === null ? undefined : rowOf(first)
    if (row !== undefined) return row
    // A run from before rows (or whose row was never written): its journals say what it is.
    const executionsLines = await rowSources(runId)
    if (executionsLines.every((execution) => execution.lines.length === 0)) return rowOf({ ...first, summary: null })
    return rowFromLines(runId, first.created_ms, executionsLines)
  }

  async function listRunRows(filter: ListRunRowsFilter = {}): Promise<RunRowPage> {
    const { limit, after } = checkRowFilter(filter)
    await ready()
    const { rows: found } = await pool.query<{ run_id: string; summary: unknown; created_ms: number; workflow: string | null }>(
      `select run_id, summary, workflow, (extract(epoch from created_at) * 1000)::double precision as created_ms from ${runs}
       where ($1::text is null or coalesce(summary->>'workflow', workflow) = $1)
         and ($2::text is null or coalesce(summary->>'status', 'queued') = $2)
         and ($3::double precision is null or (extract(epoch from created_at) * 1000)::double precision >= $3)
         and ($4::double precision is null or (extract(epoch from created_at) * 1000)::double precision < $4
              or ((extract(epoch from created_at) * 1000)::double precision = $4 and run_id < $5))
       order by created_at desc, run_id desc limit $6`,
      [filter.workflow ?? null, filter.status ?? null, filter.since ?? null, after?.createdAt ?? null, after?.runId ?? null, limit + 1],
    )
    const page = found.slice(0, limit).flatMap((row) => rowOf(row) ?? [])
    const last = page.at(-1)
    return { rows: page, nextCursor: found.length > limit && last !== undefined ? encodeRowCursor(last) : undefined }
  }

  /** Starts (root) or rebuilds from the journals (any other execution not written here already) the run's summary row. */
  async function openRow(runId: string, kind: ExecutionKind): Promise<void> {
    if (kind !== 'root' && rows.holds(runId)) {
      rows.open(runId, newRunRow(runId, runId, 0))
      return
    }
    const { rows: found } = await pool.query<{ created_ms: number; summary_version: string | null }>(
      `select (extract(epoch from created_at) * 1000)::double precision as created_ms, summary_version from ${runs} where run_id = $1`,
      [runId],
    )
    const createdAt = found[0]?.created_ms ?? Date.now()
    const version = Number(found[0]?.summary_version ?? 0)
    if (kind === 'root') {
      rows.open(runId, newRunRow(runId, runId, createdAt), version)
      return
    }
    const executionsLines = await rowSources(runId)
    rows.open(runId, rowFromLines(runId, createdAt, executionsLines), version)
  }

  function openSink(runId: string, executionId: string, create: CreateExecutionOptions): ExecutionWriter {
    const now = create.now
    const stamper = createLineStamper({ runId, executionId, now: now === undefined ? undefined : () => new Date(now()) })
    const location = `postgres:${schema}/${runId}/${executionId}`
    let pending: JournalLine[] = []
    let running: Promise<void> | undefined
    let failure: Error | undefined
    let sinkClosed = false

    /**
     * One batch in one statement (one round trip, atomic in autocommit): the lines, the run row's
     * status on `run_end`, and the NOTIFY, all behind the fence when the store is leased. A batch
     * whose connection dropped is sent again (the session may have ended before or after its commit,
     * so a retry skips rows this writer already committed; only this writer writes its execution).
     */
    async function commit(batch: readonly JournalLine[]): Promise<void> {
      const end = batch.findLast((line) => line.type === 'run_end')
      const last = batch.at(-1)
      const ended = end?.type === 'run_end'
      const params: unknown[] = [runId, executionId, JSON.stringify(batch), JOURNAL_CHANNEL, `${runId}:${String(last?.seq ?? 0)}`]
      if (fence !== undefined) params.push(fence.epoch)
      if (ended) params.push(end.disposition)
      const fenceCte = fence === undefined ? '' : `fence as (select 1 from ${leases} where run_id = $1 and epoch = $6 and owner is not null for share), `
      // The run row's status changes with the batch that holds run_end, only then (the other batches skip the update).
      const endCte = ended ? `, upd as (update ${runs} set status = $${String(params.length)}, updated_at = clock_timestamp() where run_id = $1 and exists (select 1 from ins))` : ''
      const sql = `with ${fenceCte}ins as (
          insert into ${journal} (run_id, execution_id, seq, line)
          select $1, $2, (value->>'seq')::bigint, value from jsonb_array_elements($3::jsonb)${fence === undefined ? '' : ', fence'}
          $ON_CONFLICT returning seq)${endCte}
        select count(*)::int as inserted, case when count(*) > 0 then pg_notify($4, $5) end as notified from ins`
      await withReconnect(async (attempt) => {
        // A named statement: each connection plans it once, not at every commit.
        const lenient = attempt > 1
        const { rows } = await pool.query<{ inserted: number }>({
          name: `locus-commit-${schema}-${fence === undefined ? 'free' : 'fenced'}-${ended ? 'end' : 'lines'}-${lenient ? 'retry' : 'first'}`,
          text: sql.replace('$ON_CONFLICT', lenient ? 'on conflict (run_id, execution_id, seq) do nothing' : ''),
          values: params,
        })
        const inserted = rows[0]?.inserted ?? 0
        if (inserted === batch.length) return
        if (fence !== undefined && inserted === 0) {
          // Nothing inserted under the fence: the epoch moved on (or, on a retry, the batch is all there already).
          const { rows: present } = await pool.query<{ n: number }>(`select count(*)::int as n from ${journal} where run_id = $1 and execution_id = $2 and seq = any($3::bigint[])`, [
            runId,
            executionId,
            batch.map((line) => line.seq),
          ])
          if (attempt > 1 && present[0]?.n === batch.length) return
          const lease = await pool.query<{ epoch: string; owner: string | null }>(`select epoch, owner from ${leases} where run_id = $1`, [runId])
          const row = lease.rows[0]
          throw new LeaseLostError(runId, fence.epoch, row === undefined || row.owner === null ? undefined : Number(row.epoch))
        }
        // A retry found part of the batch committed by the attempt whose session dropped: the rest is in now.
        if (attempt > 1) return
        throw new Error(`committed ${String(inserted)} of ${String(batch.length)} journal lines of ${location}`)
      }, reconnectMs)
    }

    async function pump(): Promise<void> {
      while (pending.length > 0) {
        const batch = pending
        pending = []
        await commit(batch)
      }
    }

    function kick(): void {
      if (running !== undefined || failure !== undefined) return
      // The batch starts once the current turn of the event loop is done: a call's end and the next call's
      // start, appended in one turn, then share one commit (and one round trip before the next dispatch).
      running = new Promise<void>((resolve) => setImmediate(resolve))
        .then(pump)
        .catch((error: unknown) => {
          failure = LeaseLostError.isInstance(error) ? error : new JournalWriteError(location, 'commit', error)
          pending = []
        })
        .finally(() => {
          running = undefined
          if (pending.length > 0) kick()
        })
    }

    async function settled(): Promise<void> {
      while (running !== undefined) await running
      if (failure !== undefined) throw failure
    }

    return {
      runId,
      executionId,
      kind: create.kind,
      location,
      runLocation: `postgres:${schema}/${runId}`,
      artifacts: artifactsOf({ runId, executionId }),
      get lastSeq() {
        return stamper.lastSeq
      },
      append(input) {
        if (sinkClosed) throw new JournalClosedError(location, input.type)
        if (failure !== undefined) throw failure
        const line = stamper.stamp(input)
        pending.push(line)
        kick()
        rows.fold(runId, line, create.kind)
        create.onLine?.(line)
        return line
      },
      flush: async () => {
        await settled()
        await rows.settled(runId)
      },
      // Under a lease, a call's start line commits through the fence before the call is dispatched; a writer
      // with no lease has no ownership to check, and keeps group commit's pace (nothing to wait for).
      ...(fence === undefined ? {} : { beforeDispatch: () => settled() }),
      async close() {
        if (sinkClosed) return
        sinkClosed = true
        await settled()
        await rows.close(runId)
      },
    }
  }

  function artifactsOf(ref: ExecutionRef): ArtifactWriter {
    // Two upserts of one key on two pool connections can commit in either order; the later write issued must be the one kept.
    const inOrder = writesInIssueOrder()
    const writeArtifact = async (key: string, content: string, exclusive: boolean): Promise<void> => {
      await ready()
      if (exclusive) {
        const inserted = await pool.query(`insert into ${artifactsTable} (run_id, execution_id, key, content) values ($1, $2, $3, $4) on conflict do nothing`, [
          ref.runId,
          ref.executionId,
          key,
          content,
        ])
        if (inserted.rowCount === 0) throw new ArtifactExistsError(key)
        return
      }
      await pool.query(
        `insert into ${artifactsTable} (run_id, execution_id, key, content) values ($1, $2, $3, $4)
         on conflict (run_id, execution_id, key) do update set content = excluded.content, updated_at = clock_timestamp()`,
        [ref.runId, ref.executionId, key, content],
      )
    }
    return {
      async write(key, content, writeOptions) {
        validateArtifactKey(key)
        await inOrder(key, () => writeArtifact(key, content, writeOptions?.exclusive === true))
      },
      async read(key) {
        validateArtifactKey(key)
        await ready()
        const { rows } = await pool.query<{ content: string }>(`select content from ${artifactsTable} where run_id = $1 and execution_id = $2 and key = $3`, [
          ref.runId,
          ref.executionId,
          key,
        ])
        return rows[0]?.content
      },
    }
  }

  async function page(ref: ExecutionRef, afterSeq: number, limit: number): Promise<JournalLine[]> {
    const { rows } = await pool.query<{ line: unknown }>(
      `select line from ${journal} where run_id = $1 and execution_id = $2 and seq > $3 order by seq limit $4`,
      [ref.runId, ref.executionId, afterSeq, limit],
    )
    return rows.map((row) => parseJournalLine(row.line))
  }

  async function* readLines(ref: ExecutionRef, read: ReadLinesOptions = {}): AsyncGenerator<JournalLine> {
    await requireExecution(ref)
    let afterSeq = read.afterSeq ?? -1
    let left = read.limit ?? Number.POSITIVE_INFINITY
    while (left > 0) {
      const lines = await page(ref, afterSeq, Math.min(READ_PAGE, left))
      for (const line of lines) {
        yield line
        afterSeq = line.seq
        left -= 1
      }
      if (lines.length < READ_PAGE) return
    }
  }

  async function* tail(ref: ExecutionRef, tailOptions: TailOptions = {}): AsyncGenerator<JournalLine> {
    await requireExecution(ref)
    await listen().catch(() => undefined)
    let afterSeq = tailOptions.afterSeq ?? -1
    let left = tailOptions.limit ?? Number.POSITIVE_INFINITY
    const signal = tailOptions.signal
    while (left > 0 && signal?.aborted !== true && !closed) {
      // Register for a wake before reading, so a commit between the read and the wait is not missed.
      const woken = waitForWake(ref.runId, signal)
      const lines = await page(ref, afterSeq, Math.min(READ_PAGE, left))
      for (const line of lines) {
        yield line
        afterSeq = line.seq
        left -= 1
        if (left <= 0 || line.type === 'run_end') return
      }
      if (lines.length === 0) await woken
    }
  }

  return {
    kind: 'postgres',
    schedules: postgresScheduleStore(pool, table, ready),
    migrate: () => (migrated = migrate()),
    acquireLease,
    heartbeatLease,
    releaseLease,
    readLease,
    expiredLeases,
    fenced(lease) {
      if (fence !== undefined) throw new StoreOptionsError('fenced: this store is fenced already; fence the store it came from.')
      return buildStore({ ...options, pool, migrate: false }, lease)
    },
    createExecution,
    claim,
    async hasRun(runId) {
      await ready()
      const { rowCount } = await pool.query(`select 1 from ${runs} where run_id = $1`, [runId])
      return rowCount === 1
    },
    listExecutions: listExecutionsOf,
    readRunRow,
    listRunRows,
    async listRuns(filter: ListRunsFilter = {}) {
      await ready()
      const { rows } = await pool.query<{ run_id: string; created_ms: string }>(
        `select run_id, floor(extract(epoch from created_at) * 1000)::bigint as created_ms from ${runs}
         where $1::double precision is null or created_at >= to_timestamp($1::double precision / 1000)
         order by created_at desc, run_id desc limit $2`,
        [filter.since ?? null, filter.limit ?? null],
      )
      return rows.map((row): RunInfo => ({ runId: row.run_id, createdAt: Number(row.created_ms), location: `postgres:${schema}/${row.run_id}` }))
    },
    readLines,
    tail,
    streams,
    async readArtifact(ref, key) {
      await requireExecution(ref)
      return artifactsOf(ref).read(key)
    },
    async putDeferredAnswer(runId, deferredId, answer) {
      validateDeferredId(deferredId)
      await requireRun(runId)
      return transaction(async (client) => {
        // The run row's lock orders this against a worker parking the run: either the worker sees the
        // answer and queues the run itself, or this sees the run `waiting` and queues it here.
        const run = await client.query<{ status: string }>(`select status from ${runs} where run_id = $1 for update`, [runId])
        const status = run.rows[0]?.status
        if (status === undefined) throw new RunNotFoundError(runId, 'the PostgreSQL store')
        // Text, not jsonb: the answer comes back byte for byte, so a repeat compares equal to the first.
        const { rows } = await client.query<{ answer: string; stored: boolean }>(
          `with put as (insert into ${deferredAnswers} (run_id, deferred_id, answer) values ($1, $2, $3) on conflict do nothing returning answer)
           select answer, true as stored from put
           union all select answer, false from ${deferredAnswers} where run_id = $1 and deferred_id = $2 and not exists (select 1 from put)`,
          [runId, deferredId, answer],
        )
        const row = rows[0]
        // Inserted and read in one statement: a row is always there, unless the run was deleted meanwhile.
        if (row === undefined) throw new RunNotFoundError(runId, 'the PostgreSQL store')
        // A parked run (a worker released it while it waited) goes back in the queue with its answer.
        // An audit record (a rejected update, `audit-` ids) is no answer: the run never reads it, so it wakes nothing.
        if (status === 'waiting' && !deferredId.startsWith('audit-')) await requeueParked(client, runId)
        // The execution that holds the run, on whichever machine, hears of it at commit instead of at its next look.
        if (row.stored && !deferredId.startsWith('audit-')) await client.query('select pg_notify($1, $2)', [ANSWER_CHANNEL, runId])
        return { stored: row.stored, answer: row.answer }
      })
    },
    async withdrawDeferredAnswer(runId, deferredId, answer) {
      validateDeferredId(deferredId)
      await ready()
      const { rowCount } = await pool.query(`delete from ${deferredAnswers} where run_id = $1 and deferred_id = $2 and answer = $3`, [runId, deferredId, answer])
      return rowCount === 1
    },
    watchDeferredAnswers(runId, onKept) {
      let watchers = answerWatchers.get(runId)
      if (watchers === undefined) {
        watchers = new Set()
        answerWatchers.set(runId, watchers)
      }
      watchers.add(onKept)
      // A LISTEN connection that cannot be had leaves the reader to its own looks.
      if (!closed) void listen().catch(() => undefined)
      return () => {
        const current = answerWatchers.get(runId)
        current?.delete(onKept)
        if (current?.size === 0) answerWatchers.delete(runId)
      }
    },
    async readDeferredAnswers(runId, ids) {
      await ready()
      const wanted = ids === undefined ? null : [...ids]
      const { rows } = await pool.query<{ deferred_id: string; answer: string }>(
        `select deferred_id, answer from ${deferredAnswers} where run_id = $1 and ($2::text[] is null or deferred_id = any($2::text[]))`,
        [runId, wanted],
      )
      return new Map(rows.map((row) => [row.deferred_id, row.answer]))
    },
    async putIdempotencyKey(key, record, now) {
      const checked = validateIdempotencyRecord(key, record)
      await ready()
      if (now - keysSweptAt >= 60_000) {
        keysSweptAt = now
        await pool.query(`delete from ${idempotencyKeys} where expires_at_ms <= $1`, [now])
      }
      for (;;) {
        // Inserted, or replacing a key expired at `now`; otherwise the kept record is read back.
        const { rowCount } = await pool.query(
          `insert into ${idempotencyKeys} as kept (key, fingerprint, run_id, expires_at_ms) values ($1, $2, $3, $4)
           on conflict (key) do update set fingerprint = excluded.fingerprint, run_id = excluded.run_id, expires_at_ms = excluded.expires_at_ms
             where kept.expires_at_ms <= $5`,
          [key, checked.fingerprint, checked.runId, checked.expiresAt, now],
        )
        if ((rowCount ?? 0) > 0) return { stored: true, record: checked }
        const kept = await readIdempotencyKey(key, now)
        // Gone between the two statements (released meanwhile): put it again.
        if (kept !== undefined) return { stored: false, record: kept }
      }
    },
    readIdempotencyKey,
    async releaseIdempotencyKey(key, runId) {
      validateIdempotencyKey(key)
      await ready()
      const { rowCount } = await pool.query(`delete from ${idempotencyKeys} where key = $1 and run_id = $2`, [key, runId])
      return (rowCount ?? 0) > 0
    },
    async close() {
      closed = true
      for (const set of wakers.values()) for (const wake of set) wake()
      streamWaiters.wakeAll()
      const client = await listener?.catch(() => undefined)
      listener = undefined
      await client?.end().catch(() => undefined)
      if (ownsPool) await pool.end()
    },
  }
}
