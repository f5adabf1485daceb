import { join } from 'node:path'
import { readJournal } from '@locus/journal'
import { createScriptedHost, defineTool, defineWorkflow, replayRun, resumeRun, runWorkflowScript, startWorkflowRun } from '@locus/runtime'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { linesOfType, settle, tempRunsDir } from './helpers.js'

function executionLines(executionDir: string) {
  return readJournal(join(executionDir, 'journal.jsonl')).lines
}

/** A workflow whose first agent's child calls a tool `toolCalls` times, then asks B and C. */
function threeAgents(lookups: { count: number }) {
  return defineWorkflow({
    name: 'three-agents',
    tools: {
      lookup: defineTool({
        input: z.object({ q: z.string() }),
        run: async ({ q }) => {
          lookups.count += 1
          return { found: q }
        },
      }),
    },
    async run({ agent }) {
      const a = await agent('[A] uses a tool')
      const b = await agent('[B]')
      const c = await agent('[C]')
      return { ok: true, answers: [a.answer, b.answer, c.answer] }
    },
  })
}

function hostWithToolCalls(toolCalls: number) {
  return createScriptedHost({
    rules: [
      { match: { prompt: '[A] uses a tool' }, steps: [{ text: 'A done', toolCalls: Array.from({ length: toolCalls }, (_, index) => ({ tool: 'lookup', args: { q: `q${index}` } })) }] },
      { match: { prompt: '[B]' }, steps: [{ text: 'B done' }] },
      { match: { prompt: '[C]' }, steps: [{ text: 'C done' }] },
    ],
  })
}

describe('positions come from the script, not from what a child did in its turn', () => {
  it('journals a child tool call under its agent attempt, so siblings keep ordinals 1, 2, 3', async () => {
    const runsDir = tempRunsDir()
    const lookups = { count: 0 }
    const run = await runWorkflowScript(threeAgents(lookups), { runsDir, runId: 'abc', host: hostWithToolCalls(1) })
    expect(run.ok).toBe(true)
    const lines = executionLines(run.executionDir)
    expect(linesOfType(lines, 'agent_start').map((line) => line.ordinal)).toEqual(['1', '2', '3'])
    const toolStart = linesOfType(lines, 'tool_start')
    expect(toolStart).toHaveLength(1)
    expect(toolStart[0]).toMatchObject({ toolCallId: 'call-1-a1-tool-1', parentCallId: 'call-1-a1' })
    expect(toolStart[0]?.ordinal).toBeUndefined()
  })

  it('replays the unchanged run identically, and runs neither the child nor its tool', async () => {
    const runsDir = tempRunsDir()
    const lookups = { count: 0 }
    await runWorkflowScript(threeAgents(lookups), { runsDir, runId: 'abc', host: hostWithToolCalls(2) })
    expect(lookups.count).toBe(2)
    const replayed = await replayRun('abc', threeAgents(lookups), { runsDir })
    expect(replayed.ok).toBe(true)
    expect(replayed.report.counts).toMatchObject({ matched: 3, missing: 0, extra: 0, diverged: 0 })
    expect(lookups.count).toBe(2)
  })

  it('keeps sibling ordinals whatever number of tool calls a child makes (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 0, max: 4 }), async (first, second) => {
        const runsDir = tempRunsDir()
        const lookups = { count: 0 }
        await runWorkflowScript(threeAgents(lookups), { runsDir, runId: 'recorded', host: hostWithToolCalls(first) })
        // However many tools A's child called, B and C sit at 2 and 3, so a resume replays all three.
        const host = hostWithToolCalls(second)
        const resumed = await resumeRun('recorded', threeAgents(lookups), { runsDir, host })
        expect(resumed.divergence).toBeNull()
        expect(host.sessionCount).toBe(0)
      }),
      { numRuns: 8 },
    )
  })

  it('after a cancel during C, resume asks the host only for C: B is served from the recording', async () => {
    const runsDir = tempRunsDir()
    const lookups = { count: 0 }
    const hanging = createScriptedHost({
      rules: [
        { match: { prompt: '[A] uses a tool' }, steps: [{ text: 'A done', toolCalls: [{ tool: 'lookup', args: { q: 'x' } }] }] },
        { match: { prompt: '[B]' }, steps: [{ text: 'B done' }] },
        { match: { prompt: '[C]' }, steps: [{ text: 'C never', delayMs: 60_000 }] },
      ],
    })
    const handle = await startWorkflowRun(threeAgents(lookups), { runsDir, runId: 'killed', host: hanging })
    for (let round = 0; round < 50; round += 1) {
      await settle()
      if (linesOfType(executionLines(join(runsDir, handle.runId)), 'agent_start').length === 3) break
    }
    handle.cancel('stop during C')
    const cancelled = await handle.done
    expect(cancelled.disposition).toBe('cancelled')

    const host = hostWithToolCalls(1)
    const resumed = await resumeRun('killed', threeAgents(lookups), { runsDir, host })
    expect(resumed.ok).toBe(true)
    expect(host.sessionCount).toBe(1)
    expect(resumed.divergence).toBeNull()
    expect(linesOfType(executionLines(resumed.executionDir), 'replay_diverged')).toHaveLength(0)
    expect(resumed.result).toEqual({ ok: true, answers: ['A done', 'B done', 'C done'] })
  })
})

describe('a completed tool call never runs again on resume', () => {
  function charging(charges: { count: number; amounts: number[] }, amount = 42) {
    return defineWorkflow({
      name: 'charge',
      tools: {
        charge: defineTool({
          input: z.object({ amount: z.number() }),
          run: async ({ amount: charged }) => {
            charges.count += 1
            charges.amounts.push(charged)
            return { receipt: `r-${charges.count}`, amount: charged }
          },
        }),
      },
      async run({ tool, agent }) {
        const receipt = await tool('charge', { amount })
        const note = await agent('Write the thank-you note')
        return { ok: true, receipt, note: note.answer }
      },
    })
  }

  async function cancelledDuringAgent(runsDir: string, charges: { count: number; amounts: number[] }) {
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'never', delayMs: 60_000 }] }] })
    const handle = await startWorkflowRun(charging(charges), { runsDir, runId: 'charge-run', host })
    for (let round = 0; round < 50; round += 1) {
      await settle()
      if (linesOfType(executionLines(join(runsDir, handle.runId)), 'agent_start').length === 1) break
    }
    handle.cancel('stop during the note')
    expect((await handle.done).disposition).toBe('cancelled')
  }

  it('journals the detached result on tool_end, with the request key and arguments on tool_start', async () => {
    const runsDir = tempRunsDir()
    const charges = { count: 0, amounts: [] as number[] }
    const run = await runWorkflowScript(charging(charges), { runsDir, host: createScriptedHost({ rules: [{ steps: [{ text: 'thanks' }] }] }) })
    const lines = executionLines(run.executionDir)
    const [start] = linesOfType(lines, 'tool_start')
    const [end] = linesOfType(lines, 'tool_end')
    expect(start).toMatchObject({ ordinal: '1', args: { amount: 42 } })
    expect(start?.requestKey).toMatch(/^sha256:[0-9a-f]{64}$/)
    expect(end).toMatchObject({ status: 'completed', result: { receipt: 'r-1', amount: 42 } })
  })

  it('charges once: resume serves the completed charge from the journal', async () => {
    const runsDir = tempRunsDir()
    const charges = { count: 0, amounts: [] as number[] }
    await cancelledDuringAgent(runsDir, charges)
    expect(charges.count).toBe(1)

    const resumed = await resumeRun('charge-run', charging(charges), { runsDir, host: createScriptedHost({ rules: [{ steps: [{ text: 'thanks' }] }] }) })
    expect(resumed.ok).toBe(true)
    expect(charges.count).toBe(1)
    expect(resumed.result).toEqual({ ok: true, receipt: { receipt: 'r-1', amount: 42 }, note: 'thanks' })
    const ends = linesOfType(executionLines(resumed.executionDir), 'tool_end')
    expect(ends).toHaveLength(1)
    expect(ends[0]).toMatchObject({ replayed: true, result: { receipt: 'r-1', amount: 42 } })
    expect(resumed.replayed).toBe(1)
  })

  it('a changed argument diverges, names args, and runs the tool live', async () => {
    const runsDir = tempRunsDir()
    const charges = { count: 0, amounts: [] as number[] }
    await cancelledDuringAgent(runsDir, charges)
    const resumed = await resumeRun('charge-run', charging(charges, 43), { runsDir, host: createScriptedHost({ rules: [{ steps: [{ text: 'thanks' }] }] }) })
    expect(charges.amounts).toEqual([42, 43])
    expect(resumed.divergence).toMatchObject({ ordinal: '1', fields: ['args'] })
    expect(linesOfType(executionLines(resumed.executionDir), 'replay_diverged')).toHaveLength(1)
  })

  it('a recorded tool failure replays as the same failure in a determinism check, and runs again on resume', async () => {
    const runsDir = tempRunsDir()
    let calls = 0
    const flaky = (failFirst: boolean) =>
      defineWorkflow({
        name: 'flaky',
        tools: {
          fetch: defineTool({
            input: z.object({}),
            run: async () => {
              calls += 1
              if (failFirst && calls === 1) throw Object.assign(new Error('upstream down'), { retryable: false })
              return { rows: 3 }
            },
          }),
        },
        async run({ tool }) {
          return { ok: true, fetched: await tool('fetch', {}) }
        },
      })
    const first = await runWorkflowScript(flaky(true), { runsDir, runId: 'flaky-run' })
    expect(first.ok).toBe(false)
    expect(calls).toBe(1)

    const check = await replayRun('flaky-run', flaky(true), { runsDir })
    expect(check.ok).toBe(true)
    expect(check.run.error?.message).toContain('upstream down')
    expect(calls).toBe(1)

    const resumed = await resumeRun('flaky-run', flaky(true), { runsDir })
    expect(resumed.ok).toBe(true)
    expect(calls).toBe(2)
  })
})
