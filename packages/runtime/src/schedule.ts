import { Cron } from 'croner'
import type { StoredSchedule } from '@locus/store'
import { SCHEDULE_ID_RULE } from '@locus/store'
import { DURATION_FORMS, durationMs } from './duration.js'
import type { WorkflowDefinition } from './define.js'
import { RuntimeInputError } from './errors.js'
import { describeZodIssues } from './zod-issues.js'

/** What a slot does when the run of an earlier slot is still going. */
export const OVERLAP_POLICIES = ['skip', 'buffer-one', 'allow', 'cancel-other'] as const
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number]

/** What {@link defineSchedule} takes: one of `cron` or `every`. */
export interface ScheduleOptions<TInput = unknown> {
  /** Names the schedule in the store, the CLI and the API: letters, digits, `.`, `_`, `-`. */
  readonly id: string
  /** The workflow each slot starts: its name, or its definition (then the input is checked at once). */
  readonly workflow: string | WorkflowDefinition<TInput>
  /** A cron expression (5 fields, or 6 with seconds first), read by `croner`: `0 9 * * 1-5`. */
  readonly cron?: string | undefined
  /** A fixed period (`1s`, `10m`, `1h`, `7d`, or milliseconds): slots fall on whole multiples of it since the epoch. */
  readonly every?: string | number | undefined
  /** The IANA time zone a `cron` expression is read in (`Europe/Paris`). @default UTC */
  readonly timezone?: string | undefined
  /** The input of every run the schedule starts. */
  readonly input: TInput
  /** What a slot does while the previous slot's run still runs. */
  readonly overlap: OverlapPolicy
  /** How late a slot may still start (after a stop or an outage); an older slot is recorded `missed`. */
  readonly catchUpWindow: string | number
  /** Starts each slot up to this much later (the same delay for a slot in every process), to spread load. */
  readonly jitter?: string | number | undefined
  /** Starts paused: every slot is recorded `paused` until `locus schedule unpause`. @default false */
  readonly paused?: boolean | undefined
}

const SCHEDULE_MARKER = Symbol.for('locus.schedule')

/** A checked schedule: what {@link defineSchedule} returns. */
export interface ScheduleDefinition<TInput = unknown> {
  readonly id: string
  /** The workflow's name. */
  readonly workflow: string
  readonly cron?: string | undefined
  readonly every?: string | undefined
  readonly everyMs?: number | undefined
  readonly timezone?: string | undefined
  readonly input: TInput
  readonly overlap: OverlapPolicy
  readonly catchUpWindow: string
  readonly catchUpWindowMs: number
  readonly jitter?: string | undefined
  readonly jitterMs: number
  readonly paused: boolean
  /** The first slot strictly after `afterMs`, in epoch milliseconds; undefined when the expression has no more. */
  nextSlot(afterMs: number): number | undefined
  /** What the store keeps of it. */
  stored(): StoredSchedule
}

const SCHEDULE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/

function invalid(id: string, field: string, message: string): never {
  throw new RuntimeInputError('SCHEDULE_INVALID', `Schedule ${JSON.stringify(id)}: ${message}`, [`${field}: ${message}`])
}

/** A duration as text or milliseconds, and its milliseconds. */
function readDuration(id: string, field: string, value: string | number, allowZero: boolean): { text: string; ms: number } {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0 || (!allowZero && value === 0)) {
      invalid(id, field, `${String(value)} is not a duration; pass one such as ${DURATION_FORMS}, or a number of milliseconds${allowZero ? ' (0 or more)' : ' above 0'}.`)
    }
    return { text: `${Math.round(value)}ms`, ms: Math.round(value) }
  }
  const ms = typeof value === 'string' ? durationMs(value) : undefined
  if (ms === undefined) invalid(id, field, `${JSON.stringify(value)} is not a duration; pass one such as ${DURATION_FORMS}, or a number of milliseconds.`)
  return { text: value.trim(), ms }
}

function checkTimezone(id: string, timezone: string): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone })
  } catch {
    invalid(id, 'timezone', `${JSON.stringify(timezone)} is not a known time zone; pass an IANA name such as "UTC", "Europe/Paris" or "America/New_York".`)
  }
}

/** Checks a schedule's input against its workflow's schema. @throws RuntimeInputError `WORKFLOW_INPUT_INVALID` */
function checkInput(schedule: { readonly id: string; readonly input: unknown }, workflow: WorkflowDefinition): void {
  if (workflow.input === undefined) return
  const parsed = workflow.input.safeParse(schedule.input)
  if (!parsed.success) {
    const issues = describeZodIssues(parsed.error, 'input')
    throw new RuntimeInputError(
      'WORKFLOW_INPUT_INVALID',
      `Schedule ${JSON.stringify(schedule.id)}: its input does not fit workflow "${workflow.name}"'s input schema: ${issues.join('; ')}.`,
      issues,
    )
  }
}

/**
 * Declares a schedule: which workflow to start, when (`cron` or `every`),
 * with which input, and what each slot does when the last run is still going
 * (`overlap`) or the slot is late (`catchUpWindow`). Every slot ends as one
 * record in the store (`started`, `skipped-overlap`, `missed`, `paused` or
 * `failed-to-start`), and fires once across every process sharing the store.
 *
 * Bad text is refused here, naming it and the form expected: a cron
 * expression or duration that does not parse, an unknown time zone. A
 * schedule is checked against its workflow when it is bound to the workflows
 * it runs with ({@link bindSchedules}, which `startScheduler` and
 * `locus serve --workflows` call), or here when `workflow` is a definition.
 *
 * @throws RuntimeInputError `SCHEDULE_INVALID`, or `WORKFLOW_INPUT_INVALID` for a definition whose schema refuses the input
 * @example
 * ```ts
 * export const schedules = [
 *   defineSchedule({ id: 'nightly-report', workflow: 'report', cron: '0 2 * * *', timezone: 'Europe/Paris', input: {}, overlap: 'skip', catchUpWindow: '1h' }),
 * ]
 * ```
 */
export function defineSchedule<TInput>(options: ScheduleOptions<TInput>): ScheduleDefinition<TInput> {
  const given: unknown = options
  if (typeof given !== 'object' || given === null) throw new RuntimeInputError('SCHEDULE_INVALID', 'defineSchedule: pass an object { id, workflow, cron | every, input, overlap, catchUpWindow }.', [])
  const id: unknown = options.id
  if (typeof id !== 'string' || !SCHEDULE_ID.test(id)) invalid(typeof id === 'string' ? id : String(id), 'id', `the id is not one: use ${SCHEDULE_ID_RULE}.`)
  const workflow = typeof options.workflow === 'string' ? options.workflow : (options.workflow as WorkflowDefinition | undefined)?.name
  if (typeof workflow !== 'string' || workflow.length === 0) invalid(id, 'workflow', 'name the workflow each slot starts, or pass its defineWorkflow definition.')
  if ((options.cron === undefined) === (options.every === undefined)) invalid(id, 'cron', 'give exactly one of cron (an expression such as "0 9 * * 1-5") or every (a period such as "10m").')
  if (!(OVERLAP_POLICIES as readonly string[]).includes(options.overlap)) {
    invalid(id, 'overlap', `${JSON.stringify(options.overlap)} is not an overlap policy; pass one of ${OVERLAP_POLICIES.map((policy) => `"${policy}"`).join(', ')}.`)
  }
  if ((options.catchUpWindow as unknown) === undefined) invalid(id, 'catchUpWindow', `say how late a slot may still start, as a duration such as ${DURATION_FORMS}, or 0 to start none late.`)
  const catchUp = readDuration(id, 'catchUpWindow', options.catchUpWindow, true)
  const jitter = options.jitter === undefined ? undefined : readDuration(id, 'jitter', options.jitter, true)
  if (options.timezone !== undefined) {
    if (options.every !== undefined) invalid(id, 'timezone', 'a time zone applies to a cron expression only; every counts in milliseconds.')
    checkTimezone(id, options.timezone)
  }
  if (options.paused !== undefined && typeof options.paused !== 'boolean') invalid(id, 'paused', 'pass true or false.')

  let nextSlot: (afterMs: number) => number | undefined
  let every: { text: string; ms: number } | undefined
  if (options.cron !== undefined) {
    const expression = options.cron
    if (typeof expression !== 'string') invalid(id, 'cron', 'pass the cron expression as a string.')
    let cron: Cron
    try {
      cron = new Cron(expression, { paused: true, timezone: options.timezone ?? 'UTC' })
    } catch (error) {
      invalid(
        id,
        'cron',
        `${JSON.stringify(expression)} is not a cron expression (${(error as Error).message}); pass 5 fields (minute hour day-of-month month day-of-week, such as "0 9 * * 1-5") or 6 with seconds first.`,
      )
    }
    nextSlot = (afterMs) => cron.nextRun(new Date(afterMs))?.getTime()
  } else {
    const period = readDuration(id, 'every', options.every as string | number, false)
    every = period
    nextSlot = (afterMs) => (Math.floor(afterMs / period.ms) + 1) * period.ms
  }
  if (typeof options.workflow !== 'string') checkInput({ id, input: options.input }, options.workflow)

  const definition: ScheduleDefinition<TInput> = {
    id,
    workflow,
    ...(options.cron === undefined ? {} : { cron: options.cron }),
    ...(every === undefined ? {} : { every: every.text, everyMs: every.ms }),
    ...(options.timezone === undefined ? {} : { timezone: options.timezone }),
    input: options.input,
    overlap: options.overlap,
    catchUpWindow: catchUp.text,
    catchUpWindowMs: catchUp.ms,
    ...(jitter === undefined ? {} : { jitter: jitter.text }),
    jitterMs: jitter?.ms ?? 0,
    paused: options.paused === true,
    nextSlot,
    stored: () => ({
      id,
      workflow,
      ...(options.cron === undefined ? {} : { cron: options.cron }),
      ...(every === undefined ? {} : { every: every.text }),
      ...(options.timezone === undefined ? {} : { timezone: options.timezone }),
      input: options.input,
      overlap: options.overlap,
      catchUpWindow: catchUp.text,
      ...(jitter === undefined ? {} : { jitter: jitter.text }),
      paused: options.paused === true,
    }),
  }
  Object.defineProperty(definition, SCHEDULE_MARKER, { value: true, enumerable: false })
  return Object.freeze(definition)
}

/** True for a value {@link defineSchedule} made (from any installed copy of the package). */
export function isScheduleDefinition(value: unknown): value is ScheduleDefinition {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[SCHEDULE_MARKER] === true
}

/**
 * Binds schedules to the workflows they run with: refuses a schedule naming
 * a workflow that is not among them, one whose input fails the workflow's
 * schema, and two schedules with one id, before any slot fires.
 *
 * @throws RuntimeInputError `UNKNOWN_WORKFLOW`, `WORKFLOW_INPUT_INVALID` or `SCHEDULE_INVALID`
 */
export function bindSchedules(schedules: readonly ScheduleDefinition[], workflows: Iterable<WorkflowDefinition>): readonly ScheduleDefinition[] {
  const byName = new Map<string, WorkflowDefinition>()
  for (const workflow of workflows) byName.set(workflow.name, workflow)
  const ids = new Set<string>()
  for (const schedule of schedules) {
    if (!isScheduleDefinition(schedule)) throw new RuntimeInputError('SCHEDULE_INVALID', 'A schedule must be made with defineSchedule({ id, workflow, cron | every, input, overlap, catchUpWindow }).', [])
    if (ids.has(schedule.id)) invalid(schedule.id, 'id', 'two schedules have this id; give each a unique id.')
    ids.add(schedule.id)
    const workflow = byName.get(schedule.workflow)
    if (workflow === undefined) {
      const known = [...byName.keys()]
      throw new RuntimeInputError(
        'UNKNOWN_WORKFLOW',
        `Schedule ${JSON.stringify(schedule.id)} names workflow "${schedule.workflow}", which is not among the workflows it runs with (${known.length === 0 ? 'none' : known.join(', ')}).`,
        [`workflow: "${schedule.workflow}" is unknown`],
      )
    }
    checkInput(schedule, workflow)
  }
  return schedules
}
