import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { JournalLine } from '@locus/journal'
import { describe, expect, it, vi } from 'vitest'
import { SERVER_ERROR_CODES, startServer } from '../src/index.js'
import { sleep, tempRunsDir, testRuntime, testServer } from './helpers.js'

interface Accepted {
  runId: string
  executionId: string
  status: string
  links: Record<string, string>
}

const post = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({ method: 'POST', body: JSON.stringify(body), headers })

function expectError(response: { status: number; body: unknown }, status: number, code: string): void {
  expect(response.status).toBe(status)
  expect(response.body).toMatchObject({ error: { code, message: expect.any(String) } })
  expect(SERVER_ERROR_CODES).toContain(code)
  const keys = Object.keys((response.body as { error: object }).error).sort()
  expect(keys.filter((key) => !['code', 'message', 'issues', 'requestId'].includes(key))).toEqual([])
  // Every error names its request, as the x-request-id header does, so a report finds its line in the server log.
  expect((response.body as { error: { requestId?: string } }).error.requestId).toMatch(/^req_[0-9a-f]{16}$/)
}

async function ended(server: Awaited<ReturnType<typeof testServer>>, runId: string, key?: string): Promise<Record<string, unknown>> {
  const { status, body } = await server.json(`/v1/runs/${runId}/result?wait=30`, key === undefined ? {} : { key })
  expect(status).toBe(200)
  return body
}

describe('workflows', () => {
  it('GET /v1/workflows lists names, descriptions and input JSON Schemas', async () => {
    const server = await testServer()
    const { status, body } = await server.json<{ workflows: { name: string; description?: string; inputSchema: Record<string, unknown> }[] }>('/v1/workflows')
    expect(status).toBe(200)
    expect(body.workflows.map((workflow) => workflow.name)).toEqual(['echo', 'waits', 'chatty', 'fails', 'partial'])
    const echo = body.workflows[0]!
    expect(echo.description).toBe('Repeats the ticket back.')
    expect(echo.inputSchema).toMatchObject({ type: 'object', properties: { ticket: { type: 'string', minLength: 1 } }, required: ['ticket'] })
    expect(body.workflows[1]!.inputSchema).toEqual({})
  })
})

describe('starting runs', () => {
  it('POST /v1/workflows/{name}/runs answers 202 with the run, its status and links, and the run completes', async () => {
    const server = await testServer()
    const { status, body } = await server.json<Accepted>('/v1/workflows/echo/runs', post({ input: { ticket: 'T-1' } }))
    expect(status).toBe(202)
    expect(body.executionId).toBe(body.runId)
    expect(['running', 'completed']).toContain(body.status)
    expect(body.links).toEqual({
      self: `/v1/runs/${body.runId}`,
      result: `/v1/runs/${body.runId}/result`,
      journal: `/v1/runs/${body.runId}/journal`,
      events: `/v1/runs/${body.runId}/events`,
      cancel: `/v1/runs/${body.runId}/cancel`,
      resume: `/v1/runs/${body.runId}/resume`,
    })
    expect(await ended(server, body.runId)).toMatchObject({ ok: true, disposition: 'completed', result: { ok: true, answer: 'fine' }, answerOutcome: 'complete' })
  })

  it('passes budgets and launchMode to the runtime', async () => {
    const server = await testServer()
    const { body } = await server.json<Accepted>(
      '/v1/workflows/echo/runs',
      post({ input: { ticket: 'T-2' }, launchMode: 'background', budgets: { maxTotalAgentInvocations: 3, perCall: { maxToolCalls: 150 } } }),
    )
    await ended(server, body.runId)
    const journal = await server.request(`/v1/runs/${body.runId}/journal`)
    const lines = (await journal.text()).trim().split('\n').map((line) => JSON.parse(line) as JournalLine)
    const start = lines.find((line) => line.type === 'run_start') as Extract<JournalLine, { type: 'run_start' }>
    expect(start.options).toMatchObject({ launchMode: 'background', budgets: { maxTotalAgentInvocations: 3, perCall: { maxToolCalls: 150 } } })
    expect(lines.some((line) => line.type === 'budget_change')).toBe(true)
  })

  it('answers 400 with issues for a bad input, a bad body, malformed JSON and no body; 404 for an unknown workflow', async () => {
    const server = await testServer()
    const badInput = await server.json<{ error: { issues: string[] } }>('/v1/workflows/echo/runs', post({ input: { ticket: '' } }))
    expectError(badInput, 400, 'invalid_request')
    expect(badInput.body.error.issues.join('\n')).toMatch(/ticket/)
    const badBody = await server.json<{ error: { issues: string[] } }>('/v1/workflows/echo/runs', post({ input: {}, launchMode: 'warp', extra: 1 }))
    expectError(badBody, 400, 'invalid_request')
    expect(badBody.body.error.issues).toEqual(expect.arrayContaining([expect.stringMatching(/^body\.launchMode: /), expect.stringMatching(/^body: .*extra/)]))
    const badBudget = await server.json('/v1/workflows/echo/runs', post({ input: { ticket: 'x' }, budgets: { deadlineMs: -5 } }))
    expectError(badBudget, 400, 'invalid_request')
    expectError(await server.json('/v1/workflows/echo/runs', { method: 'POST', body: '{"input": ', headers: { 'content-type': 'application/json' } }), 400, 'invalid_request')
    expectError(await server.json('/v1/workflows/echo/runs', { method: 'POST' }), 400, 'invalid_request')
    expectError(await server.json('/v1/workflows/nope/runs', post({ input: {} })), 404, 'not_found')
    expect((await server.json<{ runs: unknown[] }>('/v1/runs')).body.runs).toEqual([])
  })

  it('answers 413 for a body over the limit, by Content-Length and when chunked', async () => {
    const server = await testServer({ bodyLimitBytes: 1024 })
    const big = JSON.stringify({ input: { ticket: 'x'.repeat(2000) } })
    expectError(await server.json('/v1/workflows/echo/runs', { method: 'POST', body: big, headers: { 'content-type': 'application/json' } }), 413, 'payload_too_large')
    const chunks = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let index = 0; index < 4; index += 1) controller.enqueue(new TextEncoder().encode(big.slice(index * 600, (index + 1) * 600)))
        controller.close()
      },
    })
    const response = await server.request('/v1/workflows/echo/runs', { method: 'POST', body: chunks, duplex: 'half', headers: { 'content-type': 'application/json' } })
    expectError({ status: response.status, body: await response.json() }, 413, 'payload_too_large')
  })

  it('the default limit is 1 MiB', async () => {
    const server = await testServer()
    const body = JSON.stringify({ input: { ticket: 'x'.repeat(1024 * 1024) } })
    expectError(await server.json('/v1/workflows/echo/runs', { method: 'POST', body, headers: { 'content-type': 'application/json' } }), 413, 'payload_too_large')
    const fits = await server.json<Accepted>('/v1/workflows/echo/runs', post({ input: { ticket: 'x'.repeat(1000 * 1000) } }))
    expect(fits.status).toBe(202)
    await ended(server, fits.body.runId)
  })
})

describe('idempotency', () => {
  it('a server restarted mid-window answers a repeated key with the same run, and forgets it once the window passed', async () => {
    const runsDir = tempRunsDir()
    let clock = Date.parse('2026-01-01T00:00:00Z')
    const now = (): number => clock
    const first = await testServer({ runtime: testRuntime(runsDir), now })
    const started = await first.json<Accepted>('/v1/workflows/echo/runs', post({ input: { ticket: 'T-1' } }, { 'Idempotency-Key': 'restart-1' }))
    expect(started.status).toBe(202)
    await ended(first, started.body.runId)
    await first.close()

    clock += 23 * 60 * 60 * 1000
    const second = await testServer({ runtime: testRuntime(runsDir), now })
    const again = await second.json<Accepted>('/v1/workflows/echo/runs', post({ input: { ticket: 'T-1' } }, { 'Idempotency-Key': 'restart-1' }))
    expect(again.status).toBe(200)
    expect(again.body.runId).toBe(started.body.runId)
    expect(again.body.status).toBe('completed')
    expectError(await second.json('/v1/workflows/echo/runs', post({ input: { ticket: 'T-2' } }, { 'Idempotency-Key': 'restart-1' })), 409, 'idempotency_conflict')
    expect((await second.runtime.store.listRuns()).map((run) => run.runId)).toEqual([started.body.runId])
    await second.close()

    clock += 2 * 60 * 60 * 1000
    const third = await testServer({ runtime: testRuntime(runsDir), now })
    const later = await third.json<Accepted>('/v1/workflows/echo/runs', post({ input: { ticket: 'T-1' } }, { 'Idempotency-Key': 'restart-1' }))
    expect(later.status).toBe(202)
    expect(later.body.runId).not.toBe(started.body.runId)
    await ended(third, later.body.runId)
  })

  it('two servers on one runs directory, asked with one key at once, start one run and both answer it', async () => {
    const runsDir = tempRunsDir()
    const one = await testServer({ runtime: testRuntime(runsDir) })
    const other = await testServer({ runtime: testRuntime(runsDir) })
    for (let round = 0; round < 3; round += 1) {
      const answers = await Promise.all(
        Array.from({ length: 6 }, (_, index) => (index % 2 === 0 ? one : other).json<Accepted>('/v1/workflows/echo/runs', post({ input: { ticket: `T-${round}` } }, { 'Idempotency-Key': `shared-${round}` }))),
      )
      const runIds = new Set(answers.map((answer) => answer.body.runId))
      expect(runIds.size).toBe(1)
      expect(answers.filter((answer) => answer.status === 202)).toHaveLength(1)
      // A server that lost the race may answer before the winner created the run: queued, never a 404.
      for (const answer of answers) expect(['queued', 'running', 'completed']).toContain(answer.body.status)
    }
    const runs = await one.runtime.store.listRuns()
    expect(runs).toHaveLength(3)
    for (const run of runs) await ended(one, run.runId)
  })

  it('frees the key of a start that failed, also in the store, so the request can be tried again', async () => {
    const runsDir = tempRunsDir()
    const server = await testServer({ runtime: testRuntime(runsDir) })
    expectError(await server.json('/v1/workflows/echo/runs', post({ input: { ticket: '' } }, { 'Idempotency-Key': 'retry-me' })), 400, 'invalid_request')
    const restarted = await testServer({ runtime: testRuntime(runsDir) })
    const { status } = await restarted.json('/v1/workflows/echo/runs', post({ input: { ticket: '' } }, { 'Idempotency-Key': 'retry-me' }))
    expect(status).toBe(400)
    expect(await restarted.runtime.store.readIdempotencyKey(`anonymous\nretry-me`, Date.now())).toBeUndefined()
  })

  it('the same key and body answer 200 with the same run; another body answers 409 idempotency_conflict', async () => {
    const server = await testServer()
    const first = await server.json<Accepted>('/v1/workflows/echo/runs', post({ input: { ticket: 'T-1' } }, { 'Idempotency-Key': 'order-1' }))
    expect(first.status).toBe(202)
    // Key order and spacing do not make another body.
    const again = await server.json<Accepted>('/v1/workflows/echo/runs', {
      method: 'POST',
      body: '{ "input" : { "ticket": "T-1" } }',
      headers: { 'Idempotency-Key': 'order-1', 'content-type': 'application/json' },
    })
    expect(again.status).toBe(200)
    expect(again.body.runId).toBe(first.body.runId)
    expectError(await server.json('/v1/workflows/echo/runs', post({ input: { ticket: 'T-2' } }, { 'Idempotency-Key': 'order-1' })), 409, 'idempotency_conflict')
    expectError(await server.json('/v1/workflows/chatty/runs', post({ input: { ticket: 'T-1' } }, { 'Idempotency-Key': 'order-1' })), 409, 'idempotency_conflict')
    const other = await server.json<Accepted>('/v1/workflows/echo/runs', post({ input: { ticket: 'T-1' } }, { 'Idempotency-Key': 'order-2' }))
    expect(other.status).toBe(202)
    expect(other.body.runId).not.toBe(first.body.runId)
    expectError(await server.json('/v1/workflows/echo/runs', post({ input: { ticket: 'T-1' } }, { 'Idempotency-Key': 'bad key with spaces' })), 400, 'invalid_request')
    await ended(server, first.body.runId)
    await ended(server, other.body.runId)
  })

  it('a 3,000-level input answers 400 naming the depth limit, with or without a key, and creates no run', async () => {
    const server = await testServer()
    const deep = `{"input":{"ticket":"T-1","extra":${'['.repeat(3000)}${']'.repeat(3000)}}}`
    for (const headers of [{}, { 'Idempotency-Key': 'deep-1' }]) {
      const response = await server.json('/v1/workflows/echo/runs', { method: 'POST', body: deep, headers: { 'content-type': 'application/json', ...headers } })
      expectError(response, 400, 'invalid_request')
      expect(JSON.stringify(response.body)).toMatch(/more than 512 levels deep/)
    }
    expect((await server.runtime.list()).rows).toEqual([])
  })

  it('two concurrent POSTs with one key start one run', async () => {
    const server = await testServer()
    for (let round = 0; round < 5; round += 1) {
      const requests = Array.from({ length: 8 }, () => server.json<Accepted>('/v1/workflows/echo/runs', post({ input: { ticket: `T-${round}` } }, { 'Idempotency-Key': `burst-${round}` })))
      const answers = await Promise.all(requests)
      expect(new Set(answers.map((answer) => answer.body.runId)).size).toBe(1)
      expect(answers.map((answer) => answer.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 202])
      await ended(server, answers[0]!.body.runId)
    }
    expect((await server.runtime.list()).rows.length).toBe(5)
  })

  it('a refused start frees its key', async () => {
    const server = await testServer()
    expectError(await server.json('/v1/workflows/echo/runs', post({ input: { ticket: '' } }, { 'Idempotency-Key': 'k' })), 400, 'invalid_request')
    const { status } = await server.json('/v1/workflows/echo/runs', post({ input: { ticket: 'ok' } }, { 'Idempotency-Key': 'k' }))
    expect(status).toBe(202)
  })
})

describe('reading runs', () => {
  it('GET /v1/runs/{id} tells status, disposition, answer outcome, counts and last seq; 404 and 400 otherwise', async () => {
    const server = await testServer()
    const { body: run } = await server.json<Accepted>('/v1/workflows/echo/runs', post({ input: { ticket: 'T-1' } }))
    await ended(server, run.runId)
    const { status, body } = await server.json(`/v1/runs/${run.runId}`)
    expect(status).toBe(200)
    const journal = (await (await server.request(`/v1/runs/${run.runId}/journal`)).text()).trim().split('\n').map((line) => JSON.parse(line) as JournalLine)
    expect(body).toMatchObject({
      runId: run.runId,
      workflow: 'echo',
      status: 'completed',
      live: false,
      executionId: run.runId,
      executions: [{ executionId: run.runId, kind: 'root', status: 'completed' }],
      disposition: 'completed',
      answerOutcome: 'complete',
      error: null,
      gaps: [],
      caveats: [],
      counts: { agentCalls: 1, agentAttempts: 1, toolCalls: 0 },
      lastSeq: journal.at(-1)!.seq,
      links: { self: `/v1/runs/${run.runId}` },
    })
    expect(typeof body.startedAt).toBe('string')
    expectError(await server.json('/v1/runs/no-such-run'), 404, 'not_found')
    expectError(await server.json('/v1/runs/..bad'), 400, 'invalid_request')
  })

  it('reports running while live and cancelling after a cancel, then cancelled; resume continues it in a new execution', async () => {
    const server = await testServer()
    const { body: run } = await server.json<Accepted>('/v1/workflows/waits/runs', post({}))
    expect(run.status).toBe('running')
    expect((await server.json(`/v1/runs/${run.runId}`)).body).toMatchObject({ status: 'running', live: true })
    const pending = await server.json(`/v1/runs/${run.runId}/result`)
    expect(pending).toMatchObject({ status: 202, body: { runId: run.runId, status: 'running', links: { self: `/v1/runs/${run.runId}` } } })
    expectError(await server.json(`/v1/runs/${run.runId}/resume`, { method: 'POST' }), 409, 'run_owned')

    const cancel = await server.json<Accepted>(`/v1/runs/${run.runId}/cancel`, post({ reason: 'test over' }))
    expect(cancel).toMatchObject({ status: 202, body: { runId: run.runId, status: 'cancelling' } })
    const result = await ended(server, run.runId)
    expect(result).toMatchObject({ ok: false, disposition: 'cancelled' })
    expect((await server.json(`/v1/runs/${run.runId}`)).body).toMatchObject({ status: 'cancelled', disposition: 'cancelled', live: false })
    expectError(await server.json(`/v1/runs/${run.runId}/cancel`, { method: 'POST' }), 409, 'run_terminal')
    expectError(await server.json('/v1/runs/nope/cancel', { method: 'POST' }), 404, 'not_found')
    expectError(await server.json(`/v1/runs/${run.runId}/cancel`, post({ reason: 5 })), 400, 'invalid_request')

    const resumed = await server.json<Accepted>(`/v1/runs/${run.runId}/resume`, { method: 'POST' })
    expect(resumed).toMatchObject({ status: 202, body: { runId: run.runId, executionId: 'resume-001', status: 'running' } })
    expect((await server.json(`/v1/runs/${run.runId}`)).body).toMatchObject({
      status: 'running',
      executionId: 'resume-001',
      executions: [
        { executionId: run.runId, kind: 'root', status: 'cancelled' },
        { executionId: 'resume-001', kind: 'resume', status: 'running' },
      ],
    })
    const root = await server.request(`/v1/runs/${run.runId}/journal?execution=${run.runId}`)
    expect(root.headers.get('locus-execution-id')).toBe(run.runId)
    expectError(await server.json(`/v1/runs/${run.runId}/journal?execution=resume-009`), 404, 'not_found')
    expect((await server.json(`/v1/runs/${run.runId}/cancel`, { method: 'POST' })).status).toBe(202)
    expect(await ended(server, run.runId)).toMatchObject({ executionId: 'resume-001', disposition: 'cancelled', ok: false })
    expectError(await server.json('/v1/runs/nope/resume', { method: 'POST' }), 404, 'not_found')
  })

  it('a finished run read again and again is still read afresh once another process resumed it', async () => {
    const runsDir = tempRunsDir()
    const server = await testServer({ runtime: testRuntime(runsDir) })
    const { body: run } = await server.json<Accepted>('/v1/workflows/waits/runs', post({}))
    await server.json(`/v1/runs/${run.runId}/cancel`, post({ reason: 'test over' }))
    await ended(server, run.runId)
    const first = await server.request(`/v1/runs/${run.runId}`)
    const again = await server.request(`/v1/runs/${run.runId}`)
    expect(await again.text()).toBe(await first.text())
    expect(again.headers.get('content-type')).toBe('application/json')
    // Another process (the CLI's locus resume) continues the run in the same runs directory.
    const other = testRuntime(runsDir)
    const resumed = await other.resume(run.runId)
    await vi.waitFor(async () => {
      expect((await server.json(`/v1/runs/${run.runId}`)).body).toMatchObject({ executionId: resumed.executionId, executions: [{ status: 'cancelled' }, { executionId: resumed.executionId, status: 'running' }] })
    })
    resumed.cancel('test over')
    await resumed.done
    expect((await server.json(`/v1/runs/${run.runId}`)).body).toMatchObject({ executionId: resumed.executionId, status: 'cancelled' })
  })

  it('refuses to resume a completed run with 409 run_terminal and adds no execution', async () => {
    const server = await testServer()
    const { body: run } = await server.json<Accepted>('/v1/workflows/echo/runs', post({ input: { ticket: 'T-1' } }))
    expect(await ended(server, run.runId)).toMatchObject({ disposition: 'completed' })
    const refused = await server.json(`/v1/runs/${run.runId}/resume`, { method: 'POST' })
    expectError(refused, 409, 'run_terminal')
    expect(JSON.stringify(refused.body)).toMatch(/already completed/)
    expect((await server.json<{ executions: unknown[] }>(`/v1/runs/${run.runId}`)).body.executions).toHaveLength(1)
  })

  it('a run another runtime executes cannot be cancelled or resumed here (409 run_owned), and reads as running, not live', async () => {
    const runsDir = tempRunsDir()
    const elsewhere = testRuntime(runsDir)
    const server = await testServer({ runtime: testRuntime(runsDir) })
    const run = await elsewhere.start('waits')
    expectError(await server.json(`/v1/runs/${run.runId}/cancel`, { method: 'POST' }), 409, 'run_owned')
    expectError(await server.json(`/v1/runs/${run.runId}/resume`, { method: 'POST' }), 409, 'run_owned')
    run.flush()
    expect((await server.json(`/v1/runs/${run.runId}`)).body).toMatchObject({ status: 'running', live: false })
    run.cancel()
    await run.done
    expect((await server.json(`/v1/runs/${run.runId}`)).body).toMatchObject({ status: 'cancelled', live: false })
  })

  it('cancel reaches a run its runtime started outside the server', async () => {
    const server = await testServer()
    const run = await server.runtime.start('waits')
    expect((await server.json(`/v1/runs/${run.runId}/cancel`, { method: 'POST' })).status).toBe(202)
    expect((await run.done).disposition).toBe('cancelled')
  })

  it('GET /v1/runs pages newest first with a cursor and filters by workflow and status', async () => {
    const server = await testServer()
    const ids: string[] = []
    for (const name of ['echo', 'fails', 'echo', 'partial', 'echo']) {
      const { body } = await server.json<Accepted>(`/v1/workflows/${name}/runs`, post(name === 'echo' ? { input: { ticket: 'x' } } : {}))
      await ended(server, body.runId)
      ids.push(body.runId)
      await sleep(5)
    }
    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const page: { status: number; body: { runs: { runId: string; workflow: string; status: string; createdAt: string | null }[]; nextCursor: string | null } } = await server.json(
        `/v1/runs?limit=2${cursor === null ? '' : `&cursor=${cursor}`}`,
      )
      expect(page.status).toBe(200)
      expect(page.body.runs.length).toBeLessThanOrEqual(2)
      seen.push(...page.body.runs.map((run) => run.runId))
      cursor = page.body.nextCursor
      pages += 1
    } while (cursor !== null && pages < 10)
    expect(seen).toEqual([...ids].reverse())
    const echoes = await server.json<{ runs: { runId: string; workflow: string }[] }>('/v1/runs?workflow=echo')
    expect(echoes.body.runs.map((run) => run.runId)).toEqual([ids[4], ids[2], ids[0]])
    const failed = await server.json<{ runs: { runId: string; status: string }[] }>('/v1/runs?status=failed')
    expect(failed.body.runs).toMatchObject([{ runId: ids[1], status: 'failed', workflow: 'fails' }])
    expectError(await server.json('/v1/runs?status=lost'), 400, 'invalid_request')
    expectError(await server.json('/v1/runs?limit=0'), 400, 'invalid_request')
    expectError(await server.json('/v1/runs?limit=101'), 400, 'invalid_request')
    expectError(await server.json('/v1/runs?cursor=garbage'), 400, 'invalid_request')
  })
})

describe('results', () => {
  it('a failed run and a partial answer answer 200 with ok: false, never a success shape', async () => {
    const server = await testServer()
    const failed = (await server.json<Accepted>('/v1/workflows/fails/runs', post({}))).body
    expect(await ended(server, failed.runId)).toMatchObject({
      schema: 'locus.run-result.v1',
      ok: false,
      disposition: 'failed',
      answerOutcome: 'failed',
      error: { message: expect.stringMatching(/ticket system is down/) },
    })
    const partial = (await server.json<Accepted>('/v1/workflows/partial/runs', post({}))).body
    const body = await ended(server, partial.runId)
    expect(body).toMatchObject({ ok: false, disposition: 'completed', answerOutcome: 'partial', gaps: [{ tool: 'billing', criticality: 'enriching' }], caveats: ['billing unknown'] })
    expect((await server.json(`/v1/runs/${partial.runId}`)).body).toMatchObject({ status: 'completed', answerOutcome: 'partial', caveats: ['billing unknown'] })
  })

  it('long-polls up to wait seconds: 202 when the wait ends first, 200 as soon as the run ends', async () => {
    const server = await testServer({ maxResultWaitSeconds: 1 })
    const { body: run } = await server.json<Accepted>('/v1/workflows/waits/runs', post({}))
    let began = Date.now()
    const capped = await server.json(`/v1/runs/${run.runId}/result?wait=30`)
    expect(capped.status).toBe(202)
    expect(Date.now() - began).toBeGreaterThanOrEqual(900)
    expect(Date.now() - began).toBeLessThan(5_000)
    began = Date.now()
    const waiting = server.json(`/v1/runs/${run.runId}/result?wait=1`)
    await sleep(100)
    server.runtime.cancel(run.runId)
    expect((await waiting).status).toBe(200)
    expect(Date.now() - began).toBeLessThan(900)
    expectError(await server.json(`/v1/runs/${run.runId}/result?wait=-1`), 400, 'invalid_request')
    expectError(await server.json(`/v1/runs/${run.runId}/result?wait=soon`), 400, 'invalid_request')
    expectError(await server.json('/v1/runs/nope/result'), 404, 'not_found')
  })
})

describe('journal', () => {
  it('GET /v1/runs/{id}/journal is NDJSON of the journal lines, after a seq and up to a limit', async () => {
    const server = await testServer()
    const { body: run } = await server.json<Accepted>('/v1/workflows/chatty/runs', post({ input: { lines: 30, pauseMs: 0 } }))
    await ended(server, run.runId)
    const response = await server.request(`/v1/runs/${run.runId}/journal`)
    expect(response.headers.get('content-type')).toMatch(/^application\/x-ndjson/)
    const text = await response.text()
    expect(text.endsWith('\n')).toBe(true)
    const lines = text.trim().split('\n').map((line) => JSON.parse(line) as JournalLine)
    const stored: JournalLine[] = []
    for await (const line of server.runtime.store.readLines({ runId: run.runId, executionId: run.runId })) stored.push(line)
    expect(lines).toEqual(stored)
    // Byte for byte the file store's journal.jsonl.
    const [root] = await server.runtime.store.listExecutions(run.runId)
    expect(text).toBe(readFileSync(join(root!.location, 'journal.jsonl'), 'utf8'))
    expect(lines.map((line) => line.seq)).toEqual(lines.map((_, index) => index + 1))
    expect(lines[0]!.type).toBe('run_start')
    expect(lines.at(-1)!.type).toBe('run_end')
    const page = (await (await server.request(`/v1/runs/${run.runId}/journal?after=5&limit=3`)).text()).trim().split('\n').map((line) => JSON.parse(line) as JournalLine)
    expect(page.map((line) => line.seq)).toEqual([6, 7, 8])
    expect(await (await server.request(`/v1/runs/${run.runId}/journal?after=${lines.at(-1)!.seq}`)).text()).toBe('')
    expectError(await server.json(`/v1/runs/${run.runId}/journal?after=x`), 400, 'invalid_request')
    expectError(await server.json(`/v1/runs/${run.runId}/journal?limit=0`), 400, 'invalid_request')
    expectError(await server.json('/v1/runs/nope/journal'), 404, 'not_found')
  })

  it('reads a live run as far as it has gone', async () => {
    const server = await testServer()
    const { body: run } = await server.json<Accepted>('/v1/workflows/waits/runs', post({}))
    const text = await (await server.request(`/v1/runs/${run.runId}/journal`)).text()
    const types = text.trim().split('\n').map((line) => (JSON.parse(line) as JournalLine).type)
    expect(types[0]).toBe('run_start')
    expect(types).toContain('agent_start')
    expect(types).not.toContain('run_end')
    server.runtime.cancel(run.runId)
    await ended(server, run.runId)
  })
})

describe('cancel reasons', () => {
  it('journals who asked for a cancel over HTTP and why, once, before run_end: the key’s name, never its secret', async () => {
    const secret = 'cancel-secret-key-0123456789'
    const server = await testServer({ apiKeys: secret })
    const { body: run } = await server.json<Accepted>('/v1/workflows/waits/runs', { ...post({}), key: secret })
    expect((await server.json(`/v1/runs/${run.runId}/cancel`, { ...post({ reason: 'the ticket was closed' }), key: secret })).status).toBe(202)
    expect((await server.json(`/v1/runs/${run.runId}/cancel`, { ...post({ reason: 'again' }), key: secret })).status).toBe(202)
    await ended(server, run.runId, secret)
    const lines = (await (await server.request(`/v1/runs/${run.runId}/journal`, { key: secret })).text())
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as JournalLine)
    const requested = lines.filter((line) => line.type === 'run_cancel_requested')
    expect(requested).toEqual([expect.objectContaining({ type: 'run_cancel_requested', reason: 'the ticket was closed', by: expect.stringMatching(/^key-[0-9a-f]{8}$/) })])
    expect(JSON.stringify(lines)).not.toContain(secret)
    const at = lines.indexOf(requested[0] as JournalLine)
    expect(lines.slice(at + 1).map((line) => line.type)).toContain('run_end')
    expect(lines.at(-1)).toMatchObject({ type: 'run_end', disposition: 'cancelled' })
  })

  it('names an anonymous caller, and the default reason when the body gives none', async () => {
    const server = await testServer()
    const { body: run } = await server.json<Accepted>('/v1/workflows/waits/runs', post({}))
    expect((await server.json(`/v1/runs/${run.runId}/cancel`, { method: 'POST' })).status).toBe(202)
    await ended(server, run.runId)
    const lines = (await (await server.request(`/v1/runs/${run.runId}/journal`)).text()).trim().split('\n').map((line) => JSON.parse(line) as JournalLine)
    expect(lines.filter((line) => line.type === 'run_cancel_requested')).toEqual([expect.objectContaining({ reason: 'cancelled over HTTP', by: 'anonymous' })])
  })
})

describe('auth', () => {
  const all = 'all-scopes-secret-0001'
  const reader = 'reader-only-secret-0002'
  const starter = 'starter-secret-0003'
  const keys = `${all}, ${reader}:runs:read, ${starter}:runs:start+runs:read`

  it('without a key or with an unknown one answers 401 with a Bearer challenge; a missing scope answers 403', async () => {
    const server = await testServer({ apiKeys: keys })
    const none = await server.json('/v1/workflows')
    expectError(none, 401, 'unauthorized')
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="locus"')
    expectError(await server.json('/v1/workflows', { key: 'not-a-key-of-this-server' }), 401, 'unauthorized')
    expectError(await server.json('/v1/workflows', { headers: { authorization: `Basic ${all}` } }), 401, 'unauthorized')
    expect((await server.json('/v1/workflows', { key: reader })).status).toBe(200)
    const forbidden = await server.json<{ error: { message: string } }>('/v1/workflows/echo/runs', { ...post({ input: { ticket: 'x' } }), key: reader })
    expectError(forbidden, 403, 'forbidden')
    expect(forbidden.body.error.message).toMatch(/lacks the scope runs:start/)
    expect(forbidden.body.error.message).not.toContain(reader)
    const started = await server.json<Accepted>('/v1/workflows/waits/runs', { ...post({}), key: starter })
    expect(started.status).toBe(202)
    for (const path of ['/v1/runs', `/v1/runs/${started.body.runId}`, `/v1/runs/${started.body.runId}/result`, `/v1/runs/${started.body.runId}/journal`]) {
      expectError(await server.json(path), 401, 'unauthorized')
      expect((await server.request(path, { key: reader })).status).toBeLessThan(300)
    }
    expectError(await server.json(`/v1/runs/${started.body.runId}/events`), 401, 'unauthorized')
    expectError(await server.json(`/v1/runs/${started.body.runId}/cancel`, { method: 'POST', key: starter }), 403, 'forbidden')
    expectError(await server.json(`/v1/runs/${started.body.runId}/cancel`, { method: 'POST', key: reader }), 403, 'forbidden')
    expect((await server.json(`/v1/runs/${started.body.runId}/cancel`, { method: 'POST', key: all })).status).toBe(202)
    await ended(server, started.body.runId, all)
    expectError(await server.json(`/v1/runs/${started.body.runId}/resume`, { method: 'POST', key: reader }), 403, 'forbidden')
    // Public: health, readiness and the API description.
    for (const path of ['/healthz', '/readyz', '/openapi.json']) expect((await server.request(path)).status).toBe(200)
  })

  it('idempotency keys are per API key', async () => {
    const server = await testServer({ apiKeys: keys })
    const first = await server.json<Accepted>('/v1/workflows/echo/runs', { ...post({ input: { ticket: 'x' } }, { 'Idempotency-Key': 'same' }), key: all })
    const second = await server.json<Accepted>('/v1/workflows/echo/runs', { ...post({ input: { ticket: 'x' } }, { 'Idempotency-Key': 'same' }), key: starter })
    expect([first.status, second.status]).toEqual([202, 202])
    expect(first.body.runId).not.toBe(second.body.runId)
    await ended(server, first.body.runId, all)
    await ended(server, second.body.runId, all)
  })

  it('refuses bad key lists at start, naming the entry but never the secret', async () => {
    const runtime = testRuntime()
    await expect(startServer({ runtime, port: 0, apiKeys: 'short' })).rejects.toThrow(/API key 1 of 1: a secret must be at least 16 characters/)
    await expect(startServer({ runtime, port: 0, apiKeys: [`${all}:runs:write`] })).rejects.toThrow(/unknown scope "runs:write"/)
    await expect(startServer({ runtime, port: 0, apiKeys: `${all},${all}` })).rejects.toThrow(/listed twice/)
    const error = await startServer({ runtime, port: 0, apiKeys: `${all}:runs:write` }).catch((caught: unknown) => caught as Error)
    expect((error as Error).message).not.toContain(all)
  })

  it('reads LOCUS_API_KEYS when apiKeys is not given', async () => {
    const server = await testServer({ env: { LOCUS_API_KEYS: `${reader}:runs:read` } })
    expectError(await server.json('/v1/runs'), 401, 'unauthorized')
    expect((await server.json('/v1/runs', { key: reader })).status).toBe(200)
  })
})

describe('the rest', () => {
  it('unknown routes and methods answer 404 in the error shape', async () => {
    const server = await testServer()
    expectError(await server.json('/v2/nothing'), 404, 'not_found')
    expectError(await server.json('/v1/workflows', { method: 'DELETE' }), 404, 'not_found')
    expectError(await server.json('/v1/runs/x/cancel'), 404, 'not_found')
  })

  it('GET /healthz and /readyz answer without a key', async () => {
    const server = await testServer({ apiKeys: ['a-very-long-secret-0001'] })
    expect(await server.json('/healthz')).toMatchObject({ status: 200, body: { ok: true } })
    expect(await server.json('/readyz')).toMatchObject({ status: 200, body: { ready: true, activeRuns: 0, openStreams: 0 } })
  })

  it('GET /openapi.json is OpenAPI 3.1 whose every $ref resolves and whose paths are the routes', async () => {
    const server = await testServer({ apiKeys: ['a-very-long-secret-0001'] })
    const { status, body } = await server.json<{ openapi: string; paths: Record<string, Record<string, unknown>>; components: { schemas: Record<string, unknown> } }>('/openapi.json')
    expect(status).toBe(200)
    expect(body.openapi).toBe('3.1.0')
    expect(Object.keys(body.paths).sort()).toEqual(
      [
        '/healthz',
        '/mcp',
        '/openapi.json',
        '/v1/deploy-check',
        '/readyz',
        '/v1/runs',
        '/v1/runs/{id}',
        '/v1/runs/{id}/cancel',
        '/v1/runs/{id}/deferred',
        '/v1/runs/{id}/deferred/{deferredId}/reject',
        '/v1/runs/{id}/deferred/{deferredId}/resolve',
        '/v1/runs/{id}/events',
        '/v1/runs/{id}/events-token',
        '/v1/runs/{id}/journal',
        '/v1/runs/{id}/queries/{name}',
        '/v1/runs/{id}/result',
        '/v1/runs/{id}/resume',
        '/v1/runs/{id}/signals/{name}',
        '/v1/callbacks/deferred/{id}/{deferredId}',
        '/v1/runs/{id}/updates/{name}',
        '/v1/queues',
        '/v1/runs/{id}/stream',
        '/v1/schedules',
        '/v1/schedules/{id}',
        '/v1/schedules/{id}/backfill',
        '/v1/schedules/{id}/pause',
        '/v1/schedules/{id}/trigger',
        '/v1/schedules/{id}/unpause',
        '/v1/workflows',
        '/v1/workflows/{name}/runs',
        '/v1/worker/actions',
        '/v1/worker/triggers',
      ].sort(),
    )
    const refs = [...JSON.stringify(body).matchAll(/"\$ref":"([^"]+)"/g)].map((match) => match[1]!)
    expect(refs.length).toBeGreaterThan(10)
    for (const ref of new Set(refs)) {
      expect(ref).toMatch(/^#\/components\/schemas\/[^/#]+$/)
      expect(body.components.schemas, ref).toHaveProperty([ref.slice('#/components/schemas/'.length)])
    }
    expect(body.components.schemas.JournalLine).toBeDefined()
    expect(body.components.schemas.Error).toMatchObject({ properties: { error: { properties: { code: { enum: [...SERVER_ERROR_CODES] } } } } })
    expect(body.components.schemas.StartRunBody).toMatchObject({ properties: { launchMode: { enum: ['interactive', 'background'] } }, additionalProperties: false })
    expect(body.paths['/v1/worker/triggers']?.get).toMatchObject({ 'x-locus-scope': 'worker', parameters: expect.arrayContaining([expect.objectContaining({ name: 'worker', required: true })]) })
    expect(body.components.schemas.WorkerResponse).toMatchObject({ properties: { actions: { type: 'array' } }, additionalProperties: false })
    expect(body.components.schemas.Run).toMatchObject({ properties: { deferred: { type: 'array' } } })
    expect(body.paths['/v1/deploy-check']?.post).toMatchObject({ 'x-locus-scope': 'runs:read', requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/DeployCheckBody' } } } } })
    expect(body.components.schemas.DeployCheckReport).toMatchObject({ properties: { runs: { items: { properties: { verdict: { enum: ['identical', 'diverged', 'input-invalid', 'nothing-recorded', 'error'] } } } } } })
  })
})
