import { MAX_BACKFILL_SLOTS, backfillSlots } from '@locus/runtime'
import type { ScheduleState, ScheduleStore, SlotRecord } from '@locus/store'
import { CliError } from '../cli-error.js'
import type { CliIo } from '../cli-io.js'
import { EXIT_CODES, type ExitCode } from '../exit-codes.js'
import { formatTable } from '../format-table.js'
import { openRunStore } from '../open-run-store.js'

/** Flags every `locus schedule` subcommand takes. */
export interface ScheduleFlags {
  readonly runsDir?: string | undefined
  readonly databaseUrl?: string | undefined
  readonly json?: boolean | undefined
}

/** Flags of `locus schedule show`. */
export interface ScheduleShowFlags extends ScheduleFlags {
  /** How many slot records to print, newest first. @default 50 */
  readonly limit?: number | undefined
}

/** Flags of `locus schedule backfill`. */
export interface ScheduleBackfillFlags extends ScheduleFlags {
  readonly from: string
  readonly to: string
}


async function withSchedules<T>(flags: ScheduleFlags, io: CliIo, body: (schedules: ScheduleStore) => Promise<T>): Promise<T> {
  const { store, close } = openRunStore(flags, io, { maxConnections: 2 })
  try {
    if (store.schedules === undefined) throw new CliError('CLI_USAGE', `The ${store.kind} store keeps no schedules.`)
    return await body(store.schedules)
  } catch (error) {
    // PostgreSQL's undefined_table: a database the store (migration 9) was never migrated into.
    if (flags.databaseUrl !== undefined && (error as { code?: unknown } | null)?.code === '42P01') {
      throw new CliError('CLI_USAGE', 'The database --database-url names holds no Locus schedules: check the URL, or run `locus db migrate` against it first.')
    }
    throw error
  } finally {
    await close()
  }
}

async function requireSchedule(schedules: ScheduleStore, id: string): Promise<ScheduleState> {
  const state = await schedules.readSchedule(id)
  if (state === undefined) {
    const known = (await schedules.listSchedules()).map((one) => one.schedule.id)
    throw new CliError(
      'SCHEDULE_NOT_FOUND',
      `No schedule "${id}" in this store (${known.length === 0 ? 'it has none: a schedule is registered when `locus serve` or `locus worker` loads the module that exports it' : `it has ${known.join(', ')}`}).`,
    )
  }
  return state
}

const when = (state: ScheduleState): string => state.schedule.cron ?? `every ${state.schedule.every ?? '?'}`
/** A slot record as `show` prints it: `{ slot, outcome, runId? }`, and why when there is an error. */
const slotJson = (record: SlotRecord): Record<string, unknown> => ({
  slot: record.slot,
  outcome: record.outcome,
  ...(record.runId === undefined ? {} : { runId: record.runId }),
  ...(record.error === undefined ? {} : { error: record.error }),
  ...(record.source === undefined || record.source === 'schedule' ? {} : { source: record.source }),
})

/** `locus schedule ls`: the schedules registered in the store, with their latest slot. */
export async function scheduleLsCommand(flags: ScheduleFlags, io: CliIo): Promise<ExitCode> {
  return withSchedules(flags, io, async (schedules) => {
    const states = await schedules.listSchedules()
    const rows: Array<{ state: ScheduleState; last: SlotRecord | undefined }> = []
    for (const state of states) rows.push({ state, last: (await schedules.listSlots(state.schedule.id, { limit: 1 }))[0] })
    if (flags.json === true) {
      for (const { state, last } of rows) io.stdout.write(`${JSON.stringify({ type: 'schedule', ...state, lastSlot: last === undefined ? null : slotJson(last) })}\n`)
      return EXIT_CODES.completed
    }
    if (rows.length === 0) {
      io.stdout.write('No schedules in this store yet: `locus serve --workflows` or `locus worker --workflows` registers those a module exports.\n')
      return EXIT_CODES.completed
    }
    const table = [['SCHEDULE', 'WORKFLOW', 'WHEN', 'OVERLAP', 'STATE', 'LAST SLOT', 'OUTCOME']]
    for (const { state, last } of rows) {
      table.push([state.schedule.id, state.schedule.workflow, when(state), state.schedule.overlap, state.paused ? 'paused' : 'active', last?.slot ?? '-', last?.outcome ?? '-'])
    }
    io.stdout.write(`${formatTable(table)}\n`)
    return EXIT_CODES.completed
  })
}

/** `locus schedule show <id>`: the schedule and its slot records `{ slot, outcome, runId? }`, newest first. */
export async function scheduleShowCommand(id: string, flags: ScheduleShowFlags, io: CliIo): Promise<ExitCode> {
  return withSchedules(flags, io, async (schedules) => {
    const state = await requireSchedule(schedules, id)
    const slots = await schedules.listSlots(id, { limit: flags.limit ?? 50 })
    if (flags.json === true) {
      io.stdout.write(`${JSON.stringify({ ...state, slots: slots.map(slotJson) })}\n`)
      return EXIT_CODES.completed
    }
    const { schedule } = state
    io.stdout.write(
      [
        `schedule ${schedule.id}: workflow ${schedule.workflow}, ${when(state)}${schedule.timezone === undefined ? '' : ` (${schedule.timezone})`}`,
        `overlap ${schedule.overlap}, catch-up window ${schedule.catchUpWindow}${schedule.jitter === undefined ? '' : `, jitter ${schedule.jitter}`}, ${state.paused ? 'paused' : 'active'}, registered ${state.registeredAt}`,
        `input ${JSON.stringify(schedule.input ?? null)}`,
        '',
      ].join('\n'),
    )
    if (slots.length === 0) {
      io.stdout.write('No slot has come yet.\n')
      return EXIT_CODES.completed
    }
    const table = [['SLOT', 'OUTCOME', 'RUN', 'WHY']]
    for (const record of slots) table.push([record.slot, record.source === undefined || record.source === 'schedule' ? record.outcome : `${record.outcome} (${record.source})`, record.runId ?? '-', record.error ?? ''])
    io.stdout.write(`${formatTable(table)}\n`)
    return EXIT_CODES.completed
  })
}

/** `locus schedule pause <id>` and `unpause <id>`: every slot while paused is recorded `paused`. */
export async function schedulePauseCommand(id: string, paused: boolean, flags: ScheduleFlags, io: CliIo): Promise<ExitCode> {
  return withSchedules(flags, io, async (schedules) => {
    await requireSchedule(schedules, id)
    const state = await schedules.setPaused(id, paused)
    if (flags.json === true) io.stdout.write(`${JSON.stringify(state)}\n`)
    else io.stdout.write(`schedule ${id} ${paused ? 'paused: its slots are recorded paused until `locus schedule unpause`' : 'unpaused: its next slot fires'}\n`)
    return EXIT_CODES.completed
  })
}

/** `locus schedule trigger <id>`: a slot now, fired by the process that holds the schedule on its next tick. */
export async function scheduleTriggerCommand(id: string, flags: ScheduleFlags, io: CliIo, now = Date.now()): Promise<ExitCode> {
  return withSchedules(flags, io, async (schedules) => {
    await requireSchedule(schedules, id)
    const slot = new Date(now).toISOString()
    await schedules.requestSlots(id, [{ slot, source: 'trigger' }])
    if (flags.json === true) io.stdout.write(`${JSON.stringify({ scheduleId: id, requested: [slot] })}\n`)
    else io.stdout.write(`schedule ${id}: slot ${slot} asked for; the server or worker holding the schedule fires it (see \`locus schedule show ${id}\`)\n`)
    return EXIT_CODES.completed
  })
}

function parseTime(text: string, flag: string): number {
  const ms = Date.parse(text)
  if (!Number.isFinite(ms)) throw new CliError('CLI_USAGE', `${flag} ${JSON.stringify(text)} is not a time; pass an ISO 8601 time such as 2026-01-01T00:00:00Z.`)
  return ms
}

/**
 * `locus schedule backfill <id> --from --to`: the schedule's slots in the
 * range (cron or every, as defined), asked for so the holding process fires
 * each one whatever its age (the catch-up window does not apply); a slot that
 * has a record already keeps it.
 */
export async function scheduleBackfillCommand(id: string, flags: ScheduleBackfillFlags, io: CliIo): Promise<ExitCode> {
  const from = parseTime(flags.from, '--from')
  const to = parseTime(flags.to, '--to')
  if (to < from) throw new CliError('CLI_USAGE', `--to ${flags.to} is before --from ${flags.from}.`)
  return withSchedules(flags, io, async (schedules) => {
    const state = await requireSchedule(schedules, id)
    // The slot arithmetic is the runtime's, the same the server's backfill route uses.
    const { slots, more } = backfillSlots(state.schedule, from, to)
    if (more) throw new CliError('CLI_USAGE', `--from ${flags.from} --to ${flags.to} holds more than ${MAX_BACKFILL_SLOTS} slots; backfill a shorter range at a time.`)
    await schedules.requestSlots(
      id,
      slots.map((slot) => ({ slot, source: 'backfill' as const })),
    )
    if (flags.json === true) io.stdout.write(`${JSON.stringify({ scheduleId: id, requested: slots })}\n`)
    else io.stdout.write(`schedule ${id}: ${slots.length === 1 ? '1 slot' : `${slots.length} slots`} from ${flags.from} to ${flags.to} asked for; the server or worker holding the schedule fires them\n`)
    return EXIT_CODES.completed
  })
}
