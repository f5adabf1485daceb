// Approvals with deadlines (a deferred tool's onTimeout) and a recorded decision (decidedBy, via).
import type { JournalLine } from '@locus/journal'
import { type ManualClock, createManualClock } from '@locus/retry'
import {
  type DeferredAnswer,
  type OnTimeout,
  RuntimeInputError,
  createRuntime,
  defineDeferredTool,
  defineTool,
  defineWorkflow,
  keepDeferredAnswer,
  startWorkflowRun,
} from '@locus/runtime'
import { type RunStore, createFileRunStore, createMemoryRunStore } from '@locus/store'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { linesOfType, tempRunsDir } from './helpers.js'

const START = Date.parse('2026-03-01T00:00:00.000Z')
const HOUR_POLICY = { timeout_secs: 3600, max_retries: 1, backoff_base_secs: 0, backoff_max_secs: 0 }
const Decision = z.object({ approved: z.boolean() })

function approvalFlow(onTimeout: OnTimeout<{ approved: boolean }> | undefined) {
  return defineWorkflow({
    name: 'deadline-approval',
    tools: {
      approve: defineTool({ deferred: true, input: z.object({ amount: z.number() }), output: Decision, retry: HOUR_POLICY, ...(onTimeout === undefined ? {} : { onTimeout }) }),
    },
    async run({ tool }) {
      const decision = await tool('approve', { amount: 42 })
      return { ok: true, decision }
    },
  })
}

async function allLines(store: RunStore, runId: string): Promise<JournalLine[]> {
  const lines: JournalLine[] = []
  for (const info of await store.listExecutions(runId)) for await (const line of store.readLines(info)) lines.push(line)
  return lines
}

/** Flushes until the run's deadline timer sleeps on the clock (the deferral is open and its expiry armed). */
async function untilArmed(clock: ManualClock, count = 1): Promise<void> {
  const giveUpAt = Date.now() + 10_000
  while (clock.pendingSleeps().length < count && Date.now() < giveUpAt) await clock.flush()
  if (clock.pendingSleeps().length < count) throw new Error('the deferral never armed its deadline')
}

describe('onTimeout at a deferral’s deadline', () => {
  it('{ default } completes the call with the default, journals deferred_expired, and a late answer conflicts', async () => {
    const clock = createManualClock(START)
    const store = createMemoryRunStore()
    const runtime = createRuntime({ store, workflows: [approvalFlow({ default: { approved: false } })], defaults: { clock } })
    const handle = await runtime.start('deadline-approval', { input: undefined })
    await untilArmed(clock)
    const [pending] = await runtime.pendingDeferrals(handle.runId)
    expect(pending).toMatchObject({ tool: 'approve', expiresAt: new Date(START + 3_600_000).toISOString(), onTimeout: { default: { approved: false } } })
    // Nothing expires a second early.
    await clock.advance(3_599_000)
    expect(await runtime.pendingDeferrals(handle.runId)).toHaveLength(1)
    await clock.advance(1_000)
    const result = await handle.done
    expect(result).toMatchObject({ disposition: 'completed', result: { ok: true, decision: { approved: false } } })
    const lines = await allLines(store, handle.runId)
    const id = pending?.deferredId ?? ''
    expect(linesOfType(lines, 'deferred_expired')).toEqual([
      expect.objectContaining({ deferredId: id, tool: 'approve', policy: { default: { approved: false } }, applied: 'default', result: { approved: false } }),
    ])
    expect(linesOfType(lines, 'deferred_settled')).toEqual([expect.objectContaining({ deferredId: id, outcome: 'expired', result: { approved: false } })])
    expect(linesOfType(lines, 'tool_end').at(-1)).toMatchObject({ status: 'completed', result: { approved: false } })
    const types = lines.map((line) => line.type)
    expect(types.indexOf('deferred_expired')).toBeLessThan(types.indexOf('deferred_settled'))
    expect(await runtime.answerDeferred(handle.runId, id, { kind: 'resolved', result: { approved: true } })).toMatchObject({ ok: false, status: 'conflict' })
  })

  it("'reject' fails the call for good at the deadline (no retry opens another deferral)", async () => {
    const clock = createManualClock(START)
    const store = createMemoryRunStore()
    const flow = defineWorkflow({
      name: 'reject-approval',
      tools: { approve: defineDeferredTool({ input: z.object({}), output: Decision, retry: { ...HOUR_POLICY, max_retries: 3 }, onTimeout: 'reject' }) },
      run: async ({ tool }) => ({ ok: true, decision: await tool('approve', {}) }),
    })
    const handle = await startWorkflowRun(flow, { store, clock })
    await untilArmed(clock)
    await clock.advance(3_600_000)
    const result = await handle.done
    expect(result.disposition).toBe('failed')
    const lines = await allLines(store, handle.runId)
    expect(linesOfType(lines, 'deferred_open')).toHaveLength(1)
    expect(linesOfType(lines, 'deferred_expired')).toEqual([expect.objectContaining({ policy: 'reject', applied: 'rejected' })])
    expect(linesOfType(lines, 'deferred_settled')).toEqual([expect.objectContaining({ outcome: 'expired' })])
    expect(linesOfType(lines, 'tool_end')).toEqual([expect.objectContaining({ status: 'failed', failure: expect.objectContaining({ code: 'deadline_exceeded', retryable: false }) })])
  })

  it('{ escalate } settles the first deferral as escalated and opens one for the named party, with its own deadline', async () => {
    const clock = createManualClock(START)
    const store = createMemoryRunStore()
    const runtime = createRuntime({ store, workflows: [approvalFlow({ escalate: { to: 'finance-lead', after: '30m' } })], defaults: { clock } })
    const handle = await runtime.start('deadline-approval', { input: undefined })
    await untilArmed(clock)
    const [first] = await runtime.pendingDeferrals(handle.runId)
    await clock.advance(3_600_000)
    await untilArmed(clock)
    const [second] = await runtime.pendingDeferrals(handle.runId)
    expect(second).toMatchObject({
      deferredId: `${first?.deferredId ?? ''}-escalated`,
      to: 'finance-lead',
      escalatedFrom: first?.deferredId,
      onTimeout: 'reject',
      expiresAt: new Date(START + 3_600_000 + 1_800_000).toISOString(),
    })
    // The first stays answered as escalated: answering it now is a conflict.
    expect(await runtime.answerDeferred(handle.runId, first?.deferredId ?? '', { kind: 'resolved', result: { approved: true } })).toMatchObject({ ok: false, status: 'conflict' })
    expect(await runtime.answerDeferred(handle.runId, second?.deferredId ?? '', { kind: 'resolved', result: { approved: true }, decidedBy: 'lead-key', via: 'api' })).toMatchObject({ ok: true })
    const result = await handle.done
    expect(result).toMatchObject({ disposition: 'completed', result: { decision: { approved: true } } })
    const lines = await allLines(store, handle.runId)
    expect(linesOfType(lines, 'deferred_expired')).toEqual([
      expect.objectContaining({ deferredId: first?.deferredId, applied: 'escalated', escalatedTo: second?.deferredId, to: 'finance-lead', policy: { escalate: { to: 'finance-lead', after: '30m' } } }),
    ])
    expect(linesOfType(lines, 'deferred_settled').map((line) => [line.deferredId, line.outcome, line.decidedBy, line.via])).toEqual([
      [first?.deferredId, 'escalated', undefined, undefined],
      [second?.deferredId, 'resolved', 'lead-key', 'api'],
    ])
  })

  it('an escalation nobody answers fails the call once its `after` passes', async () => {
    const clock = createManualClock(START)
    const store = createMemoryRunStore()
    const handle = await startWorkflowRun(approvalFlow({ escalate: { to: 'ops', after: 60_000 } }), { store, clock })
    await untilArmed(clock)
    await clock.advance(3_600_000)
    await untilArmed(clock)
    await clock.advance(60_000)
    expect((await handle.done).disposition).toBe('failed')
    const lines = await allLines(store, handle.runId)
    expect(linesOfType(lines, 'deferred_expired').map((line) => line.applied)).toEqual(['escalated', 'rejected'])
    expect(linesOfType(lines, 'deferred_settled').map((line) => line.outcome)).toEqual(['escalated', 'expired'])
  })

  it('refuses a default that breaks the output schema, or a malformed policy, where the tool is defined', () => {
    const define = (onTimeout: unknown) => () => defineTool({ deferred: true, input: z.object({}), output: Decision, onTimeout: onTimeout as never })
    for (const bad of [{ default: { approved: 'no' } }, { default: () => 1 }, { escalate: { to: '' } }, { escalate: { to: 'ops', after: 'soon' } }, 'ignore', {}, { default: 1, escalate: { to: 'x' } }]) {
      let thrown: unknown
      try {
        define(bad)()
      } catch (error) {
        thrown = error
      }
      expect(RuntimeInputError.isInstance(thrown), JSON.stringify(bad)).toBe(true)
      expect((thrown as RuntimeInputError).code).toBe('DEFERRED_TOOL_INVALID')
    }
    expect(() => define({ default: { approved: 'no' } })()).toThrow(/onTimeout\.default.*approved/s)
    expect(define({ default: { approved: false } })()).toMatchObject({ deferred: true, onTimeout: { default: { approved: false } } })
  })
})

describe('a resume and a deferral’s deadline', () => {
  it('a resume after the deadline applies the policy from the journaled deadline at once, without opening the deferral again', async () => {
    const clock = createManualClock(START)
    const store = createFileRunStore(tempRunsDir())
    const flow = approvalFlow({ default: { approved: false } })
    const first = await startWorkflowRun(flow, { store, clock })
    await untilArmed(clock)
    first.suspend('process stopped')
    expect((await first.done).suspended).toBe(true)
    await clock.advance(2 * 3_600_000)
    const resumed = await createRuntime({ workflows: [], store }).resume(first.runId, { workflow: flow, clock })
    expect(await resumed.done).toMatchObject({ disposition: 'completed', result: { decision: { approved: false } } })
    const lines = await allLines(store, first.runId)
    expect(linesOfType(lines, 'deferred_open')).toHaveLength(1)
    expect(linesOfType(lines, 'deferred_expired')).toHaveLength(1)
    expect(linesOfType(lines, 'deferred_expired')[0]?.executionId).toMatch(/^resume-/)
  })

  it('a resume before the deadline waits only for what is left of it', async () => {
    const clock = createManualClock(START)
    const store = createMemoryRunStore()
    const flow = approvalFlow('reject')
    const first = await startWorkflowRun(flow, { store, clock })
    await untilArmed(clock)
    first.suspend('process stopped')
    await first.done
    await clock.advance(3_000_000)
    const resumed = await createRuntime({ workflows: [], store }).resume(first.runId, { workflow: flow, clock })
    await untilArmed(clock)
    expect(clock.pendingSleeps()[0]?.wakeAt).toBe(START + 3_600_000)
    await clock.advance(600_000)
    expect((await resumed.done).disposition).toBe('failed')
  })

  it('a resume after an escalation waits on the escalated deferral; the first is never opened or applied again', async () => {
    const clock = createManualClock(START)
    const store = createMemoryRunStore()
    const flow = approvalFlow({ escalate: { to: 'lead', after: '1h' } })
    const runtime = createRuntime({ store, workflows: [flow], defaults: { clock } })
    const first = await runtime.start('deadline-approval', { input: undefined })
    await untilArmed(clock)
    await clock.advance(3_600_000)
    await untilArmed(clock)
    first.suspend('deploy')
    await first.done
    const resumed = await runtime.resume(first.runId)
    await untilArmed(clock)
    const [pending] = await runtime.pendingDeferrals(first.runId)
    expect(pending).toMatchObject({ to: 'lead' })
    expect(await runtime.answerDeferred(first.runId, pending?.deferredId ?? '', { kind: 'resolved', result: { approved: true }, decidedBy: 'cli', via: 'cli' })).toMatchObject({ ok: true })
    expect(await resumed.done).toMatchObject({ disposition: 'completed', result: { decision: { approved: true } } })
    const lines = await allLines(store, first.runId)
    expect(linesOfType(lines, 'deferred_open')).toHaveLength(2)
    expect(linesOfType(lines, 'deferred_expired')).toHaveLength(1)
    expect(linesOfType(lines, 'deferred_settled').at(-1)).toMatchObject({ outcome: 'resolved', decidedBy: 'cli', via: 'cli' })
  })
})

/** Four approvals of one run, in parallel; the run's answer is theirs, in the script's order. */
const fourApprovals = defineWorkflow({
  name: 'four-approvals',
  tools: { approve: defineDeferredTool({ input: z.object({ who: z.string() }), output: z.object({ approved: z.boolean(), note: z.string() }) }) },
  async run({ tool }) {
    const decisions = await Promise.all(['legal', 'finance', 'security', 'ops'].map((who) => tool('approve', { who })))
    return { ok: decisions.every((decision) => decision.approved), decisions }
  },
})

/** Who answers which approval, and how: the server's route (a key), the inspector (a signed-in key), `locus resolve` in another process (kept by the store), code in the process. */
const DECIDERS = {
  legal: { decidedBy: 'legal-key', via: 'api', path: 'live' },
  finance: { decidedBy: 'finance-key', via: 'ui', path: 'live' },
  security: { decidedBy: 'cli', via: 'cli', path: 'store' },
  ops: { decidedBy: 'ops-bot', via: 'host', path: 'live' },
} as const

const ANSWERS: Record<keyof typeof DECIDERS, DeferredAnswer> = {
  legal: { kind: 'resolved', result: { approved: true, note: 'contract ok' } },
  finance: { kind: 'resolved', result: { approved: true, note: 'in budget' } },
  security: { kind: 'resolved', result: { approved: false, note: 'needs review' } },
  ops: { kind: 'resolved', result: { approved: true, note: 'capacity ok' } },
}

function settledOnce(handle: { subscribe(listener: (line: JournalLine) => void): () => void }, deferredId: string): Promise<void> {
  return new Promise((resolve) => {
    const stop = handle.subscribe((line) => {
      if (line.type !== 'deferred_settled' || line.deferredId !== deferredId) return
      queueMicrotask(stop)
      resolve()
    })
  })
}

async function approveInOrder(order: readonly (keyof typeof DECIDERS)[]): Promise<{ result: unknown; settled: JournalLine[] }> {
  const store = createMemoryRunStore()
  const runtime = createRuntime({ store, workflows: [fourApprovals] })
  const handle = await runtime.start('four-approvals', { input: undefined })
  let pending = await runtime.pendingDeferrals(handle.runId)
  while (pending.length < 4) {
    await new Promise((resolve) => setTimeout(resolve, 2))
    pending = await runtime.pendingDeferrals(handle.runId)
  }
  const idOf = new Map(pending.map((open) => [(open.args as { who: keyof typeof DECIDERS }).who, open.deferredId]))
  for (const who of order) {
    const id = idOf.get(who) ?? ''
    const { path, ...decider } = DECIDERS[who]
    const answer = { ...ANSWERS[who], ...decider }
    const settled = settledOnce(handle, id)
    // One answer settles before the next is given: the order is the one asked for.
    const outcome = path === 'store' ? await keepDeferredAnswer(store, handle.runId, id, answer) : await runtime.answerDeferred(handle.runId, id, answer)
    expect(outcome.ok).toBe(true)
    await settled
  }
  const result = await handle.done
  const lines = await allLines(store, handle.runId)
  return { result: result.result, settled: linesOfType(lines, 'deferred_settled').map((line) => ({ ...line, seq: 0, ts: '', runId: '', executionId: '' })) }
}

describe('parallel approvals of one run', () => {
  it('resolved in all 24 orders (API, inspector, CLI and host mixed) give the same result, and each deferred_settled names who decided and how', async () => {
    const orders = permutations(['legal', 'finance', 'security', 'ops'] as const)
    expect(orders).toHaveLength(24)
    const runs = await Promise.all(orders.map((order) => approveInOrder(order)))
    const expected = { ok: false, decisions: (['legal', 'finance', 'security', 'ops'] as const).map((who) => (ANSWERS[who] as { result: unknown }).result) }
    for (const [index, run] of runs.entries()) {
      expect(run.result, orders[index]?.join(',')).toEqual(expected)
      const byId = new Map(run.settled.map((line) => [line.type === 'deferred_settled' ? line.deferredId : '', line]))
      expect(byId.size).toBe(4)
      // The journal's order of settlements is the order the answers were given.
      expect(run.settled.map((line) => (line.type === 'deferred_settled' ? (line.result as { note: string }).note : ''))).toEqual(
        orders[index]?.map((who) => (ANSWERS[who] as unknown as { result: { note: string } }).result.note),
      )
      for (const line of run.settled) {
        const who = Object.entries(ANSWERS).find(([, answer]) => JSON.stringify((answer as { result: unknown }).result) === JSON.stringify(line.type === 'deferred_settled' ? line.result : undefined))?.[0] as keyof typeof DECIDERS
        expect(line).toMatchObject({ outcome: 'resolved', decidedBy: DECIDERS[who].decidedBy, via: DECIDERS[who].via })
      }
    }
  })
})

function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]]
  return items.flatMap((item, index) => permutations([...items.slice(0, index), ...items.slice(index + 1)]).map((rest) => [item, ...rest]))
}
