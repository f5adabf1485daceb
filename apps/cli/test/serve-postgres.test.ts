import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { adminQuery, repoRoot, runLocus, startLocus, tempDir, until, waitForOutput } from './helpers.js'

const url = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL
const runtimeEntry = join(repoRoot, 'packages', 'runtime', 'dist', 'index.js')
const zodEntry = join(repoRoot, 'packages', 'runtime', 'node_modules', 'zod', 'index.js')

function admin(sql: string): Promise<void> {
  return adminQuery(url, sql)
}

const CALLBACK_SECRET = 'serve-pg-callback-secret-0001'

describe('locus serve --database-url, with the runs executed by a locus worker', () => {
  const ci = (process.env.CI ?? '') !== ''
  const database = `locus_serve_pg_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
  const children: ChildProcess[] = []
  let base = ''
  let databaseUrl = ''

  beforeAll(async () => {
    if (url === undefined) return
    await admin(`create database "${database}"`)
    const parsed = new URL(url)
    parsed.pathname = `/${database}`
    databaseUrl = parsed.href
    const dir = await tempDir()
    await writeFile(
      join(dir, 'approve.mts'),
      [
        `import { defineDeferredTool, defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
        `import { z } from ${JSON.stringify(zodEntry)}`,
        'export default defineWorkflow({',
        "  name: 'approve',",
        '  input: z.object({ amount: z.number() }),',
        "  tools: { sign_off: defineDeferredTool({ input: z.object({ amount: z.number() }), output: z.object({ approved: z.boolean() }) }) },",
        "  run: async ({ input, tool }) => ({ ok: true, decision: await tool('sign_off', { amount: input.amount }) }),",
        '})',
      ].join('\n'),
    )
    await writeFile(
      join(dir, 'stall.mts'),
      [
        `import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
        'export default defineWorkflow({',
        "  name: 'stall',",
        "  run: async ({ agent }) => ({ ok: true, answer: (await agent('hang here')).answer }),",
        '})',
      ].join('\n'),
    )
    // Four enriching look-ups, one at a time: each reserves about $0.008 and spends $0.00722 ($2 in, $8 out per million).
    await writeFile(
      join(dir, 'fan-out.mts'),
      [
        `import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
        'export default defineWorkflow({',
        "  name: 'fan-out',",
        '  run: async ({ agent, parallel }) => {',
        "    const thunks = ['a', 'b', 'c', 'd'].map((name) => () => agent(`look up ${name}`, { label: `lookup-${name}`, budgets: { maxOutputTokens: 1000 }, criticality: 'enriching' }))",
        '    return { ok: true, answers: (await parallel(thunks, { concurrency: 1 })).map((answer) => answer.answer) }',
        '  },',
        '})',
      ].join('\n'),
    )
    await writeFile(
      join(dir, 'talker.mts'),
      [
        `import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
        'export default defineWorkflow({',
        "  name: 'talker',",
        "  run: async ({ agent }) => ({ ok: true, answer: (await agent('stream please')).answer }),",
        '})',
      ].join('\n'),
    )
    await writeFile(
      join(dir, 'countersign.mts'),
      [
        `import { defineDeferredTool, defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
        `import { z } from ${JSON.stringify(zodEntry)}`,
        'export default defineWorkflow({',
        "  name: 'countersign',",
        "  tools: { sign_off: defineDeferredTool({ input: z.object({ amount: z.number() }), output: z.object({ approved: z.boolean() }) }) },",
        "  run: async ({ tool }) => ({ ok: true, decision: await tool('sign_off', { amount: 40 }) }),",
        '})',
      ].join('\n'),
    )
    await writeFile(
      join(dir, 'kickoff.mts'),
      [
        `import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
        `import { z } from ${JSON.stringify(zodEntry)}`,
        'export default defineWorkflow({',
        "  name: 'kickoff',",
        '  signals: { go: z.object({ by: z.string() }) },',
        "  run: async ({ waitForSignal }) => ({ ok: true, go: await waitForSignal('go') }),",
        '})',
      ].join('\n'),
    )
    await writeFile(join(dir, 'prices.json'), JSON.stringify({ models: { scripted: { input: '2', output: '8' } } }))
    await writeFile(
      join(dir, 'answers.json'),
      JSON.stringify({ rules: [{ match: { prompt: 'stream please' }, steps: [{ hang: true, partial: 'half an answer ' }, { text: 'the whole answer' }] }, { match: { prompt: 'hang' }, steps: [{ hang: true }] }, { match: { prompt: 'look up' }, steps: [{ text: 'found', usage: { inputTokens: 10, outputTokens: 900 } }] }] }),
    )
    // The worker is one machine and the server another: they share only the database.
    const worker = startLocus(['worker', '--database-url', databaseUrl, '--workflows', dir, '--host', 'scripted', '--fixtures', join(dir, 'answers.json'), '--lease-ms', '3000', '--prices', join(dir, 'prices.json')], { cwd: dir })
    children.push(worker)
    await waitForOutput(worker, /worker running/)
    const server = startLocus(['serve', '--database-url', databaseUrl, '--workflows', dir, '--port', '0', '--callback-secret', CALLBACK_SECRET], { cwd: dir })
    children.push(server)
    base = (await waitForOutput(server, /at (http:\/\/\S+)/))[1] ?? ''
  }, 60_000)

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL')
    await Promise.all(children.filter((child) => child.exitCode === null && child.signalCode === null).map((child) => once(child, 'exit')))
    if (url !== undefined) await admin(`drop database if exists "${database}" with (force)`)
  })

  const api = async (path: string, init?: { method?: string; body?: unknown }): Promise<{ status: number; body: Record<string, unknown> }> => {
    const response = await fetch(`${base}${path}`, {
      method: init?.method ?? 'GET',
      ...(init?.body === undefined ? {} : { body: JSON.stringify(init.body), headers: { 'content-type': 'application/json' } }),
    })
    return { status: response.status, body: (await response.json()) as Record<string, unknown> }
  }
  const statusOf = async (runId: string): Promise<string> => (await api(`/v1/runs/${runId}`)).body.status as string

  it.skipIf(url === undefined && !ci)('keeps the money budget a queued run was given: the worker runs what it affords and the answer is partial', async () => {
    if (url === undefined) throw new Error('LOCUS_TEST_PG_URL is not set, but CI is: start PostgreSQL (scripts/ci-services.sh start).')
    const started = await api('/v1/workflows/fan-out/runs', { method: 'POST', body: { budgets: { maxCostUsd: '0.009' } } })
    expect(started.status).toBe(202)
    const runId = started.body.runId as string
    const result = await until('the run to end', async () => {
      const answered = await api(`/v1/runs/${runId}/result?wait=5`)
      return answered.status === 200 ? answered.body : undefined
    })
    const reason = "not run: the run's cost budget of $0.009 was spent"
    expect(result.answerOutcome).toBe('partial')
    expect(result.gaps).toEqual(['b', 'c', 'd'].map((name) => ({ tool: `lookup-${name}`, criticality: 'enriching', reason })))
    expect(((await api(`/v1/runs/${runId}`)).body.cost as { usd?: string } | null)?.usd).toBe('0.007220')
  }, 60_000)

  it.skipIf(url === undefined && !ci)("settles a worker's deferral through its callback URL (--callback-secret), with no key, and starts a run with its signal", async () => {
    if (url === undefined) throw new Error('LOCUS_TEST_PG_URL is not set, but CI is: start PostgreSQL (scripts/ci-services.sh start).')
    const started = await api('/v1/workflows/countersign/runs', { method: 'POST', body: {} })
    const runId = started.body.runId as string
    const deferral = await until('the worker to open the deferral', async () => {
      const listed = (await api(`/v1/runs/${runId}/deferred`)).body.deferred as { deferredId: string; callbackUrl?: string }[]
      return listed[0]
    })
    expect(deferral.callbackUrl?.startsWith(`${base}/v1/callbacks/deferred/${runId}/${deferral.deferredId}?expires=`)).toBe(true)
    const callback = new URL(deferral.callbackUrl ?? '')
    const forged = await api(`${callback.pathname}${callback.search.replace(/signature=./, (match) => (match.endsWith('A') ? 'signature=B' : 'signature=A'))}`, { method: 'POST', body: { result: { approved: true } } })
    expect(forged.status).toBe(403)
    const settled = await api(`${callback.pathname}${callback.search}`, { method: 'POST', body: { result: { approved: true } } })
    expect(settled.status).toBe(200)
    const result = await until('the run to end', async () => {
      const answered = await api(`/v1/runs/${runId}/result?wait=5`)
      return answered.status === 200 ? answered.body : undefined
    })
    expect(result).toMatchObject({ ok: true, result: { ok: true, decision: { approved: true } } })
    const journal = (await (await fetch(`${base}/v1/runs/${runId}/journal`)).text()).trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(journal.filter((line) => line.type === 'deferred_settled')).toEqual([expect.objectContaining({ deferredId: deferral.deferredId, decidedBy: 'callback', via: 'callback' })])
    expect((await api(`${callback.pathname}${callback.search}`, { method: 'POST', body: { result: { approved: true } } })).body).toMatchObject({ status: 'already-answered' })

    // Signal-with-start on a queued run: checked by the server, kept in the run's mailbox, journaled by the worker.
    expect((await api('/v1/workflows/kickoff/runs', { method: 'POST', body: { signal: { name: 'stop' } } })).status).toBe(404)
    const kicked = await api('/v1/workflows/kickoff/runs', { method: 'POST', body: { signal: { name: 'go', payload: { by: 'ops' } } } })
    expect(kicked.status).toBe(202)
    const kickedRun = kicked.body.runId as string
    const ended = await until('the signalled run to end', async () => {
      const answered = await api(`/v1/runs/${kickedRun}/result?wait=5`)
      return answered.status === 200 ? answered.body : undefined
    })
    expect(ended).toMatchObject({ ok: true, result: { ok: true, go: { by: 'ops' } } })
    const lines = (await (await fetch(`${base}/v1/runs/${kickedRun}/journal`)).text()).trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(lines.filter((line) => line.type === 'signal_received')).toEqual([expect.objectContaining({ name: 'go', via: 'start', signalSeq: 0, from: 'anonymous' })])
  }, 60_000)

  it.skipIf(url === undefined && !ci)('queues a run, and a cancel through the server reaches the worker that holds it', async () => {
    if (url === undefined) throw new Error('LOCUS_TEST_PG_URL is not set, but CI is: start PostgreSQL (scripts/ci-services.sh start).')
    const started = await api('/v1/workflows/stall/runs', { method: 'POST', body: {} })
    expect(started.status).toBe(202)
    expect(['queued', 'running']).toContain(started.body.status)
    const runId = started.body.runId as string
    // The worker takes it and waits on the hung agent call.
    await until('the worker to start the run', async () => ((await statusOf(runId)) === 'running' ? true : undefined))
    const cancelled = await api(`/v1/runs/${runId}/cancel`, { method: 'POST', body: { reason: 'from the server' } })
    expect(cancelled.status).toBe(202)
    expect(cancelled.body).toMatchObject({ runId, status: 'cancelling' })
    await until('the run to end cancelled', async () => ((await statusOf(runId)) === 'cancelled' ? true : undefined))
    // The worker journaled who asked the server (no keys: anonymous) and why.
    const journal = await (await fetch(`${base}/v1/runs/${runId}/journal`)).text()
    const requested = journal
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; reason?: string; by?: string })
      .filter((line) => line.type === 'run_cancel_requested')
    expect(requested).toEqual([expect.objectContaining({ reason: 'from the server', by: 'anonymous' })])
    // Ended: a second cancel says so instead of pretending.
    const again = await api(`/v1/runs/${runId}/cancel`, { method: 'POST', body: {} })
    expect(again.status).toBe(409)

    // A resume continues with the budgets the run started with: new ones would not reach the worker, so they are refused.
    const withBudgets = await api(`/v1/runs/${runId}/resume`, { method: 'POST', body: { budgets: { maxTotalAgentInvocations: 2 } } })
    expect(withBudgets.status).toBe(400)
    expect(JSON.stringify(withBudgets.body)).toMatch(/budgets: not supported for a queued resume/)
    // A resume answers the execution a worker is to run, as the file-backed server does, not the cancelled one.
    const resumed = await api(`/v1/runs/${runId}/resume`, { method: 'POST', body: {} })
    expect(resumed.status).toBe(202)
    expect(resumed.body).toMatchObject({ runId, executionId: 'resume-001' })
    expect(['queued', 'running']).toContain(resumed.body.status)
    await until('the worker to run the resume', async () => {
      const { body } = await api(`/v1/runs/${runId}`)
      return body.executionId === 'resume-001' && body.status === 'running' ? true : undefined
    })
    expect((await api(`/v1/runs/${runId}/cancel`, { method: 'POST', body: {} })).status).toBe(202)
    await until('the resume to end cancelled', async () => ((await statusOf(runId)) === 'cancelled' ? true : undefined))
  }, 60_000)

  it.skipIf(url === undefined && !ci)('serves the tokens a worker streams from the shared database, one offset sequence across the run\'s executions', async () => {
    if (url === undefined) throw new Error('LOCUS_TEST_PG_URL is not set, but CI is: start PostgreSQL (scripts/ci-services.sh start).')
    const started = await api('/v1/workflows/talker/runs', { method: 'POST', body: {} })
    const runId = started.body.runId as string
    // Opened before the worker streams anything: the stream waits, then follows the worker's writes.
    const first = await fetch(`${base}/v1/runs/${runId}/stream?format=raw`)
    expect(first.status).toBe(200)
    const reader = (first.body as ReadableStream<Uint8Array>).getReader()
    const decoder = new TextDecoder()
    let text = ''
    while (!text.includes('"text":"answer "')) {
      const { done, value } = await reader.read()
      if (done) throw new Error(`the stream ended early: ${text}`)
      text += decoder.decode(value, { stream: true })
    }
    expect((await api(`/v1/runs/${runId}/cancel`, { method: 'POST', body: {} })).status).toBe(202)
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      text += decoder.decode(value, { stream: true })
    }
    const before = recordsOf(text)
    expect(before.done).toBe(true)
    expect(before.records.map((record) => record.offset)).toEqual(before.records.map((_, index) => index))
    expect(before.records.filter((record) => record.kind === 'delta').map((record) => record.text).join('')).toBe('half an answer ')
    expect(before.records.at(-1)).toMatchObject({ kind: 'discarded', executionId: runId, attempt: 1 })
    const last = before.records.at(-1)?.offset ?? -1
    expect((await fetch(`${base}/v1/runs/${runId}/stream?format=raw`, { headers: { 'Last-Event-ID': String(last) } })).status).toBe(204)

    // A resume on the worker streams on at the next offset; the client picks up with its last one.
    expect((await api(`/v1/runs/${runId}/resume`, { method: 'POST', body: {} })).status).toBe(202)
    // Until a worker takes the queued resume, the run reads as the cancelled run it was (its row too): then the stream follows it.
    await until('a worker to take the resume', async () => ((await api(`/v1/runs/${runId}`)).body.executionId === 'resume-001' ? true : undefined))
    const resumed = await fetch(`${base}/v1/runs/${runId}/stream?format=raw`, { headers: { 'Last-Event-ID': String(last) } })
    expect(resumed.status).toBe(200)
    const after = recordsOf(await resumed.text())
    expect(after.done).toBe(true)
    expect(after.records.map((record) => record.offset)).toEqual(after.records.map((_, index) => last + 1 + index))
    expect(after.records.every((record) => record.executionId === 'resume-001')).toBe(true)
    expect(after.records.filter((record) => record.kind === 'delta').map((record) => record.text).join('')).toBe('the whole answer')
    expect(after.records.at(-1)).toMatchObject({ kind: 'end' })
    const result = await api(`/v1/runs/${runId}/result?wait=5`)
    expect(result.body).toMatchObject({ disposition: 'completed', result: { answer: 'the whole answer' } })
  }, 60_000)

  it.skipIf(url === undefined && !ci)('answers a deferral over HTTP that the worker on the other side picks up, and refuses bad input before queueing anything', async () => {
    if (url === undefined) throw new Error('LOCUS_TEST_PG_URL is not set, but CI is: start PostgreSQL (scripts/ci-services.sh start).')
    const bad = await api('/v1/workflows/approve/runs', { method: 'POST', body: { input: { amount: 'lots' } } })
    expect(bad.status).toBe(400)
    expect(JSON.stringify(bad.body)).toMatch(/amount/)
    // The launch mode is the worker's to choose (budgets travel with the run: see below).
    const launchMode = await api('/v1/workflows/approve/runs', { method: 'POST', body: { input: { amount: 5 }, launchMode: 'background' } })
    expect(launchMode.status).toBe(400)
    expect(JSON.stringify(launchMode.body)).toMatch(/launchMode/)
    const listed = (await api('/v1/runs')).body.runs as { workflow?: string }[]
    expect(listed.filter((run) => run.workflow === 'approve')).toEqual([])

    const started = await api('/v1/workflows/approve/runs', { method: 'POST', body: { input: { amount: 40 } } })
    expect(started.status).toBe(202)
    const runId = started.body.runId as string
    const deferredId = await until('the deferral', async () => {
      const { body } = await api(`/v1/runs/${runId}/deferred`)
      return (body.deferred as { deferredId: string }[])[0]?.deferredId
    })
    expect(await statusOf(runId)).toBe('waiting')
    const invalid = await api(`/v1/runs/${runId}/deferred/${deferredId}/resolve`, { method: 'POST', body: { result: { approved: 'yes' } } })
    expect(invalid.status).toBe(400)
    expect(JSON.stringify(invalid.body)).toMatch(/approved/)
    const resolved = await api(`/v1/runs/${runId}/deferred/${deferredId}/resolve`, { method: 'POST', body: { result: { approved: true } } })
    expect(resolved).toMatchObject({ status: 200, body: { status: 'stored' } })
    const result = await until('the result', async () => {
      const response = await api(`/v1/runs/${runId}/result?wait=5`)
      return response.status === 200 ? response.body : undefined
    })
    expect(result).toMatchObject({ disposition: 'completed', result: { ok: true, decision: { approved: true } } })
  }, 60_000)

  it.skipIf(url === undefined && !ci)('answers a deferral with locus resolve --database-url, and says a worker picks it up, not a resume', async () => {
    if (url === undefined) throw new Error('LOCUS_TEST_PG_URL is not set, but CI is: start PostgreSQL (scripts/ci-services.sh start).')
    const started = await api('/v1/workflows/approve/runs', { method: 'POST', body: { input: { amount: 7 } } })
    const runId = started.body.runId as string
    const deferredId = await until('the deferral', async () => {
      const { body } = await api(`/v1/runs/${runId}/deferred`)
      return (body.deferred as { deferredId: string }[])[0]?.deferredId
    })
    const answered = await runLocus(['resolve', runId, deferredId, '--result', '{"approved":false}', '--database-url', databaseUrl])
    expect(answered.stderr).toBe('')
    expect(answered.code).toBe(0)
    // `locus resume` reads a runs directory and has no --database-url: advice to run it would fail as typed.
    expect(answered.stdout).toBe(`${deferredId} answered; the run is queued again, and a \`locus worker\` on this database picks it up\n`)
    const result = await until('the result', async () => {
      const response = await api(`/v1/runs/${runId}/result?wait=5`)
      return response.status === 200 ? response.body : undefined
    })
    expect(result).toMatchObject({ disposition: 'completed', result: { ok: true, decision: { approved: false } } })
  }, 60_000)

  it.skipIf(url === undefined && !ci)('refuses to resume a completed run (409 run_terminal), as locus resume does, and queues nothing', async () => {
    if (url === undefined) throw new Error('LOCUS_TEST_PG_URL is not set, but CI is: start PostgreSQL (scripts/ci-services.sh start).')
    const started = await api('/v1/workflows/approve/runs', { method: 'POST', body: { input: { amount: 3 } } })
    const runId = started.body.runId as string
    const deferredId = await until('the deferral', async () => (((await api(`/v1/runs/${runId}/deferred`)).body.deferred as { deferredId: string }[])[0]?.deferredId))
    await api(`/v1/runs/${runId}/deferred/${deferredId}/resolve`, { method: 'POST', body: { result: { approved: true } } })
    await until('the run to complete', async () => ((await statusOf(runId)) === 'completed' ? true : undefined))
    const refused = await api(`/v1/runs/${runId}/resume`, { method: 'POST', body: {} })
    expect(refused.status).toBe(409)
    expect(refused.body).toMatchObject({ error: { code: 'run_terminal' } })
    expect(JSON.stringify(refused.body)).toMatch(/completed/)
    const executions = (await api(`/v1/runs/${runId}`)).body.executions as unknown[]
    expect(executions).toHaveLength(1)
  }, 60_000)
})

interface StreamRecord {
  readonly offset: number
  readonly executionId: string
  readonly attempt: number
  readonly kind: string
  readonly text?: string
}

/** The records of a token stream's text (`format=raw`), and whether it ended with `event: done`. */
function recordsOf(text: string): { records: StreamRecord[]; done: boolean } {
  const frames = text.split('\n\n')
  const records = frames.filter((frame) => frame.startsWith('id: ')).map((frame) => JSON.parse(frame.slice(frame.indexOf('data: ') + 6)) as StreamRecord)
  return { records, done: frames.includes('event: done\ndata: {}') }
}

/** The events of a `text/event-stream` response, as `event` names with their `id`s, read until `run_end` or the end. */
async function readEvents(response: Response): Promise<{ id: number; event: string; data: Record<string, unknown> }[]> {
  const events: { id: number; event: string; data: Record<string, unknown> }[] = []
  const decoder = new TextDecoder()
  let buffered = ''
  const reader = (response.body as ReadableStream<Uint8Array>).getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return events
    buffered += decoder.decode(value, { stream: true })
    let end = buffered.indexOf('\n\n')
    while (end !== -1) {
      const frame = buffered.slice(0, end)
      buffered = buffered.slice(end + 2)
      end = buffered.indexOf('\n\n')
      const field = (name: string): string | undefined => frame.split('\n').find((line) => line.startsWith(`${name}: `))?.slice(name.length + 2)
      const event = field('event')
      if (event === undefined) continue
      events.push({ id: Number(field('id')), event, data: JSON.parse(field('data') ?? '{}') as Record<string, unknown> })
      if (event === 'run_end') {
        await reader.cancel()
        return events
      }
    }
  }
}

describe('locus serve --database-url before any worker runs: queued runs', () => {
  const ci = (process.env.CI ?? '') !== ''
  const database = `locus_serve_pg_q_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
  const children: ChildProcess[] = []
  let base = ''
  let databaseUrl = ''
  let dir = ''

  beforeAll(async () => {
    if (url === undefined) return
    await admin(`create database "${database}"`)
    const parsed = new URL(url)
    parsed.pathname = `/${database}`
    databaseUrl = parsed.href
    dir = await tempDir()
    await writeFile(
      join(dir, 'twice.mts'),
      [
        `import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
        'export default defineWorkflow({',
        "  name: 'twice',",
        "  run: async ({ agent }) => ({ ok: true, answer: (await agent('one')).answer + (await agent('two')).answer }),",
        '})',
      ].join('\n'),
    )
    await writeFile(join(dir, 'answers.json'), JSON.stringify({ rules: [{ steps: [{ text: 'fine' }] }] }))
    const server = startLocus(['serve', '--database-url', databaseUrl, '--workflows', dir, '--port', '0'], { cwd: dir })
    children.push(server)
    base = (await waitForOutput(server, /at (http:\/\/\S+)/))[1] ?? ''
  }, 60_000)

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL')
    await Promise.all(children.filter((child) => child.exitCode === null && child.signalCode === null).map((child) => once(child, 'exit')))
    if (url !== undefined) await admin(`drop database if exists "${database}" with (force)`)
  })

  let worker: ChildProcess | undefined
  /** The one worker of these tests, started once no run must stay queued: --max-agents 1 and --retry-budget 0 as defaults. */
  const startWorker = (): void => {
    worker ??= startLocus(['worker', '--database-url', databaseUrl, '--workflows', dir, '--host', 'scripted', '--fixtures', join(dir, 'answers.json'), '--max-agents', '1', '--retry-budget', '0'], {
      cwd: dir,
    })
    if (!children.includes(worker)) children.push(worker)
  }

  const post = async (path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> => {
    const response = await fetch(`${base}${path}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } })
    return { status: response.status, body: (await response.json()) as Record<string, unknown> }
  }

  it.skipIf(url === undefined && !ci)('streams the events of a run still queued: the stream waits for a worker and follows the run from its first line', async () => {
    if (url === undefined) throw new Error('LOCUS_TEST_PG_URL is not set, but CI is: start PostgreSQL (scripts/ci-services.sh start).')
    // The run's own budget wins over the worker's --max-agents 1.
    const started = await post('/v1/workflows/twice/runs', { budgets: { maxTotalAgentInvocations: 3 } })
    expect(started).toMatchObject({ status: 202, body: { status: 'queued' } })
    const runId = started.body.runId as string
    // The inspector shows it queued (not a 404), and its page follows the root's events, also not yet created.
    const inspector = await fetch(`${base}/runs/${runId}`)
    expect(inspector.status).toBe(200)
    expect(await inspector.text()).toContain('Queued')
    const named = await fetch(`${base}/v1/runs/${runId}/events?execution=${runId}`)
    expect(named.status).toBe(200)
    await named.body?.cancel()
    // Subscribed right after the start, as clients do, while no worker exists to run it.
    const stream = await fetch(`${base}/v1/runs/${runId}/events`)
    expect(stream.status).toBe(200)
    expect(stream.headers.get('content-type')).toMatch(/text\/event-stream/)
    expect(stream.headers.get('locus-execution-id')).toBe(runId)
    const events = readEvents(stream)
    startWorker()
    const seen = await events
    // From the run's first line, with no gap.
    expect(seen[0]).toMatchObject({ id: 1, event: 'run_start' })
    expect(seen.map((event) => event.id)).toEqual(seen.map((_, index) => index + 1))
    expect(seen.at(-1)).toMatchObject({ event: 'run_end', data: { ok: true } })
    expect(seen[0]?.data).toMatchObject({ options: { budgets: { maxTotalAgentInvocations: 3 }, retryBudget: 0 } })
  }, 60_000)

  it.skipIf(url === undefined && !ci)("applies a queued run's budgets over the worker's flags, field by field, and the flags to a run that gives none", async () => {
    if (url === undefined) throw new Error('LOCUS_TEST_PG_URL is not set, but CI is: start PostgreSQL (scripts/ci-services.sh start).')
    startWorker()
    const capped = await post('/v1/workflows/twice/runs', { budgets: { maxTotalAgentInvocations: 1 } })
    const unbudgeted = await post('/v1/workflows/twice/runs', {})
    const deadlineOnly = await post('/v1/workflows/twice/runs', { budgets: { deadlineMs: 600_000 } })
    const endOf = async (runId: string): Promise<Record<string, unknown>> =>
      until(`run ${runId} to end`, async () => {
        const response = await fetch(`${base}/v1/runs/${runId}/result?wait=5`)
        return response.status === 200 ? ((await response.json()) as Record<string, unknown>) : undefined
      })
    for (const run of [capped, unbudgeted, deadlineOnly]) {
      expect(run.status).toBe(202)
      const end = await endOf(run.body.runId as string)
      expect(end).toMatchObject({ ok: false, disposition: 'failed' })
      expect(JSON.stringify(end)).toMatch(/maxTotalAgentInvocations/)
    }
    const journal = await (await fetch(`${base}/v1/runs/${deadlineOnly.body.runId as string}/journal?limit=1`)).text()
    expect(JSON.parse(journal.split('\n')[0] ?? '{}')).toMatchObject({ type: 'run_start', options: { budgets: { maxTotalAgentInvocations: 1, deadlineMs: 600_000 } } })
  }, 60_000)
})
