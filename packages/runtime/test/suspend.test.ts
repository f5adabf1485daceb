import type { JournalLine } from '@locus/journal'
import { createRuntime, defineDeferredTool, defineTool, defineWorkflow } from '@locus/runtime'
import { createMemoryRunStore } from '@locus/store'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'

type MemoryStore = ReturnType<typeof createMemoryRunStore>

async function linesOf(store: MemoryStore, runId: string, executionId: string): Promise<JournalLine[]> {
  const lines: JournalLine[] = []
  for await (const line of store.readLines({ runId, executionId })) lines.push(line)
  return lines
}

async function allLines(store: MemoryStore, runId: string): Promise<JournalLine[]> {
  const lines: JournalLine[] = []
  for (const info of await store.listExecutions(runId)) lines.push(...(await linesOf(store, runId, info.executionId)))
  return lines
}

/** A promise with its resolve outside: the test decides when a tool finishes, no sleeps. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = (): void => undefined
  const promise = new Promise<void>((resolve) => {
    open = resolve
  })
  return { promise, open }
}

/** Resolves once the handle's waiting-only state is `value`. */
function nextWaiting(handle: { waitingOnly(): boolean; onWaitingChange(listener: (waitingOnly: boolean) => void): () => void }, value: boolean): Promise<void> {
  return new Promise((resolve) => {
    if (handle.waitingOnly() === value) {
      resolve()
      return
    }
    const stop = handle.onWaitingChange((now) => {
      if (now !== value) return
      stop()
      resolve()
    })
  })
}

describe('suspending an execution without ending its run', () => {
  it('writes no run_end and one log line; resume waits on the same deferral and ends with its answer', async () => {
    const store = createMemoryRunStore()
    let sideEffects = 0
    const approval = defineWorkflow({
      name: 'approval',
      tools: {
        charge: defineTool({
          input: z.object({}),
          run: () => {
            sideEffects += 1
            return { charged: true }
          },
        }),
        approve: defineDeferredTool({ input: z.object({}), output: z.object({ by: z.string() }) }),
      },
      async run({ tool }) {
        const charged = await tool('charge', {})
        const approved = await tool('approve', {})
        return { ok: charged.charged, by: approved.by }
      },
    })
    const runtime = createRuntime({ workflows: [approval], store })
    const first = await runtime.start('approval')
    await nextWaiting(first, true)
    expect(first.waitingOnly()).toBe(true)
    first.suspend('worker w-1 released its lease')
    const suspended = await first.done
    expect(suspended).toMatchObject({ suspended: true, ok: false })
    expect(runtime.live(first.runId)).toBeUndefined()

    const root = await linesOf(store, first.runId, first.executionId)
    expect(root.some((line) => line.type === 'run_end')).toBe(false)
    expect(root.some((line) => line.type === 'deferred_settled')).toBe(false)
    const logs = root.filter((line) => line.type === 'log')
    expect(logs).toHaveLength(1)
    expect(logs[0]).toMatchObject({ level: 'info', data: { suspended: true, reason: 'worker w-1 released its lease' } })
    expect(root.at(-1)?.type).toBe('log')
    expect(await store.readArtifact({ runId: first.runId, executionId: first.executionId }, 'result.json')).toBeUndefined()

    const [pending] = await runtime.pendingDeferrals(first.runId)
    expect(pending).toBeDefined()
    expect(await runtime.answerDeferred(first.runId, pending?.deferredId ?? '', { kind: 'resolved', result: { by: 'ana' } })).toMatchObject({ ok: true, status: 'stored' })
    const resumed = await runtime.resume(first.runId)
    const result = await resumed.done
    expect(result).toMatchObject({ disposition: 'completed', ok: true, result: { ok: true, by: 'ana' } })
    expect(result.suspended).toBeUndefined()
    expect(sideEffects).toBe(1)
    const every = await allLines(store, first.runId)
    expect(every.filter((line) => line.type === 'deferred_open')).toHaveLength(1)
    expect(every.filter((line) => line.type === 'run_end').map((line) => line.disposition)).toEqual(['completed'])
  })

  it('abandons a tool in flight, which runs again on resume', async () => {
    const store = createMemoryRunStore()
    const started: number[] = []
    const slow = gate()
    const steps = defineWorkflow({
      name: 'steps',
      tools: {
        step: defineTool({
          input: z.object({ n: z.number() }),
          run: async ({ n }, { signal }) => {
            started.push(n)
            if (n === 2 && started.filter((value) => value === 2).length === 1) {
              await new Promise<void>((resolve, reject) => {
                void slow.promise.then(resolve)
                signal.addEventListener('abort', () => {
                  reject(new Error('abandoned'))
                })
              })
            }
            return { n }
          },
        }),
      },
      async run({ tool }) {
        const values: number[] = []
        for (let n = 1; n <= 3; n += 1) values.push((await tool('step', { n })).n)
        return { ok: true, values }
      },
    })
    const runtime = createRuntime({ workflows: [steps], store })
    const first = await runtime.start('steps')
    await new Promise<void>((resolve) => {
      const stop = first.subscribe((line) => {
        if (line.type === 'tool_start' && line.attempt === 1 && started.includes(2)) {
          stop()
          resolve()
        }
      })
    })
    expect(first.waitingOnly()).toBe(false)
    first.suspend('handing over')
    expect(await first.done).toMatchObject({ suspended: true })
    const root = await linesOf(store, first.runId, first.executionId)
    expect(root.filter((line) => line.type === 'tool_end')).toHaveLength(1)
    expect(root.some((line) => line.type === 'run_end')).toBe(false)

    const resumed = await runtime.resume(first.runId)
    expect(await resumed.done).toMatchObject({ disposition: 'completed', result: { ok: true, values: [1, 2, 3] } })
    // Step 1 completed before the suspension and is served from the journal; step 2 was in flight and runs again.
    expect(started).toEqual([1, 2, 2, 3])
  })

  it('is a no-op once the run was cancelled', async () => {
    const store = createMemoryRunStore()
    const waits = defineWorkflow({
      name: 'waits',
      tools: { approve: defineDeferredTool({ input: z.object({}) }) },
      async run({ tool }) {
        await tool('approve', {})
        return { ok: true }
      },
    })
    const runtime = createRuntime({ workflows: [waits], store })
    const handle = await runtime.start('waits')
    await nextWaiting(handle, true)
    handle.cancel('stop')
    handle.suspend('too late')
    const result = await handle.done
    expect(result.disposition).toBe('cancelled')
    expect(result.suspended).toBeUndefined()
    const root = await linesOf(store, handle.runId, handle.executionId)
    expect(root.at(-1)).toMatchObject({ type: 'run_end', disposition: 'cancelled' })
  })
})

describe('knowing when a run only waits on deferrals', () => {
  it('is true only while every call in flight is a waiting deferral', async () => {
    const store = createMemoryRunStore()
    const slow = gate()
    const changes: boolean[] = []
    const mixed = defineWorkflow({
      name: 'mixed',
      tools: {
        approve: defineDeferredTool({ input: z.object({}), output: z.object({ yes: z.boolean() }) }),
        work: defineTool({
          input: z.object({}),
          run: async () => {
            await slow.promise
            return { done: true }
          },
        }),
      },
      async run({ tool, parallel }) {
        const [approved, worked] = await parallel([() => tool('approve', {}), () => tool('work', {})])
        return { ok: approved.yes && worked.done }
      },
    })
    const runtime = createRuntime({ workflows: [mixed], store })
    const handle = await runtime.start('mixed')
    handle.onWaitingChange((now) => changes.push(now))
    // The deferral waits while the tool runs beside it: not waiting only.
    await new Promise<void>((resolve) => {
      const stop = handle.subscribe((line) => {
        if (line.type === 'deferred_open') {
          stop()
          resolve()
        }
      })
    })
    expect(handle.waitingOnly()).toBe(false)
    const waiting = nextWaiting(handle, true)
    slow.open()
    await waiting
    expect(handle.waitingOnly()).toBe(true)
    const [pending] = await runtime.pendingDeferrals(handle.runId)
    expect(handle.answerDeferred(pending?.deferredId ?? '', { kind: 'resolved', result: { yes: true } })).toMatchObject({ ok: true })
    expect(await handle.done).toMatchObject({ disposition: 'completed' })
    expect(handle.waitingOnly()).toBe(false)
    expect(changes).toEqual([true, false])
  })
})
