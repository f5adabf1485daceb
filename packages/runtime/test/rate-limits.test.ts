import { type AgentHost, type TurnResult, RuntimeInputError, createRateLimiter, createRuntime, createScriptedHost, defineTool, defineWorkflow, parseRateLimit } from '@locus/runtime'
import type { JournalLine } from '@locus/journal'
import { type ManualClock, createManualClock } from '@locus/retry'
import { createMemoryRunStore } from '@locus/store'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'

/** Moves the manual clock from sleep to sleep until `done` settles; real ticks let the run reach its next sleep. */
async function drive<T>(clock: ManualClock, done: Promise<T>): Promise<T> {
  const state = { finished: false }
  void done.finally(() => {
    state.finished = true
  }).catch(() => undefined)
  while (!state.finished) {
    if (!(await clock.advanceToNextSleep())) await new Promise((resolve) => setTimeout(resolve, 1))
  }
  return done
}

describe('rate limit declarations', () => {
  it('refuses a limit with neither requests nor tokens, and numbers that are not positive whole numbers, naming the limit', () => {
    const refused = (rateLimits: unknown): RuntimeInputError => {
      try {
        createRuntime({ store: createMemoryRunStore(), workflows: [], rateLimits: rateLimits as [] })
      } catch (error) {
        expect(RuntimeInputError.isInstance(error)).toBe(true)
        return error as RuntimeInputError
      }
      throw new Error('not refused')
    }
    const none = refused([{ match: { provider: 'openai' } }])
    expect(none.code).toBe('RUN_OPTIONS_INVALID')
    expect(none.message).toContain('rateLimits[0] limits nothing: give requestsPerMinute, tokensPerMinute or both')
    for (const bad of [0, -5, 1.5, Number.NaN, '60']) {
      expect(refused([{ match: {}, requestsPerMinute: 10 }, { match: {}, tokensPerMinute: bad }]).message).toContain('rateLimits[1].tokensPerMinute must be a positive whole number')
      expect(refused([{ match: {}, requestsPerMinute: bad }]).message).toContain('rateLimits[0].requestsPerMinute must be a positive whole number')
    }
    expect(refused([{ requestsPerMinute: 1 }]).message).toContain('rateLimits[0].match must be an object')
    expect(refused([{ match: { model: '' }, requestsPerMinute: 1 }]).message).toContain('rateLimits[0].match.model must be a non-empty string')
    expect(() => createRateLimiter({ limits: [{ match: {}, requestsPerMinute: 60, tokensPerMinute: 1000 }] })).not.toThrow()
  })
})

describe('parseRateLimit (--rate-limit)', () => {
  it('reads back any limit written as key=value pairs', () => {
    const name = fc.stringMatching(/^[a-z0-9][a-z0-9./:_-]{0,20}$/)
    fc.assert(
      fc.property(
        fc.record({ provider: fc.option(name, { nil: undefined }), model: fc.option(name, { nil: undefined }) }),
        fc.option(fc.integer({ min: 1, max: 1e9 }), { nil: undefined }),
        fc.option(fc.integer({ min: 1, max: 1e9 }), { nil: undefined }),
        fc.boolean(),
        (match, rpm, tpm, long) => {
          fc.pre(rpm !== undefined || tpm !== undefined)
          const parts = [
            ...(match.provider === undefined ? [] : [`provider=${match.provider}`]),
            ...(match.model === undefined ? [] : [`model=${match.model}`]),
            ...(rpm === undefined ? [] : [`${long ? 'requestsPerMinute' : 'rpm'}=${String(rpm)}`]),
            ...(tpm === undefined ? [] : [`${long ? 'tokensPerMinute' : 'tpm'}=${String(tpm)}`]),
          ]
          expect(parseRateLimit(parts.reverse().join(','))).toEqual({
            match: { ...(match.provider === undefined ? {} : { provider: match.provider }), ...(match.model === undefined ? {} : { model: match.model }) },
            ...(rpm === undefined ? {} : { requestsPerMinute: rpm }),
            ...(tpm === undefined ? {} : { tokensPerMinute: tpm }),
          })
        },
      ),
    )
  })

  it('refuses what is not a limit, naming the text and the form', () => {
    const refusal = (text: string): string => {
      try {
        parseRateLimit(text)
      } catch (error) {
        expect(RuntimeInputError.isInstance(error) && error.code === 'RUN_OPTIONS_INVALID').toBe(true)
        return (error as Error).message
      }
      throw new Error(`not refused: ${text}`)
    }
    expect(refusal('model=gpt-4o')).toContain('Invalid rate limit "model=gpt-4o": it limits nothing: give rpm, tpm or both. Write it as comma-separated key=value pairs')
    expect(refusal('rpm=0')).toContain('rpm must be a positive whole number, not "0"')
    expect(refusal('rpm=1.5')).toContain('rpm must be a positive whole number, not "1.5"')
    expect(refusal('rpm=60,burst=5')).toContain('unknown key "burst"')
    expect(refusal('rpm=60,rpm=70')).toContain('rpm is given twice')
    expect(refusal('60rpm')).toContain('"60rpm" is not key=value')
    expect(refusal('model=,rpm=1')).toContain('model is empty')
  })
})

describe('the in-process rate limiter', () => {
  it('counts a settled request from its answer: the next minute starts when the provider last heard of it', async () => {
    const clock = createManualClock()
    const limiter = createRateLimiter({ limits: [{ match: {}, requestsPerMinute: 1 }], clock })
    const request = { provider: 'p', model: 'm' }
    const slow = await limiter.acquire(request)
    // It is answered 30 s after it was let go: a minute from its start would end at 60 s, from its answer at 90 s.
    await clock.advance(30_000)
    slow.settle(10)
    await clock.advance(30_000)
    const ticket = await drive(clock, limiter.acquire(request))
    expect(ticket.wait).toEqual({ limit: '*/* rpm', waitedMs: 30_000 })
    // One never settled counts from its start.
    await clock.advance(60_000)
    await limiter.acquire(request)
    await clock.advance(60_000)
    expect((await limiter.acquire(request)).wait).toBeUndefined()
  })

  it('in any 60 s of the clock at most N requests start, and every request starts', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.record({ gapMs: fc.integer({ min: 0, max: 40_000 }), model: fc.constantFrom('m1', 'm2') }), { minLength: 1, maxLength: 25 }),
        async (perMinute, requests) => {
          const clock = createManualClock()
          const limiter = createRateLimiter({ limits: [{ match: { model: 'm1' }, requestsPerMinute: perMinute }], clock })
          const starts: number[] = []
          const pending: Promise<void>[] = []
          let unmatched = 0
          for (const request of requests) {
            await clock.advance(request.gapMs)
            pending.push(
              limiter.acquire({ provider: 'p', model: request.model }).then((ticket) => {
                if (request.model === 'm1') starts.push(clock.now())
                else {
                  unmatched += 1
                  expect(ticket.wait).toBeUndefined()
                }
              }),
            )
          }
          await drive(clock, Promise.all(pending))
          expect(starts.length + unmatched).toBe(requests.length)
          starts.sort((a, b) => a - b)
          // Any window [t, t + 60 s) holds at most N starts: the start N after any start is a full minute later.
          for (let index = 0; index + perMinute < starts.length; index += 1) {
            expect((starts[index + perMinute] as number) - (starts[index] as number)).toBeGreaterThanOrEqual(60_000)
          }
        },
      ),
      { numRuns: 80 },
    )
  })

  it('in any 60 s the tokens charged (worst case, then settled) stay within tokensPerMinute', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ gapMs: fc.integer({ min: 0, max: 30_000 }), worst: fc.integer({ min: 1, max: 1000 }), usedPart: fc.double({ min: 0, max: 1, noNaN: true }) }), { minLength: 1, maxLength: 20 }),
        async (requests) => {
          const perMinute = 1000
          const clock = createManualClock()
          const limiter = createRateLimiter({ limits: [{ match: {}, tokensPerMinute: perMinute }], clock })
          const charged: { at: number; tokens: number }[] = []
          const pending: Promise<void>[] = []
          for (const request of requests) {
            await clock.advance(request.gapMs)
            pending.push(
              limiter.acquire({ provider: 'p', model: 'm', tokens: request.worst }).then((ticket) => {
                // Settled at once to what it used: never more than its worst case.
                const used = Math.floor(request.worst * request.usedPart)
                ticket.settle(used)
                charged.push({ at: clock.now(), tokens: used })
              }),
            )
          }
          await drive(clock, Promise.all(pending))
          expect(charged).toHaveLength(requests.length)
          for (const from of charged) {
            const inWindow = charged.filter((other) => other.at >= from.at && other.at < from.at + 60_000).reduce((sum, other) => sum + other.tokens, 0)
            expect(inWindow).toBeLessThanOrEqual(perMinute)
          }
        },
      ),
      { numRuns: 60 },
    )
  })

  it('charges a token limit the worst case before the request and settles it to the real usage after', async () => {
    const clock = createManualClock()
    const limiter = createRateLimiter({ limits: [{ match: { provider: 'p' }, tokensPerMinute: 1000 }], clock })
    const first = await limiter.acquire({ provider: 'p', model: 'm', tokens: 800 })
    expect(first.wait).toBeUndefined()
    // 800 held of 1000: a 300-token worst case waits while the first is unsettled.
    let second: { wait: unknown } | undefined
    void limiter.acquire({ provider: 'p', model: 'm', tokens: 300 }).then((ticket) => (second = ticket))
    await clock.advance(10_000)
    expect(second).toBeUndefined()
    expect(limiter.snapshot()[0]).toMatchObject({ limit: 'p/*', waiting: 1, oldestWaitMs: 10_000 })
    // It really used 100: the next wake-up finds room, at the minute's end at the latest.
    first.settle(100)
    await drive(clock, (async () => {
      while (second === undefined) await new Promise((resolve) => setTimeout(resolve, 1))
    })())
    expect(second).toMatchObject({ wait: { limit: 'p/* tpm', waitedMs: expect.any(Number) as number } })
    expect(clock.now()).toBeLessThanOrEqual(60_000)
  })
})

describe('rate limits on a run', () => {
  it('journals each wait as rate_wait, and the waits spend no attempt, no retry budget and no invocation', async () => {
    const clock = createManualClock()
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'ok', usage: { inputTokens: 5, outputTokens: 5 } }] }], clock })
    const wf = defineWorkflow({
      name: 'three-calls',
      agents: { writer: { model: 'openai/gpt-test' } },
      async run({ agent }) {
        for (const prompt of ['one', 'two', 'three']) await agent(prompt, { agent: 'writer' })
        return { ok: true }
      },
    })
    const runtime = createRuntime({
      store: createMemoryRunStore(),
      workflows: [wf],
      host,
      rateLimits: [{ match: { provider: 'openai' }, requestsPerMinute: 2 }, { match: { provider: 'other' }, requestsPerMinute: 1 }],
      defaults: { clock, budgets: { maxTotalAgentInvocations: 3 }, retryBudget: 0 },
    })
    const run = await runtime.start('three-calls', { runId: 'r-rate' })
    const result = await drive(clock, run.done)
    expect(result.disposition).toBe('completed')
    const lines: JournalLine[] = []
    for await (const line of runtime.store.readLines({ runId: 'r-rate', executionId: result.executionId })) lines.push(line)
    const waits = lines.filter((line) => line.type === 'rate_wait')
    // Two requests fit the first minute; the third waits for the first to be a minute old.
    expect(waits).toEqual([expect.objectContaining({ limit: 'openai/* rpm', waitedMs: 60_000, callId: 'call-3-a1' })])
    const starts = lines.filter((line) => line.type === 'agent_start')
    expect(starts.map((line) => (line as { attempt: number }).attempt)).toEqual([1, 1, 1])
    // The wait sits inside the call's one attempt, before its request.
    expect(lines.findIndex((line) => line.type === 'rate_wait')).toBeGreaterThan(lines.indexOf(starts[2] as JournalLine))
    expect(host.calls).toHaveLength(3)
    const { view } = await runtime.get('r-rate')
    expect(view.rateWaits).toEqual({ count: 1, waitedMs: 60_000 })
    expect(await runtime.queues?.()).toEqual([
      { key: 'rate:openai/*', running: 1, waiting: 0, oldestWaitMs: 0 },
      { key: 'rate:other/*', running: 0, waiting: 0, oldestWaitMs: 0 },
    ])
  })

  it("a 429 with Retry-After seen by one call closes the shared limit for another run's concurrent call", async () => {
    const clock = createManualClock()
    const prompts: { prompt: string; at: number }[] = []
    let told: (() => void) | undefined
    const answered429 = new Promise<void>((resolve) => (told = resolve))
    const host: AgentHost = {
      name: 'loopback',
      openSession: () => ({
        transcript: () => [],
        prompt(text): Promise<TurnResult> {
          prompts.push({ prompt: text, at: clock.now() })
          if (text === 'first') {
            setTimeout(() => told?.(), 5)
            return Promise.resolve({
              text: '',
              stopReason: 'error',
              failureCause: 'provider-error',
              reason: 'HTTP 429',
              llmAttempts: [{ model: 'm', turn: 1, step: 1, attempt: 1, maxAttempts: 1, outcome: 'failed', durationMs: 1, streamed: false, code: 'rate_limited', status: 429, retryAfterMs: 2000 }],
            })
          }
          return Promise.resolve({ text: 'fine', stopReason: 'end' })
        },
      }),
    }
    const gated = defineWorkflow({
      name: 'gated',
      agents: { caller: { model: 'm' } },
      tools: { gate: defineTool({ input: z.object({}), run: () => answered429 }) },
      async run({ agent, tool }) {
        await tool('gate', {})
        return { answer: (await agent('second', { agent: 'caller' })).answer }
      },
    })
    const first = defineWorkflow({
      name: 'first',
      agents: { caller: { model: 'm' } },
      async run({ agent }) {
        try {
          await agent('first', { agent: 'caller' })
        } catch {
          return { limited: true }
        }
        return { limited: false }
      },
    })
    const runtime = createRuntime({ store: createMemoryRunStore(), workflows: [gated, first], host, rateLimits: [{ match: { model: 'm' }, requestsPerMinute: 1000 }], defaults: { clock } })
    const waiting = await runtime.start('gated', { runId: 'r-gated' })
    const limited = await runtime.start('first', { runId: 'r-first' })
    const [gatedResult, firstResult] = await drive(clock, Promise.all([waiting.done, limited.done]))
    expect(firstResult.disposition).toBe('completed')
    expect(gatedResult.disposition).toBe('completed')
    // The second call, in another run, waited out the Retry-After the first call saw.
    expect(prompts).toEqual([
      { prompt: 'first', at: 0 },
      { prompt: 'second', at: 2000 },
    ])
    const lines: JournalLine[] = []
    for await (const line of runtime.store.readLines({ runId: 'r-gated', executionId: gatedResult.executionId })) lines.push(line)
    expect(lines.filter((line) => line.type === 'rate_wait')).toEqual([expect.objectContaining({ limit: '*/m retry-after', waitedMs: 2000 })])
    const firstLines: JournalLine[] = []
    for await (const line of runtime.store.readLines({ runId: 'r-first', executionId: firstResult.executionId })) firstLines.push(line)
    expect(firstLines.some((line) => line.type === 'rate_wait')).toBe(false)
  })

  it("a host's own rateLimits are shared by every runtime that uses that host, and bad ones refuse the run", async () => {
    const clock = createManualClock()
    const scripted = createScriptedHost({ rules: [{ steps: [{ text: 'ok' }] }], clock })
    const host: AgentHost = { name: 'limited', openSession: (request) => scripted.openSession(request), rateLimits: [{ match: { provider: 'limited' }, requestsPerMinute: 1 }] }
    const wf = defineWorkflow({ name: 'one-call', run: async ({ agent }) => ({ answer: (await agent('hi')).answer }) })
    const results = []
    for (const runId of ['r-host-1', 'r-host-2']) {
      const runtime = createRuntime({ store: createMemoryRunStore(), workflows: [wf], host, defaults: { clock } })
      const run = await runtime.start('one-call', { runId })
      const result = await drive(clock, run.done)
      const lines: JournalLine[] = []
      for await (const line of runtime.store.readLines({ runId, executionId: result.executionId })) lines.push(line)
      results.push(lines.filter((line) => line.type === 'rate_wait'))
    }
    expect(results).toEqual([[], [expect.objectContaining({ limit: 'limited/* rpm', waitedMs: 60_000 })]])
    const bad: AgentHost = { ...host, rateLimits: [{ match: {} }] }
    expect(() => createRuntime({ store: createMemoryRunStore(), workflows: [wf], host: bad, defaults: { clock } })).toThrow(/rateLimits\[0\] limits nothing/)
  })
})
