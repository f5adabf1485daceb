import {
  type ScheduleState,
  type ScheduleStore,
  type SlotRecord,
  type SlotRequest,
  type StoredSchedule,
  validateScheduleId,
  validateSlotRecord,
} from '@locus/store'
import type pg from 'pg'

interface ScheduleRow {
  readonly definition: StoredSchedule
  readonly paused: boolean
  readonly registered_at: Date
}

const stateOf = (row: ScheduleRow): ScheduleState => ({ schedule: row.definition, paused: row.paused, registeredAt: row.registered_at.toISOString() })

/**
 * The PostgreSQL schedules: `locus_schedules` (definition and paused state),
 * `locus_schedule_slots` with a unique (schedule_id, slot), so of every
 * server and worker on the database exactly one inserts a slot's row, and
 * `locus_schedule_requests`, taken with `delete ... returning`.
 */
export function postgresScheduleStore(pool: pg.Pool, table: (name: string) => string, ready: () => Promise<unknown>): ScheduleStore {
  const schedules = table('locus_schedules')
  const slots = table('locus_schedule_slots')
  const requests = table('locus_schedule_requests')

  async function readSchedule(id: string): Promise<ScheduleState | undefined> {
    await ready()
    const { rows } = await pool.query<ScheduleRow>(`select definition, paused, registered_at from ${schedules} where schedule_id = $1`, [id])
    return rows[0] === undefined ? undefined : stateOf(rows[0])
  }

  return {
    async registerSchedule(schedule, now) {
      validateScheduleId(schedule.id)
      await ready()
      const { rows } = await pool.query<ScheduleRow>(
        `insert into ${schedules} (schedule_id, definition, paused, registered_at) values ($1, $2, $3, $4)
         on conflict (schedule_id) do update set definition = excluded.definition
         returning definition, paused, registered_at`,
        [schedule.id, JSON.stringify(schedule), schedule.paused === true, new Date(now)],
      )
      return stateOf(rows[0] as ScheduleRow)
    },
    readSchedule,
    async listSchedules() {
      await ready()
      const { rows } = await pool.query<ScheduleRow>(`select definition, paused, registered_at from ${schedules} order by schedule_id`)
      return rows.map(stateOf)
    },
    async setPaused(id, paused) {
      await ready()
      const { rows } = await pool.query<ScheduleRow>(`update ${schedules} set paused = $2 where schedule_id = $1 returning definition, paused, registered_at`, [id, paused])
      return rows[0] === undefined ? undefined : stateOf(rows[0])
    },
    async claimSlot(id, record) {
      validateScheduleId(id)
      validateSlotRecord(record)
      await ready()
      const { rowCount } = await pool.query(
        `insert into ${slots} (schedule_id, slot, outcome, source, record) values ($1, $2, $3, $4, $5) on conflict (schedule_id, slot) do nothing`,
        [id, record.slot, record.outcome, record.source ?? 'schedule', JSON.stringify(record)],
      )
      return (rowCount ?? 0) > 0
    },
    async updateSlot(id, record) {
      validateSlotRecord(record)
      await ready()
      await pool.query(`update ${slots} set outcome = $3, source = $4, record = $5 where schedule_id = $1 and slot = $2`, [
        id,
        record.slot,
        record.outcome,
        record.source ?? 'schedule',
        JSON.stringify(record),
      ])
    },
    async readSlot(id, slot) {
      await ready()
      const { rows } = await pool.query<{ record: SlotRecord }>(`select record from ${slots} where schedule_id = $1 and slot = $2`, [id, slot])
      return rows[0]?.record
    },
    async listSlots(id, options) {
      await ready()
      const { rows } = await pool.query<{ record: SlotRecord }>(`select record from ${slots} where schedule_id = $1 order by slot desc limit $2`, [
        id,
        options?.limit ?? null,
      ])
      return rows.map((row) => row.record)
    },
    async lastScheduledSlot(id) {
      await ready()
      const { rows } = await pool.query<{ record: SlotRecord }>(
        `select record from ${slots} where schedule_id = $1 and source = 'schedule' order by slot desc limit 1`,
        [id],
      )
      return rows[0]?.record
    },
    async requestSlots(id, asked) {
      validateScheduleId(id)
      for (const request of asked) validateSlotRecord({ slot: request.slot, outcome: 'started', source: request.source, recordedAt: request.slot })
      await ready()
      for (const request of asked) {
        await pool.query(`insert into ${requests} (schedule_id, slot, source) values ($1, $2, $3) on conflict do nothing`, [id, request.slot, request.source])
      }
    },
    async takeRequests(id) {
      await ready()
      const { rows } = await pool.query<SlotRequest>(`delete from ${requests} where schedule_id = $1 returning slot, source`, [id])
      return rows.sort((a, b) => (a.slot < b.slot ? -1 : a.slot > b.slot ? 1 : 0))
    },
  }
}
