// One handle, made in one place: every way to start, resume or replay a run
// goes through createRuntime, and what it hands back is the runtime's RunHandle.
import { readFileSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { JournalLine } from '@locus/journal'
import {
  type RunHandle,
  type StartedRun,
  type createRuntime,
  createScriptedHost,
  defineWorkflow,
  replayRun,
  resumeRun,
  runWorkflowScript,
  startWorkflowRun,
} from '@locus/runtime'
import { createMemoryRunStore } from '@locus/store'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { z } from 'zod'
import { tempRunsDir } from './helpers.js'

const source = join(dirname(fileURLToPath(import.meta.url)), '..', 'src')

/** Each source file's text with comments and quoted strings taken out, so a name in a doc comment or a message is not a call. */
function code(file: string): string {
  return readFileSync(join(source, file), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '')
    .replace(/'(?:[^'\\\n]|\\.)*'/g, "''")
}

/** The files of the runtime's source that call `name(`, its own definition left out. */
function callersOf(name: string): string[] {
  return readdirSync(source)
    .filter((file) => file.endsWith('.ts'))
    .filter((file) => new RegExp(`(?<!function )\\b${name}(?:<[^>]*>)?\\(`).test(code(file)))
    .sort()
}

const twoSteps = defineWorkflow({
  name: 'two-steps',
  async run({ agent }) {
    const first = await agent('first')
    const second = await agent('second')
    return { ok: true, answers: [first.answer, second.answer] }
  },
})

const host = (): ReturnType<typeof createScriptedHost> => createScriptedHost({ rules: [{ match: { prompt: 'first' }, steps: [{ text: 'one' }] }, { match: { prompt: 'second' }, steps: [{ text: 'two' }] }] })

describe('one RunHandle, made in one place', () => {
  it('the launchers hand back the runtime’s handle; StartedRun is that handle’s old name', () => {
    expectTypeOf<Awaited<ReturnType<typeof startWorkflowRun>>>().toEqualTypeOf<RunHandle>()
    expectTypeOf<StartedRun>().toEqualTypeOf<RunHandle>()
    expectTypeOf<Awaited<ReturnType<ReturnType<typeof createRuntime>['start']>>>().toEqualTypeOf<RunHandle>()
  })

  it('only the runtime launches executions: launchRun, startResume and startReplay have no other caller', () => {
    // The deploy check's scratch replay is the one exception: a check-only execution in a throwaway store, with no handle handed out.
    expect(callersOf('launchRun')).toEqual(['check-deploy.ts', 'create-runtime.ts', 'resume-run.ts'])
    expect(callersOf('startResume')).toEqual(['create-runtime.ts'])
    expect(callersOf('startReplay')).toEqual(['create-runtime.ts'])
    // The four one-call launchers are createRuntime and nothing else.
    expect(callersOf('createRuntime')).toEqual(['launchers.ts'])
    expect(code('launchers.ts')).not.toMatch(/\blaunchRun\b|\bstartResume\b|\bstartReplay\b/)
  })

  it('startWorkflowRun’s handle is a runtime handle: a late subscriber reads the whole journal, in order', async () => {
    const handle = await startWorkflowRun(twoSteps, { runsDir: tempRunsDir(), host: host() })
    const result = await handle.done
    expect(result).toMatchObject({ disposition: 'completed', result: { answers: ['one', 'two'] } })
    const lines: JournalLine[] = []
    for await (const line of handle.events()) lines.push(line)
    // seq counts from 1, with no gap and no repeat.
    expect(lines.map((line) => line.seq)).toEqual(lines.map((_, index) => index + 1))
    expect(lines[0]?.type).toBe('run_start')
    expect(lines.at(-1)?.type).toBe('run_end')
    expect(handle.executionId).toBe(result.executionId)
  })

  it('a bad input rejects the start and writes nothing', async () => {
    const store = createMemoryRunStore()
    const strict = defineWorkflow({ name: 'strict', input: z.object({ n: z.number() }), run: () => ({ ok: true }) })
    await expect(startWorkflowRun(strict, { store, input: { n: 'x' } })).rejects.toMatchObject({ code: 'WORKFLOW_INPUT_INVALID' })
    expect((await store.listRunRows()).rows).toEqual([])
  })

  it('resumeRun is the runtime’s resume: the run’s recorded budgets apply, and refuseCompleted refuses a completed run', async () => {
    const runsDir = tempRunsDir()
    const first = await runWorkflowScript(twoSteps, { runsDir, host: host(), budgets: { maxTotalAgentInvocations: 7 } })
    expect(first.disposition).toBe('completed')
    const starts: JournalLine[] = []
    const resumed = await resumeRun(first.runId, twoSteps, {
      runsDir,
      host: host(),
      onEvent: (line) => {
        if (line.type === 'run_start') starts.push(line)
      },
    })
    expect(resumed).toMatchObject({ disposition: 'completed', resumedFrom: first.runId, replayed: 2, live: 0 })
    // Not given again here: read from the run's own run_start, as `locus resume` and `createRuntime().resume` do.
    expect(starts[0]).toMatchObject({ type: 'run_start', options: { budgets: { maxTotalAgentInvocations: 7 } } })
    await expect(resumeRun(first.runId, twoSteps, { runsDir, host: host(), refuseCompleted: true })).rejects.toMatchObject({ code: 'RUN_COMPLETED' })
    const replayed = await replayRun(first.runId, twoSteps, { runsDir })
    expect(replayed).toMatchObject({ ok: true, runId: first.runId })
  })
})
