// Issue #21's "Tests that must exist": a store with twenty recorded runs in
// every state, checked against four changed versions of their workflow. The
// report names exactly the runs each change reaches, with the first diverging
// call and the fields that changed, and the label-only change diverges nothing.
import { type DeployCheckReport, checkDeploy } from '@locus/runtime'
import { type RunStore, createMemoryRunStore } from '@locus/store'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Fleet, type FleetChange, USAGE, opsWorkflow, recordFleet, toolRuns } from './fixtures/deploy-fleet.js'

const store = createMemoryRunStore()
let fleet: Fleet
let executionsBefore: Map<string, number>

async function executionCounts(runStore: RunStore): Promise<Map<string, number>> {
  const counts = new Map<string, number>()
  for (const run of await runStore.listRuns()) counts.set(run.runId, (await runStore.listExecutions(run.runId)).length)
  return counts
}

beforeAll(async () => {
  fleet = await recordFleet(store)
  executionsBefore = await executionCounts(store)
})
afterAll(async () => {
  await fleet.stop()
})

/** The runs that did not replay identically, with where and how they diverged. */
function diverged(report: DeployCheckReport): Record<string, { ordinal: string; fields: readonly string[] } | string> {
  return Object.fromEntries(report.runs.filter((run) => run.verdict !== 'identical').map((run) => [run.runId, run.divergence ?? run.verdict]))
}

const FULL_RUNS_PAST_PLAN = ['full-done-1', 'full-done-2', 'full-done-3', 'full-failed', 'full-cancelled', 'killed-after-plan', 'killed-in-parallel', 'killed-in-reply', 'killed-before-end']

describe('checkDeploy over twenty runs in every state', () => {
  it('holds twenty runs, and checks every run of the workflow with all (the other workflow is left out)', async () => {
    expect(await store.listRuns()).toHaveLength(20)
    const report = await checkDeploy({ store, workflows: [opsWorkflow()], all: true })
    expect(report.ok).toBe(true)
    expect(report.runs).toHaveLength(19)
    expect(report.runs.map((run) => run.runId)).not.toContain('other-done')
    expect(diverged(report)).toEqual({})
    const standing = Object.fromEntries(report.runs.map((run) => [run.runId, [run.standing, run.continuable, run.openDeferrals ?? 0]]))
    expect(standing).toEqual({
      'quick-done-1': ['completed', false, 0],
      'quick-done-2': ['completed', false, 0],
      'full-done-1': ['completed', false, 0],
      'full-done-2': ['completed', false, 0],
      'full-done-3': ['completed', false, 0],
      'full-failed': ['failed', false, 0],
      'quick-failed': ['failed', false, 0],
      'approve-done': ['completed', false, 0],
      'full-cancelled': ['cancelled', true, 0],
      'approve-cancelled': ['cancelled', true, 0],
      'approve-waiting-1': ['unfinished', true, 1],
      'approve-waiting-2': ['unfinished', true, 1],
      'full-running': ['unfinished', true, 0],
      'killed-after-triage': ['unfinished', true, 0],
      'killed-after-lookup': ['unfinished', true, 0],
      'killed-after-plan': ['unfinished', true, 0],
      'killed-in-parallel': ['unfinished', true, 0],
      'killed-in-reply': ['unfinished', true, 0],
      'killed-before-end': ['unfinished', true, 0],
    })
    // Without all, only the runs that may still continue are checked.
    const continuing = await checkDeploy({ store, workflows: [opsWorkflow()] })
    expect(continuing.runs.map((run) => run.runId).sort()).toEqual(report.runs.filter((run) => run.continuable).map((run) => run.runId).sort())
  })

  it('a changed prompt: names the runs that recorded the reply, at its position in each path; only a continuable one fails the check', async () => {
    const report = await checkDeploy({ store, workflows: [opsWorkflow('prompt')], all: true })
    const prompt = (ordinal: string) => ({ ordinal, fields: ['prompt'] })
    expect(diverged(report)).toEqual({
      'quick-done-1': prompt('2'),
      'quick-done-2': prompt('2'),
      'quick-failed': prompt('2'),
      'approve-done': prompt('3'),
      'full-done-1': prompt('8'),
      'full-done-2': prompt('8'),
      'full-done-3': prompt('8'),
      'full-failed': prompt('8'),
      'killed-before-end': prompt('8'),
    })
    // killed-before-end recorded its reply and may continue: the one run that blocks the deploy.
    expect(report.ok).toBe(false)
    expect(report.runs.find((run) => run.runId === 'killed-before-end')?.liveAgain).toEqual({ agent: 1, tool: 0, remoteTool: 0, child: 0, ...USAGE.reply, usd: null, unpricedRequests: 0 })
    expect((await checkDeploy({ store, workflows: [opsWorkflow('prompt')] })).runs.filter((run) => run.verdict === 'diverged').map((run) => run.runId)).toEqual(['killed-before-end'])
  })

  it('a changed tool argument: names every run that recorded the lookup, and prices what would run again by kind', async () => {
    const report = await checkDeploy({ store, workflows: [opsWorkflow('arg')], all: true })
    const args = { ordinal: '2', fields: ['args'] }
    expect(diverged(report)).toEqual(Object.fromEntries([...FULL_RUNS_PAST_PLAN, 'killed-after-lookup', 'full-running'].map((runId) => [runId, args])))
    expect(report.ok).toBe(false)
    const live = Object.fromEntries(report.runs.map((run) => [run.runId, run.liveAgain]))
    const other = USAGE.other
    // Plan, check, three branches and the reply; the lookup; the remote render; the child, whose own agent call is priced in.
    expect(live['full-done-1']).toEqual({ agent: 6, tool: 1, remoteTool: 1, child: 1, inputTokens: 5 * other.inputTokens + USAGE.reply.inputTokens + other.inputTokens, outputTokens: 5 * other.outputTokens + USAGE.reply.outputTokens + other.outputTokens, usd: null, unpricedRequests: 0 })
    expect(live['killed-in-parallel']).toEqual({ agent: 3, tool: 1, remoteTool: 0, child: 0, inputTokens: 3 * other.inputTokens, outputTokens: 3 * other.outputTokens, usd: null, unpricedRequests: 0 })
    expect(live['killed-after-lookup']).toEqual({ agent: 0, tool: 1, remoteTool: 0, child: 0, inputTokens: 0, outputTokens: 0, usd: null, unpricedRequests: 0 })
  })

  it('two sequential calls swapped: diverges at the first of them, in the runs that recorded it', async () => {
    const report = await checkDeploy({ store, workflows: [opsWorkflow('swap')], all: true })
    const swapped = { ordinal: '3', fields: ['prompt'] }
    expect(diverged(report)).toEqual(Object.fromEntries(FULL_RUNS_PAST_PLAN.map((runId) => [runId, swapped])))
    expect(report.ok).toBe(false)
  })

  it('only a label changed: nothing diverges', async () => {
    const report = await checkDeploy({ store, workflows: [opsWorkflow('label')], all: true })
    expect(report.ok).toBe(true)
    expect(report.runs).toHaveLength(19)
    expect(diverged(report)).toEqual({})
  })

  it('ran nothing live and wrote nothing: no tool ran, no execution was added, and the waiting runs still take their answers', async () => {
    const before = { ...toolRuns }
    for (const change of ['none', 'prompt', 'arg', 'swap', 'label'] as const satisfies readonly FleetChange[]) await checkDeploy({ store, workflows: [opsWorkflow(change)], all: true })
    expect(toolRuns).toEqual(before)
    expect(await executionCounts(store)).toEqual(executionsBefore)
    const waiting = fleet.live.find((handle) => handle.runId === 'approve-waiting-1')
    const [deferral] = waiting?.pendingDeferrals() ?? []
    expect(waiting?.resolveDeferred(deferral ?? '', { approved: true })).toEqual({ ok: true, status: 'accepted' })
    expect((await waiting?.done)?.disposition).toBe('completed')
  })

  it('replays at most `concurrency` runs at once, and reports the same whatever the pool size', async () => {
    let inFlight = 0
    let most = 0
    const slow: RunStore = {
      ...store,
      kind: store.kind,
      async listExecutions(runId) {
        inFlight += 1
        most = Math.max(most, inFlight)
        await new Promise((resolve) => setTimeout(resolve, 2))
        inFlight -= 1
        return store.listExecutions(runId)
      },
    }
    const pooled = await checkDeploy({ store: slow, workflows: [opsWorkflow('arg')], all: true, concurrency: 3 })
    expect(most).toBe(3)
    const one = await checkDeploy({ store, workflows: [opsWorkflow('arg')], all: true, concurrency: 1 })
    expect(pooled).toEqual(one)
    await expect(checkDeploy({ store, workflows: [opsWorkflow()], concurrency: 0 })).rejects.toThrow(/concurrency/)
  })
})
