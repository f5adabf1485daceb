import { LeaseLostError, StoreOptionsError } from '@locus/store'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type PostgresRunStore, createPostgresRunStore } from '../src/index.js'
import { postgresFor } from './postgres-for.js'

const url = postgresFor('PostgreSQL leases: set LOCUS_TEST_PG_URL to run them')

async function sql<T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query<T>(text, values)).rows
  } finally {
    await client.end()
  }
}

/** Waits until the database's clock passes a lease's expiry (leases here last a few milliseconds). */
async function untilExpired(store: PostgresRunStore, runId: string): Promise<void> {
  for (;;) {
    const state = await store.readLease(runId)
    if (state?.expired === true) return
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
}

if (url !== undefined) {
  describe('run leases with epoch fencing', () => {
    const schema = `locus_lease_${process.pid}_${Math.random().toString(36).slice(2, 10)}`
    let store: PostgresRunStore
    let n = 0
    const nextRun = (): string => `lease-run-${(n += 1)}`

    beforeAll(async () => {
      store = createPostgresRunStore({ connectionString: url, schema, maxConnections: 6 })
      await store.migrate()
    })
    afterAll(async () => {
      await store.close()
      await sql(`drop schema if exists "${schema}" cascade`)
    })

    it('gives a free run to one owner at a time, and a higher epoch at every acquisition', async () => {
      const runId = nextRun()
      const first = await store.acquireLease(runId, 'worker-a', 60_000)
      expect(first).toMatchObject({ runId, owner: 'worker-a', epoch: 1 })
      expect(first?.previousOwner).toBeUndefined()
      expect(await store.acquireLease(runId, 'worker-b', 60_000)).toBeUndefined()
      expect(await store.acquireLease(runId, 'worker-a', 60_000)).toBeUndefined()
      if (first === undefined) throw new Error('unreachable')
      const extended = await store.heartbeatLease(first, 120_000)
      expect(extended.expiresAt).toBeGreaterThan(first.expiresAt)
      expect(await store.releaseLease(extended)).toBe(true)
      expect(await store.readLease(runId)).toMatchObject({ owner: undefined, epoch: 1 })
      const second = await store.acquireLease(runId, 'worker-b', 60_000)
      // A released lease is no takeover: nobody's work was cut short.
      expect(second).toMatchObject({ owner: 'worker-b', epoch: 2 })
      expect(second?.previousOwner).toBeUndefined()
    })

    it('lets another owner take an expired lease, and the old holder can neither heartbeat nor release it', async () => {
      const runId = nextRun()
      const old = await store.acquireLease(runId, 'worker-a', 5)
      if (old === undefined) throw new Error('no lease')
      await untilExpired(store, runId)
      expect((await store.expiredLeases()).map((lease) => lease.runId)).toContain(runId)
      const taken = await store.acquireLease(runId, 'worker-b', 60_000)
      expect(taken).toMatchObject({ owner: 'worker-b', epoch: 2, previousOwner: 'worker-a', previousEpoch: 1 })
      expect((await store.expiredLeases()).map((lease) => lease.runId)).not.toContain(runId)
      const lost = await store.heartbeatLease(old, 60_000).catch((error: unknown) => error)
      expect(LeaseLostError.isInstance(lost)).toBe(true)
      expect(lost).toMatchObject({ code: 'LEASE_LOST', epoch: 1, currentEpoch: 2 })
      expect(await store.releaseLease(old)).toBe(false)
      expect(await store.readLease(runId)).toMatchObject({ owner: 'worker-b', epoch: 2, expired: false })
    })

    it('refuses the appends of a paused writer whose epoch went stale, and tells it at its next write', async () => {
      const runId = nextRun()
      const leaseA = await store.acquireLease(runId, 'worker-a', 5)
      if (leaseA === undefined) throw new Error('no lease')
      const writerA = await store.fenced(leaseA).createExecution({ runId, kind: 'root' })
      writerA.append({ type: 'lease_acquired', owner: 'worker-a', epoch: leaseA.epoch, leaseMs: 5 })
      writerA.append({ type: 'log', level: 'info', message: 'a before the pause' })
      await writerA.flush()

      // Worker A stops (as under SIGSTOP) past its lease; worker B takes the run over.
      await untilExpired(store, runId)
      const leaseB = await store.acquireLease(runId, 'worker-b', 60_000)
      if (leaseB === undefined) throw new Error('no takeover')
      const writerB = await store.fenced(leaseB).createExecution({ runId, kind: 'resume' })
      writerB.append({ type: 'worker_takeover', owner: 'worker-b', epoch: leaseB.epoch, previousOwner: 'worker-a', previousEpoch: leaseA.epoch })
      await writerB.flush()

      // A wakes and writes: the line is stamped, but the commit is fenced off.
      writerA.append({ type: 'log', level: 'info', message: 'a after the pause' })
      const flushed = await writerA.flush().catch((error: unknown) => error)
      expect(LeaseLostError.isInstance(flushed)).toBe(true)
      expect(() => writerA.append({ type: 'log', level: 'info', message: 'again' })).toThrow(LeaseLostError)
      // A cannot open a new execution either.
      await expect(store.fenced(leaseA).createExecution({ runId, kind: 'resume' })).rejects.toThrow(LeaseLostError)

      writerB.append({ type: 'log', level: 'info', message: 'b goes on' })
      await writerB.close()
      const rows = await sql<{ execution_id: string; type: string; message: string | null }>(
        `select execution_id, line->>'type' as type, line->>'message' as message from "${schema}".locus_journal where run_id = $1 order by execution_id, seq`,
        [runId],
      )
      expect(rows.filter((row) => row.execution_id === runId).map((row) => row.message ?? row.type)).toEqual(['lease_acquired', 'a before the pause'])
      expect(rows.filter((row) => row.execution_id !== runId).map((row) => row.message ?? row.type)).toEqual(['worker_takeover', 'b goes on'])
      expect(await sql(`select 1 from "${schema}".locus_executions where run_id = $1`, [runId])).toHaveLength(2)
    })

    it('holds a takeover until an in-flight fenced commit ends, so the two never interleave', async () => {
      const runId = nextRun()
      const leaseA = await store.acquireLease(runId, 'worker-a', 5)
      if (leaseA === undefined) throw new Error('no lease')
      const writerA = await store.fenced(leaseA).createExecution({ runId, kind: 'root' })
      await untilExpired(store, runId)
      // Many commits race one takeover: every line A committed precedes the takeover, none follows it.
      for (let index = 0; index < 50; index += 1) writerA.append({ type: 'log', level: 'info', message: `a-${index}` })
      const [taken, flushed] = await Promise.all([store.acquireLease(runId, 'worker-b', 60_000), writerA.flush().then(() => 'ok', (error: unknown) => error)])
      expect(taken?.epoch).toBe(2)
      const committed = await sql(`select 1 from "${schema}".locus_journal where run_id = $1`, [runId])
      if (flushed === 'ok') expect(committed).toHaveLength(50)
      else expect(LeaseLostError.isInstance(flushed)).toBe(true)
      // Whatever committed, nothing more can.
      await expect(
        (async () => {
          writerA.append({ type: 'log', level: 'info', message: 'late' })
          await writerA.flush()
        })(),
      ).rejects.toThrow(LeaseLostError)
      expect(await sql(`select 1 from "${schema}".locus_journal where run_id = $1 and line->>'message' = 'late'`, [runId])).toHaveLength(0)
    })

    it('refuses a writer whose lease was released, and fenced writes to another run', async () => {
      const runId = nextRun()
      const lease = await store.acquireLease(runId, 'worker-a', 60_000)
      if (lease === undefined) throw new Error('no lease')
      const fenced = store.fenced(lease)
      const writer = await fenced.createExecution({ runId, kind: 'root' })
      await store.releaseLease(lease)
      writer.append({ type: 'log', level: 'info', message: 'after release' })
      await expect(writer.flush()).rejects.toThrow(LeaseLostError)
      await expect(fenced.createExecution({ runId: nextRun(), kind: 'root' })).rejects.toThrow(StoreOptionsError)
    })

    it('survives the server ending its session mid-transaction: the write rejects, the process stays up, the next write works', async () => {
      const runId = nextRun()
      expect(await store.acquireLease(runId, 'worker-a', 60_000)).toBeDefined()
      // Another session holds the lease row, so the store's next lease transaction waits on it.
      const holder = new pg.Client({ connectionString: url })
      await holder.connect()
      try {
        await holder.query('begin')
        await holder.query(`select 1 from "${schema}".locus_leases where run_id = $1 for update`, [runId])
        const blocked = store.acquireLease(runId, 'worker-b', 60_000)
        const settled = blocked.then(
          () => 'resolved',
          (error: unknown) => (error as Error).message,
        )
        let pid: number | undefined
        while (pid === undefined) {
          const rows = await sql<{ pid: number }>(
            "select pid from pg_stat_activity where wait_event_type = 'Lock' and query like $1 and pid <> pg_backend_pid()",
            [`%"${schema}".locus_leases%for update%`],
          )
          pid = rows[0]?.pid
          if (pid === undefined) await new Promise((resolve) => setTimeout(resolve, 5))
        }
        // As idle_in_transaction_session_timeout or an administrator would: the session ends under the store.
        await sql('select pg_terminate_backend($1)', [pid])
        expect(await settled).toMatch(/terminat/i)
        await holder.query('rollback')
      } finally {
        await holder.end()
      }
      // Give a late 'error' event of the dead connection time to surface; vitest fails the file on an unhandled one.
      await new Promise((resolve) => setTimeout(resolve, 50))
      expect((await store.readLease(runId))?.owner).toBe('worker-a')
    })

    it('says what is wrong with bad lease options', async () => {
      await expect(store.acquireLease(nextRun(), 'worker-a', 0)).rejects.toThrow(/leaseMs must be a whole number/)
      await expect(store.acquireLease(nextRun(), '', 1000)).rejects.toThrow(/owner must be a non-empty string/)
      await expect(store.acquireLease('bad id with spaces', 'worker-a', 1000)).rejects.toThrow()
    })
  })
}
