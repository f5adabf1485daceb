import { CallError, createManualClock } from '@locus/retry'
import { ToolCallError, defineTool, defineWorkflow, runWorkflowScript, startWorkflowRun } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { linesOfType, readRun, settle, tempRunsDir } from './helpers.js'

function flakyTool(failures: number, retryable = true) {
  let calls = 0
  return defineTool({
    input: z.object({ id: z.string() }),
    run: ({ id }) => {
      calls += 1
      if (calls <= failures) throw new CallError('upstream 503', { retryable, code: 'provider_error' })
      return { id, calls }
    },
  })
}

describe('tool()', () => {
  it('retries a retryable failure under the call policy with the seed backoff, journaling each attempt', async () => {
    const clock = createManualClock()
    const workflow = defineWorkflow({
      name: 'flaky',
      tools: { lookup: flakyTool(2) },
      run: async ({ tool }) => ({ ok: true, value: await tool('lookup', { id: 'T-1' }, { retry: { timeout_secs: 30, max_retries: 3, backoff_base_secs: 2, backoff_max_secs: 60 } }) }),
    })
    const handle = await startWorkflowRun(workflow, { clock, runsDir: tempRunsDir() })
    await settle()
    await clock.advance(2_000)
    await clock.advance(4_000)
    const run = await handle.done
    expect(run.result).toEqual({ ok: true, value: { id: 'T-1', calls: 3 } })
    const { lines } = readRun(run)
    expect(linesOfType(lines, 'tool_start').map((line) => line.attempt)).toEqual([1, 2, 3])
    expect(linesOfType(lines, 'tool_end').map((line) => line.status)).toEqual(['failed', 'failed', 'completed'])
    const retries = linesOfType(lines, 'retry')
    expect(retries.map((line) => line.delayMs)).toEqual([2_000, 4_000])
    expect(retries.every((line) => line.message.startsWith('[workflow:retry]'))).toBe(true)
  })

  it('does not retry a failure without retryable: true, whatever the policy', async () => {
    const workflow = defineWorkflow({
      name: 'terminal',
      tools: { lookup: flakyTool(5, false) },
      run: async ({ tool }) => tool('lookup', { id: 'x' }, { retry: { timeout_secs: null, max_retries: 5, backoff_base_secs: 0, backoff_max_secs: 0 } }),
    })
    const run = await runWorkflowScript(workflow, { runsDir: tempRunsDir() })
    expect(linesOfType(readRun(run).lines, 'tool_start')).toHaveLength(1)
    expect(run.error?.code).toBe('TOOL_CALL_FAILED')
  })

  it('uses no retry and no timeout by default', async () => {
    let caught: unknown
    const workflow = defineWorkflow({
      name: 'default',
      tools: { lookup: flakyTool(1) },
      run: async ({ tool }) => {
        try {
          return await tool('lookup', { id: 'x' })
        } catch (error) {
          caught = error
          throw error
        }
      },
    })
    await runWorkflowScript(workflow, { runsDir: tempRunsDir() })
    expect(ToolCallError.isInstance(caught)).toBe(true)
    expect((caught as ToolCallError).attempts).toHaveLength(1)
    expect((caught as ToolCallError).failure).toMatchObject({ retryable: true, code: 'provider_error' })
  })

  it("uses the tool's own default policy when the call declares none", async () => {
    const tool = { ...flakyTool(1), retry: { timeout_secs: null, max_retries: 2, backoff_base_secs: 0, backoff_max_secs: 0 } }
    const workflow = defineWorkflow({ name: 'own-policy', tools: { lookup: tool }, run: async ({ tool: call }) => ({ ok: true, value: await call('lookup', { id: 'x' }) }) })
    const run = await runWorkflowScript(workflow, { runsDir: tempRunsDir() })
    expect(run.ok).toBe(true)
  })

  it('stamps a timed-out attempt deadline_exceeded and retries it', async () => {
    const clock = createManualClock()
    let calls = 0
    const slow = defineTool({
      input: z.object({}),
      run: (_args, { signal }) => {
        calls += 1
        if (calls === 1) return new Promise((resolve) => { signal.addEventListener('abort', () => { resolve('too late') }) })
        return 'fast'
      },
    })
    const workflow = defineWorkflow({
      name: 'timeout',
      tools: { slow },
      run: async ({ tool }) => ({ ok: true, value: await tool('slow', {}, { retry: { timeout_secs: 1, max_retries: 2, backoff_base_secs: 0, backoff_max_secs: 0 } }) }),
    })
    const handle = await startWorkflowRun(workflow, { clock, runsDir: tempRunsDir() })
    await settle()
    await clock.advance(1_000)
    const run = await handle.done
    expect(run.result).toEqual({ ok: true, value: 'fast' })
    const ends = linesOfType(readRun(run).lines, 'tool_end')
    expect(ends[0]).toMatchObject({ status: 'timed-out', failure: { code: 'deadline_exceeded', retryable: true } })
  })

  it('names an unknown tool and the declared ones', async () => {
    const workflow = defineWorkflow({ name: 'unknown', tools: { lookup: flakyTool(0) }, run: async ({ tool }) =>
      // A plain-JavaScript script can name a tool the types would refuse; the runtime still says which ones exist.
      tool('lokup' as never, {} as never) })
    const run = await runWorkflowScript(workflow, { runsDir: tempRunsDir() })
    expect(run.error?.message).toMatch(/Unknown tool "lokup".*lookup/)
  })

  it('validates arguments with the tool schema and names the field', async () => {
    const workflow = defineWorkflow({ name: 'args', tools: { lookup: flakyTool(0) }, run: async ({ tool }) => tool('lookup', { id: 4 } as never) })
    const run = await runWorkflowScript(workflow, { runsDir: tempRunsDir() })
    expect(run.error?.code).toBe('TOOL_INPUT_INVALID')
    expect(run.error?.message).toMatch(/lookup args\.id/)
  })
})

describe('tool() retry policy validation', () => {
  it('refuses a policy that became invalid after an earlier call used it', async () => {
    const policy = { timeout_secs: null, max_retries: 1, backoff_base_secs: 0, backoff_max_secs: 0 }
    const workflow = defineWorkflow({
      name: 'mutated-policy',
      tools: { lookup: flakyTool(0) },
      run: async ({ tool }) => {
        await tool('lookup', { id: 'a' }, { retry: policy })
        policy.max_retries = 0
        return tool('lookup', { id: 'b' }, { retry: policy })
      },
    })
    const run = await runWorkflowScript(workflow, { runsDir: tempRunsDir() })
    expect(run.error?.code).toBe('RETRY_POLICY_INVALID')
    expect(run.error?.message).toMatch(/max_retries/)
  })
})
