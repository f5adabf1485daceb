import { type PendingDeferral, type RunResultFile, type StoredExecution, type StoredRun, executionStanding, isOkEnding } from '@locus/runtime'
import type { RunRow, RunRowStatus } from '@locus/store'
import type { z } from 'zod'
import type { LinksSchema, RunListItemSchema, RunResultResponseSchema, RunSchema, RunStatus } from './schemas.js'

/** What the server knows about a run besides its store: whether it executes it, and whether it asked it to stop. */
export interface LiveState {
  /** The execution this server runs for the run, if any. */
  readonly liveExecutionId: string | undefined
  /** True once a cancel was asked for that execution. */
  readonly cancelling: boolean
}

export function linksOf(runId: string): z.infer<typeof LinksSchema> {
  const self = `/v1/runs/${encodeURIComponent(runId)}`
  return { self, result: `${self}/result`, journal: `${self}/journal`, events: `${self}/events`, cancel: `${self}/cancel`, resume: `${self}/resume` }
}

/** True once an execution has ended: its `run_end` is readable or its `result.json` written. */
export function hasEnded(execution: StoredExecution): boolean {
  return (execution.view.runEnd?.disposition ?? execution.resultFile?.disposition) !== undefined
}

/**
 * The status of one execution: its disposition once it ended, `cancelling`
 * after a cancel this server asked for, `waiting` while it waits on an open
 * deferred tool or a `sleep()` timer (`waitingOn` of them), `queued` before its
 * `run_start` line is readable. One that stopped without `run_end` reads as
 * the CLI says (`executionStanding` of @locus/runtime): `suspended`,
 * `taken-over`, or `unfinished` once a later execution (`next`) shows it
 * stopped; `running` otherwise (also when another process runs it, or when
 * the process that ran it died: resume it then).
 */
export function statusOfExecution(execution: StoredExecution, live: LiveState, waitingOn = 0, next?: StoredExecution): RunStatus {
  const disposition = execution.view.runEnd?.disposition ?? execution.resultFile?.disposition
  if (disposition !== undefined) return disposition
  const isLive = live.liveExecutionId === execution.info.executionId
  if (isLive && live.cancelling) return 'cancelling'
  if (waitingOn > 0) return 'waiting'
  // A live handle exists only once run_start was written, even if the line is not readable yet.
  if (isLive) return 'running'
  const standing = executionStanding(execution, next)
  if (standing === 'suspended' || standing === 'taken-over') return standing
  if (next !== undefined) return 'unfinished'
  if (execution.view.runStart === undefined) return 'queued'
  return 'running'
}

/**
 * GET /v1/runs/{id}: the run's summary and RunView counts, added up over its
 * root and resumes, every execution's status and own figures, and the
 * deferrals it waits on (`pending`, read only while the latest execution has
 * not ended).
 */
export function runResource(stored: StoredRun, live: LiveState, pending: readonly (PendingDeferral & { readonly callbackUrl?: string | undefined })[] = []): z.infer<typeof RunSchema> {
  const latest = stored.latest
  const summary = stored.summary
  const waiting = hasEnded(latest) ? [] : pending
  // A run asleep on a timer waits as one on a deferral does: on something that comes from outside its calls.
  const sleepingUntil = hasEnded(latest) ? undefined : stored.view.sleepingUntil
  const waitingOn = waiting.length + (sleepingUntil === undefined ? 0 : 1)
  return {
    runId: stored.runId,
    workflow: summary.workflow,
    status: statusOfExecution(latest, live, waitingOn),
    live: live.liveExecutionId === latest.info.executionId,
    executionId: latest.info.executionId,
    executions: [...stored.executions, ...stored.replays].map((execution, index) => ({
      executionId: execution.info.executionId,
      kind: execution.info.kind,
      status: statusOfExecution(execution, live, execution === latest ? waitingOn : 0, stored.executions[index + 1]),
      ...executionFigures(execution),
    })),
    disposition: latest.view.runEnd?.disposition ?? latest.resultFile?.disposition ?? null,
    answerOutcome: summary.answerOutcome ?? null,
    startedAt: summary.startedAt ?? null,
    durationMs: summary.durationMs ?? null,
    error: summary.error ?? null,
    gaps: summary.gaps.map((gap) => ({ ...gap })),
    caveats: [...summary.caveats],
    counts: { ...stored.view.counts },
    cost: stored.view.cost === undefined ? null : { ...stored.view.cost },
    lastSeq: latest.view.lastSeq,
    deferred: waiting.map((deferral) => ({
      deferredId: deferral.deferredId,
      tool: deferral.tool,
      ...(deferral.args === undefined ? {} : { args: deferral.args }),
      expiresAt: deferral.expiresAt,
      executionId: deferral.executionId,
      ...(deferral.callbackUrl === undefined ? {} : { callbackUrl: deferral.callbackUrl }),
    })),
    sleepingUntil: sleepingUntil ?? null,
    waits: { queued: stored.view.queued === undefined ? null : { ...stored.view.queued, keys: [...stored.view.queued.keys] }, rate: { ...stored.view.rateWaits } },
    links: linksOf(stored.runId),
  }
}

/** One execution's own start, duration and counts. */
function executionFigures(execution: StoredExecution): { startedAt: string | null; durationMs: number | null; counts: Record<string, number> } {
  const own = execution.view.executions().find((candidate) => candidate.executionId === execution.info.executionId)
  return { startedAt: own?.startedAt ?? null, durationMs: own?.durationMs ?? null, counts: { ...execution.view.counts } }
}

/**
 * One run of `GET /v1/runs`, from its summary row alone: the row's status,
 * or `cancelling` while this server cancels the execution the row names.
 */
export function rowListItem(row: RunRow, live: LiveState): z.infer<typeof RunListItemSchema> {
  const cancelling = live.cancelling && live.liveExecutionId === row.executionId && row.status !== 'completed' && row.status !== 'failed' && row.status !== 'cancelled'
  return {
    runId: row.runId,
    workflow: row.workflow ?? 'unknown',
    status: cancelling ? 'cancelling' : row.status,
    createdAt: new Date(row.createdAt).toISOString(),
    startedAt: row.startedAt ?? null,
    links: { self: linksOf(row.runId).self },
  }
}

/**
 * The row status to ask the store for, given the API status asked for:
 * `cancelling` is a running row this server cancels; `taken-over` and
 * `unfinished` describe an execution a later one replaced, which no run's
 * latest row is (`null`: nothing to list).
 */
export function rowStatusOf(status: RunStatus | undefined): RunRowStatus | undefined | null {
  if (status === undefined) return undefined
  if (status === 'cancelling') return 'running'
  if (status === 'taken-over' || status === 'unfinished') return null
  return status
}

/**
 * The result of an ended execution: its `result.json` (or, when the process
 * died between `run_end` and writing the file, the same facts from
 * `run_end`), with `ok` true only for a completed run whose answer is
 * complete, so a failed, cancelled or partial run never looks like a success.
 * `undefined` while the execution has not ended.
 */
export function resultOf(execution: StoredExecution): z.infer<typeof RunResultResponseSchema> | undefined {
  const file: RunResultFile | undefined = execution.resultFile
  const end = execution.view.runEnd
  let body: z.infer<typeof RunResultResponseSchema>
  if (file !== undefined) {
    body = { ...file }
  } else if (end !== undefined) {
    body = {
      schema: 'locus.run-result.v1',
      runId: end.runId,
      executionId: end.executionId,
      workflow: execution.view.workflow ?? 'unknown',
      disposition: end.disposition,
      ok: end.ok,
      result: end.result,
      ...(end.error === undefined ? {} : { error: end.error }),
      startedAt: execution.view.runStart?.ts ?? end.ts,
      endedAt: end.ts,
      ...(end.answerOutcome === undefined ? {} : { answerOutcome: end.answerOutcome }),
      ...(end.gaps === undefined ? {} : { gaps: [...end.gaps] }),
      ...(end.caveats === undefined ? {} : { caveats: [...end.caveats] }),
    }
  } else {
    return undefined
  }
  return { ...body, ok: isOkEnding(body.disposition, body.answerOutcome) }
}
