import { LeaseLostError, RunOwnedError } from '@locus/store'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type PostgresRunStore, createPostgresRunStore } from '../src/index.js'
import { postgresFor } from './postgres-for.js'

const url = postgresFor('PostgreSQL store.claim: set LOCUS_TEST_PG_URL to run it')

if (url !== undefined) {
  describe('store.claim on PostgreSQL is the run lease', () => {
    const schema = `locus_claim_${process.pid}_${Math.random().toString(36).slice(2, 10)}`
    let store: PostgresRunStore
    let n = 0
    const newRun = async (): Promise<string> => {
      const runId = `claim-run-${(n += 1)}`
      await (await store.createExecution({ runId, kind: 'root' })).close()
      return runId
    }

    beforeAll(async () => {
      store = createPostgresRunStore({ connectionString: url, schema, maxConnections: 4 })
      await store.migrate()
    })
    afterAll(async () => {
      await store.close()
    })

    it('takes the lease for this process, refuses a second claim with RUN_OWNED naming the holder, and frees it on release', async () => {
      const runId = await newRun()
      const ownership = await store.claim({ runId, executionId: runId })
      const lease = await store.readLease(runId)
      expect(lease).toMatchObject({ runId, expired: false, owner: expect.stringContaining(`:${process.pid}:`) })
      const refused = await store.claim({ runId, executionId: 'resume-001' }).then(
        () => undefined,
        (error: unknown) => error,
      )
      expect(RunOwnedError.isInstance(refused)).toBe(true)
      expect((refused as Error).message).toContain(lease?.owner ?? '?')
      // A worker's acquireLease is refused the same way: one lease, one owner.
      expect(await store.acquireLease(runId, 'a-worker', 10_000)).toBeUndefined()
      await ownership.release()
      expect((await store.readLease(runId))?.owner).toBeUndefined()
      const again = await store.claim({ runId, executionId: 'resume-001' })
      expect(again.tookOver).toBeUndefined()
      await again.release()
    })

    it('takes over a lease whose holder stopped heartbeating, and names it in tookOver', async () => {
      const runId = await newRun()
      const stale = await store.acquireLease(runId, 'a-dead-worker', 1)
      expect(stale).toBeDefined()
      for (;;) {
        if ((await store.readLease(runId))?.expired === true) break
        await new Promise((resolve) => setTimeout(resolve, 2))
      }
      const ownership = await store.claim({ runId, executionId: 'resume-001' })
      expect(ownership.tookOver).toEqual({ previous: 'a-dead-worker' })
      await ownership.release()
    })

    it('on a store fenced by a lease, answers with that lease while it is current, and with LEASE_LOST once it moved on', async () => {
      const runId = await newRun()
      const lease = await store.acquireLease(runId, 'worker-1', 10_000)
      if (lease === undefined) throw new Error('the lease was not taken')
      const fenced = store.fenced(lease)
      const ownership = await fenced.claim({ runId, executionId: runId })
      await ownership.release()
      // Releasing the fenced claim leaves the worker's lease alone: the worker gives it up itself.
      expect((await store.readLease(runId))?.owner).toBe('worker-1')
      await store.releaseLease(lease)
      await expect(fenced.claim({ runId, executionId: runId })).rejects.toSatisfy((error) => LeaseLostError.isInstance(error))
    })
  })
}
