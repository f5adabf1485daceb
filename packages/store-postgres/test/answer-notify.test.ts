// Kept answers, signals and updates wake the execution that waits for them on
// PostgreSQL at commit (NOTIFY locus_answers), not at its next look at the
// mailbox: a sender on another machine reaches a live run as fast as one in
// its own process.
import pg from 'pg'
import { createRuntime, defineWorkflow } from '@locus/runtime'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { createPostgresRunStore } from '../src/index.js'
import { until } from './pg-test-database.js'
import { postgresFor } from './postgres-for.js'

const url = postgresFor('PostgreSQL answer notifications: set LOCUS_TEST_PG_URL to run them')

if (url !== undefined) {
  const schema = `locus_notify_${String(process.pid)}_${Math.random().toString(36).slice(2, 8)}`
  const stores: ReturnType<typeof createPostgresRunStore>[] = []
  /** A store of its own, as another process on the same database has. */
  const storeOf = (): ReturnType<typeof createPostgresRunStore> => {
    const store = createPostgresRunStore({ connectionString: url, schema, maxConnections: 4 })
    stores.push(store)
    return store
  }
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()))
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    await client.query(`drop schema if exists "${schema}" cascade`)
    await client.end()
  })

  describe('watchDeferredAnswers on PostgreSQL', () => {
    it('tells a watcher in one store that another store kept something for the run, and stops when asked', async () => {
      const watcher = storeOf()
      const sender = storeOf()
      const execution = await sender.createExecution({ runId: 'notify-1', kind: 'root' })
      execution.append({ type: 'run_start', workflow: 'w', input: {}, options: {} })
      await execution.close()
      let calls = 0
      const stop = watcher.watchDeferredAnswers('notify-1', () => {
        calls += 1
      })
      // The watcher's LISTEN connection may still be opening: keep answering until it hears one.
      let answered = 0
      await until('the watcher to hear a kept answer', async () => {
        await sender.putDeferredAnswer('notify-1', `d-${String(answered)}`, '{"kind":"resolved","result":1}')
        answered += 1
        return calls > 0 ? true : undefined
      }, 10_000, 50)
      stop()
      expect(calls).toBeGreaterThan(0)
    })
  })

  describe('a live run on PostgreSQL', () => {
    it('gets a signal and an update sent through another store with no look at its mailbox on its own schedule', async () => {
      const waiter = defineWorkflow({
        name: 'waiter',
        signals: { go: z.number() },
        updates: { bump: { input: z.number(), output: z.number() } },
        async run({ waitForSignal, onUpdate }) {
          let total = 0
          onUpdate('bump', (n) => (total += n as number))
          const got = await waitForSignal('go')
          return { got, total }
        },
      })
      const admin = new pg.Client({ connectionString: url })
      await admin.connect()
      // Connections whose last statement was the LISTEN on answers, finished: each store's listener ends on it.
      const listening = async (): Promise<number> =>
        (await admin.query<{ count: number }>("select count(*)::int as count from pg_stat_activity where datname = current_database() and query = 'listen locus_answers' and state = 'idle'")).rows[0]?.count ?? 0
      const before = await listening()
      const executing = createRuntime({ workflows: [waiter], store: storeOf() })
      const sending = createRuntime({ workflows: [waiter], store: storeOf() })
      const handle = await executing.start('waiter')
      await until('the wait', async () => ((handle.view()?.openSignalWaits().length ?? 0) > 0 ? true : undefined), 10_000)
      // The executing store's LISTEN (its mailbox watcher asked for it) is in place before the mailbox's own looks stop.
      await until('the executing store to listen', async () => ((await listening()) > before ? true : undefined), 10_000)
      await admin.end()
      vi.useFakeTimers({ toFake: ['setInterval'] })
      try {
        expect(await sending.update(handle.runId, 'bump', 4, undefined, { waitMs: 10_000 })).toMatchObject({ ok: true, status: 'completed', result: 4 })
        expect(await sending.signal(handle.runId, 'go', 7)).toMatchObject({ ok: true, status: 'stored' })
        expect((await handle.done).result).toEqual({ got: 7, total: 4 })
      } finally {
        vi.useRealTimers()
      }
    }, 30_000)
  })
}
