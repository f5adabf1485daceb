import { createFileRunStore } from '@locus/store'
import { CallError } from '@locus/retry'
import { createScriptedHost, defineTool, defineWorkflow, readStoredRun, resumeRun, runWorkflowScript } from '@locus/runtime'
import { z } from 'zod'
import { describe, expect, it } from 'vitest'
import { readRun, tempRunsDir } from './helpers.js'

const NO_WAIT = { timeout_secs: null, max_retries: 3, backoff_base_secs: 0, backoff_max_secs: 0 }

function flakyWorkflow() {
  let calls = 0
  return defineWorkflow({
    name: 'flaky',
    tools: {
      lookup: defineTool({
        input: z.object({ id: z.string() }),
        run: () => {
          calls += 1
          if (calls === 1) throw new CallError('upstream 503', { retryable: true, code: 'provider_error' })
          return { found: true }
        },
      }),
    },
    run: async ({ agent, tool }) => {
      const first = await agent('summarise', { attempts: 3 })
      const found = await tool('lookup', { id: 'T-1' }, { retry: NO_WAIT })
      return { ok: true, found, answer: { text: first.answer, found: true, partial: true, gaps: [{ tool: 'payments', criticality: 'enriching', reason: 'timeout' }], caveats: ['No payments.'] } }
    },
  })
}

describe('readStoredRun', () => {
  it('summarises a run through the store with the README’s counts and the answer recorded on run_end', async () => {
    const runsDir = tempRunsDir()
    const host = createScriptedHost({ rules: [{ steps: [{ throw: 'host-turn-timeout' }, { text: 'the summary' }] }] })
    const run = await runWorkflowScript(flakyWorkflow(), { host, runsDir })
    const stored = await readStoredRun(createFileRunStore(runsDir), run.runId)
    const summary = stored.latest.summary
    expect(summary).toMatchObject({ runId: run.runId, workflow: 'flaky', standing: 'completed', answerOutcome: 'partial', agentCalls: 1, agentAttempts: 2, toolCalls: 1, toolAttempts: 2, retries: 2 })
    expect(summary.retriedCalls.map((call) => [call.kind, call.attempts.map((attempt) => attempt.outcome)])).toEqual([
      ['agent', ['threw (host-turn-timeout)', 'completed']],
      ['tool', ['failed (provider_error)', 'completed']],
    ])
    expect(summary.gaps).toEqual([{ tool: 'payments', criticality: 'enriching', reason: 'timeout' }])
    expect(summary.caveats).toEqual(['No payments.'])
    expect(stored.latest.resultFile?.answerOutcome).toBe('partial')
    const { readme } = readRun(run)
    expect(readme).toContain(`- Agent calls: ${summary.agentCalls} (${summary.agentAttempts} attempts, 1 retry across 1 call)`)
    expect(readme).toContain(`- Tool calls: ${summary.toolCalls} (${summary.toolAttempts} attempts, 1 retry)`)
    expect(summary.outputsReadme).toBe(`${run.runDir}/outputs/README.md`)
  })

  it('lists resumes in order and takes the latest as the run’s standing', async () => {
    const runsDir = tempRunsDir()
    const workflow = defineWorkflow({ name: 'two-steps', run: async ({ agent }) => ({ ok: true, a: (await agent('a')).answer, b: (await agent('b')).answer }) })
    const failing = createScriptedHost({ rules: [{ match: { prompt: 'b' }, steps: [{ fail: 'provider-error', reason: 'down' }] }, { steps: [{ text: 'A' }] }] })
    const first = await runWorkflowScript(workflow, { host: failing, runsDir })
    expect(first.disposition).toBe('failed')
    const healthy = createScriptedHost({ rules: [{ steps: [{ text: 'fine' }] }] })
    await resumeRun(first.runId, workflow, { host: healthy, runsDir })
    const stored = await readStoredRun(createFileRunStore(runsDir), first.runId)
    expect(stored.executions.map((execution) => execution.info.executionId)).toEqual([first.runId, 'resume-001'])
    expect(stored.root.summary.standing).toBe('failed')
    expect(stored.latest.summary).toMatchObject({ standing: 'completed', replayedCalls: 1 })
  })

  it('adds up every execution in the run’s own figures, and keeps each execution’s apart', async () => {
    const runsDir = tempRunsDir()
    let lookups = 0
    const workflow = defineWorkflow({
      name: 'retry-then-stop',
      tools: {
        lookup: defineTool({
          input: z.object({}),
          run: () => {
            lookups += 1
            if (lookups === 1) throw new CallError('upstream 503', { retryable: true, code: 'provider_error' })
            return 'found'
          },
        }),
      },
      run: async ({ agent, tool }) => ({ ok: true, found: await tool('lookup', {}, { retry: NO_WAIT }), b: (await agent('b')).answer }),
    })
    const failing = createScriptedHost({ rules: [{ steps: [{ fail: 'provider-error', reason: 'down' }] }] })
    const first = await runWorkflowScript(workflow, { host: failing, runsDir })
    expect(first.disposition).toBe('failed')
    await resumeRun(first.runId, workflow, { host: createScriptedHost({ rules: [{ steps: [{ text: 'fine' }] }] }), runsDir })
    const stored = await readStoredRun(createFileRunStore(runsDir), first.runId)
    const [root, resume] = stored.executions
    // The resume alone served the tool from the journal: no retry of its own.
    expect(resume?.summary).toMatchObject({ standing: 'completed', retries: 0, toolAttempts: 1 })
    // The run: the tool's retry in the root, and the agent call sent again by the resume.
    expect(stored.summary).toMatchObject({ standing: 'completed', toolCalls: 1, toolAttempts: 2, agentCalls: 1, agentAttempts: 2, retries: 2 })
    expect(stored.summary.startedAt).toBe(root?.view.runStart?.ts)
    expect(stored.summary.durationMs).toBe((root?.view.runEnd?.durationMs ?? Number.NaN) + (resume?.view.runEnd?.durationMs ?? Number.NaN))
    expect(stored.summary.executionId).toBe('resume-001')
    expect(stored.view.executions().map((execution) => execution.executionId)).toEqual([first.runId, 'resume-001'])
  })
})
