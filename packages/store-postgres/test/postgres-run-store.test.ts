import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { runStoreContract } from '@locus/store/testing'
import { STORE_MIGRATIONS, createPostgresRunStore } from '../src/index.js'
import { postgresFor } from './postgres-for.js'

const url = postgresFor('PostgreSQL run store: set LOCUS_TEST_PG_URL to run it')

function uniqueSchema(): string {
  return `locus_store_${process.pid}_${Math.random().toString(36).slice(2, 10)}`
}

async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`drop schema if exists "${schema}" cascade`)
  } finally {
    await client.end()
  }
}

if (url !== undefined) {
  runStoreContract('postgres', () => {
    const schema = uniqueSchema()
    const store = createPostgresRunStore({ connectionString: url, schema, tailPollMs: 200, maxConnections: 4 })
    return Promise.resolve({
      store,
      cleanup: async () => {
        await store.close()
        await dropSchema(schema)
      },
    })
  })

  describe('createPostgresRunStore', () => {
    it('migrates once, idempotently, even when several stores migrate at once', async () => {
      const schema = uniqueSchema()
      const stores = Array.from({ length: 3 }, () => createPostgresRunStore({ connectionString: url, schema, migrate: false }))
      try {
        const results = await Promise.all(stores.map((store) => store.migrate()))
        expect(results.map((result) => result.applied.length).sort()).toEqual([0, 0, STORE_MIGRATIONS.length])
        expect((await stores[0]?.migrate())?.applied).toEqual([])
      } finally {
        await Promise.all(stores.map((store) => store.close()))
        await dropSchema(schema)
      }
    })

    it('adds the idempotency keys table to a schema migrated before it, keeping its runs', async () => {
      const schema = uniqueSchema()
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      const store = createPostgresRunStore({ connectionString: url, schema })
      try {
        // A schema as the release before migration 7 left it, with a run in it.
        await client.query(`create schema "${schema}"`)
        await client.query(`create table "${schema}".locus_store_migrations (version integer primary key, name text not null, applied_at timestamptz not null default clock_timestamp())`)
        for (const migration of STORE_MIGRATIONS.filter((candidate) => candidate.version < 7)) {
          await client.query(migration.sql.replaceAll('$schema', `"${schema}"`))
          await client.query(`insert into "${schema}".locus_store_migrations (version, name) values ($1, $2)`, [migration.version, migration.name])
        }
        await client.query(`insert into "${schema}".locus_runs (run_id) values ('run-old')`)
        expect((await store.migrate()).applied).toEqual(STORE_MIGRATIONS.filter((migration) => migration.version >= 7).map((migration) => migration.version))
        expect(await store.hasRun('run-old')).toBe(true)
        const record = { fingerprint: 'f', runId: 'run-old', expiresAt: 2_000 }
        expect(await store.putIdempotencyKey('k', record, 1_000)).toEqual({ stored: true, record })
        const { rows } = await client.query<{ key: string }>(`select key from "${schema}".locus_idempotency_keys`)
        expect(rows).toEqual([{ key: 'k' }])
      } finally {
        await client.end()
        await store.close()
        await dropSchema(schema)
      }
    })

    it('commits run_end and the run row status in one transaction, and wakes a tail in another store', async () => {
      const schema = uniqueSchema()
      const writerStore = createPostgresRunStore({ connectionString: url, schema })
      const readerStore = createPostgresRunStore({ connectionString: url, schema, tailPollMs: 60_000 })
      try {
        const writer = await writerStore.createExecution({ runId: 'run-x', kind: 'root' })
        writer.append({ type: 'log', level: 'info', message: 'one' })
        await writer.flush()
        const started = Date.now()
        const tailed = (async () => {
          const seen: number[] = []
          for await (const line of readerStore.tail({ runId: 'run-x', executionId: 'run-x' })) seen.push(line.seq)
          return seen
        })()
        await new Promise((resolve) => setTimeout(resolve, 50))
        writer.append({ type: 'run_end', disposition: 'failed', ok: false, result: { ok: false }, durationMs: 1 })
        await writer.close()
        // The reader polls only every minute: ending now proves NOTIFY woke it.
        expect(await tailed).toEqual([1, 2])
        expect(Date.now() - started).toBeLessThan(10_000)
        const check = new pg.Client({ connectionString: url })
        await check.connect()
        const { rows } = await check.query<{ status: string }>(`select status from "${schema}".locus_runs where run_id = 'run-x'`)
        await check.end()
        expect(rows[0]?.status).toBe('failed')
      } finally {
        await writerStore.close()
        await readerStore.close()
        await dropSchema(schema)
      }
    })

    it('reports a failed commit at the next flush, and keeps what was committed', async () => {
      const schema = uniqueSchema()
      const store = createPostgresRunStore({ connectionString: url, schema })
      try {
        const writer = await store.createExecution({ runId: 'run-f', kind: 'root' })
        writer.append({ type: 'log', level: 'info', message: 'kept' })
        await writer.flush()
        const admin = new pg.Client({ connectionString: url })
        await admin.connect()
        await admin.query(`drop table "${schema}".locus_journal cascade`)
        await admin.end()
        writer.append({ type: 'log', level: 'info', message: 'lost' })
        await expect(writer.flush()).rejects.toThrow(/commit/)
        expect(() => writer.append({ type: 'log', level: 'info', message: 'refused' })).toThrow(/commit/)
      } finally {
        await store.close()
        await dropSchema(schema)
      }
    })

    it('refuses a bad schema name and a missing connection', () => {
      expect(() => createPostgresRunStore({ connectionString: 'postgres://x', schema: 'a;drop' })).toThrow(/plain identifier/)
      expect(() => createPostgresRunStore({})).toThrow(/connectionString/)
    })
  })
}
