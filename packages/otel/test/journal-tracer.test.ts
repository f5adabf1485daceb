import { createPriceTable, parsePriceFile } from '@locus/cost'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { JournalLine } from '@locus/journal'
import { CallError } from '@locus/retry'
import { type AgentHost, createScriptedHost, defineDeferredTool, defineTool, defineWorkflow, resumeRun, runWorkflowScript, startWorkflowRun } from '@locus/runtime'
import { GEN_AI_SEMCONV_VERSION } from '../src/index.js'
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { SpanStatusCode } from '@opentelemetry/api'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createJournalTracer } from '../src/index.js'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})
function runsDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'locus-otel-'))
  dirs.push(dir)
  return dir
}

function tracing(captureContent = false) {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const tracer = createJournalTracer({ tracer: provider.getTracer('locus-test'), captureContent })
  return {
    exporter,
    onEvent: (line: JournalLine) => {
      tracer.apply(line)
    },
  }
}

const parentOf = (span: ReadableSpan): string | undefined => span.parentSpanContext?.spanId
const named = (spans: readonly ReadableSpan[], prefix: string): ReadableSpan[] => spans.filter((span) => span.name.startsWith(prefix))

function workflow(failFirstTool: boolean) {
  let toolCalls = 0
  return defineWorkflow({
    name: 'traced',
    tools: {
      lookup: defineTool({
        input: z.object({ id: z.string() }),
        run: ({ id }) => {
          toolCalls += 1
          if (failFirstTool && toolCalls === 1) throw new CallError('upstream 503', { retryable: true, code: 'provider_error' })
          return { id }
        },
      }),
    },
    run: async ({ agent, tool, parallel }) => {
      const [a, b] = await parallel([() => agent('secret prompt A', { attempts: 2 }), () => agent('secret prompt B')], { label: 'fan' })
      const found = await tool('lookup', { id: 'secret-arg' }, { retry: { timeout_secs: null, max_retries: 2, backoff_base_secs: 0, backoff_max_secs: 0 } })
      return { ok: true, a: a.answer, b: b.answer, found }
    },
  })
}

describe('createJournalTracer', () => {
  it('gives the run, its group, each logical agent call and each physical attempt a span, with the right parents', async () => {
    const { exporter, onEvent } = tracing()
    const host = createScriptedHost({ rules: [{ match: { prompt: 'secret prompt A' }, steps: [{ throw: 'host-turn-timeout' }, { text: 'A' }] }, { steps: [{ text: 'B' }] }] })
    const run = await runWorkflowScript(workflow(true), { host, runsDir: runsDir(), onEvent })
    expect(run.disposition).toBe('completed')
    const spans = exporter.getFinishedSpans()
    const [root] = named(spans, 'invoke_workflow traced')
    expect(root?.attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_workflow', 'locus.disposition': 'completed' })
    expect(root?.attributes['locus.semconv_version']).toBe(GEN_AI_SEMCONV_VERSION)
    const [group] = named(spans, 'parallel fan')
    expect(parentOf(group as ReadableSpan)).toBe(root?.spanContext().spanId)
    expect(group?.attributes).toMatchObject({ 'locus.group_kind': 'parallel', 'locus.total': 2, 'locus.completed': 2, 'locus.failed': 0, 'locus.not_dispatched': 0 })
    const logical = spans.filter((span) => span.attributes['locus.logical_call_id'] !== undefined && span.attributes['locus.attempt'] === undefined)
    expect(logical).toHaveLength(2)
    for (const call of logical) expect(parentOf(call)).toBe(group?.spanContext().spanId)
    const attemptsOfA = spans.filter((span) => span.name === 'invoke_agent default attempt 1' || span.name === 'invoke_agent default attempt 2')
    expect(attemptsOfA).toHaveLength(3)
    const failed = attemptsOfA.filter((span) => span.status.code === SpanStatusCode.ERROR)
    expect(failed).toHaveLength(1)
    expect(failed[0]?.attributes).toMatchObject({ 'locus.failure_cause': 'host-turn-timeout', 'locus.attempt': 1, 'locus.status': 'threw' })
    // The retried call completed in the end: its logical span is not an error; only its failed attempt is.
    expect(logical.every((span) => span.status.code !== SpanStatusCode.ERROR)).toBe(true)
    const logicalIds = new Set(logical.map((span) => span.spanContext().spanId))
    for (const attempt of attemptsOfA) expect(logicalIds.has(parentOf(attempt) ?? '')).toBe(true)
    const toolSpans = named(spans, 'execute_tool lookup')
    expect(toolSpans.map((span) => [span.attributes['locus.attempt'], span.status.code])).toEqual([
      [1, SpanStatusCode.ERROR],
      [2, SpanStatusCode.UNSET],
    ])
    expect(toolSpans.every((span) => parentOf(span) === root?.spanContext().spanId)).toBe(true)
    // The tool's retry is an event on the attempt it led to, as an agent's is on its logical call.
    expect(toolSpans[0]?.events.map((event) => event.name)).toEqual([])
    expect(toolSpans[1]?.events.map((event) => [event.name, event.attributes])).toEqual([
      ['locus.retry', { 'locus.cause': 'provider_error', 'locus.from_attempt': 1, 'locus.to_attempt': 2, 'locus.delay_ms': 0 }],
    ])
  })

  it('keeps prompts and tool arguments off spans unless asked', async () => {
    for (const captureContent of [false, true]) {
      const { exporter, onEvent } = tracing(captureContent)
      const host = createScriptedHost({ rules: [{ steps: [{ text: 'fine' }] }] })
      await runWorkflowScript(workflow(false), { host, runsDir: runsDir(), onEvent })
      const everything = JSON.stringify(exporter.getFinishedSpans().map((span) => span.attributes))
      expect(everything.includes('secret prompt A')).toBe(captureContent)
      expect(everything.includes('secret-arg')).toBe(captureContent)
    }
  })

  it('makes no new span for a call answered from the recording on resume, only an event', async () => {
    const dir = runsDir()
    const flow = defineWorkflow({ name: 'two', run: async ({ agent }) => ({ ok: true, a: (await agent('a')).answer, b: (await agent('b')).answer }) })
    const failing = createScriptedHost({ rules: [{ match: { prompt: 'b' }, steps: [{ fail: 'provider-error', reason: 'down' }] }, { steps: [{ text: 'A' }] }] })
    const first = await runWorkflowScript(flow, { host: failing, runsDir: dir })
    const { exporter, onEvent } = tracing()
    await resumeRun(first.runId, flow, { host: createScriptedHost({ rules: [{ steps: [{ text: 'fine' }] }] }), runsDir: dir, onEvent })
    const spans = exporter.getFinishedSpans()
    const root = named(spans, 'invoke_workflow two')[0]
    expect(spans.filter((span) => span.name.startsWith('invoke_agent') && span.attributes['locus.attempt'] !== undefined)).toHaveLength(1)
    expect(root?.events.map((event) => [event.name, event.attributes?.['locus.status']])).toEqual([['locus.replayed', 'completed']])
  })

  it('gives a chat span to an LLM request a cancellation cut short (issue 30): every request sent is counted', async () => {
    // A host that honours the abort as a provider host does: the request in flight is reported as cancelled.
    let sent = 0
    const host: AgentHost = {
      name: 'reporting',
      openSession: () => ({
        prompt: (_text, options) =>
          new Promise((resolve) => {
            sent += 1
            // Settled a moment after the abort, as a request torn down over HTTP is.
            options.signal.addEventListener('abort', () => {
              setImmediate(() => {
                resolve({ text: '', stopReason: 'aborted', llmAttempts: [{ model: 'm-small', turn: 1, step: 1, attempt: 1, maxAttempts: 1, outcome: 'cancelled', durationMs: 5, streamed: true }] })
              })
            })
          }),
        transcript: () => [],
      }),
    }
    const { exporter, onEvent } = tracing()
    const controller = new AbortController()
    const running = runWorkflowScript(async ({ agent }) => ({ ok: true, answer: (await agent('wait')).answer }), { host, runsDir: runsDir(), onEvent, signal: controller.signal })
    while (sent === 0) await new Promise((resolve) => setImmediate(resolve))
    controller.abort('Ctrl-C')
    expect(await running).toMatchObject({ disposition: 'cancelled' })
    const chats = named(exporter.getFinishedSpans(), 'chat m-small')
    expect(chats).toHaveLength(sent)
    expect(chats[0]?.status.code).toBe(SpanStatusCode.ERROR)
  })

  it('gives each LLM request attempt a chat span under its agent attempt, with the model, and the usage when it was the one answer', async () => {
    // A host that reports its LLM requests as a provider host does: one rate-limited attempt, then an answer.
    const host: AgentHost = {
      name: 'reporting',
      openSession: () => ({
        prompt: () =>
          Promise.resolve({
            text: 'done',
            stopReason: 'end' as const,
            usage: { inputTokens: 120, outputTokens: 7 },
            llmAttempts: [
              { model: 'm-small', turn: 1, step: 1, attempt: 1, maxAttempts: 3, outcome: 'failed' as const, code: 'rate_limited' as const, status: 429, durationMs: 40, delayBeforeNextMs: 100, streamed: false },
              { model: 'm-small', turn: 1, step: 1, attempt: 2, maxAttempts: 3, outcome: 'succeeded' as const, durationMs: 250, streamed: true, timeToFirstTokenMs: 90 },
            ],
          }),
        transcript: () => [],
      }),
    }
    const { exporter, onEvent } = tracing()
    await runWorkflowScript(async ({ agent }) => ({ ok: true, answer: (await agent('secret prompt C')).answer }), { host, runsDir: runsDir(), onEvent })
    const spans = exporter.getFinishedSpans()
    const [attempt] = named(spans, 'invoke_agent default attempt 1')
    const chats = named(spans, 'chat m-small')
    expect(chats).toHaveLength(2)
    for (const chat of chats) expect(parentOf(chat)).toBe(attempt?.spanContext().spanId)
    const [failed, answered] = chats
    expect(failed?.attributes).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'm-small', 'locus.llm_attempt': 1, 'error.type': 'rate_limited', 'http.response.status_code': 429 })
    expect(failed?.status.code).toBe(SpanStatusCode.ERROR)
    expect(failed?.attributes['gen_ai.usage.input_tokens']).toBeUndefined()
    expect(answered?.attributes).toMatchObject({ 'locus.llm_attempt': 2, 'gen_ai.usage.input_tokens': 120, 'gen_ai.usage.output_tokens': 7 })
    expect(answered?.status.code).toBe(SpanStatusCode.UNSET)
    // Laid end to end: the answer starts after the failed request and its backoff.
    const ms = (time: readonly [number, number]): number => time[0] * 1000 + time[1] / 1e6
    expect(ms((answered as ReadableSpan).startTime) - ms((failed as ReadableSpan).endTime)).toBeCloseTo(100, 0)
    expect(ms((answered as ReadableSpan).endTime) - ms((answered as ReadableSpan).startTime)).toBeCloseTo(250, 0)
    expect(JSON.stringify(spans.map((span) => span.attributes))).not.toContain('secret prompt C')
  })

  it('puts on each chat span the usage the host reported for that request, when a turn made several', async () => {
    // A tool round trip: two successful requests in one agent attempt, each with its own usage.
    const host: AgentHost = {
      name: 'reporting',
      openSession: () => ({
        prompt: () =>
          Promise.resolve({
            text: 'done',
            stopReason: 'end' as const,
            usage: { inputTokens: 41, outputTokens: 7 },
            llmAttempts: [
              { model: 'm-small', turn: 1, step: 1, attempt: 1, maxAttempts: 1, outcome: 'succeeded' as const, durationMs: 30, streamed: true, usage: { inputTokens: 11, outputTokens: 5 } },
              { model: 'm-small', turn: 1, step: 2, attempt: 1, maxAttempts: 1, outcome: 'succeeded' as const, durationMs: 20, streamed: true, usage: { inputTokens: 30, outputTokens: 2 } },
            ],
          }),
        transcript: () => [],
      }),
    }
    const { exporter, onEvent } = tracing()
    const dir = runsDir()
    // Priced at $1 in and $4 out per million tokens: each request's cost goes on its chat span, their sum on the attempt's.
    const prices = createPriceTable({ prices: parsePriceFile({ models: { 'm-small': { input: '1', output: '4' } } }) })
    const run = await runWorkflowScript(async ({ agent }) => ({ ok: true, answer: (await agent('two steps')).answer }), { host, runsDir: dir, onEvent, prices })
    const chats = named(exporter.getFinishedSpans(), 'chat m-small')
    expect(chats.map((chat) => [chat.attributes['locus.step'], chat.attributes['gen_ai.usage.input_tokens'], chat.attributes['gen_ai.usage.output_tokens'], chat.attributes['locus.cost.usd']])).toEqual([
      [1, 11, 5, 0.000031],
      [2, 30, 2, 0.000038],
    ])
    expect(named(exporter.getFinishedSpans(), 'invoke_agent default attempt 1')[0]?.attributes).toMatchObject({ 'locus.cost.usd': 0.000069, 'locus.cost.table': prices.version })
    // The usage is journaled on each llm_attempt line, so a trace built later from the journal has it too.
    const journal = readFileSync(join(run.runDir, 'journal.jsonl'), 'utf8')
    const usages = journal
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; usage?: unknown })
      .filter((line) => line.type === 'llm_attempt')
      .map((line) => line.usage)
    expect(usages).toEqual([
      { inputTokens: 11, outputTokens: 5 },
      { inputTokens: 30, outputTokens: 2 },
    ])
  })

  it('ends a deferred tool’s span when the wait opens and gives the answer a span linked to it', async () => {
    const { exporter, onEvent } = tracing()
    const flow = defineWorkflow({
      name: 'approval',
      tools: { sign_off: defineDeferredTool({ input: z.object({ amount: z.number() }), output: z.object({ approved: z.boolean() }) }) },
      run: async ({ tool }) => ({ ok: true, decision: await tool('sign_off', { amount: 7 }) }),
    })
    const opened: string[] = []
    const handle = await startWorkflowRun(flow, {
      runsDir: runsDir(),
      onEvent: (line) => {
        onEvent(line)
        if (line.type === 'deferred_open') opened.push(line.deferredId)
      },
    })
    for (let tries = 0; tries < 200 && opened.length === 0; tries += 1) await new Promise((resolve) => setTimeout(resolve, 5))
    // The wait is open: the tool's span has ended already, the run's has not.
    const waiting = named(exporter.getFinishedSpans(), 'execute_tool sign_off')
    expect(waiting).toHaveLength(1)
    expect(waiting[0]?.attributes).toMatchObject({ 'locus.status': 'waiting', 'locus.deferred_id': opened[0] })
    expect(named(exporter.getFinishedSpans(), 'invoke_workflow')).toHaveLength(0)
    expect(handle.resolveDeferred(opened[0] ?? '', { approved: true }).ok).toBe(true)
    expect((await handle.done).disposition).toBe('completed')
    const spans = exporter.getFinishedSpans()
    const [root] = named(spans, 'invoke_workflow approval')
    const [resolved] = named(spans, 'resolve_deferred sign_off')
    expect(resolved?.links.map((link) => link.context.spanId)).toEqual([waiting[0]?.spanContext().spanId])
    expect(resolved?.attributes).toMatchObject({ 'locus.deferred_id': opened[0], 'locus.deferred_outcome': 'resolved', 'locus.status': 'completed' })
    expect(parentOf(resolved as ReadableSpan)).toBe(root?.spanContext().spanId)
    expect(JSON.stringify(spans.map((span) => span.attributes))).not.toContain('"amount"')
  })

  it('gives each spawn() attempt a span under its group, with the child’s execution and disposition, and an error when the child failed', async () => {
    const { exporter, onEvent } = tracing()
    const child = defineWorkflow({ name: 'child', input: z.object({ fail: z.boolean() }), run: ({ input }) => (input.fail ? { ok: false, reason: 'no' } : { ok: true }) })
    const parent = defineWorkflow({
      name: 'parent',
      run: async ({ spawn, parallel }) => {
        const settled = await parallel([() => spawn(child, { fail: false }), () => spawn(child, { fail: true })], { label: 'kids' }).catch(() => 'failed')
        return { ok: true, settled }
      },
    })
    await runWorkflowScript(parent, { runsDir: runsDir(), onEvent })
    const spans = exporter.getFinishedSpans()
    const [group] = named(spans, 'parallel kids')
    const children = named(spans, 'invoke_workflow child')
    expect(children).toHaveLength(2)
    for (const span of children) expect(parentOf(span)).toBe(group?.spanContext().spanId)
    expect(children.map((span) => [span.attributes['locus.status'], span.status.code]).sort()).toEqual([
      ['completed', SpanStatusCode.UNSET],
      ['failed', SpanStatusCode.ERROR],
    ])
    expect(children.every((span) => typeof span.attributes['locus.child_execution_id'] === 'string')).toBe(true)
  })
})
