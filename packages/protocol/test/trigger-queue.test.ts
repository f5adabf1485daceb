import { createManualClock } from '@locus/retry'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type Action, LLM_TRIGGER_ROUTE, type ToolExecuteTrigger, TransportError, callRemoteTool, createTriggerQueue } from '../src/index.js'

const T0 = Date.parse('2026-12-03T06:00:00.000Z')

function toolTrigger(id: string, name: string, attempt = 1): ToolExecuteTrigger {
  return { type: 'tool.execute', id, attempt, deadline: null, name, arguments: { topic: 'q3' } }
}

const result = (id: string, value: unknown): Action => ({ type: 'tool.result', id, result: value as never })

describe('createTriggerQueue', () => {
  it('hands a queued trigger to a poll serving its tool, and settles the send with the answer under the call id', async () => {
    const queue = createTriggerQueue({ clock: createManualClock(T0) })
    const sent = queue.send(toolTrigger('tool-1', 'render_report'))
    expect(await queue.poll({ worker: 'other', tools: ['lookup'], waitMs: 0 })).toEqual([])
    const [claimed] = await queue.poll({ worker: 'w1', tools: ['lookup', 'render_report'], waitMs: 0 })
    expect(claimed).toMatchObject({ type: 'tool.execute', name: 'render_report', attempt: 1, arguments: { topic: 'q3' } })
    expect(claimed?.id).toMatch(/^tool-1~/)
    expect(queue.stats()).toMatchObject({ queued: 0, claimed: 1 })
    expect(queue.answer('w1', [result(claimed?.id ?? '', { pages: 3 })])).toEqual({ accepted: [claimed?.id], ignored: [] })
    expect(await sent).toEqual([{ type: 'tool.result', id: 'tool-1', result: { pages: 3 } }])
    expect(queue.stats()).toEqual({ queued: 0, claimed: 0, polling: 0, workers: 0 })
  })

  it('wakes a waiting poll when a trigger for its tool arrives, and answers [] when the wait ends first', async () => {
    const clock = createManualClock(T0)
    const queue = createTriggerQueue({ clock })
    const idle = queue.poll({ worker: 'w1', tools: ['a'], waitMs: 30_000 })
    const waiting = queue.poll({ worker: 'w2', tools: ['b'], waitMs: 30_000 })
    expect(queue.stats().polling).toBe(2)
    void queue.send(toolTrigger('tool-1', 'b'))
    expect((await waiting).map((trigger) => trigger.id)).toEqual([expect.stringMatching(/^tool-1~/)])
    await clock.advance(29_999)
    expect(queue.stats().polling).toBe(1)
    await clock.advance(1)
    expect(await idle).toEqual([])
  })

  it('routes llm.execute triggers to workers that list llm.execute', async () => {
    const queue = createTriggerQueue({ clock: createManualClock(T0) })
    void queue.send({ type: 'llm.execute', id: 'llm-1', attempt: 1, deadline: null, messages: [{ role: 'user', content: 'hi' }] })
    expect(await queue.poll({ worker: 'w1', tools: ['llm'], waitMs: 0 })).toEqual([])
    expect(await queue.poll({ worker: 'w1', tools: [LLM_TRIGGER_ROUTE], waitMs: 0 })).toHaveLength(1)
  })

  it('fails the triggers of a worker that neither polls nor answers for claimTimeoutMs, retryably, and keeps those of a worker that polls', async () => {
    const clock = createManualClock(T0)
    const queue = createTriggerQueue({ clock, claimTimeoutMs: 10_000 })
    const lost = queue.send(toolTrigger('tool-1', 'render_report'))
    const kept = queue.send(toolTrigger('tool-2', 'render_report'))
    const [first] = await queue.poll({ worker: 'dies', tools: ['render_report'], waitMs: 0, max: 1 })
    const [second] = await queue.poll({ worker: 'lives', tools: ['render_report'], waitMs: 0, max: 1 })
    const settled = lost.then(
      () => 'resolved',
      (error: unknown) => error,
    )
    // "lives" keeps polling (an open poll counts as contact), "dies" is never heard from again.
    await clock.advance(9_000)
    const polling = queue.poll({ worker: 'lives', tools: ['render_report'], waitMs: 20_000 })
    await clock.advance(999)
    expect(queue.stats().claimed).toBe(2)
    await clock.advance(1)
    const error = await settled
    expect(error).toBeInstanceOf(TransportError)
    expect(error).toMatchObject({ retryable: true, code: 'provider_error' })
    expect((error as Error).message).toContain('the worker "dies" went away while it held render_report')
    await clock.advance(20_000)
    expect(await polling).toEqual([])
    // The late answer of the worker that was given up on is refused; the living worker's is taken.
    expect(queue.answer('dies', [result(first?.id ?? '', 1)]).ignored).toEqual([{ id: first?.id, reason: expect.stringContaining('no open trigger') }])
    expect(queue.answer('lives', [result(second?.id ?? '', 2)]).accepted).toEqual([second?.id])
    expect(await kept).toEqual([result('tool-2', 2)])
  })

  it('a retry after a worker went away goes to a worker still polling', async () => {
    const clock = createManualClock(T0)
    const queue = createTriggerQueue({ clock, claimTimeoutMs: 5_000 })
    const workers: string[] = []
    const call = callRemoteTool({
      id: 'tool-7',
      name: 'render_report',
      arguments: { topic: 'q3' },
      retry: { timeout_secs: null, max_retries: 2, backoff_base_secs: 2, backoff_max_secs: 60 },
      transport: queue,
      clock,
    })
    const [attempt1] = await queue.poll({ worker: 'killed', tools: ['render_report'], waitMs: 60_000 })
    workers.push('killed')
    expect(attempt1?.attempt).toBe(1)
    const next = queue.poll({ worker: 'healthy', tools: ['render_report'], waitMs: 60_000 })
    await clock.advance(5_000) // the killed worker's lease ends
    await clock.advance(2_000) // the backoff before attempt 2
    const [attempt2] = await next
    workers.push('healthy')
    expect(attempt2).toMatchObject({ attempt: 2, name: 'render_report' })
    expect(attempt2?.id).not.toBe(attempt1?.id)
    queue.answer('healthy', [result(attempt2?.id ?? '', { pages: 3 })])
    const outcome = await call
    expect(outcome).toMatchObject({ ok: true, value: { pages: 3 } })
    expect(workers).toEqual(['killed', 'healthy'])
  })

  it('refuses answers for triggers a worker does not hold, naming why', async () => {
    const queue = createTriggerQueue({ clock: createManualClock(T0) })
    void queue.send(toolTrigger('tool-1', 'a'))
    void queue.send(toolTrigger('tool-2', 'a'))
    const [held] = await queue.poll({ worker: 'w1', tools: ['a'], waitMs: 0, max: 1 })
    const report = queue.answer('w2', [result(held?.id ?? '', 1), { type: 'tool.call', name: 'x', arguments: {} }])
    expect(report.accepted).toEqual([])
    expect(report.ignored).toEqual([
      { id: null, reason: 'a tool.call action must name the trigger it answers by id' },
      { id: held?.id, reason: 'the trigger is held by another worker' },
    ])
  })

  it('abandons a trigger whose call is cancelled, queued or claimed', async () => {
    const queue = createTriggerQueue({ clock: createManualClock(T0) })
    const controller = new AbortController()
    const sent = queue.send(toolTrigger('tool-1', 'a'), { signal: controller.signal })
    controller.abort()
    await expect(sent).rejects.toMatchObject({ retryable: false })
    expect(await queue.poll({ worker: 'w1', tools: ['a'], waitMs: 0 })).toEqual([])
    expect(queue.stats()).toEqual({ queued: 0, claimed: 0, polling: 0, workers: 0 })
  })

  it('reports a late answer to a claimed trigger whose call was abandoned to its onLateAnswer, and ignores it', async () => {
    const queue = createTriggerQueue({ clock: createManualClock(T0) })
    const controller = new AbortController()
    const late: Action[][] = []
    const sent = queue.send(toolTrigger('tool-1', 'a'), { signal: controller.signal, onLateAnswer: (actions) => late.push(actions) })
    const [held] = await queue.poll({ worker: 'w1', tools: ['a'], waitMs: 0 })
    controller.abort()
    await expect(sent).rejects.toMatchObject({ retryable: false })
    const report = queue.answer('w1', [result(held?.id ?? '', { pages: 3 })])
    expect(report.accepted).toEqual([])
    expect(report.ignored).toEqual([{ id: held?.id, reason: expect.stringMatching(/given up on .* recorded as late and ignored/) as unknown }])
    expect(late).toEqual([[result('tool-1', { pages: 3 })]])
    // Once only: the same answer again is simply unknown.
    expect(queue.answer('w1', [result(held?.id ?? '', { pages: 3 })]).ignored[0]?.reason).toMatch(/no open trigger/)
    expect(late).toHaveLength(1)
  })

  it('close fails open calls terminally and ends waiting polls', async () => {
    const queue = createTriggerQueue({ clock: createManualClock(T0) })
    const polling = queue.poll({ worker: 'w1', tools: ['b'], waitMs: 60_000 })
    const sent = queue.send(toolTrigger('tool-1', 'a'))
    await queue.close()
    expect(await polling).toEqual([])
    await expect(sent).rejects.toMatchObject({ retryable: false, message: 'the worker queue was closed' })
  })

  it('refuses a claim timeout that is not a positive number', () => {
    expect(() => createTriggerQueue({ claimTimeoutMs: 0 })).toThrow(/claimTimeoutMs must be a positive number/)
  })

  it('every trigger sent is handed to exactly one poll serving its tool, and each answer settles only its own send', async () => {
    const tools = ['a', 'b', 'c']
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ tool: fc.constantFrom(...tools), callId: fc.constantFrom('tool-1', 'tool-2', 'tool-3') }), { minLength: 1, maxLength: 30 }),
        fc.array(fc.record({ worker: fc.constantFrom('w1', 'w2'), serves: fc.subarray(tools, { minLength: 1 }), max: fc.integer({ min: 1, max: 4 }) }), { minLength: 1, maxLength: 20 }),
        async (calls, polls) => {
          const queue = createTriggerQueue({ clock: createManualClock(T0) })
          const sends = calls.map((call, index) => queue.send(toolTrigger(call.callId, call.tool, 1)).then((actions) => ({ index, actions })))
          const seen = new Set<string>()
          for (const poll of polls) {
            const triggers = await queue.poll({ worker: poll.worker, tools: poll.serves, waitMs: 0, max: poll.max })
            expect(triggers.length).toBeLessThanOrEqual(poll.max)
            for (const trigger of triggers) {
              expect(trigger.type === 'tool.execute' && poll.serves.includes(trigger.name)).toBe(true)
              expect(seen.has(trigger.id)).toBe(false)
              seen.add(trigger.id)
              const index = [...seen].length - 1
              expect(queue.answer(poll.worker, [result(trigger.id, { trigger: trigger.id, index })]).accepted).toEqual([trigger.id])
            }
          }
          const remaining = await queue.poll({ worker: 'w3', tools, waitMs: 0, max: 100 })
          for (const trigger of remaining) queue.answer('w3', [result(trigger.id, { trigger: trigger.id })])
          expect(seen.size + remaining.length).toBe(calls.length)
          for (const settled of await Promise.all(sends)) {
            const [action] = settled.actions
            expect(action?.id).toBe(calls[settled.index]?.callId)
            // The answer carries the wire id it was sent for: each send got the answer to its own trigger.
            expect(action?.type === 'tool.result' && (action.result as { trigger: string }).trigger).toMatch(new RegExp(`^${calls[settled.index]?.callId ?? ''}~`))
          }
          const wireIds = (await Promise.all(sends)).map((settled) => (settled.actions[0] as unknown as { result: { trigger: string } }).result.trigger)
          expect(new Set(wireIds).size).toBe(calls.length)
        },
      ),
      { numRuns: 60 },
    )
  })
})
