import type { FlowKey, QueueSnapshot, QueuedInfo, QueuedReason } from '@locus/runtime'
import pg from 'pg'
import type { RunLease } from './postgres-run-store.js'

/**
 * Flow control on PostgreSQL: concurrency limits, fair turns between keys
 * and priority, for every worker sharing the database.
 *
 * - A run's keys are rows of `locus_run_keys` (its first key, `lane`, is the
 *   one it takes turns by). A key's slots in use are the running runs of that
 *   key holding a lease, even one past its expiry (its holder may renew it, or
 *   a takeover resumes the run), so a parked run (its lease released) holds none.
 * - Turns: each lane has a `last_rank`; a queued run gets
 *   `max(virtual time, last_rank of its lane) + 1/weight` (start-time fair
 *   queueing), and its graphile-worker job's `priority` is that rank, so
 *   workers fetch the lanes' runs in turn. The virtual time is the rank of the
 *   last run admitted.
 * - Admission, under one advisory lock: the run that starts on a lane's turn
 *   is that lane's best waiting run (highest priority, then earliest queued),
 *   so first-come order within a key and priority holds whichever job a
 *   worker fetched; if that run's keys are full, the job is put back (a
 *   successful job: no attempt spent) with its rank, to run again when a slot
 *   frees (`wakeWaiting`) or after {@link PARK_MS}.
 */

/** The advisory lock every admission takes: admissions are serialized, so two workers never both take a key's last slot. */
const FLOW_LOCK = 0x10c05_f10

/** How long a put-back job sleeps before it looks again by itself; a freed slot wakes it sooner. */
export const PARK_MS = 5_000

/** Ranks past this are shifted back toward 0, so job priorities stay in graphile-worker's smallint. */
const RENORMALIZE_AT = 20_000

const MAX_JOB_PRIORITY = 32_767

export const jobPriorityOf = (rank: number): number => Math.min(MAX_JOB_PRIORITY, Math.max(1, Math.floor(rank)))

/**
 * Records a queued run's keys and gives it its turn: returns the graphile-worker
 * job priority. Runs inside the enqueue's transaction. A run with no keys takes
 * turns on the lane of runs without a key.
 */
export async function recordFlow(client: pg.ClientBase, schema: string, runId: string, keys: readonly FlowKey[], priority: number): Promise<number> {
  await client.query('select pg_advisory_xact_lock($1)', [FLOW_LOCK])
  const lane = keys[0]?.key ?? ''
  const weight = keys[0]?.weight ?? 1
  const { rows } = await client.query<{ rank: number | string }>(
    `with v as (select virtual_time from "${schema}".locus_flow_clock where id),
     up as (
       insert into "${schema}".locus_flow_lanes as l (key, last_rank) values ($1, (select virtual_time from v) + $2)
       on conflict (key) do update set last_rank = greatest(l.last_rank, (select virtual_time from v)) + $2
       returning last_rank
     )
     select last_rank as rank from up`,
    [lane, 1 / weight],
  )
  const rank = Number(rows[0]?.rank ?? 1)
  await client.query(`update "${schema}".locus_runs set priority = $2, flow_rank = $3 where run_id = $1`, [runId, priority, rank])
  for (const [index, key] of keys.entries()) {
    await client.query(`insert into "${schema}".locus_run_keys (run_id, key, lim, lane) values ($1, $2, $3, $4) on conflict do nothing`, [runId, key.key, key.limit ?? null, index === 0])
  }
  return jobPriorityOf(rank)
}

/** What {@link admit} decided for a fetched job. */
export type Admission =
  /** No flow control applies: the caller takes the run's lease as before. */
  | { readonly kind: 'free' }
  /** The run to start (this job's, or the better one of its lane) under this lease; `queued` when it waited. */
  | { readonly kind: 'leased'; readonly runId: string; readonly lease: RunLease; readonly queued: QueuedInfo | undefined }
  /** The run's keys are full (or its lane's best run's are): the job was put back. */
  | { readonly kind: 'parked' }
  /** The run has ended (completed, failed or cancelled) and nothing resumed it: the job does nothing, and no lease is taken. */
  | { readonly kind: 'ended' }

interface FlowRow {
  readonly keyed: boolean
  readonly lane: string | null
  readonly rank: number | null
  readonly admitted: boolean
  readonly status: string
}

/**
 * Decides, under the flow lock, what a fetched job of `runId` starts. The
 * lease is taken in the same transaction as the count of the keys' slots, so
 * no two workers take a key's last slot.
 */
export async function admit(client: pg.ClientBase, schema: string, job: { readonly runId: string; readonly owner: string; readonly leaseMs: number; readonly task: string }): Promise<Admission> {
  const { runId, owner, leaseMs, task } = job
  const runs = `"${schema}".locus_runs`
  const keys = `"${schema}".locus_run_keys`
  const leases = `"${schema}".locus_leases`
  await client.query('begin')
  try {
    const { rows } = await client.query<FlowRow>(
      `select exists (select 1 from ${keys} k where k.run_id = r.run_id) as keyed,
         (select k.key from ${keys} k where k.run_id = r.run_id and k.lane) as lane, r.flow_rank as rank, r.admitted_at is not null as admitted, r.status
       from ${runs} r where r.run_id = $1`,
      [runId],
    )
    const own = rows[0]
    // An ended run's job (one delivered again after its run_end, or the job of a lane's run another worker started
    // and finished meanwhile) does nothing. Taking its lease first, even briefly, would hold one of its keys' slots.
    if (own !== undefined && own.status !== 'running' && own.status !== 'waiting') {
      await client.query('commit')
      return { kind: 'ended' }
    }
    if (own === undefined || !own.keyed || own.status !== 'running') {
      await client.query('commit')
      return { kind: 'free' }
    }
    await client.query('select pg_advisory_xact_lock($1)', [FLOW_LOCK])
    // On its lane's turn, a run not yet started gives way to its lane's best waiting run (priority, then first come).
    let chosen = runId
    if (!own.admitted && own.lane !== null) {
      const best = await client.query<{ run_id: string }>(
        `select r.run_id from ${keys} k join ${runs} r on r.run_id = k.run_id
         where k.key = $1 and k.lane and r.admitted_at is null and r.status = 'running'
         order by r.priority desc, r.created_at, r.run_id limit 1`,
        [own.lane],
      )
      chosen = best.rows[0]?.run_id ?? runId
    }
    // Full when a key with a limit has that many other running runs holding a lease. A lease past its expiry still
    // holds its slot while its run is running: its holder may be late with a heartbeat (and renew it, nobody having
    // taken it), or dead (and a takeover resumes the run in that slot). Only a release, a park or the run's end frees it.
    const full = await client.query<{ key: string }>(
      `select k.key from ${keys} k where k.run_id = $1 and k.lim is not null
         and (select count(*) from ${keys} o join ${leases} l on l.run_id = o.run_id join ${runs} r on r.run_id = o.run_id
              where o.key = k.key and o.run_id <> $1 and l.owner is not null and r.status = 'running') >= k.lim`,
      [chosen],
    )
    if (full.rows.length > 0) {
      // A full key is what holds the run back now, whatever turn it gave up before: the reason says so.
      await client.query(`update ${runs} set queued_reason = 'concurrency' where run_id = any($1::text[]) and admitted_at is null`, [[runId, chosen]])
      await putBack(client, task, runId, own.rank, `clock_timestamp() + ${String(PARK_MS)} * interval '1 millisecond'`)
      await client.query('commit')
      return { kind: 'parked' }
    }
    const lease = await takeLease(client, leases, chosen, owner, leaseMs)
    if (lease === undefined) {
      // A live holder has the run (a takeover in flight): not flow control's business.
      await client.query('commit')
      return { kind: 'free' }
    }
    if (chosen !== runId) {
      // This job's turn goes to the lane's better run; this run takes that run's place in the queue.
      const other = await client.query<{ rank: number | null }>(`select flow_rank as rank from ${runs} where run_id = $1`, [chosen])
      const theirRank = other.rows[0]?.rank ?? own.rank
      await client.query(`update ${runs} set flow_rank = $2, queued_reason = coalesce(queued_reason, 'priority') where run_id = $1`, [runId, theirRank])
      await client.query(`update ${runs} set flow_rank = $2 where run_id = $1`, [chosen, own.rank])
      await client.query('delete from graphile_worker._private_jobs where key = $1 and locked_at is null', [chosen])
      await putBack(client, task, runId, theirRank, 'clock_timestamp()')
    }
    const admitted = await client.query<{ rank: number | null; reason: QueuedReason | null; waited_ms: string; first: boolean; keys: string[] }>(
      `update ${runs} r set admitted_at = coalesce(r.admitted_at, clock_timestamp())
       from (select admitted_at is null as first from ${runs} where run_id = $1) before
       where r.run_id = $1
       returning r.flow_rank as rank, r.queued_reason as reason, floor(extract(epoch from (r.admitted_at - r.created_at)) * 1000)::bigint as waited_ms, before.first,
         array(select key from ${keys} where run_id = $1 order by lane desc, key) as keys`,
      [chosen],
    )
    const row = admitted.rows[0]
    if (row?.rank !== null && row?.rank !== undefined && row.first) {
      await client.query(`update "${schema}".locus_flow_clock set virtual_time = greatest(virtual_time, $1) where id`, [row.rank])
      await renormalize(client, schema)
    }
    await client.query('commit')
    const queued = row?.first === true && row.reason !== null ? { keys: row.keys, reason: row.reason, waitedMs: Math.max(0, Number(row.waited_ms)) } : undefined
    return { kind: 'leased', runId: chosen, lease, queued }
  } catch (error) {
    await client.query('rollback').catch(() => undefined)
    throw error
  }
}

/** Queues the run's job again (a locked one gets a fresh one behind it) with its turn's priority, to run at `runAt` (SQL). */
async function putBack(client: pg.ClientBase, task: string, runId: string, rank: number | null, runAt: string): Promise<void> {
  await client.query(`select graphile_worker.add_job($1, json_build_object('runId', $2::text), job_key := $2::text, job_key_mode := 'replace', priority := $3::int, run_at := ${runAt})`, [
    task,
    runId,
    rank === null ? 0 : jobPriorityOf(rank),
  ])
}

/** Takes the run's lease when it is free or expired, in the caller's transaction (the same rules as the store's acquireLease). */
async function takeLease(client: pg.ClientBase, leases: string, runId: string, owner: string, leaseMs: number): Promise<RunLease | undefined> {
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
}

/** Shifts every rank back by the virtual time once it grows large, keeping job priorities in range; under the flow lock. */
async function renormalize(client: pg.ClientBase, schema: string): Promise<void> {
  const { rows } = await client.query<{ v: number | string }>(`select virtual_time as v from "${schema}".locus_flow_clock where id`)
  const shift = Math.floor(Number(rows[0]?.v ?? 0))
  if (shift < RENORMALIZE_AT) return
  await client.query(`update "${schema}".locus_flow_clock set virtual_time = virtual_time - $1 where id`, [shift])
  await client.query(`update "${schema}".locus_flow_lanes set last_rank = greatest(last_rank - $1, 0)`, [shift])
  await client.query(`update "${schema}".locus_runs set flow_rank = flow_rank - $1 where flow_rank is not null and admitted_at is null`, [shift])
  await client.query(
    `update graphile_worker._private_jobs j set priority = greatest(1, least(${String(MAX_JOB_PRIORITY)}, floor(r.flow_rank)::int))
     from "${schema}".locus_runs r where j.key = r.run_id and r.flow_rank is not null and r.admitted_at is null and j.locked_at is null`,
  )
}

/**
 * Wakes put-back jobs where slots are free: for each key with a limit, as
 * many of its waiting runs as it has free slots (resumes first, then
 * priority, then first come) get their job due now. Returns how many it woke.
 */
export async function wakeWaiting(client: pg.ClientBase | pg.Pool, schema: string): Promise<number> {
  const { rowCount } = await client.query(
    `with waiting as (
       select k.key, k.lim, r.run_id, r.admitted_at, r.priority, r.created_at
       from "${schema}".locus_run_keys k join "${schema}".locus_runs r on r.run_id = k.run_id
       where r.status = 'running' and k.lim is not null
         and not exists (select 1 from "${schema}".locus_leases l where l.run_id = r.run_id and l.owner is not null)
     ),
     used as (
       select k.key, count(*) as n from "${schema}".locus_run_keys k join "${schema}".locus_leases l on l.run_id = k.run_id join "${schema}".locus_runs r on r.run_id = k.run_id
       where l.owner is not null and r.status = 'running' and k.key in (select key from waiting) group by k.key
     ),
     ranked as (
       select w.run_id, w.lim - coalesce(u.n, 0) as free,
         row_number() over (partition by w.key order by (w.admitted_at is null), w.priority desc, w.created_at, w.run_id) as place
       from waiting w left join used u on u.key = w.key
     )
     update graphile_worker._private_jobs j set run_at = clock_timestamp()
     from ranked where ranked.place <= ranked.free and j.key = ranked.run_id and j.locked_at is null and j.run_at > clock_timestamp()`,
  )
  const woke = rowCount ?? 0
  // Updating a job's run_at wakes no worker (graphile-worker notifies on inserts): nudge them on its channel.
  if (woke > 0) await client.query(`select pg_notify('jobs:insert', $1)`, [JSON.stringify({ r: Math.random(), count: woke })])
  return woke
}

/** Per key: runs holding a slot, runs waiting to start or resume, and the oldest wait. */
export async function queueSnapshot(client: pg.ClientBase | pg.Pool, schema: string): Promise<QueueSnapshot[]> {
  const { rows } = await client.query<{ key: string; running: string; waiting: string; oldest_ms: string | null }>(
    `select k.key,
       count(*) filter (where l.owner is not null and r.status = 'running') as running,
       count(*) filter (where r.status = 'running' and r.admitted_at is null and not coalesce(l.owner is not null, false)) as waiting,
       floor(extract(epoch from clock_timestamp() - min(r.created_at) filter (where r.status = 'running' and r.admitted_at is null and not coalesce(l.owner is not null, false))) * 1000)::bigint as oldest_ms
     from "${schema}".locus_run_keys k join "${schema}".locus_runs r on r.run_id = k.run_id left join "${schema}".locus_leases l on l.run_id = k.run_id
     where r.status in ('running', 'waiting')
     group by k.key order by k.key`,
  )
  return rows.map((row) => ({ key: row.key, running: Number(row.running), waiting: Number(row.waiting), oldestWaitMs: row.oldest_ms === null ? 0 : Math.max(0, Number(row.oldest_ms)) }))
}

/**
 * {@link queueSnapshot} over a connection of its own, closed after: what
 * `locus queues --database-url` reads.
 */
export async function readQueues(connectionString: string, schema = 'public'): Promise<QueueSnapshot[]> {
  const pool = new pg.Pool({ connectionString, max: 1 })
  try {
    return await queueSnapshot(pool, schema)
  } finally {
    await pool.end()
  }
}
