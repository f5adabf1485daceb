import { join } from 'node:path'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { createManualClock } from '@locus/retry'
import { RuntimeInputError, createScriptedHost, defineWorkflow, runWorkflowScript, startWorkflowRun } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { linesOfType, readRun, settle, tempRunsDir } from './helpers.js'

/** Every surface of a finished run, reduced to what must agree. */
function surfaces(run: Awaited<ReturnType<typeof runWorkflowScript>>) {
  const { lines, resultFile, readme } = readRun(run)
  const end = linesOfType(lines, 'run_end')
  expect(end).toHaveLength(1)
  return { returned: [run.disposition, run.ok], file: [resultFile.disposition, resultFile.ok], line: [end[0]!.disposition, end[0]!.ok], readme, end: end[0]!, resultFile }
}

describe('run disposition: every surface agrees', () => {
  it('completes a run whose root value is a success', async () => {
    const run = await runWorkflowScript(async () => ({ ok: true, answer: 42 }), { runsDir: tempRunsDir() })
    const seen = surfaces(run)
    expect(seen.returned).toEqual(['completed', true])
    expect(seen.file).toEqual(['completed', true])
    expect(seen.line).toEqual(['completed', true])
    expect(seen.resultFile.result).toEqual({ ok: true, answer: 42 })
    expect(seen.readme).toMatch(/completed/)
  })

  it.each([
    ['status cancelled', { status: 'cancelled' }],
    ['status blocked', { status: 'blocked', summary: 'Owner decision required' }],
    ['partial without ok:false', { partial: true, found: [1] }],
    ['ok:false', { ok: false }],
  ])('fails a run that returned normally with a root %s, in every surface', async (_label, value) => {
    const run = await runWorkflowScript(async () => value, { runsDir: tempRunsDir() })
    const seen = surfaces(run)
    expect(seen.returned).toEqual(['failed', false])
    expect(seen.file).toEqual(['failed', false])
    expect(seen.line).toEqual(['failed', false])
    // The root keeps its detached result as evidence.
    expect(seen.resultFile.result).toEqual(value)
    expect(seen.readme).toMatch(/failed/i)
    expect(seen.readme).not.toMatch(/disposition: completed/i)
  })

  it('persists the JSON-safe group failure envelope when a group failure escapes, ok:false inside and out', async () => {
    const run = await runWorkflowScript(
      async ({ parallel }) =>
        parallel([async () => ({ ok: true }), async () => { throw new Error('branch broke') }, async () => ({ partial: true, big: 1 })]),
      { runsDir: tempRunsDir() },
    )
    const seen = surfaces(run)
    expect(seen.returned).toEqual(['failed', false])
    expect(seen.resultFile.ok).toBe(false)
    expect(seen.resultFile.result).toMatchObject({ ok: false, code: 'WORKFLOW_GROUP_FAILURE', total: 3, completed: 1, failed: 2 })
    const groupEnd = linesOfType(readRun(run).lines, 'group_end')
    expect(groupEnd[0]).toMatchObject({ completed: 1, failed: 2 })
    expect(seen.end.error?.code).toBe('WORKFLOW_GROUP_FAILURE')
  })

  it('fails a run whose root value cannot be detached, as a typed boundary error', async () => {
    const run = await runWorkflowScript(async () => ({ ok: true, total: 10n }), { runsDir: tempRunsDir() })
    const seen = surfaces(run)
    expect(seen.returned).toEqual(['failed', false])
    expect(run.error).toMatchObject({ code: 'WORKFLOW_RESULT_PREPARATION' })
    expect(run.error?.message).toContain('$.total')
  })

  it('fails a run whose script throws, with the serialized error', async () => {
    const run = await runWorkflowScript(async () => { throw new TypeError('script bug') }, { runsDir: tempRunsDir() })
    expect(surfaces(run).returned).toEqual(['failed', false])
    expect(run.error).toMatchObject({ name: 'TypeError', message: 'script bug' })
  })

  it('ends cancelled when the host cancels, after the started call settles', async () => {
    const clock = createManualClock()
    const host = createScriptedHost({ clock, rules: [{ steps: [{ hang: true }] }] })
    const controller = new AbortController()
    const handle = await startWorkflowRun(async ({ agent }) => agent('wait for me'), { host, clock, signal: controller.signal, runsDir: tempRunsDir() })
    await settle()
    controller.abort()
    const run = await handle.done
    const seen = surfaces(run)
    expect(seen.returned).toEqual(['cancelled', false])
    expect(seen.file).toEqual(['cancelled', false])
    expect(linesOfType(readRun(run).lines, 'agent_end')[0]).toMatchObject({ failureCause: 'cancelled' })
  })

  it('stops new group work on cancellation and counts never-started branches as notDispatched', async () => {
    const clock = createManualClock()
    const host = createScriptedHost({ clock, rules: [{ steps: [{ hang: true }] }] })
    const handle = await startWorkflowRun(
      async ({ agent, parallel }) => parallel([0, 1, 2, 3].map((index) => () => agent(`item ${index}`)), { concurrency: 2 }),
      { host, clock, runsDir: tempRunsDir() },
    )
    await settle()
    handle.cancel()
    const run = await handle.done
    expect(run.disposition).toBe('cancelled')
    expect(host.sessionCount).toBe(2)
    expect(linesOfType(readRun(run).lines, 'group_end')[0]).toMatchObject({ notDispatched: 2, outcome: 'cancelled' })
  })
})

describe('run input and options', () => {
  const workflow = defineWorkflow({
    name: 'triage',
    input: z.object({ ticket: z.string(), priority: z.number().int().optional() }),
    run: async ({ input }) => ({ ok: true, ticket: input.ticket }),
  })

  it('validates input with the workflow schema and passes the parsed value', async () => {
    const run = await runWorkflowScript(workflow, { input: { ticket: 'T-9' }, runsDir: tempRunsDir() })
    expect(run.result).toEqual({ ok: true, ticket: 'T-9' })
    expect(linesOfType(readRun(run).lines, 'run_start')[0]).toMatchObject({ workflow: 'triage', input: { ticket: 'T-9' } })
  })

  it('refuses bad input naming the field, before anything is written', async () => {
    const runsDir = tempRunsDir()
    const attempt = runWorkflowScript(workflow, { input: { ticket: 7 }, runsDir })
    await expect(attempt).rejects.toSatisfy((error: unknown) => RuntimeInputError.isInstance(error) && error.code === 'WORKFLOW_INPUT_INVALID')
    await expect(attempt).rejects.toThrow(/input\.ticket/)
    expect(readdirSync(runsDir)).toEqual([])
  })

  it.each([
    [{ concurrency: 0 }, /concurrency/],
    [{ durability: 'sometimes' }, /durability/],
    [{ budgets: { maxTotalAgentInvocations: -1 } }, /maxTotalAgentInvocations/],
    [{ launchMode: 'turbo' }, /launchMode/],
    [{ host: { name: 'nope' } }, /host/],
  ])('refuses bad options naming the field: %j', async (options, field) => {
    await expect(runWorkflowScript(async () => null, { ...(options as object), runsDir: tempRunsDir() })).rejects.toThrow(field)
  })

  it('refuses a run id that would escape the runs directory', async () => {
    await expect(runWorkflowScript(async () => null, { runId: '../escape', runsDir: tempRunsDir() })).rejects.toThrow()
  })

  it('writes root outputs directly under the run directory', async () => {
    const run = await runWorkflowScript(async () => ({ ok: true }), { runsDir: tempRunsDir(), runId: 'fixed-run' })
    expect(run.runDir.endsWith('fixed-run')).toBe(true)
    expect(existsSync(`${run.runDir}/journal.jsonl`)).toBe(true)
    expect(existsSync(`${run.runDir}/result.json`)).toBe(true)
    expect(existsSync(`${run.runDir}/outputs/README.md`)).toBe(true)
  })
})

describe('wide fan-out', () => {
  it('does not warn about listener leaks when many calls listen on the run signal at once', async () => {
    const warnings: string[] = []
    const onWarning = (warning: Error): void => { warnings.push(warning.name) }
    process.on('warning', onWarning)
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'ok', delayMs: 1 }] }] })
    const clock = createManualClock()
    const handle = await startWorkflowRun(async ({ agent, parallel }) => ({ ok: true, all: await parallel(Array.from({ length: 40 }, (_, index) => () => agent(`item ${index}`))) }), {
      host,
      clock,
      runsDir: tempRunsDir(),
    })
    await settle()
    await clock.runUntilIdle()
    expect((await handle.done).ok).toBe(true)
    await settle()
    process.off('warning', onWarning)
    expect(warnings).not.toContain('MaxListenersExceededWarning')
  })
})

describe('RunHandle.flush', () => {
  it('writes lines buffered under durability none to the file before the run ends', async () => {
    const clock = createManualClock()
    const host = createScriptedHost({ clock, rules: [{ steps: [{ hang: true }] }] })
    const runsDir = tempRunsDir()
    const handle = await startWorkflowRun(async ({ agent, log }) => {
      log('before the long call')
      return agent('wait')
    }, { host, clock, durability: 'none', runsDir })
    await settle()
    const journalPath = join(runsDir, handle.runId, 'journal.jsonl')
    const before = readFileSync(journalPath, 'utf8')
    handle.flush()
    const after = readFileSync(journalPath, 'utf8')
    expect(before).not.toContain('before the long call')
    expect(after).toContain('before the long call')
    expect(after).toContain('"type":"agent_start"')
    handle.cancel()
    await handle.done
  })
})
