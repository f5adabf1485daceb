// Issue 30, item 2: every LLM request the model server received is an
// `llm_attempt` journal line, whatever ended it: the call's timeoutMs, the
// host's turn budget or a cancellation (Ctrl-C).
import { join } from 'node:path'
import { createManualClock } from '@locus/retry'
import { runWorkflowScript } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { createAiSdkHost } from '../src/index.js'
import { readJsonLines, startServer, tempDir } from './helpers.js'

function llmLines(runDir: string): Array<Record<string, unknown>> {
  return readJsonLines(join(runDir, 'journal.jsonl')).filter((line) => line.type === 'llm_attempt')
}

describe('an LLM request ended before the model answered is still journaled', () => {
  it("the call's timeoutMs: one llm_attempt line, outcome cancelled, before the attempt's agent_end", async () => {
    const server = await startServer({ replies: [{ kind: 'hang' }] })
    const clock = createManualClock()
    const host = createAiSdkHost({ baseURL: server.baseURL, modelId: 'm' })
    const running = runWorkflowScript(async ({ agent }) => ({ ok: true, answer: (await agent('hi', { timeoutMs: 150 })).answer }), { host, runsDir: tempDir(), clock })
    // The fuse fires once the request is on the wire, whatever the machine's speed.
    await server.waitForRequests(1)
    await clock.advance(150)
    const run = await running
    expect(run.disposition).toBe('failed')
    const lines = readJsonLines(join(run.runDir, 'journal.jsonl'))
    const llm = lines.filter((line) => line.type === 'llm_attempt')
    expect(llm).toHaveLength(1)
    expect(llm[0]).toMatchObject({ outcome: 'cancelled', callId: 'call-1-a1', llmAttempt: 1 })
    const end = lines.findIndex((line) => line.type === 'agent_end')
    expect(lines.indexOf(llm[0] as Record<string, unknown>)).toBeLessThan(end)
    expect(lines[end]).toMatchObject({ status: 'failed', failureCause: 'call-timeout' })
  })

  it('a cancelled run (Ctrl-C): the request in flight is an llm_attempt line, outcome cancelled', async () => {
    const server = await startServer({ replies: [{ kind: 'hang' }] })
    const host = createAiSdkHost({ baseURL: server.baseURL, modelId: 'm' })
    const controller = new AbortController()
    const running = runWorkflowScript(async ({ agent }) => ({ ok: true, answer: (await agent('hi')).answer }), { host, runsDir: tempDir(), signal: controller.signal })
    await server.waitForRequests(1)
    controller.abort('interrupted from the terminal (Ctrl-C)')
    const run = await running
    expect(run.disposition).toBe('cancelled')
    const llm = llmLines(run.runDir)
    expect(llm).toHaveLength(1)
    expect(llm[0]).toMatchObject({ outcome: 'cancelled' })
  })

  it('the turn budget: every request sent, the timed-out one and the retry, is a line', async () => {
    const server = await startServer({ replies: [{ kind: 'hang' }, { kind: 'text', text: 'answered' }] })
    const host = createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', turnBudget: { idleMs: 150 } })
    const run = await runWorkflowScript(async ({ agent }) => ({ ok: true, answer: (await agent('hi', { attempts: 2 })).answer }), { host, runsDir: tempDir() })
    expect(run.disposition).toBe('completed')
    const llm = llmLines(run.runDir)
    expect(llm).toHaveLength(server.requests.length)
    expect(llm.map((line) => line.outcome)).toEqual(['timed-out', 'succeeded'])
  })
})
