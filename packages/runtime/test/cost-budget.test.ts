import { type UsdAmount, Usd, boundPromptTokens, createPriceTable, parsePriceFile, zeroUsd } from '@locus/cost'
import type { JournalLine } from '@locus/journal'
import { type AgentHost, createRuntime, createScriptedHost, defineWorkflow, readRunHistory } from '@locus/runtime'
import { createMemoryRunStore } from '@locus/store'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { linesOfType } from './helpers.js'

// Dollars per million tokens for the scripted host's turns and the reporting host below.
const prices = createPriceTable({ prices: parsePriceFile({ models: { scripted: { input: '2', output: '8' }, reporting: { input: '2', output: '8' } } }) })
const INPUT = new Usd('0.000002')
const OUTPUT = new Usd('0.000008')

/** What the runtime reserves for one attempt: the prompt bounded from its text, plus maxOutputTokens. */
function worstCase(prompt: string, maxOutputTokens: number): UsdAmount {
  return INPUT.mul(boundPromptTokens([prompt])).add(OUTPUT.mul(maxOutputTokens))
}

function costOf(usage: { inputTokens: number; outputTokens: number }): UsdAmount {
  return INPUT.mul(usage.inputTokens).add(OUTPUT.mul(usage.outputTokens))
}

async function linesOf(store: ReturnType<typeof createMemoryRunStore>, runId: string): Promise<JournalLine[]> {
  const lines: JournalLine[] = []
  for (const info of await store.listExecutions(runId)) for await (const line of store.readLines({ runId, executionId: info.executionId })) lines.push(line)
  return lines
}

/** Every dollar the journal says was spent: the sum of the agent attempts' costs. */
function spentIn(lines: readonly JournalLine[]): UsdAmount {
  return linesOfType(lines, 'agent_end').reduce((total, line) => (line.cost === undefined ? total : total.add(new Usd(line.cost.usd))), zeroUsd())
}

const USAGE = { inputTokens: 10, outputTokens: 50 }
const fanOut = (concurrency?: number) =>
  defineWorkflow({
    name: 'fan-out',
    run: async ({ agent, parallel }) => {
      const thunks = Array.from({ length: 100 }, (_, index) => () => agent(`item ${String(index).padStart(2, '0')}`, { label: `item-${String(index).padStart(2, '0')}`, budgets: { maxOutputTokens: 100 }, criticality: 'enriching' }))
      const answers = await parallel(thunks, concurrency === undefined ? {} : { concurrency })
      return { ok: true, answers: answers.map((answer) => answer.answer) }
    },
  })

describe('a money budget (budgets.maxCostUsd)', () => {
  for (const concurrency of [undefined, 7]) {
    it(`keeps a parallel() of 100 calls within its cap (concurrency ${concurrency ?? 'unbounded'}): overshoot $0, the rest not dispatched, the answer partial`, async () => {
      const store = createMemoryRunStore()
      const host = createScriptedHost({ rules: [{ steps: [{ text: 'done', usage: USAGE }] }] })
      const cap = new Usd('0.02')
      const workflow = fanOut(concurrency)
      const runtime = createRuntime({ workflows: [workflow], store, host, defaults: { prices, budgets: { maxCostUsd: '0.02' } } })
      const handle = await runtime.start(workflow)
      const done = await handle.done
      const lines = await linesOf(store, handle.runId)

      const answered = linesOfType(lines, 'agent_end').filter((line) => line.status === 'completed')
      const refused = linesOfType(lines, 'error').filter((line) => line.failureCause === 'cost-budget')
      const spent = spentIn(lines)
      // Every call either ran (and cost exactly its usage) or was refused before it was sent.
      expect(answered.length + refused.length).toBe(100)
      expect(spent.eq(costOf(USAGE).mul(answered.length))).toBe(true)
      expect(spent.lte(cap)).toBe(true)
      expect(Usd.max(zeroUsd(), spent.sub(cap)).isZero()).toBe(true)
      // It stopped only when the next call's worst case no longer fitted.
      const perCall = worstCase('item 00', 100)
      expect(cap.sub(spent).lt(perCall.mul(concurrency ?? 100))).toBe(true)
      expect(refused.length).toBeGreaterThan(0)
      if (concurrency === undefined) expect(answered.length).toBe(cap.div(perCall).floor().toNumber())
      expect(host.calls.length).toBe(answered.length)

      // The unaffordable calls are not-dispatched slots with the reason, and the answer says what it could not afford.
      const result = done.result as { slots: { index: number; status: string; reason?: string }[]; notDispatched: number; failed: number }
      const notDispatched = result.slots.filter((slot) => slot.status === 'not-dispatched')
      expect(notDispatched).toHaveLength(refused.length)
      expect(result).toMatchObject({ failed: 0, notDispatched: refused.length })
      for (const slot of notDispatched) expect(slot.reason).toBe("not run: the run's cost budget of $0.02 was spent")
      const groupEnd = linesOfType(lines, 'group_end')[0]
      expect(groupEnd).toMatchObject({ completed: answered.length, failed: 0, notDispatched: refused.length, outcome: 'failed' })
      const runEnd = linesOfType(lines, 'run_end')[0]
      expect(runEnd?.answerOutcome).toBe('partial')
      expect(runEnd?.gaps).toHaveLength(refused.length)
      expect(runEnd?.gaps?.[0]).toEqual({ tool: refused[0]?.label, criticality: 'enriching', reason: "not run: the run's cost budget of $0.02 was spent" })
      const caveat = runEnd?.caveats?.find((text) => text.startsWith('Could not afford'))
      expect(caveat).toContain(`Could not afford ${refused.length} calls (the run's cost budget of $0.02 was spent)`)
      for (const line of refused.slice(0, 20)) expect(caveat).toContain(line.label ?? 'missing label')
    })
  }

  it('never spends more than its limit, whatever the usages, limits and concurrency (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ outputTokens: fc.integer({ min: 0, max: 400 }), inputTokens: fc.integer({ min: 0, max: 15 }) }), { minLength: 1, maxLength: 25 }),
        fc.integer({ min: 1, max: 20_000 }),
        fc.integer({ min: 1, max: 8 }),
        async (usages, limitMicros, concurrency) => {
          const store = createMemoryRunStore()
          const host = createScriptedHost({ rules: usages.map((usage, index) => ({ match: { label: `c${index}` }, steps: [{ text: 'ok', usage }] })) })
          const limit = new Usd(limitMicros).div(1_000_000)
          const workflow = defineWorkflow({
            name: 'property',
            run: async ({ agent, parallel }) => {
              await parallel(usages.map((_, index) => () => agent(`p${index}`, { label: `c${index}`, budgets: { maxOutputTokens: 400 }, criticality: 'confirming' })), { concurrency })
              return { ok: true }
            },
          })
          const runtime = createRuntime({ workflows: [workflow], store, host, defaults: { prices, budgets: { maxCostUsd: limit.toString() } } })
          const handle = await runtime.start(workflow)
          await handle.done
          const lines = await linesOf(store, handle.runId)
          expect(spentIn(lines).lte(limit)).toBe(true)
          const ran = linesOfType(lines, 'agent_end').length
          expect(ran + linesOfType(lines, 'error').filter((line) => line.failureCause === 'cost-budget').length).toBe(usages.length)
        },
      ),
      { numRuns: 40 },
    )
  })

  it('refuses a retry its budget cannot cover, journaling retryRefused with the budget', async () => {
    // Each session spends 100 in and 900 out ($0.0074) and times out: a transport retry would follow.
    const host: AgentHost = {
      name: 'reporting',
      openSession: () => ({
        prompt: async () => ({ text: '', stopReason: 'error', failureCause: 'host-turn-timeout', reason: 'the turn took too long', usage: { inputTokens: 10, outputTokens: 900 } }),
        transcript: () => [],
      }),
    }
    const store = createMemoryRunStore()
    const workflow = defineWorkflow({ name: 'retrying', run: async ({ agent }) => (await agent('go', { attempts: 3, budgets: { maxOutputTokens: 1000 } })).answer })
    // Room for one attempt's worst case ($0.008018), not for a second after the first spent $0.00722.
    const runtime = createRuntime({ workflows: [workflow], store, host, defaults: { prices, budgets: { maxCostUsd: '0.01' } } })
    const handle = await runtime.start(workflow)
    const done = await handle.done
    const lines = await linesOf(store, handle.runId)
    expect(done.disposition).toBe('failed')
    expect(linesOfType(lines, 'agent_start')).toHaveLength(1)
    expect(linesOfType(lines, 'retry')).toHaveLength(0)
    const end = linesOfType(lines, 'agent_end')[0]
    expect(end).toMatchObject({
      failureCause: 'host-turn-timeout',
      cost: { usd: '0.007220' },
      retryRefused: { by: 'cost-budget', costBudget: { scope: 'run', limitUsd: '0.010000', remainingUsd: '0.002780', neededUsd: worstCase('go', 1000).toFixed(6) } },
    })
    expect(done.error?.message).toContain("the run's cost budget could not cover attempt 2 of 3")
  })

  it('refuses a retry that only the call’s own budget cannot cover, naming the call’s budget', async () => {
    const host: AgentHost = {
      name: 'reporting',
      openSession: () => ({
        prompt: async () => ({ text: '', stopReason: 'error', failureCause: 'host-turn-timeout', usage: { inputTokens: 10, outputTokens: 900 } }),
        transcript: () => [],
      }),
    }
    const store = createMemoryRunStore()
    const workflow = defineWorkflow({ name: 'retrying', run: async ({ agent }) => (await agent('go', { attempts: 2, budgets: { maxOutputTokens: 1000, maxCostUsd: '0.01' } })).answer })
    const runtime = createRuntime({ workflows: [workflow], store, host, defaults: { prices, budgets: { maxCostUsd: '5' } } })
    const handle = await runtime.start(workflow)
    await handle.done
    const end = linesOfType(await linesOf(store, handle.runId), 'agent_end')[0]
    expect(end?.retryRefused).toMatchObject({ by: 'cost-budget', costBudget: { scope: 'call', limitUsd: '0.010000' } })
  })

  it('counts on resume the money earlier executions spent', async () => {
    const store = createMemoryRunStore()
    const workflow = defineWorkflow({
      name: 'resumable',
      run: async ({ agent, parallel }) => {
        await parallel([() => agent('first', { budgets: { maxOutputTokens: 1000 } }), () => agent('second', { budgets: { maxOutputTokens: 1000 } })])
        return (await agent('third', { budgets: { maxOutputTokens: 1200 }, criticality: 'enriching' })).answer
      },
    })
    const spending = { inputTokens: 10, outputTokens: 900 }
    const broken = createScriptedHost({ rules: [{ match: { prompt: 'second' }, steps: [{ throw: 'unclassified' }] }, { steps: [{ text: 'one', usage: spending }] }] })
    // Both first calls fit ($0.016036); once the first spent $0.00722, the third ($0.009626) does not fit beside the second's $0.00082.
    const options = { prices, budgets: { maxCostUsd: '0.017' } }
    const first = await createRuntime({ workflows: [workflow], store, host: broken, defaults: options }).start(workflow)
    expect((await first.done).disposition).toBe('failed')

    // The resume is given no budget: it reads the recorded one.
    const healthy = createScriptedHost({ rules: [{ steps: [{ text: 'two', usage: { inputTokens: 10, outputTokens: 100 } }] }] })
    const resumed = await createRuntime({ workflows: [workflow], store, host: healthy, defaults: { prices } }).resume(first.runId)
    const result = await resumed.done
    const lines: JournalLine[] = []
    for await (const line of store.readLines({ runId: first.runId, executionId: resumed.executionId })) lines.push(line)
    expect(healthy.calls.map((call) => call.prompt)).toEqual(['second'])
    const refused = linesOfType(lines, 'error').filter((line) => line.failureCause === 'cost-budget')
    expect(refused.map((line) => line.message)).toEqual([expect.stringContaining("the run's cost budget of $0.017 was spent")])
    expect(result.disposition).toBe('failed')
    expect(linesOfType(lines, 'run_end')[0]).toMatchObject({ answerOutcome: 'partial', gaps: [{ tool: 'default', criticality: 'enriching' }] })
  })

  it('refuses to start with a model that has no price, naming it and --prices, unless allowUnpriced', async () => {
    const store = createMemoryRunStore()
    const workflow = defineWorkflow({ name: 'unpriced', agents: { writer: { model: 'my-fine-tune' } }, run: async ({ agent }) => (await agent('x', { agent: 'writer' })).answer })
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'ok', usage: USAGE }] }] })
    const runtime = createRuntime({ workflows: [workflow], store, host, defaults: { prices, budgets: { maxCostUsd: '1' } } })
    await expect(runtime.start(workflow)).rejects.toThrow(/model "my-fine-tune" has no price.*--prices.*--allow-unpriced/)
    expect(await store.listRuns()).toEqual([])
    const allowed = createRuntime({ workflows: [workflow], store, host, defaults: { prices, budgets: { maxCostUsd: '1' }, allowUnpriced: true } })
    const handle = await allowed.start(workflow)
    expect((await handle.done).disposition).toBe('completed')
  })

  it('refuses a budget that is not a positive decimal before anything is written', async () => {
    const store = createMemoryRunStore()
    const workflow = defineWorkflow({ name: 'bad', run: async () => 'x' })
    for (const bad of ['0', '-1', 'two dollars', '1e3']) {
      const runtime = createRuntime({ workflows: [workflow], store, defaults: { prices, budgets: { maxCostUsd: bad } } })
      await expect(runtime.start(workflow)).rejects.toThrow(/budgets\.maxCostUsd must be a positive decimal number of dollars/)
    }
    expect(await store.listRuns()).toEqual([])
  })
})

describe('a money budget and replay', () => {
  it('replays a budgeted run with no host: nothing is spent, so the budget is not checked', async () => {
    const store = createMemoryRunStore()
    const workflow = defineWorkflow({ name: 'replayed', run: async ({ agent }) => (await agent('go', { budgets: { maxOutputTokens: 100 } })).answer })
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'ok', usage: USAGE }] }] })
    const runtime = createRuntime({ workflows: [workflow], store, host, defaults: { prices, budgets: { maxCostUsd: '1' } } })
    const started = await runtime.start(workflow)
    expect((await started.done).disposition).toBe('completed')
    const replayed = await runtime.replay(started.runId)
    expect(await replayed.done).toMatchObject({ disposition: 'completed', result: 'ok' })
  })
})

describe('what a killed run spent', () => {
  it('counts the journaled requests of an attempt that was killed before its end, beside every ended attempt', async () => {
    // Each session makes one priced request of 10 in and 500 out ($0.00402), reported as an llm_attempt.
    const host: AgentHost = {
      name: 'reporting',
      openSession: () => ({
        prompt: async () => ({
          text: 'ok',
          stopReason: 'end',
          llmAttempts: [{ model: 'reporting', turn: 1, step: 1, attempt: 1, maxAttempts: 1, outcome: 'succeeded', durationMs: 1, streamed: false, usage: { inputTokens: 10, outputTokens: 500 } }],
        }),
        transcript: () => [],
      }),
    }
    const finished = createMemoryRunStore()
    const workflow = defineWorkflow({ name: 'two', run: async ({ agent }) => [(await agent('first')).answer, (await agent('second')).answer] })
    const handle = await createRuntime({ workflows: [workflow], store: finished, host, defaults: { prices, budgets: { maxCostUsd: '1' } } }).start(workflow)
    expect((await handle.done).disposition).toBe('completed')
    const lines = await linesOf(finished, handle.runId)
    const lastEnd = lines.findLastIndex((line) => line.type === 'agent_end')

    // The same journal cut where a kill -9 would leave it: the second attempt's request is journaled, its end is not.
    const killed = createMemoryRunStore()
    const writer = await killed.createExecution({ runId: handle.runId, kind: 'root' })
    for (const line of lines.slice(0, lastEnd)) {
      const { v: _v, seq: _seq, ts: _ts, runId: _runId, executionId: _executionId, ...input } = line
      writer.append(input)
    }
    await writer.close()
    const history = await readRunHistory(killed, handle.runId)
    expect(linesOfType(lines.slice(0, lastEnd), 'agent_end')).toHaveLength(1)
    expect(history.spentUsd.eq(costOf({ inputTokens: 10, outputTokens: 500 }).mul(2))).toBe(true)
  })
})
