import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { CallError, type RetryClock, createManualClock } from '@locus/retry'
import {
  type AgentHost,
  type AgentSession,
  AgentCallError,
  type TurnResult,
  createScriptedHost,
  defineTool,
  defineWorkflow,
  replayRun,
  runWorkflowScript,
  startWorkflowRun,
} from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { linesOfType, readRun, settle, tempRunsDir } from './helpers.js'

/** A tool that always fails in a way its policy retries. */
function flakyTool(retry: { timeout_secs: number | null; max_retries: number; backoff_base_secs: number; backoff_max_secs: number }) {
  return defineTool({
    input: z.object({ id: z.string() }),
    retry,
    run: () => {
      throw new CallError('upstream 503', { retryable: true, code: 'provider_error' })
    },
  })
}

// The policy: three attempts, one second apart.
const ONE_SECOND_APART = { timeout_secs: null, max_retries: 3, backoff_base_secs: 1, backoff_max_secs: 60 }

function envelopeOf(runDir: string, callId: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(runDir, 'calls', callId, 'result', 'result.json'), 'utf8')) as Record<string, unknown>
}

describe('issue 14.6: the run deadline stops tool retries and their backoff', () => {
  it('starts no retry and sleeps no backoff past deadlineMs, and says the deadline ended it', async () => {
    const clock = createManualClock()
    const workflow = defineWorkflow({
      name: 'deadline-tool',
      tools: { flaky: flakyTool(ONE_SECOND_APART) },
      run: async ({ tool }) => tool('flaky', { id: 'T-1' }),
    })
    const handle = await startWorkflowRun(workflow, { clock, runsDir: tempRunsDir(), budgets: { deadlineMs: 50 } })
    await settle()
    // Before the fix the loop slept 1 s twice and ran three attempts; nothing may be left asleep now.
    await clock.runUntilIdle()
    const run = await handle.done
    expect(clock.now()).toBe(0)

    const { lines, readme } = readRun(run)
    expect(linesOfType(lines, 'tool_start')).toHaveLength(1)
    expect(linesOfType(lines, 'retry')).toHaveLength(0)
    expect(linesOfType(lines, 'tool_end')[0]).toMatchObject({ attempt: 1, status: 'failed', retryRefused: { by: 'run-deadline', delayMs: 1000 } })
    expect(run.disposition).toBe('failed')
    expect(run.error?.code).toBe('WORKFLOW_RUN_DEADLINE')
    expect(readme).toContain('## Refused retries')
    expect(readme).toContain('refused by the run deadline')
  })

  it('lets a retry whose backoff ends before the deadline run, and refuses the next', async () => {
    const clock = createManualClock()
    const workflow = defineWorkflow({
      name: 'deadline-tool-late',
      tools: { flaky: flakyTool(ONE_SECOND_APART) },
      run: async ({ tool }) => tool('flaky', { id: 'T-1' }),
    })
    const handle = await startWorkflowRun(workflow, { clock, runsDir: tempRunsDir(), budgets: { deadlineMs: 1_500 } })
    await settle()
    await clock.runUntilIdle()
    const run = await handle.done
    // The second attempt started at 1 000 ms; the third would have started at 2 000 ms, past 1 500.
    expect(clock.now()).toBe(1_000)
    const { lines } = readRun(run)
    expect(linesOfType(lines, 'tool_start').map((line) => line.attempt)).toEqual([1, 2])
    expect(linesOfType(lines, 'retry')).toHaveLength(1)
    expect(linesOfType(lines, 'tool_end')[1]).toMatchObject({ attempt: 2, retryRefused: { by: 'run-deadline', delayMs: 1000 } })
    expect(run.error?.code).toBe('WORKFLOW_RUN_DEADLINE')
  })

  it('starts no agent attempt past the deadline and names the deadline on the attempt it refused', async () => {
    const clock = createManualClock()
    const host = createScriptedHost({ clock, rules: [{ steps: [{ hang: true }] }] })
    const handle = await startWorkflowRun(async ({ agent }) => agent('x', { attempts: 3, timeoutMs: 100 }), {
      host,
      clock,
      runsDir: tempRunsDir(),
      budgets: { deadlineMs: 50 },
    })
    await settle()
    await clock.advance(100)
    const run = await handle.done
    expect(host.sessionCount).toBe(1)
    const { lines } = readRun(run)
    expect(linesOfType(lines, 'retry')).toHaveLength(0)
    expect(linesOfType(lines, 'agent_end')[0]).toMatchObject({ failureCause: 'call-timeout', retryRefused: { by: 'run-deadline' } })
    expect(run.error?.code).toBe('WORKFLOW_RUN_DEADLINE')
  })
})

describe('issue 14.7: the invocation cap is asked before a retry is announced', () => {
  it('writes no [workflow:retry] line for a re-send the cap refuses, and counts no retry', async () => {
    const clock = createManualClock()
    const host = createScriptedHost({ clock, rules: [{ steps: [{ hang: true }, { text: 'never sent' }] }] })
    const handle = await startWorkflowRun(async ({ agent }) => agent('x', { attempts: 2, timeoutMs: 10 }), {
      host,
      clock,
      runsDir: tempRunsDir(),
      budgets: { maxTotalAgentInvocations: 1 },
    })
    await settle()
    await clock.advance(10)
    const run = await handle.done
    expect(run.error?.code).toBe('WORKFLOW_INVOCATION_CAP')
    expect(host.sessionCount).toBe(1)

    const { lines, readme } = readRun(run)
    expect(linesOfType(lines, 'retry')).toHaveLength(0)
    expect(lines.some((line) => 'message' in line && line.message.includes('as attempt 2'))).toBe(false)
    expect(linesOfType(lines, 'agent_end')).toEqual([expect.objectContaining({ attempt: 1, failureCause: 'call-timeout', retryRefused: { by: 'invocation-cap' } })])
    expect(readme).toContain('(1 attempt, 0 retries across 0 calls)')
    expect(readme).toContain('- Retries refused: 1 (1 by the invocation cap)')
  })
})

describe('issue 14.8: sdk-unavailable throws, whether the host threw it or returned it', () => {
  it('a turn classified sdk-unavailable writes no agent_end; the error line carries the cause and the trio', async () => {
    const host = createScriptedHost({ rules: [{ steps: [{ fail: 'sdk-unavailable', reason: 'the agent SDK is not installed' }, { text: 'never' }] }] })
    let caught: unknown
    const run = await runWorkflowScript(
      async ({ agent }) => {
        try {
          return await agent('x', { attempts: 2 })
        } catch (error) {
          caught = error
          throw error
        }
      },
      { host, runsDir: tempRunsDir() },
    )
    expect(caught).toBeInstanceOf(AgentCallError)
    expect(caught).toMatchObject({ failureCause: 'sdk-unavailable', attempt: 1, attempts: 2 })
    expect(host.sessionCount).toBe(1)
    const { lines } = readRun(run)
    expect(linesOfType(lines, 'agent_end')).toHaveLength(0)
    expect(linesOfType(lines, 'retry')).toHaveLength(0)
    const errors = linesOfType(lines, 'error')
    expect(errors).toHaveLength(1)
    expect(errors[0]).toMatchObject({ failureCause: 'sdk-unavailable', attempt: 1, attempts: 2, logicalCallId: 'call-1', callId: 'call-1-a1' })
    expect(run.disposition).toBe('failed')
  })
})

describe('issue 14.8: a replayed sdk-unavailable throws as it did live', () => {
  it('writes an error line with the cause and the trio, and no agent_end', async () => {
    const runsDir = tempRunsDir()
    const workflow = async ({ agent }: { agent: (prompt: string) => Promise<unknown> }) => agent('x')
    const host = createScriptedHost({ rules: [{ steps: [{ fail: 'sdk-unavailable' }] }] })
    const live = await runWorkflowScript(workflow, { host, runsDir })
    const replayed = await replayRun(live.runId, workflow, { runsDir })
    const lines = readRun({ runDir: replayed.executionDir }).lines
    expect(linesOfType(lines, 'agent_end')).toHaveLength(0)
    expect(linesOfType(lines, 'error')[0]).toMatchObject({ failureCause: 'sdk-unavailable', attempt: 1, attempts: 1, logicalCallId: 'call-1' })
    expect(replayed.report.counts.replayed).toBe(1)
  })
})

describe('issue 14.10: a run-wide retry budget and jitter', () => {
  it('shares retryBudget across tool calls and journals each refusal on the attempt it refused', async () => {
    let attempts = 0
    const workflow = defineWorkflow({
      name: 'retry-budget-tools',
      tools: {
        flaky: defineTool({
          input: z.object({ id: z.string() }),
          retry: { timeout_secs: null, max_retries: 3, backoff_base_secs: 0, backoff_max_secs: 0 },
          run: () => {
            attempts += 1
            throw new CallError('upstream 503', { retryable: true, code: 'provider_error' })
          },
        }),
      },
      run: async ({ tool }) => {
        const outcomes: string[] = []
        for (const id of ['a', 'b']) {
          try {
            await tool('flaky', { id })
          } catch (error) {
            outcomes.push((error as { code: string }).code)
          }
        }
        return { ok: false, outcomes }
      },
    })
    const run = await runWorkflowScript(workflow, { runsDir: tempRunsDir(), retryBudget: 1 })
    // Call a: one attempt, one retry (the budget's only one), then refused; call b: refused at once.
    expect(attempts).toBe(3)
    expect(run.result).toEqual({ ok: false, outcomes: ['TOOL_CALL_FAILED', 'TOOL_CALL_FAILED'] })
    const { lines, readme } = readRun(run)
    expect(linesOfType(lines, 'run_start')[0]?.options).toMatchObject({ retryBudget: 1 })
    expect(linesOfType(lines, 'retry')).toHaveLength(1)
    const refused = linesOfType(lines, 'tool_end').filter((line) => line.retryRefused !== undefined)
    expect(refused.map((line) => [line.toolCallId, line.attempt, line.retryRefused])).toEqual([
      ['tool-1', 2, { by: 'retry-budget', delayMs: 0 }],
      ['tool-2', 1, { by: 'retry-budget', delayMs: 0 }],
    ])
    expect(readme).toContain("- Retries refused: 2 (2 by the run's retry budget)")
  })

  it('draws agent transport retries from the same budget; 0 allows none', async () => {
    const clock = createManualClock()
    const host = createScriptedHost({ clock, rules: [{ steps: [{ hang: true }, { text: 'never sent' }] }] })
    let caught: unknown
    const handle = await startWorkflowRun(
      async ({ agent }) => {
        try {
          return await agent('x', { attempts: 2, timeoutMs: 10 })
        } catch (error) {
          caught = error
          throw error
        }
      },
      { host, clock, runsDir: tempRunsDir(), retryBudget: 0 },
    )
    await settle()
    await clock.advance(10)
    const run = await handle.done
    expect(host.sessionCount).toBe(1)
    expect(caught).toBeInstanceOf(AgentCallError)
    expect((caught as Error).message).toMatch(/retry budget refused attempt 2 of 2/)
    const { lines } = readRun(run)
    expect(linesOfType(lines, 'retry')).toHaveLength(0)
    expect(linesOfType(lines, 'agent_end')[0]).toMatchObject({ failureCause: 'call-timeout', retryRefused: { by: 'retry-budget' } })
  })

  it('spreads tool backoff with jitter: full waits a part of the delay', async () => {
    const clock = createManualClock()
    const workflow = defineWorkflow({
      name: 'jitter-tools',
      tools: { flaky: flakyTool({ timeout_secs: null, max_retries: 2, backoff_base_secs: 2, backoff_max_secs: 60 }) },
      run: async ({ tool }) => tool('flaky', { id: 'T-1' }),
    })
    const handle = await startWorkflowRun(workflow, { clock, runsDir: tempRunsDir(), jitter: 'full' })
    await settle()
    await clock.runUntilIdle()
    const run = await handle.done
    const { lines } = readRun(run)
    expect(linesOfType(lines, 'run_start')[0]?.options).toMatchObject({ jitter: 'full' })
    const delay = linesOfType(lines, 'retry')[0]?.delayMs ?? Number.NaN
    expect(delay).toBeGreaterThanOrEqual(0)
    expect(delay).toBeLessThan(2_000)
    expect(clock.now()).toBe(delay)
  })

  it.each([
    [{ retryBudget: -1 }, 'retryBudget'],
    [{ retryBudget: 1.5 }, 'retryBudget'],
    [{ jitter: 'sometimes' }, 'jitter'],
  ])('validates %j', async (options, field) => {
    await expect(runWorkflowScript(() => null, { runsDir: tempRunsDir(), ...(options as object) })).rejects.toMatchObject({
      code: 'RUN_OPTIONS_INVALID',
      message: expect.stringContaining(field),
    })
  })
})

/** A clock whose sleeps the test wakes by hand, and whose reading it sets: a fuse timer that lags the clock. */
function handClock(): RetryClock & { set(ms: number): void; wake(ms: number): void } {
  let now = 0
  const sleeps: Array<{ ms: number; resolve: () => void }> = []
  return {
    now: () => now,
    sleep: (ms, signal) =>
      new Promise<void>((resolve) => {
        sleeps.push({ ms, resolve })
        signal?.addEventListener('abort', () => { resolve() }, { once: true })
      }),
    set: (ms) => {
      now = ms
    },
    wake: (ms) => {
      for (const sleep of sleeps.filter((entry) => entry.ms === ms)) sleep.resolve()
    },
  }
}

/** A host whose session opening and answers the test settles by hand. */
function handHost(): AgentHost & {
  opened: number
  prompted: number
  open(): void
  answer(result: TurnResult): void
} {
  const openings: Array<() => void> = []
  const answers: Array<(result: TurnResult) => void> = []
  const session: AgentSession = {
    prompt: (_text, { signal }) => {
      host.prompted += 1
      // A host that honours an abort it sees at once, as a real one does.
      if (signal.aborted) return Promise.resolve({ text: '', stopReason: 'aborted' })
      return new Promise<TurnResult>((resolve) => answers.push(resolve))
    },
    transcript: () => [],
  }
  const host = {
    name: 'by-hand',
    opened: 0,
    prompted: 0,
    openSession: () => {
      host.opened += 1
      return new Promise<AgentSession>((resolve) => openings.push(() => { resolve(session) }))
    },
    open: () => openings.shift()?.(),
    answer: (result: TurnResult) => answers.shift()?.(result),
  }
  return host
}

describe('issue 19: the timeoutMs fuse is decided by runAttempt, and it is final', () => {
  it('19.1: a fuse that fires before the request is sent is call-timeout, on agent_end and envelope, and is retried', async () => {
    const clock = createManualClock()
    const host = handHost()
    const handle = await startWorkflowRun(async ({ agent }) => agent('x', { attempts: 2, timeoutMs: 100 }), { host, clock, runsDir: tempRunsDir() })
    await settle()
    // The session is still opening when the fuse fires.
    await clock.advance(100)
    host.open()
    await settle()
    // The second attempt: opens and answers in time.
    host.open()
    await settle()
    host.answer({ text: 'the answer', stopReason: 'end' })
    const run = await handle.done
    expect(run.disposition).toBe('completed')
    expect(host.opened).toBe(2)
    // The first attempt's request was never sent.
    expect(host.prompted).toBe(1)
    const { lines } = readRun(run)
    const ends = linesOfType(lines, 'agent_end')
    expect(ends.map((line) => [line.attempt, line.status, line.failureCause])).toEqual([
      [1, 'failed', 'call-timeout'],
      [2, 'completed', undefined],
    ])
    expect(linesOfType(lines, 'retry')).toEqual([expect.objectContaining({ cause: 'call-timeout', fromAttempt: 1, toAttempt: 2 })])
    expect(envelopeOf(run.runDir, 'call-1-a1')).toMatchObject({ status: 'failed', failureCause: 'call-timeout' })
  })

  it('19.1: a host that reports its own "aborted" after our fuse fired still reads as call-timeout', async () => {
    const clock = createManualClock()
    const host = handHost()
    const handle = await startWorkflowRun(async ({ agent }) => agent('x', { timeoutMs: 100 }), { host, clock, runsDir: tempRunsDir() })
    await settle()
    host.open()
    await settle()
    await clock.advance(100)
    host.answer({ text: '', stopReason: 'aborted' })
    const run = await handle.done
    const { lines } = readRun(run)
    expect(linesOfType(lines, 'agent_end')[0]).toMatchObject({ failureCause: 'call-timeout' })
  })

  it('19.2: an answer that settles after the fuse fired is discarded as call-timeout', async () => {
    const clock = handClock()
    const host = handHost()
    const handle = await startWorkflowRun(async ({ agent }) => agent('x', { timeoutMs: 100 }), { host, clock, runsDir: tempRunsDir() })
    await settle()
    host.open()
    await settle()
    expect(host.prompted).toBe(1)
    // The fuse fires, then the answer lands in the same tick: before the fix it won the race.
    clock.wake(100)
    host.answer({ text: 'too late', stopReason: 'end' })
    const run = await handle.done
    expect(run.disposition).toBe('failed')
    const { lines } = readRun(run)
    expect(linesOfType(lines, 'agent_end')[0]).toMatchObject({ status: 'failed', failureCause: 'call-timeout' })
    expect(envelopeOf(run.runDir, 'call-1-a1')).toMatchObject({ status: 'failed', failureCause: 'call-timeout' })
  })

  it('19.2: an answer that arrives once the clock passed timeoutMs is call-timeout even if the fuse timer lags', async () => {
    const clock = handClock()
    const host = handHost()
    const handle = await startWorkflowRun(async ({ agent }) => agent('x', { timeoutMs: 1 }), { host, clock, runsDir: tempRunsDir() })
    await settle()
    host.open()
    await settle()
    clock.set(2)
    host.answer({ text: 'too late', stopReason: 'end' })
    const run = await handle.done
    const { lines } = readRun(run)
    expect(linesOfType(lines, 'agent_end')[0]).toMatchObject({ status: 'failed', failureCause: 'call-timeout' })
  })

  it('19.2: an answer inside timeoutMs is accepted', async () => {
    const clock = handClock()
    const host = handHost()
    const handle = await startWorkflowRun(async ({ agent }) => (await agent('x', { timeoutMs: 100 })).answer, { host, clock, runsDir: tempRunsDir() })
    await settle()
    host.open()
    await settle()
    clock.set(99)
    host.answer({ text: 'in time', stopReason: 'end' })
    const run = await handle.done
    expect(run).toMatchObject({ disposition: 'completed', result: 'in time' })
  })
})
