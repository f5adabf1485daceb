import { RuntimeInputError, createConcurrencyLimiter, createRuntime, defineTool, defineWorkflow, resolveFlowKeys, type ConcurrencySlot } from '@locus/runtime'
import { createMemoryRunStore } from '@locus/store'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'

const input = z.object({ tenant: z.string() })

describe('concurrency declarations', () => {
  it('refuses a limit that is not a positive whole number, at definition', () => {
    for (const limit of [0, -1, 1.5, Number.NaN, '2' as unknown as number]) {
      let thrown: unknown
      try {
        defineWorkflow({ name: 'bad-limit', input, concurrency: [{ key: (i) => i.tenant, limit }], run: () => ({ ok: true }) })
      } catch (error) {
        thrown = error
      }
      expect(RuntimeInputError.isInstance(thrown)).toBe(true)
      expect((thrown as RuntimeInputError).code).toBe('WORKFLOW_DEFINITION_INVALID')
      expect((thrown as Error).message).toContain('bad-limit')
      expect((thrown as Error).message).toContain('concurrency[0].limit')
    }
    expect(() => defineWorkflow({ name: 'bad-weight', concurrency: [{ key: () => 'k', limit: 1, weight: 0 }], run: () => null })).toThrow(/weight/)
    expect(() => defineWorkflow({ name: 'bad-deadline', deadlineCounts: 'sometimes' as 'from-start', run: () => null })).toThrow(/deadlineCounts/)
  })

  it('a key function that throws or returns a non-string names the workflow and the key', () => {
    const wf = defineWorkflow({
      name: 'keyed',
      concurrency: [
        { key: () => 'global', limit: 5 },
        { key: (i: { tenant?: unknown }) => i.tenant as string, limit: 1 },
      ],
      run: () => null,
    })
    expect(() => resolveFlowKeys(wf, { tenant: 7 })).toThrow(/Workflow "keyed": concurrency\[1\]\.key returned 7/)
    const throwing = defineWorkflow({
      name: 'throws',
      concurrency: [
        {
          key: () => {
            throw new Error('no tenant')
          },
          limit: 1,
        },
      ],
      run: () => null,
    })
    try {
      resolveFlowKeys(throwing, {})
      expect.unreachable()
    } catch (error) {
      expect(RuntimeInputError.isInstance(error) ? error.code : undefined).toBe('CONCURRENCY_KEY_INVALID')
      expect((error as Error).message).toContain('"throws": concurrency[0].key threw (no tenant)')
    }
    expect(resolveFlowKeys(wf, { tenant: 'acme' }, 'override')).toEqual([
      { key: 'override', limit: 5, weight: 1 },
      { key: 'acme', limit: 1, weight: 1 },
    ])
  })

  it('a start whose key throws writes nothing', async () => {
    const store = createMemoryRunStore()
    const wf = defineWorkflow({ name: 'no-key', input, concurrency: [{ key: () => 42 as unknown as string, limit: 1 }], run: () => ({ ok: true }) })
    const runtime = createRuntime({ store, workflows: [wf] })
    await expect(runtime.start('no-key', { input: { tenant: 'a' }, runId: 'r-nokey' })).rejects.toMatchObject({ code: 'CONCURRENCY_KEY_INVALID' })
    expect(await store.hasRun('r-nokey')).toBe(false)
  })
})

describe('the in-process limiter', () => {
  it('never runs more than a key allows, keeps first-come order within a key and priority, and lets keys take turns', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ tenant: fc.constantFrom('a', 'b', 'c'), priority: fc.constantFrom(0, 0, 5), hold: fc.integer({ min: 0, max: 3 }) }), { minLength: 1, maxLength: 30 }),
        fc.integer({ min: 1, max: 3 }),
        async (requests, limit) => {
          const limiter = createConcurrencyLimiter({ now: () => 0 })
          const running = new Map<string, number>()
          let globalRunning = 0
          const started: number[] = []
          const granted: Promise<void>[] = requests.map(async (request, index) => {
            const slot: ConcurrencySlot = await limiter.acquire({
              keys: [
                { key: request.tenant, limit, weight: 1 },
                { key: 'global', limit: limit + 1, weight: 1 },
              ],
              priority: request.priority,
            })
            running.set(request.tenant, (running.get(request.tenant) ?? 0) + 1)
            globalRunning += 1
            expect(running.get(request.tenant)).toBeLessThanOrEqual(limit)
            expect(globalRunning).toBeLessThanOrEqual(limit + 1)
            started.push(index)
            for (let tick = 0; tick < request.hold; tick += 1) await Promise.resolve()
            running.set(request.tenant, (running.get(request.tenant) ?? 1) - 1)
            globalRunning -= 1
            slot.release()
          })
          await Promise.all(granted)
          expect(started).toHaveLength(requests.length)
          // Within a key and a priority, first come first started.
          for (const tenant of ['a', 'b', 'c']) {
            for (const priority of [0, 5]) {
              const order = started.filter((index) => requests[index]?.tenant === tenant && requests[index].priority === priority)
              expect(order).toEqual([...order].sort((x, y) => x - y))
            }
          }
          expect(limiter.snapshot().every((queue) => queue.running === 0 && queue.waiting === 0)).toBe(true)
        },
      ),
      { numRuns: 60 },
    )
  })

  it('a deep key does not block the others: a small key waits behind at most one turn per other key', async () => {
    const limiter = createConcurrencyLimiter({ now: () => 0 })
    const hold = await limiter.acquire({ keys: [{ key: 'global', limit: 1, weight: 1 }] })
    const order: string[] = []
    const waits: Promise<void>[] = []
    const enqueue = (tenant: string) => {
      waits.push(
        limiter.acquire({ keys: [{ key: tenant, weight: 1 }, { key: 'global', limit: 1, weight: 1 }] }).then((slot) => {
          order.push(tenant)
          queueMicrotask(() => { slot.release(); })
        }),
      )
    }
    for (let index = 0; index < 20; index += 1) enqueue('big')
    enqueue('small-1')
    enqueue('small-2')
    const snapshot = limiter.snapshot()
    expect(snapshot.find((queue) => queue.key === 'big')).toMatchObject({ running: 0, waiting: 20 })
    expect(snapshot.find((queue) => queue.key === 'global')).toMatchObject({ running: 1, waiting: 22 })
    hold.release()
    await Promise.all(waits)
    expect(order.indexOf('small-1')).toBeLessThan(3)
    expect(order.indexOf('small-2')).toBeLessThan(4)
  })
})

describe('in-process flow control of a runtime', () => {
  it('journals queued with the keys, the reason and the wait, and the run spends no attempt on it', async () => {
    const store = createMemoryRunStore()
    const gates: (() => void)[] = []
    const wf = defineWorkflow({
      name: 'gated',
      input,
      concurrency: [{ key: (i) => `tenant:${i.tenant}`, limit: 1 }],
      tools: { gate: defineTool({ input: z.object({}), run: () => new Promise<void>((resolve) => gates.push(resolve)) }) },
      async run({ tool }) {
        await tool('gate', {})
        return { ok: true }
      },
    })
    const runtime = createRuntime({ store, workflows: [wf] })
    const first = await runtime.start('gated', { input: { tenant: 'acme' }, runId: 'r-first' })
    const second = runtime.start('gated', { input: { tenant: 'acme' }, runId: 'r-second' })
    while (gates.length === 0) await new Promise((resolve) => setTimeout(resolve, 1))
    expect(await runtime.queues?.()).toEqual([{ key: 'tenant:acme', running: 1, waiting: 1, oldestWaitMs: expect.any(Number) as number }])
    await new Promise((resolve) => setTimeout(resolve, 20))
    gates.shift()?.()
    await first.done
    while (gates.length === 0) await new Promise((resolve) => setTimeout(resolve, 1))
    gates.shift()?.()
    const done = await (await second).done
    expect(done.ok).toBe(true)
    const run = await runtime.get('r-second')
    expect(run.latest.view.queued).toMatchObject({ keys: ['tenant:acme'], reason: 'concurrency' })
    expect(run.latest.view.queued?.waitedMs).toBeGreaterThanOrEqual(15)
    const firstRun = await runtime.get('r-first')
    expect(firstRun.latest.view.queued).toBeUndefined()
  })
})
