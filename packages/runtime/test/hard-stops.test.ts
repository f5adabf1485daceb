import { createManualClock } from '@locus/retry'
import { createScriptedHost, runWorkflowScript, startWorkflowRun } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { linesOfType, readRun, settle, tempRunsDir } from './helpers.js'

describe('run caps and deadlines are hard stops', () => {
  it('stops queued branches once the invocation cap is hit and rejects with the cap error unwrapped', async () => {
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'ok' }] }] })
    let caught: unknown
    const run = await runWorkflowScript(
      async ({ agent, parallel }) => {
        try {
          return await parallel(Array.from({ length: 6 }, (_, index) => () => agent(`item ${index}`)), { concurrency: 1 })
        } catch (error) {
          caught = error
          throw error
        }
      },
      { host, runsDir: tempRunsDir(), budgets: { maxTotalAgentInvocations: 2 } },
    )
    expect(caught).toMatchObject({ code: 'WORKFLOW_INVOCATION_CAP' })
    expect(host.sessionCount).toBe(2)
    expect(run.disposition).toBe('failed')
    expect(run.error?.code).toBe('WORKFLOW_INVOCATION_CAP')
    const groupEnd = linesOfType(readRun(run).lines, 'group_end')[0]!
    expect(groupEnd.completed + groupEnd.failed + groupEnd.notDispatched).toBe(6)
    expect(groupEnd.notDispatched).toBeGreaterThan(0)
  })

  it('refuses new calls after the run deadline without aborting the call in flight', async () => {
    const clock = createManualClock()
    const host = createScriptedHost({ clock, rules: [{ match: { prompt: 'slow' }, steps: [{ text: 'slow done', delayMs: 5_000 }] }, { steps: [{ text: 'never' }] }] })
    const handle = await startWorkflowRun(
      async ({ agent }) => {
        const first = await agent('slow')
        const second = await agent('after the deadline')
        return { ok: true, first: first.answer, second: second.answer }
      },
      { host, clock, runsDir: tempRunsDir(), budgets: { deadlineMs: 1_000 } },
    )
    await settle()
    await clock.advance(5_000)
    const run = await handle.done
    const { lines } = readRun(run)
    // The active child finished: the deadline is not a second abort mechanism.
    expect(linesOfType(lines, 'agent_end')[0]).toMatchObject({ status: 'completed' })
    expect(host.sessionCount).toBe(1)
    expect(run.error?.code).toBe('WORKFLOW_RUN_DEADLINE')
    expect(run.disposition).toBe('failed')
  })

  it('counts a retried attempt as its own charge', async () => {
    const host = createScriptedHost({ rules: [{ steps: [{ throw: 'host-turn-timeout' }, { throw: 'host-turn-timeout' }, { text: 'ok' }] }] })
    const run = await runWorkflowScript(async ({ agent }) => agent('x', { attempts: 3 }), { host, runsDir: tempRunsDir(), budgets: { maxTotalAgentInvocations: 2 } })
    expect(run.error?.code).toBe('WORKFLOW_INVOCATION_CAP')
    expect(host.sessionCount).toBe(2)
  })
})
