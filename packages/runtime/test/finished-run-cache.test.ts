// runtime.get and describe keep the fold of a finished run and serve it again
// while the store lists the same executions: no journal line or artifact is
// read twice, and a new execution (a resume, a replay) is seen at once.
import { readdirSync, utimesSync } from 'node:fs'
import { join } from 'node:path'
import { ARTIFACT_KEYS, type RunStore, createFileRunStore, createMemoryRunStore } from '@locus/store'
import { createRuntime, createScriptedHost, defineWorkflow } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { tempRunsDir } from './helpers.js'

/** A store that counts the journal lines and artifacts read through it. */
function counting(store: RunStore): { store: RunStore; journalReads: () => number; artifactReads: () => number } {
  let journalReads = 0
  let artifactReads = 0
  return {
    journalReads: () => journalReads,
    artifactReads: () => artifactReads,
    store: {
      ...store,
      readLines: (ref, options) => {
        journalReads += 1
        return store.readLines(ref, options)
      },
      readArtifact: (ref, key) => {
        artifactReads += 1
        return store.readArtifact(ref, key)
      },
    },
  }
}

/** Fails until `succeed()` is called: a failed run that a resume then completes. */
function flakyWorkflow() {
  let fail = true
  const flaky = defineWorkflow({
    name: 'flaky',
    run: () => {
      if (fail) throw new Error('not yet')
      return { ok: true }
    },
  })
  return {
    flaky,
    succeed: () => {
      fail = false
    },
  }
}

const answering = (): ReturnType<typeof createScriptedHost> => createScriptedHost({ rules: [{ steps: [{ text: 'fine' }] }] })
const oneCall = defineWorkflow({ name: 'one-call', run: async ({ agent }) => ({ ok: true, answer: (await agent('go')).answer }) })

describe('a finished run is read once', () => {
  for (const [name, make] of [
    ['file', () => createFileRunStore(tempRunsDir())],
    ['memory', () => createMemoryRunStore()],
  ] as const) {
    it(`${name} store: the second get and describe read no journal line and no artifact`, async () => {
      const counted = counting(make())
      const runtime = createRuntime({ workflows: [oneCall], store: counted.store, host: answering() })
      const ended = await (await runtime.start('one-call')).done
      const first = await runtime.get(ended.runId)
      const reads = { journal: counted.journalReads(), artifacts: counted.artifactReads() }
      expect(reads.journal).toBeGreaterThan(0)
      const again = await runtime.get(ended.runId)
      const described = await runtime.describe(ended.runId)
      expect(again).toBe(first)
      expect(described).toMatchObject({ runId: ended.runId, disposition: 'completed', ok: true })
      expect({ journal: counted.journalReads(), artifacts: counted.artifactReads() }).toEqual(reads)
      // Another reader of the same store, with no cache, finds the same run.
      const fresh = await createRuntime({ workflows: [oneCall], store: counted.store }).get(ended.runId, { keep: 'all' })
      expect(fresh.summary).toEqual(first.summary)
    })
  }

  it('sees a replay the moment the store lists it', async () => {
    const store = createMemoryRunStore()
    const runtime = createRuntime({ workflows: [oneCall], store, host: answering() })
    const ended = await (await runtime.start('one-call')).done
    expect((await runtime.get(ended.runId)).replays).toEqual([])
    await (await runtime.replay(ended.runId)).done
    const after = await runtime.get(ended.runId)
    expect(after.replays.map((replay) => replay.view.runEnd?.disposition)).toEqual(['completed'])
  })

  it('sees a resume of a failed run, and keeps nothing of a run whose result is not written yet', async () => {
    const counted = counting(createMemoryRunStore())
    const store = counted.store
    const { flaky, succeed } = flakyWorkflow()
    const runtime = createRuntime({ workflows: [flaky], store })
    const failed = await (await runtime.start('flaky')).done
    expect((await runtime.get(failed.runId)).latest.view.runEnd?.disposition).toBe('failed')
    succeed()
    await (await runtime.resume(failed.runId)).done
    const resumed = await runtime.get(failed.runId)
    expect(resumed.executions).toHaveLength(2)
    expect(resumed.latest.view.runEnd?.disposition).toBe('completed')

    // An execution whose run_end is written and whose result is not yet: the moment between the two.
    const resultText = await store.readArtifact({ runId: failed.runId, executionId: failed.runId }, ARTIFACT_KEYS.result)
    expect(resultText).toBeDefined()
    const writer = await store.createExecution({ runId: 'ending', kind: 'root' })
    writer.append({ type: 'run_start', workflow: 'flaky', input: null, options: {} })
    writer.append({ type: 'run_end', disposition: 'failed', ok: false, result: null, durationMs: 1 })
    const before = counted.journalReads()
    expect((await runtime.get('ending')).latest.resultFile).toBeUndefined()
    await runtime.get('ending')
    expect(counted.journalReads() - before).toBe(2)
    await writer.artifacts.write(ARTIFACT_KEYS.result, resultText ?? '')
    await writer.close()
    expect((await runtime.get('ending')).latest.resultFile).toBeDefined()
    const finished = counted.journalReads()
    await runtime.get('ending')
    expect(counted.journalReads()).toBe(finished)
  })

  it('file store: while the run directories are unchanged (and old enough to vouch), a finished run is served without listing its executions; a resume by another process is seen at once', async () => {
    const runsDir = tempRunsDir()
    let lists = 0
    const base = createFileRunStore(runsDir)
    const store: RunStore = {
      ...base,
      listExecutions: (runId) => {
        lists += 1
        return base.listExecutions(runId)
      },
    }
    const { flaky, succeed } = flakyWorkflow()
    const runtime = createRuntime({ workflows: [flaky], store })
    const failed = await (await runtime.start('flaky')).done
    // Changed just now: the store cannot vouch for a token yet, so every read lists.
    expect(base.executionsToken?.(failed.runId)).toBeUndefined()
    const first = await runtime.get(failed.runId)
    const listsBefore = lists
    expect(await runtime.get(failed.runId)).toBe(first)
    expect(lists).toBe(listsBefore + 1)
    // Backdate every directory of the run, as if it ended a minute ago.
    const backdate = (directory: string): void => {
      const past = new Date(Date.now() - 60_000)
      utimesSync(directory, past, past)
      for (const entry of readdirSync(directory, { withFileTypes: true })) if (entry.isDirectory()) backdate(join(directory, entry.name))
    }
    backdate(join(runsDir, failed.runId))
    const token = base.executionsToken?.(failed.runId)
    expect(token).toBeDefined()
    await runtime.get(failed.runId)
    const listed = lists
    for (let index = 0; index < 5; index += 1) expect(await runtime.get(failed.runId)).toBe(first)
    expect(lists).toBe(listed)
    // Another process resumes it: the token changes, and the next read sees the new execution.
    succeed()
    const other = createRuntime({ workflows: [flaky], store: createFileRunStore(runsDir) })
    const resumed = await (await other.resume(failed.runId)).done
    expect(base.executionsToken?.(failed.runId)).not.toBe(token)
    const after = await runtime.get(failed.runId)
    expect(after.latest.info.executionId).toBe(resumed.executionId)
    expect(after.latest.view.runEnd?.disposition).toBe('completed')
  })
})
