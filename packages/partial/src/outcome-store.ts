import { type RunDisposition, RunDispositionSchema } from '@locus/outcome'
import { z } from 'zod'
import { type AnswerOutcome, AnswerOutcomeSchema } from './answer-outcome.js'
import type { OutcomeStoreKind } from './partial-error.js'
import { PartialInputError, formatIssuePath } from './partial-error.js'
import { type StepCriticality, StepCriticalitySchema } from './step-criticality.js'

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
    fail(field, parsed.error, 'A run record is { runId, outcome: complete | partial | cannot_answer | failed, correct?, startedAt, workflow?, disposition? }.')
  }
  const value = parsed.data
  return {
    runId: value.runId,
    outcome: value.outcome,
    correct: value.correct ?? null,
    startedAt: value.startedAt,
    workflow: value.workflow ?? null,
    disposition: value.disposition ?? null,
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
