import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createManualClock } from '@locus/retry'
import { createFileRunStore } from '@locus/store'
import {
  AgentCallError,
  SchemaValidationError,
  createScriptedHost,
  defineTool,
  defineWorkflow,
  readStoredRun,
  runWorkflowScript,
  startWorkflowRun,
} from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { linesOfType, readRun, settle, tempRunsDir } from './helpers.js'

function capturing(capture: { error?: unknown }, body: () => Promise<unknown>): () => Promise<unknown> {
  return async () => {
    try {
      return await body()
    } catch (error) {
      capture.error = error
      throw error
    }
  }
}

describe('agent(): value repair for choice', () => {
  it('accepts an answer among the declared choices, matched without case or stray punctuation', async () => {
    const host = createScriptedHost({ rules: [{ steps: [{ text: ' "Urgent." ' }] }] })
    const run = await runWorkflowScript(async ({ agent }) => ({ ok: true, level: (await agent('classify', { choice: ['low', 'urgent'] })).answer }), {
      host,
      runsDir: tempRunsDir(),
    })
    expect(run.result).toEqual({ ok: true, level: 'urgent' })
  })

  it('asks once more in the same child after a mismatch, never in a new child', async () => {
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'probably high-ish' }, { text: 'high' }] }] })
    const run = await runWorkflowScript(async ({ agent }) => ({ ok: true, level: (await agent('classify', { choice: ['low', 'high'], attempts: 3 })).answer }), {
      host,
      runsDir: tempRunsDir(),
    })
    expect(run.result).toEqual({ ok: true, level: 'high' })
    expect(host.sessionCount).toBe(1)
    expect(host.calls.map((call) => call.turn)).toEqual([1, 2])
    expect(host.calls[1]!.prompt).toMatch(/"low", "high"/)
    expect(linesOfType(readRun(run).lines, 'agent_start')).toHaveLength(1)
  })

  it('throws SchemaValidationError naming both answers and the choices when repair fails', async () => {
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'maybe' }, { text: 'still maybe' }] }] })
    const capture: { error?: unknown } = {}
    const run = await runWorkflowScript(
      async ({ agent }) => capturing(capture, () => agent('classify', { choice: ['yes', 'no'], attempts: 2 }))(),
      { host, runsDir: tempRunsDir() },
    )
    expect(SchemaValidationError.isInstance(capture.error)).toBe(true)
    expect((capture.error as Error).message).toMatch(/"maybe".*"still maybe".*"yes", "no"/)
    expect(host.sessionCount).toBe(1)
    expect(linesOfType(readRun(run).lines, 'agent_end')[0]).toMatchObject({ status: 'failed', failureCause: 'unparseable-answer' })
    expect(run.disposition).toBe('failed')
  })

  it('returns choiceFallback instead of throwing when the repair also misses', async () => {
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'maybe' }, { text: 'dunno' }] }] })
    const run = await runWorkflowScript(
      async ({ agent }) => {
        const result = await agent('classify', { choice: ['yes', 'no'], choiceFallback: 'no' })
        return { ok: true, answer: result.answer, usedFallback: result.usedFallback }
      },
      { host, runsDir: tempRunsDir() },
    )
    expect(run.result).toEqual({ ok: true, answer: 'no', usedFallback: true })
  })
})

describe('agent(): a repaired choice is on the record (issue 30)', () => {
  it('agent_end says what the child said first and which choice it ended with; the README, the summary and show say so', async () => {
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'probably high-ish' }, { text: 'high' }] }] })
    const runsDir = tempRunsDir()
    const run = await runWorkflowScript(async ({ agent }) => ({ ok: true, level: (await agent('classify', { choice: ['low', 'high'] })).answer }), { host, runsDir })
    const { lines, readme } = readRun(run)
    expect(linesOfType(lines, 'agent_end')[0]).toMatchObject({ status: 'completed', answer: 'high', repaired: { from: 'probably high-ish', to: 'high', via: 'clarification' } })
    expect(readme).toContain('- Choice answers repaired: 1 (`default` `call-1-a1` said `"probably high-ish"`, took `high` when asked again)')
    const summary = (await readStoredRun(createFileRunStore(runsDir), run.runId)).summary
    expect(summary.repairedChoices).toEqual([{ agent: 'default', callId: 'call-1-a1', from: 'probably high-ish', to: 'high', via: 'clarification' }])
  })

  it('records a fallback as a repair, and an answer right the first time as none', async () => {
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'maybe' }, { text: 'dunno' }, { text: 'Yes.' }] }] })
    const run = await runWorkflowScript(
      async ({ agent }) => ({ ok: true, a: (await agent('first', { choice: ['yes', 'no'], choiceFallback: 'no' })).answer, b: (await agent('second', { choice: ['yes', 'no'] })).answer }),
      { host, runsDir: tempRunsDir() },
    )
    const ends = linesOfType(readRun(run).lines, 'agent_end')
    expect(ends.map((line) => line.repaired)).toEqual([{ from: 'maybe', to: 'no', via: 'fallback' }, undefined])
  })
})

describe('agent(): failure causes', () => {
  it('fails a length stop as provider-error, keeps the transcript, and never hands on the truncated text', async () => {
    const host = createScriptedHost({ rules: [{ steps: [{ stop: 'length', text: 'The answer is incompl' }] }] })
    const capture: { error?: unknown } = {}
    const run = await runWorkflowScript(async ({ agent }) => capturing(capture, () => agent('long question'))(), { host, runsDir: tempRunsDir() })
    expect(AgentCallError.isInstance(capture.error)).toBe(true)
    expect(capture.error).toMatchObject({ failureCause: 'provider-error' })
    const { lines } = readRun(run)
    const end = linesOfType(lines, 'agent_end')[0]!
    expect(end).toMatchObject({ status: 'failed', failureCause: 'provider-error', stopReason: 'length' })
    const transcript = readFileSync(join(run.runDir, 'calls', end.callId, 'transcript', 'transcript.json'), 'utf8')
    expect(transcript).toContain('The answer is incompl')
    const envelope = JSON.parse(readFileSync(join(run.runDir, 'calls', end.callId, 'result', 'result.json'), 'utf8'))
    expect(envelope.answer).toBeUndefined()
    expect(JSON.stringify(run.result)).not.toContain('incompl')
  })

  it('throws on sdk-unavailable with no agent_end: the terminal error line carries the cause and the trio', async () => {
    const host = createScriptedHost({ rules: [{ steps: [{ throw: 'sdk-unavailable', message: 'agent SDK not loaded' }] }] })
    const run = await runWorkflowScript(async ({ agent }) => agent('x', { attempts: 2 }), { host, runsDir: tempRunsDir() })
    const { lines } = readRun(run)
    expect(linesOfType(lines, 'agent_end')).toHaveLength(0)
    const errors = linesOfType(lines, 'error')
    expect(errors).toHaveLength(1)
    expect(errors[0]).toMatchObject({ failureCause: 'sdk-unavailable', attempt: 1, attempts: 2 })
    expect(errors[0]!.logicalCallId).toBeTypeOf('string')
    expect(host.sessionCount).toBe(1)
    expect(run.disposition).toBe('failed')
  })

  it('treats a run without a host as sdk-unavailable', async () => {
    const run = await runWorkflowScript(async ({ agent }) => agent('x'), { runsDir: tempRunsDir() })
    expect(linesOfType(readRun(run).lines, 'error')[0]).toMatchObject({ failureCause: 'sdk-unavailable' })
  })

  it.each([
    ['empty-answer', [{ empty: true as const }], {}],
    ['answer-too-long', [{ text: 'x'.repeat(50) }], { budgets: { maxAnswerChars: 10 } }],
    ['prompt-not-dispatched', [{ fail: 'prompt-not-dispatched' as const }], {}],
  ])('records %s in agent_end, the envelope and the thrown error alike', async (cause, steps, options) => {
    const host = createScriptedHost({ rules: [{ steps }] })
    const capture: { error?: unknown } = {}
    const run = await runWorkflowScript(async ({ agent }) => capturing(capture, () => agent('x', options))(), { host, runsDir: tempRunsDir() })
    const end = linesOfType(readRun(run).lines, 'agent_end')[0]!
    expect(end.failureCause).toBe(cause)
    const envelope = JSON.parse(readFileSync(join(run.runDir, 'calls', end.callId, 'result', 'result.json'), 'utf8'))
    expect(envelope.failureCause).toBe(cause)
    expect(capture.error).toMatchObject({ failureCause: cause })
  })

  it('rejects an answer the script refuses as script-rejected', async () => {
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'no citations here' }] }] })
    const capture: { error?: unknown } = {}
    await runWorkflowScript(async ({ agent }) => capturing(capture, () => agent('x', { accept: (answer) => (answer.includes('[1]') ? true : 'no citation') }))(), {
      host,
      runsDir: tempRunsDir(),
    })
    expect(capture.error).toMatchObject({ failureCause: 'script-rejected' })
  })

  it('fails an unknown agent role as unknown-agent before any child starts', async () => {
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'x' }] }] })
    const workflow = defineWorkflow({ name: 'roles', agents: { analyst: { system: 'You analyse.' } }, run: async ({ agent }) => agent('x', { agent: 'analyts' }) })
    const run = await runWorkflowScript(workflow, { host, runsDir: tempRunsDir() })
    expect(host.sessionCount).toBe(0)
    expect(run.error?.message).toMatch(/Unknown agent role "analyts".*analyst/)
    expect(linesOfType(readRun(run).lines, 'error')[0]).toMatchObject({ failureCause: 'unknown-agent' })
  })

  it('refuses bad agent() options naming the field', async () => {
    const run = await runWorkflowScript(async ({ agent }) => agent('x', { timeoutMs: -5 }), { runsDir: tempRunsDir() })
    expect(run.error?.message).toMatch(/timeoutMs/)
    const attempts = await runWorkflowScript(async ({ agent }) => agent('x', { attempts: 0 }), { runsDir: tempRunsDir() })
    expect(attempts.error?.message).toMatch(/attempts/)
  })
})

describe('agent(): budgets', () => {
  it('journals a per-call increase over the run-level value as budget_change', async () => {
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'ok' }] }] })
    const run = await runWorkflowScript(async ({ agent }) => ({ ok: true, a: (await agent('x', { budgets: { maxToolCalls: 50 } })).answer }), {
      host,
      runsDir: tempRunsDir(),
      budgets: { perCall: { maxToolCalls: 5 } },
    })
    const changes = linesOfType(readRun(run).lines, 'budget_change')
    expect(changes.filter((line) => line.scope === 'call')).toEqual([expect.objectContaining({ budget: 'maxToolCalls', from: 5, to: 50 })])
  })

  it('does not journal a per-call decrease', async () => {
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'ok' }] }] })
    const run = await runWorkflowScript(async ({ agent }) => agent('x', { budgets: { maxToolCalls: 1 } }), { host, runsDir: tempRunsDir() })
    expect(linesOfType(readRun(run).lines, 'budget_change').filter((line) => line.scope === 'call')).toHaveLength(0)
  })

  it('fails a child that exceeds its tool-call budget as tool-call-budget, and does not retry it', async () => {
    const lookup = defineTool({ input: z.object({ id: z.string() }), run: ({ id }) => ({ id }) })
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'done', toolCalls: [{ tool: 'lookup', args: { id: 'a' } }, { tool: 'lookup', args: { id: 'b' } }] }] }] })
    const workflow = defineWorkflow({ name: 'tools', tools: { lookup }, run: async ({ agent }) => agent('x', { attempts: 3, budgets: { maxToolCalls: 1 } }) })
    const run = await runWorkflowScript(workflow, { host, runsDir: tempRunsDir() })
    const { lines } = readRun(run)
    expect(linesOfType(lines, 'agent_end')[0]).toMatchObject({ failureCause: 'tool-call-budget' })
    expect(linesOfType(lines, 'tool_end')).toHaveLength(1)
    expect(host.sessionCount).toBe(1)
  })

  it('gives every agent the full tool surface, journaled as tool calls', async () => {
    const lookup = defineTool({ input: z.object({ id: z.string() }), run: ({ id }) => ({ id, found: true }) })
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'found it', toolCalls: [{ tool: 'lookup', args: { id: 'T-1' } }] }] }] })
    const workflow = defineWorkflow({ name: 'tools', tools: { lookup }, agents: { analyst: {} }, run: async ({ agent }) => ({ ok: true, a: (await agent('x', { agent: 'analyst' })).answer }) })
    const run = await runWorkflowScript(workflow, { host, runsDir: tempRunsDir() })
    expect(run.ok).toBe(true)
    expect(linesOfType(readRun(run).lines, 'tool_start')[0]).toMatchObject({ tool: 'lookup' })
  })
})

describe('agent(): deterministic ordinals', () => {
  it('gives parallel calls the same ordinals whatever order they complete in', async () => {
    async function ordinalsWith(delays: number[]): Promise<Record<string, string>> {
      const clock = createManualClock()
      const host = createScriptedHost({ clock, rules: delays.map((delayMs, index) => ({ match: { prompt: `item ${index}` }, steps: [{ text: `answer ${index}`, delayMs }] })) })
      const handle = await startWorkflowRun(
        async ({ agent, parallel }) => ({ ok: true, all: await parallel(delays.map((_, index) => async () => (await agent(`item ${index}`)).answer)) }),
        { host, clock, runsDir: tempRunsDir() },
      )
      await settle()
      await clock.runUntilIdle()
      const run = await handle.done
      expect(run.ok).toBe(true)
      return Object.fromEntries(linesOfType(readRun(run).lines, 'agent_start').map((line) => [line.prompt, line.ordinal]))
    }
    const fastFirst = await ordinalsWith([1, 2, 3, 4])
    const slowFirst = await ordinalsWith([40, 30, 20, 10])
    expect(slowFirst).toEqual(fastFirst)
    expect(new Set(Object.values(fastFirst)).size).toBe(4)
  })
})
