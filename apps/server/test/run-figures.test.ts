import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createPriceTable, parsePriceFile } from '@locus/cost'
import { parseHTML } from 'linkedom'
import { type RunHandle, createRuntime, createScriptedHost, defineDeferredTool, defineTool, defineWorkflow } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createServer } from '../src/index.js'
import { tempRunsDir, testServer } from './helpers.js'

const NO_WAIT = { timeout_secs: null, max_retries: 3, backoff_base_secs: 0, backoff_max_secs: 0 }

/** Resolves once the handle waits on deferrals only. */
function waitingOnly(handle: RunHandle): Promise<void> {
  return new Promise((resolve) => {
    if (handle.waitingOnly()) {
      resolve()
      return
    }
    const stop = handle.onWaitingChange((now) => {
      if (!now) return
      stop()
      resolve()
    })
  })
}

/** A tool that fails once, then a deferred approval: the run retries before it parks. */
function approvalWorkflow() {
  let lookups = 0
  return defineWorkflow({
    name: 'retry-then-park',
    tools: {
      lookup: defineTool({
        input: z.object({}),
        run: () => {
          lookups += 1
          if (lookups === 1) throw Object.assign(new Error('upstream 503'), { retryable: true, code: 'provider_error' })
          return { found: true }
        },
      }),
      approve: defineDeferredTool({ input: z.object({}), output: z.object({ by: z.string() }) }),
    },
    run: async ({ tool }) => ({ ok: true, found: await tool('lookup', {}, { retry: NO_WAIT }), by: (await tool('approve', {})).by }),
  })
}

interface RunBody {
  status: string
  startedAt: string
  durationMs: number
  counts: Record<string, number>
  executions: { executionId: string; kind: string; status: string; startedAt: string | null; durationMs: number | null; counts: Record<string, number> }[]
}

/** Parks a run that retried, then resumes and answers it: a run of two executions, the first without run_end. */
async function parkedThenResumed() {
  const runtime = createRuntime({ workflows: [approvalWorkflow()], runsDir: tempRunsDir() })
  const app = createServer({ runtime })
  const first = await runtime.start('retry-then-park')
  await waitingOnly(first)
  first.suspend('the server stops')
  await first.done
  const [pending] = await runtime.pendingDeferrals(first.runId)
  const resumed = await runtime.resume(first.runId)
  await waitingOnly(resumed)
  expect(await runtime.answerDeferred(first.runId, pending?.deferredId ?? '', { kind: 'resolved', result: { by: 'ana' } })).toMatchObject({ ok: true })
  expect(await resumed.done).toMatchObject({ disposition: 'completed' })
  return { runtime, app, runId: first.runId }
}

describe('GET /v1/runs/{id} adds up every execution', () => {
  it('counts the retry before the park, starts at the root and lasts both executions; each execution keeps its own figures', async () => {
    const { app, runId, runtime } = await parkedThenResumed()
    const body = (await (await app.request(`/v1/runs/${runId}`)).json()) as RunBody
    const stored = await runtime.get(runId)
    expect(body.status).toBe('completed')
    expect(body.counts).toMatchObject({ toolCalls: 2, toolAttempts: 3, toolRetries: 1 })
    expect(body.startedAt).toBe(stored.root.view.runStart?.ts)
    const [root, resume] = body.executions
    expect(resume?.counts).toMatchObject({ toolRetries: 0, replayedToolCalls: 1 })
    expect(root?.counts).toMatchObject({ toolRetries: 1 })
    expect(resume?.durationMs).toBe(stored.latest.view.runEnd?.durationMs)
    expect(body.durationMs).toBe((root?.durationMs ?? Number.NaN) + (resume?.durationMs ?? Number.NaN))
    expect(root?.startedAt).toBe(body.startedAt)
    // The parked root ended without run_end: suspended, never running for ever.
    expect(body.executions.map((execution) => execution.status)).toEqual(['suspended', 'completed'])
  })

  it('the inspector lists the run’s retries, and its page shows the whole run beside the execution', async () => {
    const { app, runId } = await parkedThenResumed()
    const list = parseHTML(await (await app.request('/')).text()) as unknown as { document: { querySelector(selector: string): { textContent: string | null } | null } }
    expect(list.document.querySelector(`tr[data-run-id="${runId}"] td[data-label="Retries"]`)?.textContent).toBe('1')
    const run = parseHTML(await (await app.request(`/runs/${runId}`)).text()) as unknown as { document: { querySelector(selector: string): { textContent: string | null } | null } }
    expect(run.document.querySelector('[data-testid="run-retries"]')?.textContent).toContain('1 retried attempts')
  })
})

describe('the inspector says what the journal knows', () => {
  it('shows a repaired choice on its attempt', async () => {
    const classify = defineWorkflow({ name: 'classify', run: async ({ agent }) => ({ ok: true, level: (await agent('classify', { choice: ['low', 'high'] })).answer }) })
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'probably high-ish' }, { text: 'high' }] }] })
    const runtime = createRuntime({ workflows: [classify], host, runsDir: tempRunsDir() })
    const handle = await runtime.start('classify')
    await handle.done
    const page = parseHTML(await (await createServer({ runtime }).request(`/runs/${handle.runId}`)).text()) as unknown as { document: { querySelector(selector: string): { textContent: string | null } | null } }
    expect(page.document.querySelector('[data-testid="choice-repaired"]')?.textContent).toMatch(/first answered "probably high-ish", none of the choices; asked again, it answered high/)
  })

  it('shows every run’s result, not only an Answer’s, collapsed when large', async () => {
    const small = defineWorkflow({ name: 'small', run: () => ({ ok: true, level: 'high', count: 3 }) })
    const large = defineWorkflow({ name: 'large', run: () => ({ ok: true, rows: Array.from({ length: 300 }, (_, index) => `row ${index}`) }) })
    const runtime = createRuntime({ workflows: [small, large], runsDir: tempRunsDir() })
    const app = createServer({ runtime })
    type Found = { textContent: string | null; hasAttribute(name: string): boolean } | null
    const resultOf = async (name: string): Promise<Found> => {
      const handle = await runtime.start(name)
      await handle.done
      const page = parseHTML(await (await app.request(`/runs/${handle.runId}`)).text()) as unknown as { document: { querySelector(selector: string): Found } }
      return page.document.querySelector('[data-testid="result"]')
    }
    const shown = await resultOf('small')
    expect(shown?.textContent).toContain('"level": "high"')
    expect(shown?.hasAttribute('open')).toBe(true)
    const collapsed = await resultOf('large')
    expect(collapsed?.textContent).toContain('"row 299"')
    expect(collapsed?.hasAttribute('open')).toBe(false)
  })
})

describe('GET /v1/runs/{id}/events of a run whose run_end line is torn', () => {
  it('ends once the run’s end is known from its result.json, after every readable line', async () => {
    const runsDir = tempRunsDir()
    const done = defineWorkflow({ name: 'done', run: () => ({ ok: true }) })
    const runtime = createRuntime({ workflows: [done], runsDir })
    const handle = await runtime.start('done')
    await handle.done
    // Tear the last line, as a crash mid-write of run_end leaves it; result.json was written before the crash.
    const journal = join(runsDir, handle.runId, 'journal.jsonl')
    const text = readFileSync(journal, 'utf8').trimEnd()
    const cut = text.lastIndexOf('\n')
    writeFileSync(journal, `${text.slice(0, cut + 1)}${text.slice(cut + 1, cut + 20)}`)
    const server = await testServer({ runtime })
    const controller = new AbortController()
    const timer = setTimeout(() => {
      controller.abort()
    }, 5_000)
    const response = await fetch(`${server.url}/v1/runs/${handle.runId}/events`, { signal: controller.signal })
    const body = await response.text()
    clearTimeout(timer)
    expect(body).toContain('event: run_start')
    expect(body).not.toContain('event: run_end')
  })
})

describe('GET /v1/runs/{id}: what a priced run cost', () => {
  it('answers the cost added up over the run, and null for a run that was not priced', async () => {
    const prices = createPriceTable({ prices: parsePriceFile({ models: { scripted: { input: '2', output: '8' } } }) })
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'done', usage: { inputTokens: 500, outputTokens: 50 } }] }] })
    const workflow = defineWorkflow({ name: 'priced', run: async ({ agent }) => ({ ok: true, answer: (await agent('go')).answer }) })
    const runsDir = tempRunsDir()
    const priced = createRuntime({ workflows: [workflow], host, runsDir, defaults: { prices } })
    const handle = await priced.start(workflow)
    await handle.done
    const server = await testServer({ runtime: priced })
    const { body } = await server.json<{ cost: unknown }>(`/v1/runs/${handle.runId}`)
    expect(body.cost).toEqual({ usd: '0.001400', retryOverheadUsd: '0.000000', unpricedRequests: 0, table: prices.version })

    const plain = createRuntime({ workflows: [workflow], host, runsDir })
    const unpriced = await plain.start(workflow)
    await unpriced.done
    expect((await server.json<{ cost: unknown }>(`/v1/runs/${unpriced.runId}`)).body.cost).toBeNull()
  })
})
