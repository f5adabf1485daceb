import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { createInProcessTransport, createStdioTransport, createWorker } from '@locus/protocol'
import { createManualClock } from '@locus/retry'
import { defineRemoteTool, defineWorkflow, resumeRun, runWorkflowScript, startWorkflowRun } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { linesOfType, readRun, settle, tempRunsDir } from './helpers.js'

const renderReport = defineRemoteTool({
  input: z.object({ topic: z.string() }),
  output: z.object({ pages: z.number(), topic: z.string() }),
  retry: { timeout_secs: 30, max_retries: 3, backoff_base_secs: 2, backoff_max_secs: 60 },
})
const report = defineWorkflow({
  name: 'report',
  tools: { render_report: renderReport },
  run: async ({ tool }) => ({ ok: true, report: await tool('render_report', { topic: 'q3' }) }),
})

function flakyWorker(failures: number) {
  const seen: number[] = []
  const worker = createWorker({
    tools: {
      render_report: ({ topic }: { topic: string }, { trigger }) => {
        seen.push(trigger.attempt)
        if (seen.length <= failures) return { actions: [{ type: 'tool.error', id: trigger.id, error: 'upstream 503', retryable: true, code: 'provider_error' }] }
        return { pages: 3, topic }
      },
    },
  })
  return { seen, transport: createInProcessTransport(worker) }
}

describe('a remote tool in a run', () => {
  it('render_report failing twice: three tool.execute triggers 2 s and 4 s apart on the injected clock, every attempt journaled', async () => {
    const clock = createManualClock(Date.parse('2026-12-03T06:00:00.000Z'))
    const { seen, transport } = flakyWorker(2)
    const handle = await startWorkflowRun(report, { worker: transport, clock, runsDir: tempRunsDir() })
    for (let round = 0; round < 10; round += 1) {
      await settle()
      await clock.runUntilIdle()
    }
    const run = await handle.done
    expect(run.result).toEqual({ ok: true, report: { pages: 3, topic: 'q3' } })
    expect(seen).toEqual([1, 2, 3])
    const { lines } = readRun(run)
    expect(linesOfType(lines, 'tool_end').map((line) => [line.attempt, line.status, line.failure?.code])).toEqual([
      [1, 'failed', 'provider_error'],
      [2, 'failed', 'provider_error'],
      [3, 'completed', undefined],
    ])
    expect(linesOfType(lines, 'retry').map((line) => line.delayMs)).toEqual([2000, 4000])
  })

  it('is terminal when the worker does not say retryable, and when the run has no worker', async () => {
    const worker = createWorker({ tools: { render_report: (_args, { trigger }) => ({ actions: [{ type: 'tool.error', id: trigger.id, error: 'no such topic', code: 'refused' }] }) } })
    const refused = await runWorkflowScript(report, { worker: createInProcessTransport(worker), runsDir: tempRunsDir() })
    expect(refused.disposition).toBe('failed')
    expect(linesOfType(readRun(refused).lines, 'tool_end')).toHaveLength(1)
    const alone = await runWorkflowScript(report, { runsDir: tempRunsDir() })
    expect(alone.error?.message).toMatch(/has no worker/)
  })

  it('refuses a result that breaks the tool’s output schema', async () => {
    const worker = createWorker({ tools: { render_report: () => ({ pages: 'many' }) } })
    const run = await runWorkflowScript(report, { worker: createInProcessTransport(worker), runsDir: tempRunsDir() })
    expect(run.disposition).toBe('failed')
    expect(linesOfType(readRun(run).lines, 'tool_end')[0]?.failure?.error).toMatch(/output schema/)
  })

  it('serves a completed remote call from the journal on resume: the worker is not asked again', async () => {
    const runsDir = tempRunsDir()
    const { seen, transport } = flakyWorker(0)
    const twoSteps = defineWorkflow({
      name: 'two-steps',
      tools: { render_report: renderReport },
      run: async ({ tool, agent }) => ({ ok: true, report: await tool('render_report', { topic: 'q3' }), note: (await agent('summarise')).answer }),
    })
    const first = await runWorkflowScript(twoSteps, { worker: transport, runsDir })
    expect(first.disposition).toBe('failed') // no host: the agent call fails after the remote call completed
    expect(seen).toEqual([1])
    const resumed = await resumeRun(first.runId, twoSteps, { worker: transport, runsDir })
    expect(seen).toEqual([1])
    expect(resumed.replayed).toBeGreaterThanOrEqual(1)
  })

  let hasPython = true
  try {
    execFileSync('python3', ['--version'])
  } catch {
    hasPython = false
  }
  it.skipIf(!hasPython)('uses the Python worker example over stdio', async () => {
    const worker = createStdioTransport({ command: 'python3', args: [fileURLToPath(new URL('../../../docs/examples/python-worker/tools.py', import.meta.url))] })
    try {
      const count = defineWorkflow({
        name: 'count',
        tools: { word_count: defineRemoteTool({ input: z.object({ text: z.string() }) }) },
        run: async ({ tool }) => ({ ok: true, counted: await tool('word_count', { text: 'one two three' }) }),
      })
      const run = await runWorkflowScript(count, { worker, runsDir: tempRunsDir() })
      expect(run.result).toEqual({ ok: true, counted: { words: 3 } })
    } finally {
      await worker.close()
    }
  }, 20_000)

  it('a stdio worker that answers attempt 1 after its deadline: attempt 2 gets its own answer, the late one is journaled as late and ignored (issue 30, item 10)', async () => {
    const worker = createStdioTransport({ command: process.execPath, args: [fileURLToPath(new URL('./fixtures/late-worker.mjs', import.meta.url))] })
    try {
      const slow = defineWorkflow({
        name: 'slow',
        tools: {
          render: defineRemoteTool({
            input: z.object({}),
            output: z.object({ from: z.string(), ids: z.array(z.string()) }),
            retry: { timeout_secs: 1, max_retries: 2, backoff_base_secs: 0, backoff_max_secs: 0 },
          }),
        },
        run: async ({ tool }) => ({ ok: true, rendered: await tool('render', {}) }),
      })
      const run = await runWorkflowScript(slow, { worker, runsDir: tempRunsDir() })
      const rendered = (run.result as { rendered: { from: string; ids: string[] } }).rendered
      expect(rendered.from).toBe('attempt 2')
      // Each attempt's trigger carried an id of its own, so the answer to one could not settle the other.
      expect(rendered.ids).toHaveLength(2)
      expect(new Set(rendered.ids).size).toBe(2)
      const { lines } = readRun(run)
      expect(linesOfType(lines, 'tool_end').map((line) => [line.attempt, line.status, line.failure?.code, line.result])).toEqual([
        [1, 'timed-out', 'deadline_exceeded', undefined],
        [2, 'completed', undefined, { from: 'attempt 2', ids: rendered.ids }],
      ])
      const logs = linesOfType(lines, 'log').filter((line) => /answered after/.test(line.message))
      expect(logs.map((line) => [line.level, line.message, line.data])).toEqual([
        ['warn', 'tool "render" attempt 1 answered after its deadline; the answer was ignored', { toolCallId: 'tool-1', attempt: 1, outcome: 'succeeded' }],
      ])
    } finally {
      await worker.close()
    }
  }, 20_000)
})
