import { Usd, type UsdAmount, formatUsd } from '@locus/cost'
import type { AttemptCost } from '@locus/journal'
import type { RecordedCall, ReplayReport } from '@locus/replay'
import { ARTIFACT_KEYS, type RunInfo, type RunStore, RunNotFoundError, createMemoryRunStore } from '@locus/store'
import { type RunHistory, readRunHistory } from './run-history.js'
import type { WorkflowDefinition } from './define.js'
import { RunResultSchema } from './run-result-schema.js'
import type { RunStanding } from './run-summary.js'
import { launchRun, storeOf } from './run-workflow-script.js'
import { describeZodIssues } from './zod-issues.js'

/** What {@link checkDeploy} checks. */
export interface DeployCheckOptions {
  /**
   * The store holding the runs: file, memory, PostgreSQL or any other
   * {@link RunStore}. Without it, the file store over `runsDir`.
   */
  readonly store?: RunStore | undefined
  /** The runs directory, when no `store` is given. @default `<cwd>/.locus-pi/runs` */
  readonly runsDir?: string | undefined
  /** The workflow code about to ship; runs of other workflows are left out. */
  readonly workflows: readonly WorkflowDefinition[]
  /** Only runs created at or after this time (epoch milliseconds). */
  readonly since?: number | undefined
  /** Check finished runs too, not only those that may still continue. @default false */
  readonly all?: boolean | undefined
  /** How many runs are read and replayed at once. @default 4 */
  readonly concurrency?: number | undefined
}

/**
 * Recorded calls that would run live again on resume, by kind, with what
 * they cost when recorded: the agent calls' own token usage plus the usage
 * recorded in the journals of the child runs that would run again, and the
 * dollars all their recorded attempts cost.
 */
export interface LiveAgainCounts {
  readonly agent: number
  /** Tool calls that run in the process (`defineTool`, `defineDeferredTool`). */
  readonly tool: number
  /** Tool calls a worker serves (`defineRemoteTool`, `remote: true`). */
  readonly remoteTool: number
  /** Child workflow spawns, each of which would run its whole child workflow again. */
  readonly child: number
  readonly inputTokens: number
  readonly outputTokens: number
  /**
   * Dollars those calls cost when they were recorded, as an exact decimal
   * string (`"0.004210"`): every recorded attempt of each agent call, retries
   * included, and every agent attempt of each child run that would run again,
   * as their `agent_end` lines priced them. `null` when none of them carries
   * a cost (the run was not priced, or nothing would run again). Requests to
   * a model with no price are not in it: `unpricedRequests` counts them.
   */
  readonly usd: string | null
  /** Of those calls' recorded requests, how many went to a model with no price (not in `usd`). */
  readonly unpricedRequests: number
}

/** Verdicts of {@link DeployCheckRun.verdict}. */
export const DEPLOY_CHECK_VERDICTS = ['identical', 'diverged', 'input-invalid', 'nothing-recorded', 'error'] as const
export type DeployCheckVerdict = (typeof DEPLOY_CHECK_VERDICTS)[number]

/** The first call whose canonical request differs from the recorded one. */
export interface DeployCheckDivergence {
  /** The call's position in the group tree, as `locus replay` names it. */
  readonly ordinal: string
  /** The fields of its canonical request that changed (`prompt`, `args`, `tool`, `kind`...). */
  readonly fields: readonly string[]
}

/** One run's verdict. */
export interface DeployCheckRun {
  readonly runId: string
  readonly workflow: string
  readonly standing: RunStanding
  /**
   * True when the run may still continue, so a divergence would hit it on
   * resume: it has not ended (killed, running, owned by a worker), it was
   * cancelled, or a deferred tool of it still waits for an answer.
   */
  readonly continuable: boolean
  /** Deferred tool calls opened and never answered, when there are any. */
  readonly openDeferrals?: number
  /** The worker holding the run's lease, for a store with leases (PostgreSQL). */
  readonly owner?: string
  /**
   * - `identical`: the new code asks exactly what the run recorded (a run
   *   that stopped part-way is identical when every call it recorded matches);
   * - `diverged`: it asks something else at `divergence.ordinal`;
   * - `input-invalid`: the recorded input no longer passes the workflow's input schema;
   * - `nothing-recorded`: the run's journal holds no `run_start`;
   * - `error`: the run could not be read or replayed (`issues` says why).
   */
  readonly verdict: DeployCheckVerdict
  readonly divergence?: DeployCheckDivergence
  readonly liveAgain: LiveAgainCounts
  /** What is wrong, for `input-invalid` and `error`. */
  readonly issues?: readonly string[]
}

/** The whole check. */
export interface DeployCheckReport {
  /** True when no checked run that may still continue would diverge, fail its input schema or fail to replay. */
  readonly ok: boolean
  /** One entry per checked run, in the store's listing order (newest first). */
  readonly runs: readonly DeployCheckRun[]
}

/** The lease a store with workers reports (the PostgreSQL store's `readLease`); read by shape so the runtime needs no database package. */
interface LeaseReader {
  readLease(runId: string): Promise<{ readonly owner: string | undefined; readonly expired: boolean } | undefined>
}

function leaseReaderOf(store: RunStore): LeaseReader | undefined {
  return typeof (store as Partial<LeaseReader>).readLease === 'function' ? (store as unknown as LeaseReader) : undefined
}

const NO_COST: LiveAgainCounts = Object.freeze({ agent: 0, tool: 0, remoteTool: 0, child: 0, inputTokens: 0, outputTokens: 0, usd: null, unpricedRequests: 0 })
const CHILD_DEPTH_LIMIT = 16

/** How a stored run stands, from the history's last execution: its run_end, or the result.json an execution whose run_end was lost still wrote. */
async function standingOf(store: RunStore, history: RunHistory): Promise<RunStanding> {
  if (history.lastRunEnd !== undefined) return history.lastRunEnd.disposition
  const text = await store.readArtifact(history.lastExecution, ARTIFACT_KEYS.result)
  if (text === undefined) return 'unfinished'
  try {
    const parsed = RunResultSchema.safeParse(JSON.parse(text))
    return parsed.success ? parsed.data.disposition : 'unfinished'
  } catch {
    return 'unfinished'
  }
}

/** The run's history through the one reader; undefined for a run whose root journal holds nothing. */
async function historyOrNothing(store: RunStore, runId: string): Promise<RunHistory | undefined> {
  try {
    return await readRunHistory(store, runId)
  } catch (error) {
    if (RunNotFoundError.isInstance(error)) return undefined
    throw error
  }
}

/** Recorded dollars added up: `usd` stays undefined until some recorded cost is added. */
interface RecordedCost {
  usd: UsdAmount | undefined
  unpriced: number
}

function addCost(sum: RecordedCost, cost: AttemptCost | RecordedCost | undefined): void {
  if (cost === undefined) return
  sum.unpriced += cost.unpriced ?? 0
  if (cost.usd === undefined) return
  sum.usd = (sum.usd ?? new Usd(0)).add(typeof cost.usd === 'string' ? new Usd(cost.usd) : cost.usd)
}

interface RecordedUsage extends RecordedCost {
  inputTokens: number
  outputTokens: number
}

/** The token usage and cost a child execution (and its own children) recorded on its agent attempts. */
async function childUsage(store: RunStore, runId: string, executionId: string, depth: number): Promise<RecordedUsage> {
  const usage: RecordedUsage = { inputTokens: 0, outputTokens: 0, usd: undefined, unpriced: 0 }
  const grandchildren: string[] = []
  try {
    for await (const line of store.readLines({ runId, executionId })) {
      if (line.type === 'agent_end') {
        usage.inputTokens += line.usage?.inputTokens ?? 0
        usage.outputTokens += line.usage?.outputTokens ?? 0
        addCost(usage, line.cost)
      } else if (line.type === 'child_start' && depth < CHILD_DEPTH_LIMIT) grandchildren.push(line.childExecutionId)
    }
  } catch {
    // A child execution the store no longer holds costs what it is known to cost: nothing recorded.
    return usage
  }
  for (const child of new Set(grandchildren)) {
    const more = await childUsage(store, runId, child, depth + 1)
    usage.inputTokens += more.inputTokens
    usage.outputTokens += more.outputTokens
    addCost(usage, more)
  }
  return usage
}

/**
 * What each agent call of the run (by ordinal) cost over all its recorded
 * attempts, retries included, from the `agent_end` lines of the root and its
 * resumes (a replayed answer's line carries no cost; children have their own ordinals).
 */
async function agentCostsByOrdinal(store: RunStore, runId: string): Promise<Map<string, RecordedCost>> {
  const costs = new Map<string, RecordedCost>()
  for (const execution of await store.listExecutions(runId)) {
    if (execution.kind !== 'root' && execution.kind !== 'resume') continue
    try {
      for await (const line of store.readLines({ runId, executionId: execution.executionId })) {
        if (line.type !== 'agent_end' || line.cost === undefined) continue
        const sum = costs.get(line.ordinal) ?? { usd: undefined, unpriced: 0 }
        addCost(sum, line.cost)
        costs.set(line.ordinal, sum)
      }
    } catch {
      // An execution the store no longer holds adds what is known of it: nothing.
    }
  }
  return costs
}

async function costOf(store: RunStore, runId: string, workflow: WorkflowDefinition, calls: readonly RecordedCall[]): Promise<LiveAgainCounts> {
  let agent = 0
  let tool = 0
  let remoteTool = 0
  let child = 0
  let inputTokens = 0
  let outputTokens = 0
  const cost: RecordedCost = { usd: undefined, unpriced: 0 }
  const agentCosts = calls.some((call) => call.kind === 'agent') ? await agentCostsByOrdinal(store, runId) : new Map<string, RecordedCost>()
  for (const call of calls) {
    if (call.kind === 'tool') {
      if (workflow.tools?.[call.record.tool]?.remote === true) remoteTool += 1
      else tool += 1
    } else if (call.kind === 'child') {
      child += 1
      const usage = await childUsage(store, runId, call.record.childExecutionId, 1)
      inputTokens += usage.inputTokens
      outputTokens += usage.outputTokens
      addCost(cost, usage)
    } else {
      agent += 1
      inputTokens += call.envelope.usage?.inputTokens ?? 0
      outputTokens += call.envelope.usage?.outputTokens ?? 0
      addCost(cost, agentCosts.get(call.ordinal))
    }
  }
  return { agent, tool, remoteTool, child, inputTokens, outputTokens, usd: cost.usd === undefined ? null : formatUsd(cost.usd), unpricedRequests: cost.unpriced }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** Checks one run; `undefined` when it is left out (another workflow, or finished without `all`). */
async function checkRun(store: RunStore, info: RunInfo, byName: ReadonlyMap<string, WorkflowDefinition>, all: boolean, leases: LeaseReader | undefined): Promise<DeployCheckRun | undefined> {
  const history = await historyOrNothing(store, info.runId)
  const standing = history === undefined ? 'unfinished' : await standingOf(store, history)
  const openDeferrals = history?.openDeferrals.length ?? 0
  const lease = leases === undefined ? undefined : await leases.readLease(info.runId)
  const owner = lease !== undefined && lease.owner !== undefined && !lease.expired ? lease.owner : undefined
  const continuable = standing === 'unfinished' || standing === 'cancelled' || openDeferrals > 0 || owner !== undefined
  if (!all && !continuable) return undefined
  const base = {
    runId: info.runId,
    standing,
    continuable,
    ...(openDeferrals > 0 ? { openDeferrals } : {}),
    ...(owner === undefined ? {} : { owner }),
  }
  const start = history?.runStart
  if (start === undefined) return all ? { ...base, workflow: 'unknown', verdict: 'nothing-recorded', liveAgain: NO_COST } : undefined
  const workflow = byName.get(start.workflow)
  if (workflow === undefined) return undefined
  const named = { ...base, workflow: start.workflow }
  let input: unknown = start.input
  if (workflow.input !== undefined) {
    const parsed = workflow.input.safeParse(start.input)
    if (!parsed.success) return { ...named, verdict: 'input-invalid', issues: describeZodIssues(parsed.error, 'input'), liveAgain: NO_COST }
    input = parsed.data
  }
  let report: ReplayReport | undefined
  const recording = (history as RunHistory).recording
  try {
    // A scratch store holds the replay, so checking writes nothing to the runs being checked; a call
    // that would run live is refused, so no host, tool, worker or child workflow is ever reached.
    const scratch = createMemoryRunStore()
    await (await scratch.createExecution({ runId: info.runId, kind: 'root' })).close()
    const launched = launchRun(workflow, { store: scratch, runId: info.runId, input, durability: 'none' }, {
      kind: 'replay',
      recording,
      replayFailures: true,
      refuseLiveCalls: true,
      timers: (history as RunHistory).timers,
    })
    report = (await launched.done).replay
  } catch (error) {
    return { ...named, verdict: 'error', issues: [messageOf(error)], liveAgain: NO_COST }
  }
  if (report === undefined) return { ...named, verdict: 'error', issues: ['the replay produced no report'], liveAgain: NO_COST }
  const divergence = report.divergence
  // Only a changed request trips the latch. A call past the end of the recording (the run stopped
  // there) or a recorded call the new code no longer reaches runs nothing recorded live again.
  if (divergence === null) return { ...named, verdict: 'identical', liveAgain: NO_COST }
  const served = new Set(report.calls.filter((call) => call.decision === 'replay').map((call) => call.ordinal))
  const live = recording.entries().filter((call) => !served.has(call.ordinal))
  return {
    ...named,
    verdict: 'diverged',
    divergence: { ordinal: divergence.ordinal, fields: [...divergence.fields] },
    liveAgain: await costOf(store, info.runId, workflow, live),
  }
}

/**
 * Replays every run that may still continue (killed, cancelled, waiting on
 * a deferred tool, owned by a worker; with `all`, every run in the period)
 * against the workflow code about to ship, and says per run whether it
 * replays identically or where it first diverges, which fields of that
 * call's canonical request changed, and how many recorded calls would then
 * run live again on resume, by kind (agent, tool, remote tool, child), with
 * their recorded token usage and, for a priced run, the dollars they cost
 * (`liveAgain.usd`).
 *
 * Runs are read through the store (any {@link RunStore}) and replayed a few
 * at a time (`concurrency`), each from its own journal lines, so memory
 * holds at most that many runs' journals. Nothing runs live and nothing is
 * written to the runs: each replay goes into a scratch memory store, and a
 * call that would run live is refused instead. A run whose recorded input
 * no longer passes the workflow's input schema is reported as
 * `input-invalid`, and one that cannot be read or replayed as `error`; the
 * check never throws for one bad run.
 *
 * @example
 * ```ts
 * const report = await checkDeploy({ store: createPostgresRunStore({ connectionString }), workflows: [triage], since: Date.now() - 7 * 86_400_000 })
 * if (!report.ok) process.exitCode = 1
 * ```
 */
export async function checkDeploy(options: DeployCheckOptions): Promise<DeployCheckReport> {
  const concurrency = options.concurrency ?? 4
  if (!Number.isSafeInteger(concurrency) || concurrency < 1) throw new RangeError(`checkDeploy: concurrency must be a whole number of at least 1, not ${String(options.concurrency)}.`)
  const store = storeOf(options.runsDir === undefined ? { ...(options.store === undefined ? {} : { store: options.store }) } : { runsDir: options.runsDir, ...(options.store === undefined ? {} : { store: options.store }) })
  const byName = new Map(options.workflows.map((workflow) => [workflow.name, workflow]))
  const all = options.all === true
  const leases = leaseReaderOf(store)
  const infos = await store.listRuns(options.since === undefined ? {} : { since: options.since })
  const results: (DeployCheckRun | undefined)[] = Array.from({ length: infos.length })
  let nextIndex = 0
  const worker = async (): Promise<void> => {
    for (let index = nextIndex++; index < infos.length; index = nextIndex++) {
      const info = infos[index] as RunInfo
      try {
        results[index] = await checkRun(store, info, byName, all, leases)
      } catch (error) {
        results[index] = { runId: info.runId, workflow: 'unknown', standing: 'unfinished', continuable: true, verdict: 'error', issues: [messageOf(error)], liveAgain: NO_COST }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, Math.max(infos.length, 1)) }, worker))
  const runs = results.filter((run): run is DeployCheckRun => run !== undefined)
  const blocking = runs.filter((run) => run.continuable && run.verdict !== 'identical' && run.verdict !== 'nothing-recorded')
  return { ok: blocking.length === 0, runs }
}
