import {
  RunNotFoundError,
  type RunStreams,
  type StreamRead,
  type StreamRecord,
  type StreamWaiters,
  readBounds,
  validateStreamRecordInput,
  waitForRecords,
} from '@locus/store'
import type pg from 'pg'
import { STREAM_CHANNEL } from './migrations.js'

/** What the PostgreSQL streams need of their store. */
export interface PostgresStreamsContext {
  readonly pool: pg.Pool
  readonly table: (name: string) => string
  readonly ready: () => Promise<unknown>
  readonly transaction: <T>(body: (client: pg.PoolClient) => Promise<T>) => Promise<T>
  /** Throws LeaseLostError unless the store's fence (if any) still holds the run. */
  readonly checkFence: (client: pg.PoolClient, runId: string) => Promise<void>
  /** Starts the store's LISTEN connection (it listens on {@link STREAM_CHANNEL} too). */
  readonly listen: () => Promise<unknown>
  readonly waiters: StreamWaiters
  readonly retentionMs: number
  readonly pollMs: number
}

/**
 * The PostgreSQL {@link RunStreams}: `locus_streams` holds each run's next
 * offset (its row lock orders appends), the first offset kept and when the
 * run ended; `locus_stream_records` the records as `jsonb`. Each append
 * commits in one transaction, fenced by the store's lease when it has one,
 * and sends `NOTIFY locus_stream, '<runId>:<next>'`.
 */
export function createPostgresStreams(context: PostgresStreamsContext): RunStreams {
  const { pool, table, ready, transaction, checkFence, waiters } = context
  const streams = table('locus_streams')
  const records = table('locus_stream_records')
  const runs = table('locus_runs')

  async function read(runId: string, after: number, limit: number): Promise<StreamRead> {
    await ready()
    const head = await pool.query<{ next_offset: string; first_kept: string; ended_at_ms: string | null }>(
      `select next_offset, first_kept, ended_at_ms from ${streams} where run_id = $1`,
      [runId],
    )
    const row = head.rows[0]
    if (row === undefined) return { records: [], firstKept: 0, next: 0 }
    const { rows } = await pool.query<{ record: StreamRecord }>(
      `select record from ${records} where run_id = $1 and stream_offset > $2 order by stream_offset limit $3`,
      [runId, after, limit],
    )
    const next = Number(row.next_offset)
    return {
      records: rows.map((kept) => kept.record),
      firstKept: Number(row.first_kept),
      // Records committed after the head was read are not hidden by it.
      next: Math.max(next, (rows.at(-1)?.record.offset ?? -1) + 1),
      ...(row.ended_at_ms === null ? {} : { endedAt: Number(row.ended_at_ms) }),
    }
  }

  return {
    async append(runId, inputs) {
      const checked = inputs.map(validateStreamRecordInput)
      await ready()
      return transaction(async (client) => {
        await checkFence(client, runId)
        const run = await client.query(`select 1 from ${runs} where run_id = $1`, [runId])
        if (run.rowCount === 0) throw new RunNotFoundError(runId, 'the PostgreSQL store')
        await client.query(`insert into ${streams} (run_id) values ($1) on conflict do nothing`, [runId])
        const { rows } = await client.query<{ next_offset: string }>(
          `update ${streams} set next_offset = next_offset + $2 where run_id = $1 returning next_offset`,
          [runId, checked.length],
        )
        const next = Number(rows[0]?.next_offset ?? checked.length)
        const first = next - checked.length
        const kept = checked.map((input, index): StreamRecord => ({ offset: first + index, ...input }))
        if (kept.length > 0) {
          await client.query(
            `insert into ${records} (run_id, stream_offset, record) select $1, o, r from unnest($2::bigint[], $3::jsonb[]) as t(o, r)`,
            [runId, kept.map((record) => record.offset), kept.map((record) => JSON.stringify(record))],
          )
          await client.query('select pg_notify($1, $2)', [STREAM_CHANNEL, `${runId}:${String(next)}`])
        }
        return kept
      }).then((kept) => {
        waiters.wake(runId)
        return kept
      })
    },
    async read(runId, options) {
      const { after, limit } = readBounds(options)
      return read(runId, after, limit)
    },
    async wait(runId, after, options) {
      await context.listen().catch(() => undefined)
      return waitForRecords(() => read(runId, after, 1), after, (ms) => waiters.next(runId, ms, options?.signal), options, context.pollMs)
    },
    async end(runId, endedAt) {
      await ready()
      await pool.query(
        `insert into ${streams} (run_id, ended_at_ms) select $1, $2 where exists (select 1 from ${runs} where run_id = $1)
         on conflict (run_id) do update set ended_at_ms = coalesce(${streams}.ended_at_ms, excluded.ended_at_ms)`,
        [runId, Math.floor(endedAt)],
      )
      waiters.wake(runId)
    },
    async prune(now) {
      await ready()
      return transaction(async (client) => {
        const { rows } = await client.query<{ run_id: string }>(
          `update ${streams} set first_kept = next_offset where ended_at_ms is not null and ended_at_ms + $1 <= $2 and first_kept < next_offset returning run_id`,
          [context.retentionMs, Math.floor(now)],
        )
        if (rows.length === 0) return { runs: 0, records: 0 }
        const deleted = await client.query(`delete from ${records} where run_id = any($1::text[])`, [rows.map((row) => row.run_id)])
        return { runs: rows.length, records: deleted.rowCount ?? 0 }
      })
    },
  }
}
