// Two schedulers (two servers' worth) sharing one PostgreSQL store, on one
// injected clock: every slot of a 10 s window of an every-1s, overlap-skip
// schedule over runs that take 2.5 s is recorded exactly once.
import pg from 'pg'
import { type ScheduleTarget, defineSchedule, startScheduler } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { createPostgresRunStore } from '../src/index.js'
import { postgresFor } from './postgres-for.js'

const url = postgresFor('two schedulers on PostgreSQL: set LOCUS_TEST_PG_URL to run it')
const START = Date.UTC(2026, 0, 1)

if (url !== undefined) {
  describe('two schedulers on one PostgreSQL store', () => {
    it('record each slot exactly once: started and skipped-overlap over a 2.5 s run', async () => {
      const schema = `locus_two_sched_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
      // The schedulers run no loop (loop: false): the test moves this clock and ticks them.
      let now = START
      const clock = { now: () => now, sleep: () => Promise.resolve() }
      const stores = [0, 1].map(() => createPostgresRunStore({ connectionString: url, schema, maxConnections: 4 }))
      // A run "takes" 2.5 s of the shared clock; which scheduler started it does not matter.
      const endsAt = new Map<string, number>()
      const starts: string[] = []
      const target: ScheduleTarget = {
        start: (_schedule, options) => {
          starts.push(options.runId)
          endsAt.set(options.runId, clock.now() + 2500)
          return Promise.resolve()
        },
        isRunning: (runId) => Promise.resolve((endsAt.get(runId) ?? 0) > clock.now()),
        cancel: () => Promise.resolve(),
      }
      const schedule = defineSchedule({ id: 'tick', workflow: 'w', every: '1s', input: {}, overlap: 'skip', catchUpWindow: '3s' })
      const schedulers = await Promise.all(stores.map((store) => startScheduler({ schedules: [schedule], store, target, clock, loop: false })))
      try {
        for (let step = 0; step < 100; step += 1) {
          now += 100
          await Promise.all(schedulers.map((scheduler) => scheduler.tick()))
        }
        const slots = await stores[0]!.schedules!.listSlots('tick')
        expect(slots.map((slot) => `${slot.slot.slice(17, 19)} ${slot.outcome}`).reverse()).toEqual([
          '01 started',
          '02 skipped-overlap',
          '03 skipped-overlap',
          '04 started',
          '05 skipped-overlap',
          '06 skipped-overlap',
          '07 started',
          '08 skipped-overlap',
          '09 skipped-overlap',
          '10 started',
        ])
        expect(starts).toHaveLength(4)
        const client = new pg.Client({ connectionString: url })
        await client.connect()
        try {
          const { rows } = await client.query<{ count: string }>(`select count(*) from "${schema}".locus_schedule_slots`)
          expect(rows[0]?.count).toBe('10')
        } finally {
          await client.query(`drop schema if exists "${schema}" cascade`)
          await client.end()
        }
      } finally {
        await Promise.all(schedulers.map((scheduler) => scheduler.stop()))
        await Promise.all(stores.map((store) => store.close()))
      }
    })
  })
}
