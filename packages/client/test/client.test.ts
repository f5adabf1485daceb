import { createServer as createHttpServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { LocusError } from '@locus/outcome'
import { RUN_STATUSES as SERVER_RUN_STATUSES, SERVER_ERROR_CODES } from '@locus/server'
import { describe, expect, it } from 'vitest'
import { API_ERROR_CODES, LocusApiError, RUN_STATUSES, createLocusClient } from '../src/index.js'
import { KEY, eventually, storedJournal, testServer } from './helpers.js'

/** The error a promise rejects with. */
async function failure(promise: Promise<unknown>): Promise<LocusApiError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  )
  if (!LocusApiError.isInstance(error)) throw new Error(`expected a LocusApiError, got ${String(error)}`)
  return error
}

describe('createLocusClient against a real server', () => {
  it('keeps its code and status lists equal to the server’s', () => {
    expect([...API_ERROR_CODES]).toEqual([...SERVER_ERROR_CODES])
    expect([...RUN_STATUSES]).toEqual([...SERVER_RUN_STATUSES])
  })

  it('lists workflows and answers health, readiness and the API description', async () => {
    const server = await testServer()
    const locus = createLocusClient({ baseUrl: server.url, apiKey: KEY })
    const workflows = await locus.listWorkflows()
    expect(workflows.map((workflow) => workflow.name)).toEqual(['echo', 'waits', 'chatty', 'report', 'kickoff'])
    expect(workflows[0]).toMatchObject({ description: 'Repeats the ticket back.', inputSchema: { required: ['ticket'] } })
    expect(await locus.health()).toEqual({ ok: true })
    expect(await locus.ready()).toEqual({ ready: true, activeRuns: 0, openStreams: 0 })
    expect((await locus.openApi()).openapi).toBe('3.1.0')
  })

  it('starts a run once per idempotency key, reads its result, run, list and journal', async () => {
    const server = await testServer()
    const locus = createLocusClient({ baseUrl: `${server.url}/`, apiKey: KEY })
    const first = await locus.startRun('echo', { input: { ticket: 'T-1' }, idempotencyKey: 'key-T-1' })
    expect(first).toMatchObject({ created: true, executionId: first.runId, links: { self: `/v1/runs/${first.runId}` } })
    const again = await locus.startRun('echo', { input: { ticket: 'T-1' }, idempotencyKey: 'key-T-1' })
    expect(again).toMatchObject({ created: false, runId: first.runId })
    const conflict = await failure(locus.startRun('echo', { input: { ticket: 'T-2' }, idempotencyKey: 'key-T-1' }))
    expect(conflict).toMatchObject({ code: 'idempotency_conflict', status: 409, request: 'POST /v1/workflows/echo/runs' })

    const result = await locus.waitForResult(first.runId, { waitSeconds: 5 })
    expect(result).toMatchObject({ runId: first.runId, workflow: 'echo', disposition: 'completed', ok: true, result: { ok: true, answer: 'fine' } })
    const run = await locus.getRun(first.runId)
    const stored = await storedJournal(server.runtime, first.runId)
    expect(run).toMatchObject({ status: 'completed', live: false, disposition: 'completed', lastSeq: stored.at(-1)?.seq, deferred: [] })

    expect(await locus.journal(first.runId)).toEqual(stored)
    expect(await locus.journal(first.runId, { after: 1, limit: 2 })).toEqual(stored.filter((line) => line.seq > 1).slice(0, 2))

    const second = await locus.startRun('echo', { input: { ticket: 'T-3' } })
    await locus.waitForResult(second.runId)
    const page = await locus.listRuns({ workflow: 'echo', limit: 1 })
    expect(page.runs.map((item) => item.runId)).toEqual([second.runId])
    expect(page.nextCursor).not.toBeNull()
    const next = await locus.listRuns({ workflow: 'echo', limit: 1, cursor: page.nextCursor ?? '' })
    expect(next.runs.map((item) => item.runId)).toEqual([first.runId])
    expect((await locus.listRuns({ status: 'failed' })).runs).toEqual([])
  })

  it('answers a bad input, an unknown workflow, a missing key and a bad query with the server’s error', async () => {
    const server = await testServer()
    const locus = createLocusClient({ baseUrl: server.url, apiKey: KEY })
    const invalid = await failure(locus.startRun('echo', { input: { ticket: 'urgent' } }))
    expect(invalid).toMatchObject({ code: 'invalid_request', status: 400 })
    expect(invalid.issues).toEqual([expect.stringMatching(/^input\.ticket: /)])
    expect(invalid.message).toContain('Invalid input for workflow "echo"')
    expect(LocusError.isInstance(invalid)).toBe(true)

    expect(await failure(locus.startRun('nope'))).toMatchObject({ code: 'not_found', status: 404, message: expect.stringContaining('GET /v1/workflows lists them') })
    expect(await failure(locus.getRun('no-such-run'))).toMatchObject({ code: 'not_found', status: 404, message: 'No run "no-such-run".', requestId: expect.stringMatching(/^req_/) })
    expect(await failure(locus.listRuns({ limit: 1000 }))).toMatchObject({ code: 'invalid_request', issues: [expect.stringMatching(/^query\.limit: /)] })

    const anonymous = createLocusClient({ baseUrl: server.url })
    expect(await failure(anonymous.listWorkflows())).toMatchObject({ code: 'unauthorized', status: 401, request: 'GET /v1/workflows' })
    expect(await anonymous.health()).toEqual({ ok: true })
  })

  it('says when no server answers, and when something other than Locus does', async () => {
    const closed = await testServer()
    const url = closed.url
    await closed.close()
    const unreachable = await failure(createLocusClient({ baseUrl: url }).listWorkflows())
    expect(unreachable).toMatchObject({ code: 'unreachable', status: 0 })
    expect(unreachable.message).toContain(`Could not reach the Locus server at ${url}`)

    const other = createHttpServer((_request, response) => {
      response.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad Gateway</h1>')
    })
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve))
    try {
      const { port } = other.address() as AddressInfo
      const wrong = await failure(createLocusClient({ baseUrl: `http://127.0.0.1:${port}` }).getRun('r'))
      expect(wrong).toMatchObject({ code: 'unexpected_response', status: 502 })
      expect(wrong.message).toContain('<h1>Bad Gateway</h1>')
    } finally {
      await new Promise((resolve) => other.close(resolve))
    }
    expect(() => createLocusClient({ baseUrl: 'localhost:4477' })).toThrow(/must be http: or https:|is not a URL/)
  })

  it('cancels a running run, refuses to cancel an ended one, and resumes it', async () => {
    const server = await testServer()
    const locus = createLocusClient({ baseUrl: server.url, apiKey: KEY })
    const run = await locus.startRun('waits')
    const pending = await locus.getResult(run.runId, { wait: 0 })
    expect(pending).toMatchObject({ ended: false, pending: { runId: run.runId, status: 'running' } })
    expect(await locus.cancel(run.runId, { reason: 'no longer needed' })).toMatchObject({ runId: run.runId, status: 'cancelling' })
    expect(await locus.waitForResult(run.runId, { waitSeconds: 5 })).toMatchObject({ disposition: 'cancelled', ok: false })
    expect(await failure(locus.cancel(run.runId))).toMatchObject({ code: 'run_terminal', status: 409 })
    const resumed = await locus.resume(run.runId)
    expect(resumed).toMatchObject({ runId: run.runId, executionId: 'resume-001' })
    expect(await failure(locus.resume(run.runId))).toMatchObject({ code: 'run_owned', status: 409 })
    await locus.cancel(run.runId)
  })

  it('resolves a deferred tool, serves a remote tool as a worker, and issues an events token', async () => {
    const server = await testServer()
    const locus = createLocusClient({ baseUrl: server.url, apiKey: KEY })
    const run = await locus.startRun('report', { input: { topic: 'q3' } })
    const [deferral] = await eventually(async () => {
      const deferred = await locus.listDeferred(run.runId)
      return deferred.length > 0 ? deferred : undefined
    })
    expect(deferral).toMatchObject({ tool: 'approve', args: { topic: 'q3' }, expiresAt: null })
    expect((await locus.getRun(run.runId)).status).toBe('waiting')
    const deferredId = deferral?.deferredId ?? ''
    const misfit = await failure(locus.resolveDeferred(run.runId, deferredId, { approved: 'yes' }))
    expect(misfit).toMatchObject({ code: 'invalid_request', status: 400 })
    expect(misfit.issues.length).toBeGreaterThan(0)
    expect(await locus.resolveDeferred(run.runId, deferredId, { approved: true })).toMatchObject({ runId: run.runId, deferredId })
    expect(await failure(locus.rejectDeferred(run.runId, deferredId, { error: 'changed my mind' }))).toMatchObject({ code: 'already_resolved', status: 409 })

    const { triggers } = await locus.pollTriggers({ worker: 'w-1', tools: ['render_report'], wait: 5 })
    expect(triggers).toEqual([expect.objectContaining({ type: 'tool.execute', name: 'render_report', arguments: { topic: 'q3' } })])
    const id = triggers[0]?.id ?? ''
    expect(await locus.sendActions('w-1', [{ type: 'tool.result', id, result: { pages: 12 } }])).toEqual({ accepted: [id], ignored: [] })
    expect(await locus.waitForResult(run.runId)).toMatchObject({ ok: true, result: { ok: true, topic: 'q3', pages: 12 } })

    const token = await locus.eventsToken(run.runId)
    expect(token.events).toBe(`/v1/runs/${run.runId}/events?token=${encodeURIComponent(token.token)}`)
    const byToken = await fetch(`${server.url}${token.events}`, { headers: { 'last-event-id': '0' } })
    expect(byToken.status).toBe(200)
    await byToken.body?.cancel()
  })

  it('rejects a deferral with the reason', async () => {
    const server = await testServer()
    const locus = createLocusClient({ baseUrl: server.url, apiKey: KEY })
    const run = await locus.startRun('report', { input: { topic: 'q4' } })
    const [deferral] = await eventually(async () => {
      const deferred = await locus.listDeferred(run.runId)
      return deferred.length > 0 ? deferred : undefined
    })
    expect(await locus.rejectDeferred(run.runId, deferral?.deferredId ?? '', { error: 'not this quarter' })).toMatchObject({ runId: run.runId })
    expect(await locus.waitForResult(run.runId)).toMatchObject({ disposition: 'failed', ok: false })
  })

  it('starts a run with a signal (signal-with-start), refusing an undeclared one; lists a callback URL that settles a deferral without a key', async () => {
    const server = await testServer({ callbackSecret: 'client-callback-secret-0001' })
    const locus = createLocusClient({ baseUrl: server.url, apiKey: KEY })
    expect(await failure(locus.startRun('kickoff', { signal: { name: 'stop' } }))).toMatchObject({ code: 'not_found', status: 404, message: expect.stringContaining('Declared: go') })
    const started = await locus.startRun('kickoff', { signal: { name: 'go', payload: { by: 'ops' } } })
    expect(await locus.waitForResult(started.runId)).toMatchObject({ ok: true, result: { ok: true, go: { by: 'ops' } } })

    const run = await locus.startRun('report', { input: { topic: 'q1' } })
    const [deferral] = await eventually(async () => {
      const deferred = await locus.listDeferred(run.runId)
      return deferred.length > 0 ? deferred : undefined
    })
    const callbackUrl = deferral?.callbackUrl ?? ''
    expect(callbackUrl.startsWith(`${server.url}/v1/callbacks/deferred/${run.runId}/`)).toBe(true)
    const answered = await fetch(callbackUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ result: { approved: false } }) })
    expect(answered.status).toBe(200)
    expect(await locus.waitForResult(run.runId)).toMatchObject({ ok: true, result: { ok: true, topic: 'q1', pages: 0 } })
    const later = await failure(locus.resolveDeferred(run.runId, deferral?.deferredId ?? '', { approved: true }))
    expect(later).toMatchObject({ code: 'already_resolved', status: 409 })
  })
})
