import { type RunDisposition, RunDispositionSchema } from '@locus/outcome'
import { z } from 'zod'
import { type AnswerOutcome, AnswerOutcomeSchema } from './answer-outcome.js'
import type { OutcomeStoreKind } from './partial-error.js'
import { PartialInputError, formatIssuePath } from './partial-error.js'
import { type StepCriticality, StepCriticalitySchema } from './step-criticality.js'
import { ANSWER_OUTCOMES } from './answer-outcome.js'
import { UsdSum, canonicalUsd, isUsdText } from './usd-text.js'

/** One run's row in the outcome metrics. */
export interface RunRecordInput {
  /** The run's id; recording the same id again updates its row (to add a grade later, say). */
  readonly runId: string
  /** The answer outcome; see {@link deriveAnswerOutcome}. */
  readonly outcome: AnswerOutcome
  /** Whether the answer was right, once graded; `null` or absent while unknown. */
  readonly correct?: boolean | null
  /** When the run started, as a Date or an ISO 8601 string with offset. */
  readonly startedAt: Date | string
  /** Name of the workflow, for filtering. */
  readonly workflow?: string | null
  /** The run's durable disposition, the other axis, kept beside the outcome. */
  readonly disposition?: RunDisposition | null
  /**
   * What the run's LLM requests cost in dollars, as a decimal string
   * (`RunView.cost.usd`); `null` or absent when the run was not priced.
   * Recording the run again without it keeps the cost already recorded.
   */
  readonly costUsd?: string | null
  /** Of `costUsd`, what went to attempts that were thrown away (`RunView.cost.retryOverheadUsd`). */
  readonly retryOverheadUsd?: string | null
  /** Requests of the run whose model had no price, so `costUsd` leaves them out (`RunView.cost.unpricedRequests`). */
  readonly unpricedRequests?: number | null
}

/** One gap as recorded: a {@link Gap} works as it is. */
export interface GapRecordInput {
  readonly tool: string
  readonly criticality: StepCriticality
  readonly reason?: string
  readonly step?: number
  /**
   * When the gap happened.
   * @default the store clock's now
   */
  readonly createdAt?: Date | string
}

/** Options of the two reports. */
export interface ReportOptions {
  /**
   * Count only rows strictly after this instant.
   * @default 30 days before now
   */
  readonly since?: Date
}

/** The outcome report: one row per answer outcome, and correctness where it means something. */
export interface OutcomeReport {
  readonly complete: number
  readonly partial: number
  readonly cannotAnswer: number
  readonly failed: number
  /** Sum of the four counts. */
  readonly total: number
  /** Share of graded complete runs that were correct, to two decimals; `null` when none was graded. */
  readonly correctComplete: number | null
  /** Share of graded partial runs that were correct, to two decimals; `null` when none was graded. */
  readonly correctPartial: number | null
}

/** One tool's line in the gaps report. */
export interface ToolGapCount {
  readonly tool: string
  /** Every gap this tool caused. */
  readonly gaps: number
  /** Gaps on required steps: the ones that stopped an answer. */
  readonly blocking: number
}

/** Gaps per tool, ordered by blocking gaps, then all gaps (then tool name, so ties are stable). */
export interface GapsReport {
  readonly tools: readonly ToolGapCount[]
  /** Sum of `gaps` over all tools. */
  readonly totalGaps: number
}

/** Dollars spent on the runs of one answer outcome. */
export interface OutcomeCost {
  readonly outcome: AnswerOutcome
  /** Runs with this outcome in the window. */
  readonly runs: number
  /** Of them, runs recorded with a cost (priced runs). */
  readonly pricedRuns: number
  /** What the priced runs cost, an exact decimal string. */
  readonly usd: string
  /** Of `usd`, what went to attempts that were thrown away. */
  readonly retryOverheadUsd: string
  /** Priced runs that made requests to a model with no price: their `usd` leaves those requests out. */
  readonly runsWithUnpricedRequests: number
}

/** Money spent on runs a tool's required gaps alone stopped from answering. */
export interface ToolGapCost {
  readonly tool: string
  /** `cannot_answer` runs whose blocking gaps were all this tool's. */
  readonly runs: number
  /** What those runs cost: money that bought no answer because of this tool. */
  readonly usd: string
}

/** Dollars per answer outcome, lost to each tool's gaps, and retry overhead. */
export interface CostReport {
  /** One row per answer outcome, in the order complete, partial, cannot_answer, failed. */
  readonly outcomes: readonly OutcomeCost[]
  /** Tools whose blocking gaps alone stopped priced runs, most money first. */
  readonly tools: readonly ToolGapCost[]
  /** Sum of `usd` over the outcomes. */
  readonly usd: string
  /** Sum of `retryOverheadUsd` over the outcomes. */
  readonly retryOverheadUsd: string
  /** `cannot_answer` runs stopped by more than one tool's (or by no recorded) gaps: their money is not put on a tool. */
  readonly unattributedLostUsd: string
  /** Runs in the window recorded without a cost: not priced, or recorded before costs were. */
  readonly unpricedRuns: number
}

/** One UTC day of runs: how many ended with each answer outcome, and what they cost. */
export interface DayReport {
  /** `YYYY-MM-DD`, UTC, of the runs' start. */
  readonly day: string
  readonly complete: number
  readonly partial: number
  readonly cannotAnswer: number
  readonly failed: number
  readonly usd: string
  readonly retryOverheadUsd: string
}

/** The runs of the window per day, oldest first; days without a run are left out. */
export interface DailyReport {
  readonly days: readonly DayReport[]
}

/** What `migrate()` did. */
export interface MigrationResult {
  /** Versions applied by this call; empty when the schema was already current. */
  readonly applied: readonly number[]
  /** The schema version after the call. */
  readonly version: number
}

/**
 * Where outcome metrics live. Two implementations share this contract and
 * one test suite: SQLite ({@link createSqliteOutcomeStore}, the embedded
 * default) and PostgreSQL ({@link createPostgresOutcomeStore}).
 */
export interface OutcomeStore {
  readonly kind: OutcomeStoreKind
  /** Applies pending schema migrations; running it again is a no-op. */
  migrate(): Promise<MigrationResult>
  /** Records (or updates) one run. */
  recordRun(run: RunRecordInput): Promise<void>
  /** Records many runs in one transaction. */
  recordRuns(runs: readonly RunRecordInput[]): Promise<void>
  /** Records the gaps of one run. */
  recordGaps(runId: string, gaps: readonly GapRecordInput[]): Promise<void>
  /** Runs per answer outcome, with correctness for complete and partial runs. */
  outcomeReport(options?: ReportOptions): Promise<OutcomeReport>
  /** Gaps per tool, worst first. */
  gapsReport(options?: ReportOptions): Promise<GapsReport>
  /** Dollars per answer outcome, per tool's blocking gaps, and retry overhead. */
  costReport(options?: ReportOptions): Promise<CostReport>
  /** Outcomes and dollars per UTC day. */
  dailyReport(options?: ReportOptions): Promise<DailyReport>
  /** Releases the database; the store cannot be used afterwards. */
  close(): Promise<void>
}

/** The default report window. */
export const DEFAULT_REPORT_WINDOW_MS = 30 * 24 * 60 * 60 * 1000

const InstantSchema = z.union([z.date(), z.iso.datetime({ offset: true }).transform((text) => new Date(text))])

const RunRecordSchema = z.object({
  runId: z.string().min(1, 'a run id is required'),
  outcome: AnswerOutcomeSchema,
  correct: z.boolean().nullable().optional(),
  startedAt: InstantSchema,
  workflow: z.string().nullable().optional(),
  disposition: RunDispositionSchema.nullable().optional(),
  costUsd: z.string().refine(isUsdText, 'expected a non-negative decimal string of dollars, such as "0.004210"').nullable().optional(),
  retryOverheadUsd: z.string().refine(isUsdText, 'expected a non-negative decimal string of dollars, such as "0.000100"').nullable().optional(),
  unpricedRequests: z.number().int().nonnegative().nullable().optional(),
})

const GapRecordSchema = z.object({
  tool: z.string().min(1, 'a tool name is required'),
  criticality: StepCriticalitySchema,
  reason: z.string().optional(),
  step: z.number().int().optional(),
  createdAt: InstantSchema.optional(),
})

/** A run record checked and normalised for a store. */
export interface NormalizedRun {
  readonly runId: string
  readonly outcome: AnswerOutcome
  readonly correct: boolean | null
  readonly startedAt: Date
  readonly workflow: string | null
  readonly disposition: RunDisposition | null
  /** Canonical decimal strings; `null` when not given. */
  readonly costUsd: string | null
  readonly retryOverheadUsd: string | null
  readonly unpricedRequests: number | null
}

/** A gap record checked and normalised for a store. */
export interface NormalizedGap {
  readonly tool: string
  readonly criticality: StepCriticality
  readonly reason: string
  readonly step: number | null
  readonly createdAt: Date
}

function fail(root: string, error: z.ZodError, hint: string): never {
  const issue = error.issues[0]
  throw new PartialInputError(formatIssuePath(root, issue?.path ?? []), `${issue?.message ?? 'invalid'}. ${hint}`, error)
}

/** Checks one run record; throws {@link PartialInputError} naming the field. */
export function normalizeRun(run: RunRecordInput, field = 'run'): NormalizedRun {
  const parsed = RunRecordSchema.safeParse(run)
  if (!parsed.success) {
    fail(field, parsed.error, 'A run record is { runId, outcome: complete | partial | cannot_answer | failed, correct?, startedAt, workflow?, disposition?, costUsd?, retryOverheadUsd?, unpricedRequests? }.')
  }
  const value = parsed.data
  const costUsd = value.costUsd ?? null
  const retryOverheadUsd = value.retryOverheadUsd ?? null
  if (retryOverheadUsd !== null && costUsd === null) {
    throw new PartialInputError(`${field}.retryOverheadUsd`, 'a retry overhead needs the run\'s costUsd too; give both (RunView.cost.usd and .retryOverheadUsd).')
  }
  return {
    runId: value.runId,
    outcome: value.outcome,
    correct: value.correct ?? null,
    startedAt: value.startedAt,
    workflow: value.workflow ?? null,
    disposition: value.disposition ?? null,
    costUsd: costUsd === null ? null : canonicalUsd(costUsd),
    retryOverheadUsd: costUsd === null ? null : canonicalUsd(retryOverheadUsd ?? '0'),
    unpricedRequests: value.unpricedRequests ?? null,
  }
}

/** Checks many run records and keeps the last of any repeated id, as repeated single calls would. */
export function normalizeRuns(runs: readonly RunRecordInput[]): NormalizedRun[] {
  const received: unknown = runs
  if (!Array.isArray(received)) throw new PartialInputError('runs', 'expected an array of run records.')
  const byId = new Map<string, NormalizedRun>()
  runs.forEach((run, index) => {
    const normalized = normalizeRun(run, `runs[${index}]`)
    byId.delete(normalized.runId)
    byId.set(normalized.runId, normalized)
  })
  return [...byId.values()]
}

/** Checks the gaps of one run; throws {@link PartialInputError} naming the field. */
export function normalizeGaps(runId: string, gaps: readonly GapRecordInput[], now: Date): NormalizedGap[] {
  if (typeof runId !== 'string' || runId.length === 0) throw new PartialInputError('runId', 'a run id is required.')
  const received: unknown = gaps
  if (!Array.isArray(received)) throw new PartialInputError('gaps', 'expected an array of gaps, such as assessment.gaps.')
  return gaps.map((gap, index) => {
    const parsed = GapRecordSchema.safeParse(gap)
    if (!parsed.success) fail(`gaps[${index}]`, parsed.error, 'A gap is { tool, criticality, reason?, step?, createdAt? }.')
    return {
      tool: parsed.data.tool,
      criticality: parsed.data.criticality,
      reason: parsed.data.reason ?? '',
      step: parsed.data.step ?? null,
      createdAt: parsed.data.createdAt ?? now,
    }
  })
}

/** Checks report options and resolves the default window. */
export function resolveSince(options: ReportOptions | undefined, now: Date): Date {
  const since = options?.since
  if (since === undefined) return new Date(now.getTime() - DEFAULT_REPORT_WINDOW_MS)
  if (!(since instanceof Date) || Number.isNaN(since.getTime())) {
    throw new PartialInputError('options.since', 'expected a valid Date; pass new Date(...) for the start of the window.')
  }
  return since
}

/** Builds the report from the query row, whatever numeric types the driver returned. */
export function toOutcomeReport(row: Readonly<Record<string, unknown>> | undefined): OutcomeReport {
  const count = (key: string): number => Number(row?.[key] ?? 0)
  const share = (key: string): number | null => {
    const value = row?.[key]
    return value === null || value === undefined ? null : Number(value)
  }
  const complete = count('complete')
  const partial = count('partial')
  const cannotAnswer = count('cannot_answer')
  const failed = count('failed')
  return {
    complete,
    partial,
    cannotAnswer,
    failed,
    total: complete + partial + cannotAnswer + failed,
    correctComplete: share('correct_complete'),
    correctPartial: share('correct_partial'),
  }
}

/** Builds the gaps report from query rows, with a stable order for ties. */
export function toGapsReport(rows: readonly Readonly<Record<string, unknown>>[]): GapsReport {
  const tools = rows
    .map((row) => ({ tool: String(row.tool), gaps: Number(row.gaps), blocking: Number(row.blocking) }))
    .sort((left, right) => right.blocking - left.blocking || right.gaps - left.gaps || (left.tool < right.tool ? -1 : left.tool > right.tool ? 1 : 0))
  return { tools, totalGaps: tools.reduce((sum, row) => sum + row.gaps, 0) }
}

/** One row of a store's cost query: an outcome with its run counts and each priced run's amounts (SQLite) or their sums (PostgreSQL). */
export interface CostRow {
  readonly outcome: string
  readonly runs: number
  readonly pricedRuns: number
  readonly usd: string
  readonly retryOverheadUsd: string
  readonly runsWithUnpricedRequests: number
}

/** Builds the cost report from per-outcome rows and per-tool rows, adding amounts exactly. */
export function toCostReport(
  rows: readonly CostRow[],
  tools: readonly { readonly tool: string; readonly runs: number; readonly usd: string }[],
): CostReport {
  const total = new UsdSum()
  const overhead = new UsdSum()
  let unpricedRuns = 0
  const outcomes = ANSWER_OUTCOMES.map((outcome): OutcomeCost => {
    const row = rows.find((candidate) => candidate.outcome === outcome)
    total.add(row?.usd ?? '0')
    overhead.add(row?.retryOverheadUsd ?? '0')
    unpricedRuns += (row?.runs ?? 0) - (row?.pricedRuns ?? 0)
    return {
      outcome,
      runs: row?.runs ?? 0,
      pricedRuns: row?.pricedRuns ?? 0,
      usd: canonicalUsd(row?.usd ?? '0'),
      retryOverheadUsd: canonicalUsd(row?.retryOverheadUsd ?? '0'),
      runsWithUnpricedRequests: row?.runsWithUnpricedRequests ?? 0,
    }
  })
  const attributed = new UsdSum()
  for (const tool of tools) attributed.add(tool.usd)
  const lost = outcomes.find((row) => row.outcome === 'cannot_answer')?.usd ?? '0'
  return {
    outcomes,
    tools: tools
      .map((tool) => ({ tool: tool.tool, runs: tool.runs, usd: canonicalUsd(tool.usd) }))
      .sort((left, right) => compareUsd(right.usd, left.usd) || (left.tool < right.tool ? -1 : left.tool > right.tool ? 1 : 0)),
    usd: total.toString(),
    retryOverheadUsd: overhead.toString(),
    unattributedLostUsd: subtractUsd(lost, attributed.toString()),
    unpricedRuns,
  }
}

/** Compares two canonical amounts. */
export function compareUsd(left: string, right: string): number {
  const [a, b] = alignUsd(left, right)
  return a < b ? -1 : a > b ? 1 : 0
}

function alignUsd(left: string, right: string): [bigint, bigint] {
  const [lw = '0', lf = ''] = left.split('.')
  const [rw = '0', rf = ''] = right.split('.')
  const places = Math.max(lf.length, rf.length)
  return [BigInt(lw + lf.padEnd(places, '0')), BigInt(rw + rf.padEnd(places, '0'))]
}

function subtractUsd(left: string, right: string): string {
  const places = Math.max(left.split('.')[1]?.length ?? 0, right.split('.')[1]?.length ?? 0)
  const [a, b] = alignUsd(left, right)
  const digits = (a - b).toString().padStart(places + 1, '0')
  return canonicalUsd(`${digits.slice(0, -places)}.${digits.slice(-places)}`)
}

/** Builds the daily report from per-day, per-outcome rows. */
export function toDailyReport(rows: readonly { readonly day: string; readonly outcome: string; readonly runs: number; readonly usd: string; readonly retryOverheadUsd: string }[]): DailyReport {
  const byDay = new Map<string, { counts: Record<AnswerOutcome, number>; usd: UsdSum; overhead: UsdSum }>()
  for (const row of rows) {
    let day = byDay.get(row.day)
    if (day === undefined) {
      day = { counts: { complete: 0, partial: 0, cannot_answer: 0, failed: 0 }, usd: new UsdSum(), overhead: new UsdSum() }
      byDay.set(row.day, day)
    }
    if ((ANSWER_OUTCOMES as readonly string[]).includes(row.outcome)) day.counts[row.outcome as AnswerOutcome] += row.runs
    day.usd.add(row.usd)
    day.overhead.add(row.retryOverheadUsd)
  }
  return {
    days: [...byDay.entries()]
      .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0))
      .map(([day, totals]) => ({
        day,
        complete: totals.counts.complete,
        partial: totals.counts.partial,
        cannotAnswer: totals.counts.cannot_answer,
        failed: totals.counts.failed,
        usd: totals.usd.toString(),
        retryOverheadUsd: totals.overhead.toString(),
      })),
  }
}
