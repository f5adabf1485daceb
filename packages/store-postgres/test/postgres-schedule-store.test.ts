import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { scheduleStoreContract } from '@locus/store/testing'
import { createPostgresRunStore } from '../src/index.js'
import { postgresFor } from './postgres-for.js'

const url = postgresFor('PostgreSQL schedules: set LOCUS_TEST_PG_URL to run it')

const uniqueSchema = (): string => `locus_sched_${process.pid}_${Math.random().toString(36).slice(2, 10)}`

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
  scheduleStoreContract('postgres', () => {
    const schema = uniqueSchema()
    const store = createPostgresRunStore({ connectionString: url, schema, maxConnections: 4 })
    if (store.schedules === undefined) throw new Error('the PostgreSQL store has no schedules')
    return Promise.resolve({
      schedules: store.schedules,
      cleanup: async () => {
        await store.close()
        await dropSchema(schema)
      },
    })
  })

  describe('PostgreSQL schedules', () => {
    it('keep one row per slot across two stores (two processes) on one database', async () => {
      const schema = uniqueSchema()
      const one = createPostgresRunStore({ connectionString: url, schema, maxConnections: 4 })
      const two = createPostgresRunStore({ connectionString: url, schema, maxConnections: 4 })
      try {
        const slots = Array.from({ length: 20 }, (_, index) => new Date(Date.UTC(2026, 0, 1, 0, 0, index)).toISOString())
        const claims = await Promise.all(
          slots.flatMap((slot) =>
            [one, two].map(async (store, index) => store.schedules?.claimSlot('s', { slot, outcome: 'started', runId: `run-${index}`, recordedAt: slot })),
          ),
        )
        expect(claims.filter(Boolean)).toHaveLength(20)
        const client = new pg.Client({ connectionString: url })
        await client.connect()
        try {
          const { rows } = await client.query<{ count: string }>(`select count(*) from "${schema}".locus_schedule_slots where schedule_id = 's'`)
          expect(rows[0]?.count).toBe('20')
        } finally {
          await client.end()
        }
      } finally {
        await one.close()
        await two.close()
        await dropSchema(schema)
      }
    })
  })
}
