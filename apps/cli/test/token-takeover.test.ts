// Issue 35, "Done when": a `locus worker` on PostgreSQL streaming a 400-token answer from a model server on
// loopback is SIGKILLed at a point fast-check chooses; another worker takes the run over and the call runs
// again. A client of `locus serve` that reconnects with its last offset gets every record exactly once, in
// order: the first attempt's deltas closed as discarded, the second's whole, and their text is the answer
// the journal's agent_end holds. CI runs a few kill points; LOCUS_KILL_RUNS=<n> runs n of them.
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { writeFile } from 'node:fs/promises'
import { type Server, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { type TokenStreamRecord, createLocusClient } from '@locus/client'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { adminQuery, repoRoot, startLocus, tempDir, until, waitForOutput } from './helpers.js'

const url = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL
const ci = (process.env.CI ?? '') !== ''
const runtimeEntry = join(repoRoot, 'packages', 'runtime', 'dist', 'index.js')
const zodEntry = join(repoRoot, 'packages', 'runtime', 'node_modules', 'zod', 'index.js')
const RUNS = Number(process.env.LOCUS_KILL_RUNS ?? '3')
const TOKENS = 400
const CHUNK_GAP_MS = 2
const CHUNKS_PER_TICK = 8
const LEASE_MS = 1000

/** The answer the model streams, one token a chunk: `t0 t1 ... t399 `. */
const tokenOf = (index: number): string => `t${index} `
const ANSWER = Array.from({ length: TOKENS }, (_, index) => tokenOf(index)).join('')

/** What one run of the property is told: on which chunk of the first request its worker dies. */
interface KillPlan {
  readonly killAt: number
  readonly kill: (worker: number) => void
}

describe.skipIf(url === undefined && !ci)('a token stream through a worker SIGKILLed mid-answer on PostgreSQL', () => {
  const database = `locus_token_kill_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
  const children = new Set<ChildProcess>()
  let databaseUrl = ''
  let dir = ''
  let base = ''
  let model: Server
  let modelUrl = ''
  /** Requests the model server was sent, by the run's number (its prompt says it). */
  const requests = new Map<number, number>()
  const plans = new Map<number, KillPlan>()

  /** The live workers by number: each asks the model at a URL of its own, so the model server knows whose request it serves. */
  const workers = new Map<number, ChildProcess>()
  let spawned = 0
  const startWorker = async (): Promise<void> => {
    const number = spawned
    spawned += 1
    const worker = startLocus(
      ['worker', '--database-url', databaseUrl, '--workflows', dir, '--model-host', 'openai-compatible', '--base-url', `${modelUrl}/w${number}/v1`, '--model', 'tiny', '--api-key', 'k', '--lease-ms', String(LEASE_MS), '--concurrency', '1'],
      { cwd: dir },
    )
    children.add(worker)
    workers.set(number, worker)
    worker.once('exit', () => {
      children.delete(worker)
      workers.delete(number)
    })
    await waitForOutput(worker, /worker running/)
  }

  beforeAll(async () => {
    if (url === undefined) throw new Error('LOCUS_TEST_PG_URL is not set, but CI is: start PostgreSQL (scripts/ci-services.sh start).')
    await adminQuery(url, `create database "${database}"`)
    const parsed = new URL(url)
    parsed.pathname = `/${database}`
    databaseUrl = parsed.href
    // An OpenAI-compatible model on loopback: each request streams the 400 tokens a chunk at a time.
    model = createServer((request, response) => {
      let body = ''
      request.on('data', (chunk: Buffer) => (body += chunk.toString()))
      request.on('end', () => {
        const parsedBody = JSON.parse(body) as { model: string; messages: { content: unknown }[] }
        const worker = Number(/^\/w(\d+)\//.exec(request.url ?? '')?.[1] ?? -1)
        const run = Number(/run (\d+)/.exec(JSON.stringify(parsedBody.messages))?.[1] ?? -1)
        const nth = (requests.get(run) ?? 0) + 1
        requests.set(run, nth)
        const plan = nth === 1 ? plans.get(run) : undefined
        response.writeHead(200, { 'content-type': 'text/event-stream' })
        const chunk = (delta: object, finish: string | null): string =>
          `data: ${JSON.stringify({ id: `c-${run}-${nth}`, object: 'chat.completion.chunk', created: 1, model: parsedBody.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
        let index = 0
        // A few chunks a tick, each its own SSE event: a loaded CI machine's timers would otherwise set the pace.
        const next = (): void => {
          for (let sent = 0; sent < CHUNKS_PER_TICK; sent += 1) {
            if (response.destroyed) return
            if (index === TOKENS) {
              response.write(chunk({}, 'stop'))
              response.end('data: [DONE]\n\n')
              return
            }
            response.write(chunk(index === 0 ? { role: 'assistant', content: tokenOf(index) } : { content: tokenOf(index) }, null))
            index += 1
            // The worker dies with the first request's chunk `killAt` sent: the rest of it never comes.
            if (plan !== undefined && index === plan.killAt) {
              plan.kill(worker)
              return
            }
          }
          setTimeout(next, CHUNK_GAP_MS)
        }
        next()
      })
    })
    await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve))
    modelUrl = `http://127.0.0.1:${(model.address() as AddressInfo).port}`
    dir = await tempDir('locus-token-kill-')
    await writeFile(
      join(dir, 'talker.mts'),
      [
        `import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
        `import { z } from ${JSON.stringify(zodEntry)}`,
        'export default defineWorkflow({',
        "  name: 'talker',",
        '  input: z.object({ run: z.number() }),',
        '  run: async ({ input, agent }) => ({ ok: true, answer: (await agent(`Say the tokens, run ${input.run}`)).answer }),',
        '})',
      ].join('\n'),
    )
    // Two workers: when the one running a run dies, the other takes it over once its lease lapses.
    const server = startLocus(['serve', '--database-url', databaseUrl, '--workflows', dir, '--port', '0'], { cwd: dir })
    children.add(server)
    const [served] = await Promise.all([waitForOutput(server, /at (http:\/\/\S+)/), startWorker(), startWorker()])
    base = served[1] ?? ''
  }, 60_000)

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL')
    await Promise.all([...children].filter((child) => child.exitCode === null && child.signalCode === null).map((child) => once(child, 'exit')))
    model.close()
    if (url !== undefined) await adminQuery(url, `drop database if exists "${database}" with (force)`)
  })

  it(`delivers every record once, in order, across ${RUNS} kill points: the killed attempt's text discarded, the retry's whole`, async () => {
    // Reconnects after at most 100 ms (the server's retry hint is longer): the test waits on the takeover, not on the hint.
    const client = createLocusClient({ baseUrl: base, sleep: (ms) => new Promise<void>((resolve) => setTimeout(resolve, Math.min(ms, 100))) })
    let runNumber = 0
    let standby: Promise<void> = Promise.resolve()
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: TOKENS - 1 }), fc.boolean(), async (killAt, reconnectBeforeTakeover) => {
        runNumber += 1
        const run = runNumber
        let markKilled = (): void => undefined
        const killed = new Promise<void>((resolve) => {
          markKilled = resolve
        })
        // Two live workers before each run: one takes it, the other stands by.
        await standby
        plans.set(run, {
          killAt,
          kill: (worker) => {
            // The worker whose request this is dies mid-answer; a fresh one is started to stand by for the next run.
            workers.get(worker)?.kill('SIGKILL')
            markKilled()
          },
        })
        const started = await client.startRun('talker', { input: { run } })
        const runId = started.runId
        // The client follows from the first record; it drops its connection when the worker dies.
        const received: TokenStreamRecord[] = []
        // Beside the tokens, one events stream for the whole run (?follow=run): it must go on from the dead worker's execution into the taker's.
        const following = fetch(`${base}/v1/runs/${runId}/events?follow=run`).then((response) => response.text())
        const first = new AbortController()
        const reading = (async () => {
          for await (const record of client.stream(runId, { signal: first.signal })) received.push(record)
        })()
        await killed
        standby = startWorker()
        // Settled by the next run's await (a worker still starting when the file ends is killed in afterAll).
        standby.catch(() => undefined)
        first.abort()
        await reading
        // Reconnect at once, or once the run was taken over.
        if (!reconnectBeforeTakeover) await until('another worker to take the run over', async () => ((await client.getRun(runId)).executionId.startsWith('resume-') ? true : undefined))
        // Reconnect with the last offset seen: the stream picks up there and follows the takeover to the run's end.
        const last = received.at(-1)?.offset ?? -1
        for await (const record of client.stream(runId, { after: last })) received.push(record)

        // Every record once, in order, from offset 0.
        expect(received.map((record) => record.offset)).toEqual(received.map((_, index) => index))
        // The killed execution is there when any of its batches landed before it died (a kill before its first write leaves nothing).
        const executions = [...new Set(received.map((record) => record.executionId))]
        const taker = executions.at(-1)
        expect(taker).toMatch(/^resume-\d+$/)
        expect(executions.length === 1 || (executions.length === 2 && executions[0] === runId)).toBe(true)
        const dead = executions.length === 2 ? runId : undefined
        const deadRecords = received.filter((record) => record.executionId === dead)
        const takerRecords = received.filter((record) => record.executionId === taker)
        // The killed attempt: some of its tokens, in order, then closed as discarded (by the worker that took over).
        const deadText = deadRecords.filter((record) => record.kind === 'delta').map((record) => record.text).join('')
        expect(ANSWER.startsWith(deadText)).toBe(true)
        if (deadText !== '') {
          expect(deadRecords.at(-1)).toMatchObject({ kind: 'discarded', cause: 'superseded' })
          expect(deadRecords.filter((record) => record.kind !== 'delta')).toHaveLength(1)
          // Discarded before the retry streamed a token of its own.
          expect(deadRecords.at(-1)?.offset).toBeLessThan(takerRecords[0]?.offset ?? -1)
        }
        // The retry: the whole answer, ended.
        const takerText = takerRecords.filter((record) => record.kind === 'delta').map((record) => record.text).join('')
        expect(takerText).toBe(ANSWER)
        expect(takerRecords.at(-1)).toMatchObject({ kind: 'end' })
        expect(takerRecords.filter((record) => record.kind !== 'delta')).toHaveLength(1)
        // The text that counts is the journal's answer.
        const journal = await client.journal(runId, { execution: taker ?? '' })
        const agentEnd = journal.filter((line) => line.type === 'agent_end').at(-1) as { status?: string; answer?: string } | undefined
        expect(agentEnd).toMatchObject({ status: 'completed', answer: takerText })
        // The run's one events stream: every line of every execution (root, then each takeover), once, in order, then its end.
        const chain = ((await (await fetch(`${base}/v1/runs/${runId}`)).json()) as { executions: { executionId: string }[] }).executions.map((execution) => execution.executionId)
        expect(chain.at(-1)).toBe(taker)
        const lines = (await Promise.all(chain.map((execution) => client.journal(runId, { execution })))).flat()
        const eventIds = (await following)
          .split('\n')
          .filter((row) => row.startsWith('id: '))
          .map((row) => row.slice(4))
        expect(eventIds).toEqual(lines.map((line) => `${line.executionId}:${line.seq}`))
      }),
      { numRuns: RUNS, endOnFailure: true },
    )
  }, 120_000)
})
