import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createManualClock } from '@locus/retry'
import { AgentCallError, TransportRetryRefusedError, createScriptedHost, runWorkflowScript, startWorkflowRun } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { linesOfType, readRun, settle, tempRunsDir } from './helpers.js'

describe('transport retry (attempts)', () => {
  it('re-sends a call whose first attempt hit its timeoutMs fuse, with full evidence per attempt', async () => {
    const clock = createManualClock()
    const host = createScriptedHost({ clock, rules: [{ match: { agent: 'analyst' }, steps: [{ hang: true }, { text: 'the summary' }] }] })
    const handle = await startWorkflowRun(
      async ({ agent }) => {
        const { answer, attempt } = await agent('Summarise T-1', { agent: 'analyst', attempts: 2, timeoutMs: 60_000 })
        return { ok: true, answer, attempt }
      },
      { host, clock, runsDir: tempRunsDir(), budgets: { maxTotalAgentInvocations: 5 } },
    )
    await settle()
    expect(host.calls).toHaveLength(1)
    await clock.advance(60_000)
    const run = await handle.done
    expect(run).toMatchObject({ disposition: 'completed', ok: true, result: { ok: true, answer: 'the summary', attempt: 2 } })

    const { lines, readme } = readRun(run)
    const starts = linesOfType(lines, 'agent_start')
    expect(starts).toHaveLength(2)
    expect(starts.map((line) => [line.attempt, line.attempts])).toEqual([[1, 2], [2, 2]])
    expect(new Set(starts.map((line) => line.logicalCallId)).size).toBe(1)
    expect(starts[0]!.callId).not.toBe(starts[1]!.callId)
    const ends = linesOfType(lines, 'agent_end')
    expect(ends.map((line) => [line.status, line.failureCause])).toEqual([['failed', 'call-timeout'], ['completed', undefined]])
    const retries = linesOfType(lines, 'retry')
    expect(retries).toHaveLength(1)
    expect(retries[0]!.message).toMatch(/^\[workflow:retry\]/)
    // Two physical attempts, two charges, two sessions: the host saw two children.
    expect(host.sessionCount).toBe(2)
    // The envelope of the discarded attempt names the fuse, not the cancellation the host observed.
    const firstEnvelope = JSON.parse(readFileSync(join(run.runDir, 'calls', starts[0]!.callId, 'result', 'result.json'), 'utf8'))
    expect(firstEnvelope).toMatchObject({ status: 'failed', failureCause: 'call-timeout', attempt: 1, attempts: 2 })
    expect(readme).toContain('## Retried agent calls')
    expect(readme).toContain(starts[0]!.callId)
    expect(readme).toContain('call-timeout')
  })

  it('counts every physical attempt against maxTotalAgentInvocations', async () => {
    const clock = createManualClock()
    const host = createScriptedHost({ clock, rules: [{ steps: [{ hang: true }, { text: 'late' }] }] })
    const handle = await startWorkflowRun(
      async ({ agent }) => agent('x', { attempts: 2, timeoutMs: 10 }),
      { host, clock, runsDir: tempRunsDir(), budgets: { maxTotalAgentInvocations: 1 } },
    )
    await settle()
    await clock.advance(10)
    const run = await handle.done
    expect(run.disposition).toBe('failed')
    expect(run.error).toMatchObject({ code: 'WORKFLOW_INVOCATION_CAP' })
    expect(host.sessionCount).toBe(1)
  })

  it('makes exactly one attempt for a provider-error, whatever attempts says', async () => {
    const host = createScriptedHost({ rules: [{ steps: [{ fail: 'provider-error', reason: 'upstream 500' }, { text: 'never' }] }] })
    let thrown: unknown
    const run = await runWorkflowScript(
      async ({ agent }) => {
        try {
          await agent('x', { attempts: 3 })
        } catch (error) {
          thrown = error
          throw error
        }
      },
      { host, runsDir: tempRunsDir() },
    )
    expect(host.sessionCount).toBe(1)
    expect(AgentCallError.isInstance(thrown)).toBe(true)
    expect(thrown).toMatchObject({ failureCause: 'provider-error', attempt: 1, attempts: 3 })
    expect(run.disposition).toBe('failed')
    expect(linesOfType(readRun(run).lines, 'retry')).toHaveLength(0)
  })

  it.each(['unclassified', 'empty-answer', 'cancelled'] as const)('does not retry %s', async (cause) => {
    const steps = cause === 'empty-answer' ? [{ empty: true as const }] : [{ fail: cause }]
    const host = createScriptedHost({ rules: [{ steps: [...steps, { text: 'never' }] }] })
    const run = await runWorkflowScript(async ({ agent }) => agent('x', { attempts: 4 }), { host, runsDir: tempRunsDir() })
    expect(host.sessionCount).toBe(1)
    expect(linesOfType(readRun(run).lines, 'agent_end')[0]).toMatchObject({ failureCause: cause })
  })

  it('retries a host-turn-timeout that threw, and records the thrown attempt as an error line, not an agent_end', async () => {
    const host = createScriptedHost({ rules: [{ steps: [{ throw: 'host-turn-timeout' }, { text: 'second time lucky' }] }] })
    const run = await runWorkflowScript(async ({ agent }) => ({ ok: true, ...(await agent('x', { attempts: 2 })) }), {
      host,
      runsDir: tempRunsDir(),
    })
    expect(run.disposition).toBe('completed')
    const { lines, readme } = readRun(run)
    const errors = linesOfType(lines, 'error')
    expect(errors).toHaveLength(1)
    expect(errors[0]).toMatchObject({ failureCause: 'host-turn-timeout', attempt: 1, attempts: 2 })
    expect(linesOfType(lines, 'agent_end')).toHaveLength(1)
    expect(readme).toMatch(/threw/)
  })

  it('refuses attempts > 1 on a call bound to a workspaceHandle or worktree before any child starts', async () => {
    for (const binding of [{ workspaceHandle: 'ws-1' }, { worktree: '/tmp/wt' }]) {
      const host = createScriptedHost({ rules: [{ steps: [{ text: 'x' }] }] })
      let thrown: unknown
      const run = await runWorkflowScript(
        async ({ agent }) => {
          try {
            return await agent('x', { attempts: 2, ...binding })
          } catch (error) {
            thrown = error
            throw error
          }
        },
        { host, runsDir: tempRunsDir() },
      )
      expect(TransportRetryRefusedError.isInstance(thrown)).toBe(true)
      expect(host.sessionCount).toBe(0)
      expect(linesOfType(readRun(run).lines, 'agent_start')).toHaveLength(0)
      expect(run.error?.code).toBe('TRANSPORT_RETRY_REFUSED')
    }
  })

  it('lets a workspace-bound call run with a single attempt', async () => {
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'done' }] }] })
    const run = await runWorkflowScript(async ({ agent }) => ({ ok: true, answer: (await agent('x', { workspaceHandle: 'ws' })).answer }), {
      host,
      runsDir: tempRunsDir(),
    })
    expect(run.result).toEqual({ ok: true, answer: 'done' })
  })

  it('gives each attempt its own transcript and result directories', async () => {
    const clock = createManualClock()
    const host = createScriptedHost({ clock, rules: [{ steps: [{ hang: true }, { text: 'ok' }] }] })
    const handle = await startWorkflowRun(async ({ agent }) => agent('x', { attempts: 2, timeoutMs: 5 }), { host, clock, runsDir: tempRunsDir() })
    await settle()
    await clock.advance(5)
    const run = await handle.done
    for (const start of linesOfType(readRun(run).lines, 'agent_start')) {
      expect(existsSync(join(run.runDir, 'calls', start.callId, 'transcript', 'transcript.json'))).toBe(true)
      expect(existsSync(join(run.runDir, 'calls', start.callId, 'result', 'result.json'))).toBe(true)
    }
  })
})
