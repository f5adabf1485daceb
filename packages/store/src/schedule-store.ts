import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile, readdir, rename, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { StoreOptionsError } from './store-errors.js'

/** How each slot of a schedule ended; every slot ends as exactly one of these. */
export const SLOT_OUTCOMES = ['started', 'skipped-overlap', 'missed', 'paused', 'failed-to-start'] as const
export type SlotOutcome = (typeof SLOT_OUTCOMES)[number]

/** What made a slot: the schedule's own clock, `locus schedule trigger`, or `locus schedule backfill`. */
export const SLOT_SOURCES = ['schedule', 'trigger', 'backfill'] as const
export type SlotSource = (typeof SLOT_SOURCES)[number]

/** The one record a slot of a schedule ends as. */
export interface SlotRecord {
  /** The slot's time, ISO 8601 UTC with milliseconds (`2026-01-01T00:00:01.000Z`): its key within the schedule. */
  readonly slot: string
  readonly outcome: SlotOutcome
  /** The run the slot started (`started`), or the run it was skipped over (`skipped-overlap`). */
  readonly runId?: string | undefined
  /** Why the run could not start (`failed-to-start`) or why the slot did not fire. */
  readonly error?: string | undefined
  /** What made the slot. @default 'schedule' */
  readonly source?: SlotSource | undefined
  /** When the record was written, ISO 8601. */
  readonly recordedAt: string
}

/** A schedule as the store keeps it: what `locus schedule ls/show` and `/v1/schedules` print. */
export interface StoredSchedule {
  readonly id: string
  readonly workflow: string
  readonly cron?: string | undefined
  readonly every?: string | undefined
  readonly timezone?: string | undefined
  readonly input?: unknown
  readonly overlap: string
  readonly catchUpWindow: string
  readonly jitter?: string | undefined
  /** Whether the definition asks to start paused; the live state is {@link ScheduleState.paused}. */
  readonly paused?: boolean | undefined
}

/** A registered schedule and its live state. */
export interface ScheduleState {
  readonly schedule: StoredSchedule
  /** Paused now: set by the definition when first registered, then by pause/unpause. */
  readonly paused: boolean
  /** When the schedule was first registered, ISO 8601: its first slot comes after it. */
  readonly registeredAt: string
}

/** A slot an operator asked for: fired by the scheduler that holds the schedule on its next tick. */
export interface SlotRequest {
  readonly slot: string
  readonly source: Exclude<SlotSource, 'schedule'>
}

/** Which slots {@link ScheduleStore.listSlots} returns. */
export interface ListSlotsOptions {
  /** At most this many, newest slot first. @default all */
  readonly limit?: number | undefined
}

/**
 * Schedules and the record of every slot they had, shared by every process
 * on one store: a slot is claimed exclusively, so it fires once however many
 * servers and workers hold the schedule.
 */
export interface ScheduleStore {
  /**
   * Keeps the schedule's definition (replacing an older one). The first
   * registration sets `registeredAt` (`now`) and the paused state from the
   * definition; later ones keep both.
   */
  registerSchedule(schedule: StoredSchedule, now: number): Promise<ScheduleState>
  readSchedule(id: string): Promise<ScheduleState | undefined>
  /** Every registered schedule, by id. */
  listSchedules(): Promise<ScheduleState[]>
  /** Pauses or unpauses a schedule; undefined when no schedule has the id. */
  setPaused(id: string, paused: boolean): Promise<ScheduleState | undefined>
  /**
   * Writes the slot's record unless the slot has one: true when this call
   * wrote it (the caller owns the slot), false when another had.
   */
  claimSlot(scheduleId: string, record: SlotRecord): Promise<boolean>
  /** Replaces the record of a slot this process claimed (a start that failed after the claim). */
  updateSlot(scheduleId: string, record: SlotRecord): Promise<void>
  readSlot(scheduleId: string, slot: string): Promise<SlotRecord | undefined>
  /** The schedule's slot records, newest slot first. */
  listSlots(scheduleId: string, options?: ListSlotsOptions): Promise<SlotRecord[]>
  /** The newest slot the schedule's own clock made (source `schedule`): where a scheduler picks up. */
  lastScheduledSlot(scheduleId: string): Promise<SlotRecord | undefined>
  /** Asks for slots to be fired (trigger, backfill) by whichever scheduler holds the schedule. */
  requestSlots(scheduleId: string, requests: readonly SlotRequest[]): Promise<void>
  /** Takes the requests waiting for a schedule; each is returned to one caller only. */
  takeRequests(scheduleId: string): Promise<SlotRequest[]>
}

const SCHEDULE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/
const SLOT_TEXT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** The rule a schedule id follows, for messages. */
export const SCHEDULE_ID_RULE = 'letters, digits, ".", "_" and "-", starting with a letter or digit, at most 128 characters'

/** @throws StoreOptionsError for an id that is not a schedule id */
export function validateScheduleId(id: string): string {
  if (typeof id !== 'string' || !SCHEDULE_ID.test(id)) {
    throw new StoreOptionsError(`Schedule id ${JSON.stringify(id)} is not one: use ${SCHEDULE_ID_RULE}.`)
  }
  return id
}

/** A slot's key from its time. */
export const slotKey = (ms: number): string => new Date(ms).toISOString()

function validateSlot(slot: string): string {
  if (typeof slot !== 'string' || !SLOT_TEXT.test(slot) || !Number.isFinite(Date.parse(slot))) {
    throw new StoreOptionsError(`Slot ${JSON.stringify(slot)} is not one: a slot is an ISO 8601 UTC time with milliseconds, such as 2026-01-01T00:00:01.000Z.`)
  }
  return slot
}

/** @throws StoreOptionsError for a record that is not one */
export function validateSlotRecord(record: SlotRecord): SlotRecord {
  validateSlot(record.slot)
  if (!(SLOT_OUTCOMES as readonly string[]).includes(record.outcome)) {
    throw new StoreOptionsError(`Slot outcome ${JSON.stringify(record.outcome)} is not one of ${SLOT_OUTCOMES.join(', ')}.`)
  }
  if (record.source !== undefined && !(SLOT_SOURCES as readonly string[]).includes(record.source)) {
    throw new StoreOptionsError(`Slot source ${JSON.stringify(record.source)} is not one of ${SLOT_SOURCES.join(', ')}.`)
  }
  return record
}

const newestFirst = (a: SlotRecord, b: SlotRecord): number => (a.slot < b.slot ? 1 : a.slot > b.slot ? -1 : 0)
const limited = (records: SlotRecord[], options?: ListSlotsOptions): SlotRecord[] =>
  options?.limit === undefined ? records : records.slice(0, Math.max(0, options.limit))

function firstState(schedule: StoredSchedule, now: number): ScheduleState {
  return { schedule, paused: schedule.paused === true, registeredAt: new Date(now).toISOString() }
}

/** Runs `body` now; what it throws becomes a rejection, as from a store on a medium. */
function settled<T>(body: () => T): Promise<T> {
  try {
    return Promise.resolve(body())
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)))
  }
}

/** The memory store's schedules: maps, for tests and embedding. */
export function createMemoryScheduleStore(): ScheduleStore {
  const states = new Map<string, ScheduleState>()
  const slots = new Map<string, Map<string, SlotRecord>>()
  const requests = new Map<string, SlotRequest[]>()
  const slotsOf = (id: string): Map<string, SlotRecord> => {
    let map = slots.get(id)
    if (map === undefined) {
      map = new Map()
      slots.set(id, map)
    }
    return map
  }
  return {
    registerSchedule: (schedule, now) =>
      settled(() => {
      validateScheduleId(schedule.id)
      const kept = states.get(schedule.id)
      const state = kept === undefined ? firstState(schedule, now) : { ...kept, schedule }
      states.set(schedule.id, state)
      return state
    }),
    readSchedule: (id) => Promise.resolve(states.get(id)),
    listSchedules: () => Promise.resolve([...states.values()].sort((a, b) => (a.schedule.id < b.schedule.id ? -1 : 1))),
    setPaused(id, paused) {
      const kept = states.get(id)
      if (kept === undefined) return Promise.resolve(undefined)
      const state = { ...kept, paused }
      states.set(id, state)
      return Promise.resolve(state)
    },
    claimSlot: (id, record) =>
      settled(() => {
      validateScheduleId(id)
      validateSlotRecord(record)
      const map = slotsOf(id)
      if (map.has(record.slot)) return false
      map.set(record.slot, { ...record })
      return true
    }),
    updateSlot: (id, record) =>
      settled(() => {
      validateSlotRecord(record)
      slotsOf(id).set(record.slot, { ...record })
    }),
    readSlot: (id, slot) => Promise.resolve(slots.get(id)?.get(slot)),
    listSlots: (id, options) => Promise.resolve(limited([...slotsOf(id).values()].sort(newestFirst), options)),
    lastScheduledSlot: (id) => Promise.resolve([...slotsOf(id).values()].filter((record) => (record.source ?? 'schedule') === 'schedule').sort(newestFirst)[0]),
    requestSlots: (id, asked) =>
      settled(() => {
      validateScheduleId(id)
      for (const request of asked) validateSlot(request.slot)
      requests.set(id, [...(requests.get(id) ?? []), ...asked])
    }),
    takeRequests(id) {
      const taken = requests.get(id) ?? []
      requests.delete(id)
      return Promise.resolve(taken)
    },
  }
}

/** The directory in a runs directory that holds schedules (a dot name, so run listings pass it by). */
export const SCHEDULES_DIR = '.schedules'

const codeOf = (error: unknown): unknown => (typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined)
/** A slot's file name: its ISO time with `:` made `-`, so it is a valid name everywhere and sorts in time order. */
const slotFile = (slot: string): string => `${slot.replaceAll(':', '-')}.json`

async function readJson<T>(path: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as T
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return undefined
    throw error
  }
}

/** Writes whole or not at all: under a private name, synced, then renamed into place. */
async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`
  const handle = await open(temporary, 'wx')
  try {
    await handle.writeFile(`${JSON.stringify(value)}\n`)
    await handle.sync()
  } finally {
    await handle.close()
  }
  await rename(temporary, path)
}

async function names(dir: string): Promise<string[]> {
  try {
    return await readdir(dir)
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return []
    throw error
  }
}

/**
 * The file store's schedules, under `<runsDir>/.schedules/<id>/`:
 * `schedule.json` (definition and state), `slots/<slot>.json` (one record per
 * slot, created with `wx` so of several processes exactly one claims it) and
 * `requests/<slot>.<source>.json` (taken by renaming, so one process takes each).
 */
export function createFileScheduleStore(runsDir: string): ScheduleStore {
  const root = join(runsDir, SCHEDULES_DIR)
  const dirOf = (id: string): string => join(root, validateScheduleId(id))
  const stateFile = (id: string): string => join(dirOf(id), 'schedule.json')
  const slotsDir = (id: string): string => join(dirOf(id), 'slots')
  const requestsDir = (id: string): string => join(dirOf(id), 'requests')

  async function readRecords(id: string): Promise<SlotRecord[]> {
    const dir = slotsDir(id)
    const records: SlotRecord[] = []
    for (const name of await names(dir)) {
      if (!name.endsWith('.json')) continue
      const record = await readJson<SlotRecord>(join(dir, name))
      if (record !== undefined) records.push(record)
    }
    return records.sort(newestFirst)
  }

  const readSchedule = async (id: string): Promise<ScheduleState | undefined> => readJson<ScheduleState>(stateFile(id))

  return {
    async registerSchedule(schedule, now) {
      await mkdir(slotsDir(schedule.id), { recursive: true })
      const kept = await readSchedule(schedule.id)
      const state = kept === undefined ? firstState(schedule, now) : { ...kept, schedule }
      await writeJsonAtomic(stateFile(schedule.id), state)
      return state
    },
    readSchedule,
    async listSchedules() {
      const states: ScheduleState[] = []
      for (const name of (await names(root)).sort()) {
        if (!SCHEDULE_ID.test(name)) continue
        const state = await readSchedule(name)
        if (state !== undefined) states.push(state)
      }
      return states
    },
    async setPaused(id, paused) {
      const kept = await readSchedule(id)
      if (kept === undefined) return undefined
      const state = { ...kept, paused }
      await writeJsonAtomic(stateFile(id), state)
      return state
    },
    async claimSlot(id, record) {
      validateSlotRecord(record)
      await mkdir(slotsDir(id), { recursive: true })
      let handle
      try {
        handle = await open(join(slotsDir(id), slotFile(record.slot)), 'wx')
      } catch (error) {
        if (codeOf(error) === 'EEXIST') return false
        throw error
      }
      try {
        await handle.writeFile(`${JSON.stringify(record)}\n`)
        await handle.sync()
      } finally {
        await handle.close()
      }
      return true
    },
    async updateSlot(id, record) {
      validateSlotRecord(record)
      await writeJsonAtomic(join(slotsDir(id), slotFile(record.slot)), record)
    },
    readSlot: (id, slot) => readJson<SlotRecord>(join(slotsDir(id), slotFile(validateSlot(slot)))),
    async listSlots(id, options) {
      return limited(await readRecords(id), options)
    },
    async lastScheduledSlot(id) {
      // Newest first by file name: stop at the first the schedule's own clock made.
      const dir = slotsDir(id)
      for (const name of (await names(dir)).filter((entry) => entry.endsWith('.json')).sort().reverse()) {
        const record = await readJson<SlotRecord>(join(dir, name))
        if (record !== undefined && (record.source ?? 'schedule') === 'schedule') return record
      }
      return undefined
    },
    async requestSlots(id, asked) {
      await mkdir(requestsDir(id), { recursive: true })
      for (const request of asked) {
        validateSlot(request.slot)
        await writeJsonAtomic(join(requestsDir(id), `${request.slot.replaceAll(':', '-')}.${request.source}.json`), request)
      }
    },
    async takeRequests(id) {
      const dir = requestsDir(id)
      const taken: SlotRequest[] = []
      for (const name of (await names(dir)).sort()) {
        if (!name.endsWith('.json') || name.endsWith('.tmp')) continue
        const mine = join(dir, `${name}.${randomBytes(6).toString('hex')}.taken`)
        try {
          await rename(join(dir, name), mine)
        } catch (error) {
          if (codeOf(error) === 'ENOENT') continue
          throw error
        }
        const request = await readJson<SlotRequest>(mine)
        await unlink(mine).catch(() => undefined)
        if (request !== undefined) taken.push(request)
      }
      return taken
    },
  }
}
