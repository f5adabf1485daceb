import type { AgentHost, RunProgress, SessionRequest, TurnResult } from '@locus/runtime'
import { runWorkflowScript } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { linesOfType, readRun, tempRunsDir } from './helpers.js'

/** A host like a real model host: it retries its own LLM requests, streams progress and records settings. */
function evidenceHost(requests: SessionRequest[]): AgentHost {
  return {
    name: 'evidence',
    settings: { host: 'evidence', baseURL: 'http://127.0.0.1:1/v1', modelId: 'tiny', apiKey: 'given' },
    openSession(request) {
      requests.push(request)
      return {
        prompt: (_text, options): Promise<TurnResult> => {
          options.onProgress?.({ kind: 'first-token', outputTokens: 1, elapsedMs: 5, timeToFirstTokenMs: 5 })
          options.onProgress?.({ kind: 'step-end', outputTokens: 7, elapsedMs: 9 })
          return Promise.resolve({
            text: 'answer',
            stopReason: 'end',
            usage: { inputTokens: 3, outputTokens: 7 },
            llmAttempts: [
              { model: 'tiny', turn: 1, step: 1, attempt: 1, maxAttempts: 3, outcome: 'failed', durationMs: 4, streamed: true, code: 'rate_limited', status: 429, retryable: true, retryAfterMs: 1000, delayBeforeNextMs: 1000 },
              { model: 'tiny', turn: 1, step: 1, attempt: 2, maxAttempts: 3, outcome: 'succeeded', durationMs: 6, streamed: true, timeToFirstTokenMs: 5 },
            ],
          })
        },
        transcript: () => [],
      }
    },
  }
}

describe('what a model host reports reaches the journal and the views', () => {
  it('journals every LLM attempt under its agent attempt and counts the host’s retries apart', async () => {
    const requests: SessionRequest[] = []
    const run = await runWorkflowScript(async ({ agent }) => ({ ok: true, answer: (await agent('x')).answer }), { host: evidenceHost(requests), runsDir: tempRunsDir() })
    const { lines, readme } = readRun(run)
    const llm = linesOfType(lines, 'llm_attempt')
    expect(llm.map((line) => [line.llmAttempt, line.outcome, line.code, line.status])).toEqual([
      [1, 'failed', 'rate_limited', 429],
      [2, 'succeeded', undefined, undefined],
    ])
    const start = linesOfType(lines, 'agent_start')[0]
    expect(llm.every((line) => line.callId === start?.callId && line.logicalCallId === start.logicalCallId && line.attempt === 1)).toBe(true)
    expect(readme).toContain('- Agent calls: 1 (1 attempt, 0 retries across 0 calls)')
    expect(readme).toContain("- LLM requests: 2 attempts, 1 retry by the host's own policy")
  })

  it('tells the host the launch mode, and passes turn budgets only when the run or the call sets them', async () => {
    const requests: SessionRequest[] = []
    await runWorkflowScript(
      async ({ agent }) => {
        await agent('defaults')
        await agent('own budget', { budgets: { turnTimeoutMs: 5000, turnIdleMs: null } })
        return { ok: true }
      },
      { host: evidenceHost(requests), runsDir: tempRunsDir(), launchMode: 'background', budgets: { perCall: { turnIdleMs: 90_000 } } },
    )
    expect(requests.map((request) => request.launchMode)).toEqual(['background', 'background'])
    expect(requests[0]?.budgets).toMatchObject({ turnIdleMs: 90_000 })
    expect(requests[0]?.budgets).not.toHaveProperty('turnTimeoutMs')
    expect(requests[1]?.budgets).toMatchObject({ turnTimeoutMs: 5000, turnIdleMs: null })
    const noBudgets: SessionRequest[] = []
    await runWorkflowScript(async ({ agent }) => ({ ok: true, a: (await agent('x')).answer }), { host: evidenceHost(noBudgets), runsDir: tempRunsDir() })
    expect(noBudgets[0]?.budgets).not.toHaveProperty('turnIdleMs')
    expect(noBudgets[0]?.launchMode).toBe('interactive')
  })

  it('records the host’s settings in run_start for a resume, and forwards streamed progress without journaling it', async () => {
    const progress: RunProgress[] = []
    const run = await runWorkflowScript(async ({ agent }) => ({ ok: true, a: (await agent('x')).answer }), {
      host: evidenceHost([]),
      runsDir: tempRunsDir(),
      onProgress: (event) => progress.push(event),
    })
    const { lines } = readRun(run)
    const start = linesOfType(lines, 'run_start')[0]
    expect(start?.options).toMatchObject({ host: 'evidence', hostSettings: { host: 'evidence', modelId: 'tiny', apiKey: 'given' } })
    const callId = linesOfType(lines, 'agent_start')[0]?.callId
    expect(progress.map((event) => [event.kind, event.callId, event.outputTokens])).toEqual([
      ['first-token', callId, 1],
      ['step-end', callId, 7],
    ])
    expect(lines.some((line) => JSON.stringify(line).includes('first-token'))).toBe(false)
  })
})
