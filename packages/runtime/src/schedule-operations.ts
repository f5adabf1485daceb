import type { StoredSchedule } from '@locus/store'
import { type ScheduleDefinition, defineSchedule } from './schedule.js'

/** The most slots one backfill may ask for: a wider range is asked for in parts. */
export const MAX_BACKFILL_SLOTS = 10_000

/** A schedule read back from the store as a definition, so its slot arithmetic is the one `defineSchedule` made. */
export function scheduleOfStored(stored: StoredSchedule): ScheduleDefinition {
  return defineSchedule({
    id: stored.id,
    workflow: stored.workflow,
    ...(stored.cron === undefined ? {} : { cron: stored.cron }),
    ...(stored.every === undefined ? {} : { every: stored.every }),
    ...(stored.timezone === undefined ? {} : { timezone: stored.timezone }),
    input: stored.input,
    overlap: stored.overlap as ScheduleDefinition['overlap'],
    catchUpWindow: stored.catchUpWindow,
  })
}

/** The slots of a backfill: every slot of the schedule from `fromMs` to `toMs`, both included. */
export interface BackfillSlots {
  /** ISO 8601 times, oldest first, at most `limit` of them. */
  readonly slots: readonly string[]
  /** True when the range holds more slots than `limit`: nothing should be asked for then. */
  readonly more: boolean
}

/**
 * The slots `locus schedule backfill` and `POST /v1/schedules/{id}/backfill`
 * ask for: those of the stored schedule (cron or every, in its time zone)
 * between two times, both included.
 */
export function backfillSlots(stored: StoredSchedule, fromMs: number, toMs: number, limit = MAX_BACKFILL_SLOTS): BackfillSlots {
  const definition = scheduleOfStored(stored)
  const slots: string[] = []
  for (let slot = definition.nextSlot(fromMs - 1); slot !== undefined && slot <= toMs; slot = definition.nextSlot(slot)) {
    if (slots.length >= limit) return { slots, more: true }
    slots.push(new Date(slot).toISOString())
  }
  return { slots, more: false }
}
