import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { JournalLine } from '@locus/journal'
import { createMemoryRunStore } from '@locus/store'
import { createRuntime, createScriptedHost, defineWorkflow } from '@locus/runtime'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { linesOfType, settle } from './helpers.js'

const twoSteps = defineWorkflow({
  name: 'two-steps',
  run: async ({ agent }) => {
    const first = await agent('first step')
    const second = await agent('second step')
    return { ok: true, answers: [first.answer, second.answer] }
  },
})

/** Every line the store holds for an execution. */
async function linesOf(store: ReturnType<typeof createMemoryRunStore>, runId: string, executionId: string): Promise<JournalLine[]> {
  const lines: JournalLine[] = []
  for await (const line of store.readLines({ runId, executionId })) lines.push(line)
  return lines
}

// Each test runs in an empty working directory, to show that nothing is written to a disk.
let dir = ''
let cwd = ''
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'locus-resume-in-store-'))
  cwd = process.cwd()
  process.chdir(dir)
})
afterEach(async () => {
  process.chdir(cwd)
  await rm(dir, { recursive: true, force: true })
})

describe('resume and replay of a run kept in createMemoryRunStore()', () => {
  it('resumes a run whose host threw: the completed call is served from the journal, the failed one runs again', async () => {
    const store = createMemoryRunStore()
    const broken = createScriptedHost({ rules: [{ match: { prompt: 'second' }, steps: [{ throw: 'unclassified' }] }, { steps: [{ text: 'one' }] }] })
    const first = await createRuntime({ workflows: [twoSteps], host: broken, store }).start('two-steps')
    expect((await first.done).disposition).toBe('failed')

    const healthy = createScriptedHost({ rules: [{ steps: [{ text: 'two' }] }] })
    const runtime = createRuntime({ workflows: [twoSteps], host: healthy, store })
    const resumed = await runtime.resume(first.runId)
    const result = await resumed.done
    expect(result).toMatchObject({ disposition: 'completed', result: { ok: true, answers: ['one', 'two'] } })
    // Only the call that had failed reached a host again.
    expect(healthy.calls.map((call) => call.prompt)).toEqual(['second step'])
    expect(resumed.executionId).toBe('resume-001')
    const lines = await linesOf(store, first.runId, resumed.executionId)
    expect(linesOfType(lines, 'agent_end').map((line) => [line.status, line.replayed === true])).toEqual([
      ['completed', true],
      ['completed', false],
    ])
    expect(await readdir(dir)).toEqual([])
  })

  it('resumes a cancelled run, then replays it with no host and finds it identical', async () => {
    const store = createMemoryRunStore()
    const hanging = createScriptedHost({ rules: [{ match: { prompt: 'second' }, steps: [{ hang: true }] }, { steps: [{ text: 'one' }] }] })
    const runtime = createRuntime({ workflows: [twoSteps], host: hanging, store })
    const started = await runtime.start('two-steps')
    for (let round = 0; round < 50 && hanging.calls.length < 2; round += 1) await settle()
    expect(hanging.calls.map((call) => call.prompt)).toEqual(['first step', 'second step'])
    started.cancel('operator stop')
    expect((await started.done).disposition).toBe('cancelled')

    const answering = createScriptedHost({ rules: [{ steps: [{ text: 'two' }] }] })
    const resumed = await createRuntime({ workflows: [twoSteps], host: answering, store }).resume(started.runId)
    expect((await resumed.done).result).toEqual({ ok: true, answers: ['one', 'two'] })
    expect(answering.calls.map((call) => call.prompt)).toEqual(['second step'])

    const replayed = await createRuntime({ workflows: [twoSteps], store }).replay(started.runId)
    const replay = await replayed.done
    expect(replayed.executionId).toBe('replay-001')
    expect(replay.replay?.identical).toBe(true)
    expect(replay.result).toEqual({ ok: true, answers: ['one', 'two'] })
    expect((await store.listExecutions(started.runId)).map((execution) => execution.executionId)).toEqual([started.runId, 'resume-001', 'replay-001'])
    expect(await readdir(dir)).toEqual([])
  })

  it('says which run is missing from the store', async () => {
    const runtime = createRuntime({ workflows: [twoSteps], store: createMemoryRunStore() })
    await expect(runtime.resume('nope')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' })
  })
})
