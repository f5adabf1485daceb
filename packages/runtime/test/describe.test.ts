// runtime.describe(runId) (issue #31): one description of a run, from the live fold while this process executes
// it (no store read at all) and from the store otherwise; both roads agree, and `ok` has one definition.
import { createRuntime, defineDeferredTool, defineWorkflow, describeStoredRun, isOkEnding } from '@locus/runtime'
import { type RunStore, createMemoryRunStore } from '@locus/store'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'

/** A store that counts every read of a journal, a run's executions, an artifact or a row. */
function countingStore(store: RunStore): { store: RunStore; reads: () => number } {
  let reads = 0
  const count = <T>(value: T): T => {
    reads += 1
    return value
  }
  return {
    reads: () => reads,
    store: Object.assign(Object.create(store) as RunStore, {
      readLines: (...args: Parameters<RunStore['readLines']>) => count(store.readLines(...args)),
      tail: (...args: Parameters<RunStore['tail']>) => count(store.tail(...args)),
      listExecutions: (...args: Parameters<RunStore['listExecutions']>) => count(store.listExecutions(...args)),
      readArtifact: (...args: Parameters<RunStore['readArtifact']>) => count(store.readArtifact(...args)),
      readRunRow: (...args: Parameters<RunStore['readRunRow']>) => count(store.readRunRow(...args)),
    }),
  }
}

const approval = defineWorkflow({
  name: 'approval',
  tools: { approve: defineDeferredTool({ input: z.object({ n: z.number() }), output: z.object({ ok: z.boolean() }) }) },
  run: async ({ tool }) => ({ ok: true, answer: await tool('approve', { n: 1 }) }),
})

async function untilWaiting(handle: { waitingOnly(): boolean; onWaitingChange(listener: (now: boolean) => void): () => void }): Promise<void> {
  await new Promise<void>((resolve) => {
    if (handle.waitingOnly()) resolve()
    else
      handle.onWaitingChange((now) => {
        if (now) resolve()
      })
  })
}

describe('runtime.describe', () => {
  it('answers for a run this process executes from its live fold, reading nothing from the store, as the store would', async () => {
    const counted = countingStore(createMemoryRunStore())
    const runtime = createRuntime({ workflows: [approval], store: counted.store })
    const handle = await runtime.start('approval')
    await untilWaiting(handle)
    const before = counted.reads()
    const live = await runtime.describe(handle.runId)
    expect(counted.reads()).toBe(before)
    expect(live).toMatchObject({ runId: handle.runId, workflow: 'approval', status: 'waiting', live: true, executionId: handle.runId, ok: false, disposition: undefined })
    expect(live.waitingOn).toHaveLength(1)
    // The store's road gives the same description, but for `live`.
    handle.flush()
    expect({ ...(await describeStoredRun(counted.store, handle.runId)), live: true }).toEqual(live)

    const [deferredId] = live.waitingOn
    await runtime.answerDeferred(handle.runId, deferredId ?? '', { kind: 'resolved', result: { ok: true } })
    const result = await handle.done
    const ended = await runtime.describe(handle.runId)
    expect(ended).toMatchObject({ status: 'completed', live: false, disposition: 'completed', ok: true, result: result.result, waitingOn: [] })
    expect(ended.counts).toEqual((await runtime.get(handle.runId)).view.counts)
    expect(ended.startedAt).toBe(live.startedAt)
  })

  it('describes a suspended run another runtime left, from its row and journal, with what it waits on', async () => {
    const store = createMemoryRunStore()
    const first = createRuntime({ workflows: [approval], store })
    const handle = await first.start('approval')
    await untilWaiting(handle)
    const waitingOn = (await first.describe(handle.runId)).waitingOn
    handle.suspend('parked')
    await handle.done
    const described = await createRuntime({ workflows: [approval], store }).describe(handle.runId)
    expect(described).toMatchObject({ status: 'suspended', live: false, disposition: undefined, ok: false, waitingOn })
  })

  it('a live run asleep on a timer is waiting, as the server says, and the store road agrees', async () => {
    const counted = countingStore(createMemoryRunStore())
    const sleeper = defineWorkflow({ name: 'sleeper', run: async ({ sleep }) => { await sleep('1h'); return { ok: true } } })
    const runtime = createRuntime({ workflows: [sleeper], store: counted.store })
    const handle = await runtime.start('sleeper')
    await expect.poll(() => handle.view()?.sleepingUntil).toBeDefined()
    const live = await runtime.describe(handle.runId)
    expect(live).toMatchObject({ status: 'waiting', live: true, disposition: undefined })
    expect(live.waitingOn).toHaveLength(1)
    handle.flush()
    expect((await describeStoredRun(counted.store, handle.runId)).status).toBe('waiting')
    handle.cancel('test over')
    expect((await handle.done).disposition).toBe('cancelled')
  })

  it('a replay in progress is not the run: describe and live keep to the run as stored, ended', async () => {
    let release: () => void = () => undefined
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    let replaying = false
    const checked = defineWorkflow({
      name: 'checked',
      run: async () => {
        // The replay's script waits here, so the replay is in progress while the test looks.
        if (replaying) await held
        return { ok: true }
      },
    })
    const runtime = createRuntime({ workflows: [checked], store: createMemoryRunStore() })
    const ended = await (await runtime.start('checked')).done
    replaying = true
    const replay = await runtime.replay(ended.runId)
    expect(replay.executionId).not.toBe(ended.runId)
    expect(runtime.live(ended.runId)).toBeUndefined()
    expect(await runtime.describe(ended.runId)).toMatchObject({ status: 'completed', live: false, executionId: ended.runId, disposition: 'completed' })
    release()
    expect((await replay.done).disposition).toBe('completed')
  })

  it('refuses a run the store does not have with RUN_NOT_FOUND', async () => {
    await expect(createRuntime({ workflows: [approval], store: createMemoryRunStore() }).describe('no-such-run')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' })
  })

  it('has one meaning of ok: completed, with a complete answer when one was judged', () => {
    fc.assert(
      fc.property(fc.constantFrom(undefined, 'completed', 'failed', 'cancelled' as const), fc.constantFrom(undefined, 'complete', 'partial', 'cannot_answer', 'failed' as const), (disposition, answer) => {
        expect(isOkEnding(disposition, answer)).toBe(disposition === 'completed' && (answer === undefined || answer === 'complete'))
      }),
    )
  })
})
