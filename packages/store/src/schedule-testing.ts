import { describe, expect, it } from 'vitest'
import type { ScheduleStore, SlotRecord, StoredSchedule } from './schedule-store.js'

/** Makes a fresh, empty schedule store for one test; `cleanup` runs after it. */
export type ScheduleStoreFactory = () => Promise<{ schedules: ScheduleStore; cleanup?: () => Promise<void> }>

const schedule: StoredSchedule = { id: 'nightly', workflow: 'report', every: '1s', input: { n: 1 }, overlap: 'skip', catchUpWindow: '3s' }
const at = (second: number): string => new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString()
const record = (second: number, outcome: SlotRecord['outcome'], extra: Partial<SlotRecord> = {}): SlotRecord => ({
  slot: at(second),
  outcome,
  recordedAt: at(second),
  ...extra,
})

async function withSchedules(factory: ScheduleStoreFactory, body: (schedules: ScheduleStore) => Promise<void>): Promise<void> {
  const { schedules, cleanup } = await factory()
  try {
    await body(schedules)
  } finally {
    await cleanup?.()
  }
}

/**
 * The behaviour every adapter's schedule store promises (`RunStore.schedules`):
 * each adapter's test file calls this with a factory.
 */
export function scheduleStoreContract(name: string, factory: ScheduleStoreFactory): void {
  describe(`ScheduleStore contract: ${name}`, () => {
    it('registers a schedule once: a later registration replaces the definition and keeps the paused state and first registration time', async () => {
      await withSchedules(factory, async (schedules) => {
        const first = await schedules.registerSchedule({ ...schedule, paused: true }, Date.UTC(2026, 0, 1))
        expect(first).toEqual({ schedule: { ...schedule, paused: true }, paused: true, registeredAt: '2026-01-01T00:00:00.000Z' })
        expect(await schedules.setPaused('nightly', false)).toMatchObject({ paused: false })
        const again = await schedules.registerSchedule({ ...schedule, every: '2s', paused: true }, Date.UTC(2026, 0, 2))
        expect(again).toEqual({ schedule: { ...schedule, every: '2s', paused: true }, paused: false, registeredAt: '2026-01-01T00:00:00.000Z' })
        expect(await schedules.readSchedule('nightly')).toEqual(again)
        expect(await schedules.readSchedule('other')).toBeUndefined()
        expect(await schedules.setPaused('other', true)).toBeUndefined()
        await schedules.registerSchedule({ ...schedule, id: 'alpha' }, Date.UTC(2026, 0, 3))
        expect((await schedules.listSchedules()).map((state) => state.schedule.id)).toEqual(['alpha', 'nightly'])
      })
    })

    it('claims each slot once: the first record stays, a second claim is refused, even when many race', async () => {
      await withSchedules(factory, async (schedules) => {
        await schedules.registerSchedule(schedule, 0)
        const claims = await Promise.all(
          Array.from({ length: 8 }, (_, index) => schedules.claimSlot('nightly', record(1, 'started', { runId: `run-${index}` }))),
        )
        expect(claims.filter(Boolean)).toHaveLength(1)
        const winner = claims.indexOf(true)
        expect(await schedules.readSlot('nightly', at(1))).toEqual(record(1, 'started', { runId: `run-${winner}` }))
        expect(await schedules.claimSlot('nightly', record(1, 'missed'))).toBe(false)
        expect(await schedules.readSlot('nightly', at(2))).toBeUndefined()
      })
    })

    it('keeps every outcome, lists slots newest first, and finds the newest slot the schedule itself made', async () => {
      await withSchedules(factory, async (schedules) => {
        await schedules.registerSchedule(schedule, 0)
        const records = [
          record(1, 'started', { runId: 'run-1' }),
          record(2, 'skipped-overlap', { runId: 'run-1' }),
          record(3, 'missed'),
          record(4, 'paused'),
          record(5, 'failed-to-start', { error: 'no such workflow' }),
          record(9, 'started', { runId: 'run-9', source: 'trigger' }),
        ]
        for (const one of records) expect(await schedules.claimSlot('nightly', one)).toBe(true)
        expect(await schedules.listSlots('nightly')).toEqual([...records].reverse())
        expect(await schedules.listSlots('nightly', { limit: 2 })).toEqual([records[5], records[4]])
        expect(await schedules.lastScheduledSlot('nightly')).toEqual(records[4])
        expect(await schedules.listSlots('other')).toEqual([])
        expect(await schedules.lastScheduledSlot('other')).toBeUndefined()
      })
    })

    it('replaces a claimed slot record (a start that failed after the claim)', async () => {
      await withSchedules(factory, async (schedules) => {
        await schedules.claimSlot('nightly', record(1, 'started', { runId: 'run-1' }))
        await schedules.updateSlot('nightly', record(1, 'failed-to-start', { error: 'boom' }))
        expect(await schedules.listSlots('nightly')).toEqual([record(1, 'failed-to-start', { error: 'boom' })])
      })
    })

    it('refuses a record that is not one, and an id that is not a schedule id', async () => {
      await withSchedules(factory, async (schedules) => {
        await expect(schedules.claimSlot('nightly', { ...record(1, 'started'), slot: 'yesterday' })).rejects.toThrow(/not one/)
        await expect(schedules.claimSlot('nightly', { ...record(1, 'started'), outcome: 'ran' as SlotRecord['outcome'] })).rejects.toThrow(/started/)
        await expect(schedules.claimSlot('../x', record(1, 'started'))).rejects.toThrow(/Schedule id/)
      })
    })

    it('hands each requested slot to one taker only', async () => {
      await withSchedules(factory, async (schedules) => {
        await schedules.registerSchedule(schedule, 0)
        await schedules.requestSlots('nightly', [
          { slot: at(1), source: 'backfill' },
          { slot: at(2), source: 'backfill' },
          { slot: at(30), source: 'trigger' },
        ])
        const taken = await Promise.all([schedules.takeRequests('nightly'), schedules.takeRequests('nightly'), schedules.takeRequests('nightly')])
        expect(
          taken
            .flat()
            .map((request) => `${request.slot} ${request.source}`)
            .sort(),
        ).toEqual([`${at(1)} backfill`, `${at(2)} backfill`, `${at(30)} trigger`])
        expect(await schedules.takeRequests('nightly')).toEqual([])
      })
    })
  })
}
