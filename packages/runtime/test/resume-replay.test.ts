import { spawn } from 'node:child_process'
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { readJournal } from '@locus/journal'
import { createManualClock } from '@locus/retry'
import { createScriptedHost, defineWorkflow, replayRun, resumeRun, runWorkflowScript, startWorkflowRun } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { fanOut } from './fixtures/fan-out-workflow.js'
import { linesOfType, settle, tempRunsDir } from './helpers.js'

function tenCalls(changedAt?: number) {
  return defineWorkflow({
    name: 'ten-calls',
    async run({ agent }) {
      const answers: string[] = []
      for (let index = 1; index <= 10; index += 1) {
        const prompt = index === changedAt ? `question ${index}, reworded` : `question ${index}`
        answers.push((await agent(prompt)).answer)
      }
      return { ok: true, answers }
    },
  })
}

const answering = () => createScriptedHost({ rules: [{ steps: [{ text: 'live answer' }] }] })

function executionLines(executionDir: string) {
  return readJournal(join(executionDir, 'journal.jsonl')).lines
}

describe('resumeRun', () => {
  it('replays a recorded prefix whose parallel calls complete in a different order, with no host calls', async () => {
    const runsDir = tempRunsDir()
    const delays = [30, 10, 20, 40]
    const workflow = defineWorkflow({
      name: 'ordered',
      async run({ agent, parallel }) {
        return { ok: true, all: await parallel(delays.map((_, index) => async () => (await agent(`item ${index}`)).answer)) }
      },
    })
    const clock = createManualClock()
    const first = createScriptedHost({ clock, rules: delays.map((delayMs, index) => ({ match: { prompt: `item ${index}` }, steps: [{ text: `answer ${index}`, delayMs }] })) })
    const handle = await startWorkflowRun(workflow, { runsDir, runId: 'ordered-run', host: first, clock })
    await settle()
    await clock.runUntilIdle()
    const original = await handle.done
    expect(original.ok).toBe(true)

    const second = answering()
    const resumed = await resumeRun('ordered-run', workflow, { runsDir, host: second })
    expect(second.sessionCount).toBe(0)
    expect(resumed).toMatchObject({ disposition: 'completed', replayed: 4, live: 0, divergence: null })
    expect(resumed.result).toEqual(original.result)
    expect(resumed.executionDir).toBe(join(original.runDir, 'executions', 'resume-001'))
    const ends = linesOfType(executionLines(resumed.executionDir), 'agent_end')
    expect(ends.every((line) => line.replayed === true)).toBe(true)
  })

  it('keeps the key when a recorded call later declares attempts: 3', async () => {
    const runsDir = tempRunsDir()
    const before = defineWorkflow({ name: 'w', run: async ({ agent }) => ({ ok: true, a: (await agent('same prompt')).answer }) })
    const after = defineWorkflow({ name: 'w', run: async ({ agent }) => ({ ok: true, a: (await agent('same prompt', { attempts: 3 })).answer }) })
    await runWorkflowScript(before, { runsDir, runId: 'attempts-run', host: answering() })
    const host = answering()
    const resumed = await resumeRun('attempts-run', after, { runsDir, host })
    expect(host.sessionCount).toBe(0)
    expect(resumed.divergence).toBeNull()
  })

  it('replays calls 1-4 and runs 5-10 live after the prompt of call 5 changes, with one replay_diverged line', async () => {
    const runsDir = tempRunsDir()
    await runWorkflowScript(tenCalls(), { runsDir, runId: 'ten', host: createScriptedHost({ rules: [{ steps: [{ text: 'recorded' }] }] }) })
    const host = answering()
    const resumed = await resumeRun('ten', tenCalls(5), { runsDir, host })
    expect(host.sessionCount).toBe(6)
    expect(resumed.result).toEqual({ ok: true, answers: [...Array(4).fill('recorded'), ...Array(6).fill('live answer')] })
    const lines = executionLines(resumed.executionDir)
    const diverged = linesOfType(lines, 'replay_diverged')
    expect(diverged).toHaveLength(1)
    expect(diverged[0]).toMatchObject({ ordinal: '5', fields: ['prompt'] })
    expect(resumed.divergence?.ordinal).toBe('5')
  })

  it('gives a timed-out then retried call one ordinal, so the calls after it still replay', async () => {
    const runsDir = tempRunsDir()
    const workflow = defineWorkflow({
      name: 'retried',
      async run({ agent }) {
        const first = await agent('flaky', { attempts: 2, timeoutMs: 50 })
        const second = await agent('steady')
        return { ok: true, answers: [first.answer, second.answer] }
      },
    })
    const clock = createManualClock()
    const host = createScriptedHost({ clock, rules: [{ match: { prompt: 'flaky' }, steps: [{ hang: true }, { text: 'second try' }] }, { steps: [{ text: 'steady answer' }] }] })
    const handle = await startWorkflowRun(workflow, { runsDir, runId: 'retried', host, clock })
    await settle()
    await clock.advance(50)
    const original = await handle.done
    const starts = linesOfType(executionLines(original.executionDir), 'agent_start')
    expect(starts.map((line) => line.ordinal)).toEqual(['1', '1', '2'])

    const again = answering()
    const resumed = await resumeRun('retried', workflow, { runsDir, host: again })
    expect(again.sessionCount).toBe(0)
    expect(resumed.result).toEqual({ ok: true, answers: ['second try', 'steady answer'] })
  })

  it('re-runs a call that failed, live, without tripping the latch', async () => {
    const runsDir = tempRunsDir()
    const host = createScriptedHost({ rules: [{ match: { prompt: 'question 3' }, steps: [{ fail: 'provider-error' }] }, { steps: [{ text: 'recorded' }] }] })
    const original = await runWorkflowScript(tenCalls(), { runsDir, runId: 'failed-call', host })
    expect(original.disposition).toBe('failed')
    const again = answering()
    const resumed = await resumeRun('failed-call', tenCalls(), { runsDir, host: again })
    expect(resumed.disposition).toBe('completed')
    expect(again.sessionCount).toBe(8)
    expect(resumed.divergence).toBeNull()
  })

  it('resumes a run killed with SIGKILL mid fan-out: completed calls replay, unfinished ones run live once', async () => {
    const runsDir = tempRunsDir()
    const fixture = fileURLToPath(new URL('./fixtures/fan-out-workflow.ts', import.meta.url))
    const child = spawn(process.execPath, ['--conditions=@locus/source', '--import', 'tsx', fixture, runsDir, 'crash-run'], { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
    const exited = new Promise((resolve) => child.once('exit', resolve))
    const journalPath = join(runsDir, 'crash-run', 'journal.jsonl')
    // Wait (bounded) until the three quick calls have ended and the three slow ones started.
    for (let waited = 0; waited < 400; waited += 1) {
      if (existsSync(journalPath)) {
        const text = readFileSync(journalPath, 'utf8')
        if ((text.match(/"type":"agent_end"/g) ?? []).length === 3 && (text.match(/"type":"agent_start"/g) ?? []).length === 6) break
      }
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(child.exitCode, `the workflow process ended before it was killed: ${stderr}`).toBeNull()
    child.kill('SIGKILL')
    await exited
    expect(existsSync(join(runsDir, 'crash-run', 'result.json'))).toBe(false)

    const host = answering()
    const resumed = await resumeRun('crash-run', fanOut, { runsDir, host })
    expect(resumed.disposition).toBe('completed')
    expect(host.sessionCount).toBe(3)
    expect(host.calls.map((call) => call.prompt).sort()).toEqual(['item 3', 'item 4', 'item 5'])
    expect(resumed.result).toEqual({ ok: true, answers: ['recorded answer', 'recorded answer', 'recorded answer', 'live answer', 'live answer', 'live answer'] })
  }, 60_000)

  it('replays from the journal alone: the answers travel on agent_end, the envelope files are evidence', async () => {
    const runsDir = tempRunsDir()
    const original = await runWorkflowScript(tenCalls(), { runsDir, runId: 'journal-only', host: createScriptedHost({ rules: [{ steps: [{ text: 'recorded' }] }] }) })
    rmSync(join(original.runDir, 'calls'), { recursive: true, force: true })
    const host = answering()
    const resumed = await resumeRun('journal-only', tenCalls(), { runsDir, host })
    expect(host.sessionCount).toBe(0)
    expect(resumed.result).toEqual(original.result)
  })

  it('resumes with the input the run was started with unless told otherwise', async () => {
    const runsDir = tempRunsDir()
    const workflow = defineWorkflow({
      name: 'with-input',
      input: z.object({ ticket: z.string() }),
      run: async ({ input, agent }) => ({ ok: true, ticket: input.ticket, a: (await agent(`look at ${input.ticket}`)).answer }),
    })
    await runWorkflowScript(workflow, { runsDir, runId: 'with-input', input: { ticket: 'T-42' }, host: answering() })
    const host = answering()
    const resumed = await resumeRun('with-input', workflow, { runsDir, host })
    expect(resumed.result).toMatchObject({ ticket: 'T-42' })
    expect(host.sessionCount).toBe(0)
  })

  it('refuses an unknown run id, naming it', async () => {
    await expect(resumeRun('no-such-run', tenCalls(), { runsDir: tempRunsDir() })).rejects.toThrow(/No run "no-such-run"/)
  })
})

describe('replayRun', () => {
  it('reports an identical replay of a finished run, with no host at all', async () => {
    const runsDir = tempRunsDir()
    await runWorkflowScript(tenCalls(), { runsDir, runId: 'det', host: answering() })
    const check = await replayRun('det', tenCalls(), { runsDir })
    expect(check.ok).toBe(true)
    expect(check.report.counts).toMatchObject({ matched: 10, diverged: 0, missing: 0, extra: 0 })
    expect(check.run.disposition).toBe('completed')
  })

  it('reports a divergence per call instead of throwing when the workflow changed', async () => {
    const runsDir = tempRunsDir()
    await runWorkflowScript(tenCalls(), { runsDir, runId: 'det2', host: answering() })
    const check = await replayRun('det2', tenCalls(7), { runsDir })
    expect(check.ok).toBe(false)
    expect(check.divergence).toMatchObject({ ordinal: '7', fields: ['prompt'] })
    expect(check.report.calls.filter((call) => call.status === 'matched')).toHaveLength(6)
  })
})
