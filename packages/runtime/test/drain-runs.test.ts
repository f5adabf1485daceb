import { createRuntime, defineDeferredTool, defineTool, defineWorkflow, drainRuns, resumeSuspendedRuns } from '@locus/runtime'
import { createMemoryRunStore } from '@locus/store'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'

/** A promise with its resolve outside: the test decides when a tool finishes, no sleeps. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = (): void => undefined
  const promise = new Promise<void>((resolve) => {
    open = resolve
  })
  return { promise, open }
}

/** A grace timer the test fires by hand. */
function manualTimer(): { setTimer: (callback: () => void) => { cancel(): void }; fire: () => void; started: () => boolean } {
  let pending: (() => void) | undefined
  return {
    setTimer: (callback) => {
      pending = callback
      return {
        cancel: () => {
          pending = undefined
        },
      }
    },
    fire: () => {
      pending?.()
    },
    started: () => pending !== undefined,
  }
}

async function until(check: () => boolean): Promise<void> {
  for (let tries = 0; tries < 500 && !check(); tries += 1) await new Promise((resolve) => setImmediate(resolve))
  if (!check()) throw new Error('condition never held')
}

const approve = defineDeferredTool({ input: z.object({ amount: z.number() }), output: z.object({ approved: z.boolean() }) })

describe('drainRuns: how a stopping process ends its runs', () => {
  it('suspends a run that only waits, lets a working run finish within the grace, and cancels one past it', async () => {
    const store = createMemoryRunStore()
    const slow = gate()
    const never = gate()
    const workflows = [
      defineWorkflow({ name: 'waits', tools: { approve }, run: async ({ tool }) => ({ ok: true, decision: await tool('approve', { amount: 1 }) }) }),
      defineWorkflow({
        name: 'finishes',
        tools: { work: defineTool({ input: z.object({}), run: async () => slow.promise.then(() => 'done') }) },
        run: async ({ tool }) => ({ ok: true, value: await tool('work', {}) }),
      }),
      defineWorkflow({
        name: 'stuck',
        tools: {
          work: defineTool({
            input: z.object({}),
            run: async (_input, { signal }) =>
              Promise.race([
                never.promise,
                new Promise((resolve) => {
                  signal.addEventListener('abort', resolve)
                }),
              ]),
          }),
        },
        run: async ({ tool }) => ({ ok: true, value: await tool('work', {}) }),
      }),
    ]
    const runtime = createRuntime({ workflows, store })
    const waiting = await runtime.start('waits')
    const finishing = await runtime.start('finishes')
    const stuck = await runtime.start('stuck')
    await until(() => waiting.waitingOnly())
    const timer = manualTimer()
    const drained = drainRuns([waiting, finishing, stuck], { graceMs: 1_000, reason: 'stopping for the test', setTimer: timer.setTimer })
    expect((await waiting.done).suspended).toBe(true)
    slow.open()
    expect((await finishing.done).disposition).toBe('completed')
    timer.fire()
    const report = await drained
    expect(report).toEqual({ suspended: [waiting.runId], cancelled: [stuck.runId], ended: [finishing.runId] })
    expect((await runtime.get(stuck.runId)).latest.view.runEnd?.disposition).toBe('cancelled')
    expect((await runtime.get(waiting.runId)).latest.view.runEnd).toBeUndefined()
  })

  it('suspends a run that comes to wait only on a deferral during the grace period, rather than cancelling it', async () => {
    const store = createMemoryRunStore()
    const step = gate()
    const workflow = defineWorkflow({
      name: 'works-then-waits',
      tools: { work: defineTool({ input: z.object({}), run: async () => step.promise.then(() => 'done') }), approve },
      run: async ({ tool }) => {
        await tool('work', {})
        return { ok: true, decision: await tool('approve', { amount: 2 }) }
      },
    })
    const runtime = createRuntime({ workflows: [workflow], store })
    const handle = await runtime.start(workflow)
    const timer = manualTimer()
    const drained = drainRuns([handle], { graceMs: 1_000, reason: 'stopping', setTimer: timer.setTimer })
    expect(handle.waitingOnly()).toBe(false)
    step.open()
    expect((await handle.done).suspended).toBe(true)
    expect(await drained).toEqual({ suspended: [handle.runId], cancelled: [], ended: [] })
    expect(timer.started()).toBe(false)
  })
})

describe('resumeSuspendedRuns: the next process picks suspended runs up', () => {
  it('resumes each suspended run of a workflow it serves, leaves others and says why, and the deferral keeps its id', async () => {
    const store = createMemoryRunStore()
    const served = defineWorkflow({ name: 'served', tools: { approve }, run: async ({ tool }) => ({ ok: true, decision: await tool('approve', { amount: 3 }) }) })
    const other = defineWorkflow({ name: 'other', tools: { approve }, run: async ({ tool }) => ({ ok: true, decision: await tool('approve', { amount: 4 }) }) })
    const done = defineWorkflow({ name: 'done', run: () => ({ ok: true }) })
    const before = createRuntime({ workflows: [served, other, done], store })
    const first = await before.start('served')
    const second = await before.start('other')
    await (await before.start('done')).done
    await until(() => first.waitingOnly() && second.waitingOnly())
    const [deferral] = await before.pendingDeferrals(first.runId)
    await drainRuns([first, second], { graceMs: 1_000, reason: 'stopping' })

    const after = createRuntime({ workflows: [served], store })
    const report = await resumeSuspendedRuns(after)
    expect(report.resumed.map((handle) => handle.runId)).toEqual([first.runId])
    expect(report.skipped).toEqual([{ runId: second.runId, reason: 'its workflow "other" is not served here' }])
    const [handle] = report.resumed
    await until(() => handle?.waitingOnly() === true)
    expect(await after.answerDeferred(first.runId, deferral?.deferredId ?? '', { kind: 'resolved', result: { approved: true } })).toMatchObject({ ok: true })
    expect((await handle?.done)?.result).toEqual({ ok: true, decision: { approved: true } })
    // Nothing is suspended any more: a second look resumes nothing.
    expect((await resumeSuspendedRuns(after)).resumed).toEqual([])
  })
})
