import { type Runtime, createRuntime, createScriptedHost, defineDeferredTool, defineTool, defineWorkflow } from '@locus/runtime'
import { z } from 'zod'

/**
 * The runs the inspector is tested on, all from the scripted host: a partial
 * research fan-out, a retried call whose discarded attempt threw, a
 * hard-stopped group with slots never dispatched, a run waiting on a deferred
 * tool, and a replay that diverged from its recording.
 */

const lookup = (name: string, behaviour: 'ok' | 'empty' | 'down') =>
  defineTool({
    input: z.object({ topic: z.string() }),
    run: ({ topic }: { topic: string }) => {
      if (behaviour === 'down') throw Object.assign(new Error(`${name} is unreachable`), { retryable: false })
      return behaviour === 'empty' ? { hits: [] } : { hits: [`${name} on ${topic}`] }
    },
  })

/** Three sources checked in parallel; one is down, so the answer is partial with a gap and a caveat. */
export const research = defineWorkflow({
  name: 'research',
  workspaceMode: 'read-only',
  input: z.object({ topic: z.string().default('refund policy') }),
  tools: { docs: lookup('docs', 'ok'), tickets: lookup('tickets', 'empty'), billing: lookup('billing', 'down') },
  run: async ({ input, tool, agent, parallel }) => {
    const sources = ['docs', 'tickets', 'billing'] as const
    const results = await parallel(
      sources.map((source) => async () => {
        try {
          const found: { hits: string[] } = await tool(source, { topic: input.topic }, { retry: { timeout_secs: 30, max_retries: 1, backoff_base_secs: 0, backoff_max_secs: 0 } })
          return { source, state: found.hits.length === 0 ? ('empty' as const) : ('found' as const) }
        } catch (error) {
          return { source, state: 'down' as const, reason: error instanceof Error ? error.message : String(error) }
        }
      }),
      { label: 'sources' },
    )
    const summary = await agent(`summarise research on ${input.topic}`, { agent: 'writer', budgets: { maxToolCalls: 40 } })
    const gaps = results.filter((result) => result.state === 'down').map((result) => ({ tool: result.source, criticality: 'enriching', reason: 'reason' in result ? result.reason : 'down' }))
    return {
      ok: true,
      text: summary.answer,
      found: true,
      partial: gaps.length > 0,
      gaps,
      caveats: gaps.map((gap) => `Billing data was not checked: ${gap.reason}.`),
      gathered: results.filter((result) => result.state !== 'down').map((result) => ({ tool: result.source, state: result.state, summary: result.state === 'empty' ? `checked ${result.source}: none found` : `checked ${result.source}` })),
    }
  },
})

/** One agent call whose first attempt throws (an SDK outage) and whose second answers. */
export const retried = defineWorkflow({
  name: 'retried',
  run: async ({ agent }) => ({ ok: true, answer: (await agent('flaky question', { agent: 'analyst', attempts: 3 })).answer }),
})

/** Four branches, one at a time, under an invocation cap of two: the cap hard-stops the group and two slots are never dispatched. */
export const capped = defineWorkflow({
  name: 'capped',
  run: async ({ agent, parallel }) => {
    await parallel([1, 2, 3, 4].map((index) => async () => (await agent(`branch ${index}`)).answer), { concurrency: 1, label: 'branches' })
    return { ok: true }
  },
})

/** Three tickets through fetch then classify; classifying the second fails, so the pipeline fails at its second stage. */
export const staged = defineWorkflow({
  name: 'staged',
  tools: {
    fetch: defineTool({ input: z.object({ id: z.string() }), run: ({ id }: { id: string }) => ({ id, body: `ticket ${id}` }) }),
    classify: defineTool({
      input: z.object({ id: z.string() }),
      run: ({ id }: { id: string }) => {
        if (id === 'T-2') throw Object.assign(new Error('the classifier rejected T-2'), { retryable: false })
        return { id, priority: 'P2' }
      },
    }),
  },
  run: async ({ tool, pipeline }) => {
    await pipeline(
      ['T-1', 'T-2', 'T-3'],
      [async (id: string) => tool('fetch', { id }), async (ticket: { id: string }) => tool('classify', { id: ticket.id })],
      { concurrency: 1, label: 'tickets' },
    )
    return { ok: true }
  },
})

/** Waits on a person to approve a refund. */
export const approval = defineWorkflow({
  name: 'approval',
  tools: { approve: defineDeferredTool({ input: z.object({ amount: z.number() }), output: z.object({ approved: z.boolean() }) }) },
  run: async ({ tool }) => ({ ok: true, approval: await tool('approve', { amount: 42 }) }),
})

/** Asks a question built from its input; replayed with another prompt it diverges. */
export const asks = (version: 1 | 2) =>
  defineWorkflow({
    name: 'asks',
    run: async ({ agent }) => {
      const first = await agent(version === 1 ? 'what is the refund window?' : 'what is the refund window in days?')
      const second = await agent('and for returns?')
      return { ok: true, answers: [first.answer, second.answer] }
    },
  })

/** Releases the `stepper` workflow's steps one at a time, so a test decides when its next lines are written. */
export interface Gate {
  /** Lets the next waiting step run. */
  open(): void
  wait(): Promise<void>
}

export function createGate(): Gate {
  let opened = 0
  const waiting: (() => void)[] = []
  return {
    open() {
      const next = waiting.shift()
      if (next === undefined) opened += 1
      else next()
    },
    wait() {
      if (opened > 0) {
        opened -= 1
        return Promise.resolve()
      }
      return new Promise((resolve) => waiting.push(resolve))
    },
  }
}

/** A shared gate for the `stepper` workflow (one stepper run at a time). */
export const stepperGate = createGate()

/** Calls a tool `steps` times, each call waiting on {@link stepperGate}: a live run whose lines arrive when a test says. */
export const stepper = defineWorkflow({
  name: 'stepper',
  input: z.object({ steps: z.number().int().min(1).default(3) }),
  tools: {
    step: defineTool({
      input: z.object({ index: z.number() }),
      run: async ({ index }: { index: number }) => {
        await stepperGate.wait()
        return { index }
      },
    }),
  },
  run: async ({ input, tool }) => {
    for (let index = 0; index < input.steps; index += 1) await tool('step', { index })
    return { ok: true, steps: input.steps }
  },
})

export const INSPECTOR_WORKFLOWS = [research, retried, capped, approval, asks(1), stepper, staged]

/** A runtime with the inspector's workflows on the scripted host. */
export function inspectorRuntime(runsDir: string): Runtime {
  const host = createScriptedHost({
    rules: [
      { match: { prompt: 'flaky' }, steps: [{ throw: 'host-turn-timeout', message: 'the turn timed out before an answer' }, { text: 'recovered answer' }] },
      { match: { prompt: /^summarise/ }, steps: [{ text: 'Refunds take 14 days; tickets show nothing open.' }] },
      { steps: [{ text: 'fine' }] },
    ],
  })
  return createRuntime({ workflows: INSPECTOR_WORKFLOWS, host, runsDir })
}

export interface InspectorRuns {
  readonly research: string
  readonly retried: string
  readonly capped: string
  /** The run waiting on its deferred tool (left waiting). */
  readonly approval: string
  readonly deferredId: string
  /** The run whose replay diverged. */
  readonly asks: string
  /** The pipeline that failed at its second stage. */
  readonly staged: string
}

/** Waits for `check` to hold, polling every 10 ms; throws `what` after 10 s. */
export async function until<T>(check: () => Promise<T | undefined>, what: string): Promise<T> {
  for (let tries = 0; tries < 1000; tries += 1) {
    const value = await check()
    if (value !== undefined) return value
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`timed out waiting for ${what}`)
}

/** Runs every scenario on `runtime` and answers the run ids. The approval run is left waiting. */
export async function produceInspectorRuns(runtime: Runtime): Promise<InspectorRuns> {
  const done = async (name: string, options: Parameters<Runtime['start']>[1] = {}): Promise<string> => {
    const handle = await runtime.start(name, options)
    await handle.done.catch(() => undefined)
    return handle.runId
  }
  const researchId = await done('research', { input: { topic: 'refund policy' } })
  const retriedId = await done('retried')
  const cappedId = await done('capped', { budgets: { maxTotalAgentInvocations: 2 } })
  const stagedId = await done('staged')
  const asksId = await done('asks')
  const replay = await runtime.replay(asksId, { workflow: asks(2) })
  await replay.done.catch(() => undefined)
  const approvalHandle = await runtime.start('approval')
  const deferral = await until(async () => (await runtime.pendingDeferrals(approvalHandle.runId))[0], 'the approval deferral')
  return { research: researchId, retried: retriedId, capped: cappedId, approval: approvalHandle.runId, deferredId: deferral.deferredId, asks: asksId, staged: stagedId }
}
