import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { RUN_LAYOUT } from '@locus/journal'
import { type RecordedCall, type Recording, loadRecording, mergeRecordings } from '@locus/replay'
import { createFileRunStore, createMemoryRunStore } from '@locus/store'
import type { WorkflowDefinition } from './define.js'
import { readStoredRun } from './read-run.js'
import type { RunStanding } from './run-summary.js'
import { launchRun, resolveRunsDir } from './run-workflow-script.js'
import { describeZodIssues } from './zod-issues.js'

/** What {@link checkDeploy} checks. */
export interface DeployCheckOptions {
  /** The runs directory holding the runs. @default `<cwd>/.locus-pi/runs` */
  readonly runsDir?: string | undefined
  /** The workflow code about to ship; runs of other workflows are left out. */
  readonly workflows: readonly WorkflowDefinition[]
  /** Only runs created at or after this time (epoch milliseconds). */
  readonly since?: number | undefined
  /** Check finished runs too, not only those that may still continue. @default false */
  readonly all?: boolean | undefined
}

/** Recorded calls that would run live again on resume, by kind, with what they cost when recorded. */
export interface LiveAgainCounts {
  readonly agent: number
  readonly tool: number
  /** Child workflow spawns, each of which would run its whole child workflow again. */
  readonly child: number
  readonly inputTokens: number
  readonly outputTokens: number
}

/** One run's verdict. */
export interface DeployCheckRun {
  readonly runId: string
  readonly workflow: string
  readonly standing: RunStanding
  /**
   * - `identical`: the new code asks exactly what the run recorded;
   * - `diverged`: it asks something else at `divergence.ordinal`;
   * - `input-invalid`: the recorded input no longer passes the workflow's input schema;
   * - `nothing-recorded`: the run's journal is empty.
   */
  readonly verdict: 'identical' | 'diverged' | 'input-invalid' | 'nothing-recorded'
  readonly divergence?: { readonly ordinal: string; readonly fields: readonly string[] }
  readonly liveAgain: LiveAgainCounts
  /** What is wrong, for `input-invalid`. */
  readonly issues?: readonly string[]
}

/** The whole check. */
export interface DeployCheckReport {
  /** True when no checked run that may still continue would diverge. */
  readonly ok: boolean
  readonly runs: readonly DeployCheckRun[]
}

const CONTINUABLE: readonly RunStanding[] = ['unfinished', 'cancelled']

function costOf(calls: readonly RecordedCall[]): LiveAgainCounts {
  let agent = 0
  let tool = 0
  let child = 0
  let inputTokens = 0
  let outputTokens = 0
  for (const call of calls) {
    if (call.kind === 'tool') {
      tool += 1
      continue
    }
    if (call.kind === 'child') {
      child += 1
      continue
    }
    agent += 1
    inputTokens += call.envelope.usage?.inputTokens ?? 0
    outputTokens += call.envelope.usage?.outputTokens ?? 0
  }
  return { agent, tool, child, inputTokens, outputTokens }
}

/**
 * Replays every run that may still continue (unfinished or cancelled; with
 * `all`, every run in the period) against the workflow code about to ship,
 * with no host and no tool execution, and says per run whether it replays
 * identically or where it first diverges and how many recorded calls would
 * then run live again on resume (agent and tool calls, with their recorded
 * token usage). Nothing is written to the runs: each replay runs in a scratch
 * memory store.
 *
 * @example
 * ```ts
 * const report = await checkDeploy({ runsDir: '.locus-pi/runs', workflows: [triage] })
 * if (!report.ok) process.exitCode = 1
 * ```
 */
export async function checkDeploy(options: DeployCheckOptions): Promise<DeployCheckReport> {
  const runsDir = resolveRunsDir(options.runsDir === undefined ? {} : { runsDir: options.runsDir })
  const store = createFileRunStore(runsDir)
  const byName = new Map(options.workflows.map((workflow) => [workflow.name, workflow]))
  const runs: DeployCheckRun[] = []
  for (const info of await store.listRuns(options.since === undefined ? {} : { since: options.since })) {
    const stored = await readStoredRun(store, info.runId)
    const standing = stored.latest.summary.standing
    if (options.all !== true && !CONTINUABLE.includes(standing)) continue
    const start = stored.executions.map((execution) => execution.view.runStart).find((line) => line !== undefined)
    if (start === undefined) {
      if (options.all === true) runs.push({ runId: info.runId, workflow: 'unknown', standing, verdict: 'nothing-recorded', liveAgain: costOf([]) })
      continue
    }
    const workflowName = start.workflow
    const workflow = byName.get(workflowName)
    if (workflow === undefined) continue
    let input: unknown = start.input
    if (workflow.input !== undefined) {
      const parsed = workflow.input.safeParse(start.input)
      if (!parsed.success) {
        runs.push({ runId: info.runId, workflow: workflowName, standing, verdict: 'input-invalid', issues: describeZodIssues(parsed.error, 'input'), liveAgain: costOf([]) })
        continue
      }
      input = parsed.data
    }
    const sources = stored.executions.map((execution) => execution.info.location).filter((dir) => existsSync(join(dir, RUN_LAYOUT.journal)))
    const recording: Recording = mergeRecordings(sources.map((dir) => loadRecording(dir)))
    // A scratch store holds the replay, so checking writes nothing to the runs being checked.
    const scratch = createMemoryRunStore()
    await (await scratch.createExecution({ runId: info.runId, kind: 'root' })).close()
    const replayed = await launchRun(workflow, { store: scratch, runId: info.runId, input }, { executionId: 'replay', recording, replayFailures: true }).done
    const report = replayed.replay
    const divergence = report?.divergence ?? null
    const live = report === undefined ? recording.entries() : recording.entries().filter((call) => report.calls.find((entry) => entry.ordinal === call.ordinal)?.decision !== 'replay')
    runs.push({
      runId: info.runId,
      workflow: workflowName,
      standing,
      verdict: report?.identical === true ? 'identical' : 'diverged',
      ...(divergence === null ? {} : { divergence: { ordinal: divergence.ordinal, fields: [...divergence.fields] } }),
      liveAgain: costOf(report?.identical === true ? [] : live),
    })
  }
  const blocking = runs.filter((run) => CONTINUABLE.includes(run.standing) && run.verdict !== 'identical')
  return { ok: blocking.length === 0, runs }
}
