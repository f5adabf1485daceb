import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { checkDeploy, createScriptedHost, defineWorkflow, runWorkflowScript, startWorkflowRun } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createMemoryRunStore } from '@locus/store'
import { tempRunsDir } from './helpers.js'

const input = z.object({ topic: z.string() })
function research(firstPrompt: string, schema: z.ZodType<{ topic: string }> = input) {
  return defineWorkflow({
    name: 'research',
    input: schema,
    run: async ({ input: { topic }, agent }) => {
      const outline = await agent(`${firstPrompt} ${topic}`)
      const draft = await agent(`draft ${topic}`)
      return { ok: true, outline: outline.answer, draft: draft.answer }
    },
  })
}

async function cancelledRun(runsDir: string): Promise<string> {
  const host = createScriptedHost({ rules: [{ match: { prompt: 'draft' }, steps: [{ hang: true }] }, { steps: [{ text: 'outline', usage: { inputTokens: 11, outputTokens: 7 } }] }] })
  const handle = await startWorkflowRun(research('outline'), { input: { topic: 'q3' }, host, runsDir })
  await new Promise((resolve) => setTimeout(resolve, 30))
  handle.cancel('deploying')
  const result = await handle.done
  expect(result.disposition).toBe('cancelled')
  return result.runId
}

describe('checkDeploy', () => {
  it('passes unchanged code, and writes nothing to the runs it checks', async () => {
    const runsDir = tempRunsDir()
    const runId = await cancelledRun(runsDir)
    const before = readdirSync(join(runsDir, runId)).sort()
    const report = await checkDeploy({ runsDir, workflows: [research('outline')] })
    expect(report).toMatchObject({ ok: true, runs: [{ runId, standing: 'cancelled', verdict: 'identical', liveAgain: { agent: 0, tool: 0 } }] })
    expect(readdirSync(join(runsDir, runId)).sort()).toEqual(before)
  })

  it('names the first diverging call, the fields that changed, and what would run live again with its recorded tokens', async () => {
    const runsDir = tempRunsDir()
    const runId = await cancelledRun(runsDir)
    const report = await checkDeploy({ runsDir, workflows: [research('summarise')] })
    expect(report.ok).toBe(false)
    const [run] = report.runs
    expect(run).toMatchObject({ runId, verdict: 'diverged', divergence: { fields: ['prompt'] } })
    expect(run?.liveAgain.agent).toBeGreaterThanOrEqual(1)
    expect(run?.liveAgain.inputTokens).toBe(11)
    expect(run?.liveAgain.outputTokens).toBe(7)
  })

  it('reports a run whose recorded input no longer fits the schema, instead of crashing', async () => {
    const runsDir = tempRunsDir()
    await cancelledRun(runsDir)
    const report = await checkDeploy({ runsDir, workflows: [research('outline', z.object({ topic: z.string(), year: z.number() }))] })
    expect(report.ok).toBe(false)
    expect(report.runs[0]).toMatchObject({ verdict: 'input-invalid', issues: [expect.stringContaining('year')] })
  })

  it('leaves finished runs and other workflows out unless asked for all', async () => {
    const runsDir = tempRunsDir()
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'fine' }] }] })
    await runWorkflowScript(research('outline'), { input: { topic: 'q4' }, host, runsDir })
    expect((await checkDeploy({ runsDir, workflows: [research('summarise')] })).runs).toEqual([])
    const all = await checkDeploy({ runsDir, workflows: [research('summarise')], all: true })
    // A finished run that would diverge is reported, but it cannot continue, so it does not fail the check.
    expect(all).toMatchObject({ ok: true, runs: [{ standing: 'completed', verdict: 'diverged' }] })
    expect((await checkDeploy({ runsDir, workflows: [defineWorkflow({ name: 'other', run: () => ({ ok: true }) })], all: true })).runs).toEqual([])
  })
})

describe('checkDeploy on a memory store', () => {
  it('compares a call that failed without an answer (no host) through its envelope artifact', async () => {
    const store = createMemoryRunStore()
    const failed = await runWorkflowScript(research('outline'), { input: { topic: 'q1' }, store })
    expect(failed.disposition).toBe('failed')
    expect((await checkDeploy({ store, workflows: [research('outline')], all: true })).runs).toMatchObject([{ runId: failed.runId, verdict: 'identical', continuable: false }])
    const changed = await checkDeploy({ store, workflows: [research('summarise')], all: true })
    expect(changed).toMatchObject({ ok: true, runs: [{ runId: failed.runId, standing: 'failed', verdict: 'diverged', divergence: { ordinal: '1', fields: ['prompt'] } }] })
  })
})
