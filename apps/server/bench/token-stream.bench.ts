// The token stream (GET /v1/runs/{id}/stream) under load on loopback, each
// figure beside a floor measured in the same run:
// 1. added latency from the model server's chunk to the client's event, p50
//    and p99: an OpenAI-style model server on loopback stamps each chunk with
//    the wall-clock time it sent it; the floor is the host in the server's
//    process reading that chunk (the model's own stream), the figure is the
//    clients reading the record from the route (host -> stream writer -> file
//    store -> route -> HTTP), with `subscribers` clients in a child process;
// 2. store writes per second per stream while the model streams (at most 20:
//    one write per 50 ms);
// 3. heap per subscriber with that many open streams on one run.
// LOCUS_BENCH_SMOKE=1 runs it at a small size in seconds. LOCUS_BENCH_STORE=postgres
// runs it on the PostgreSQL store of LOCUS_TEST_PG_URL (in a scratch schema,
// dropped after) instead of the file store; without a URL it says so and skips.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { type Server, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { reportTarget } from '@locus/bench-kit'
import { type AgentHost, createRuntime, defineWorkflow } from '@locus/runtime'
import { type RunStore, type RunStreams, createFileRunStore } from '@locus/store'
import { createPostgresRunStore } from '@locus/store-postgres'
import pg from 'pg'
import { startServer } from '../src/index.js'

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const STORE = process.env.LOCUS_BENCH_STORE === 'postgres' ? 'postgres' : 'file'
const PG_URL = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL
if (STORE === 'postgres' && PG_URL === undefined) {
  console.log('@locus/server token stream on PostgreSQL: skipped, set LOCUS_TEST_PG_URL to a PostgreSQL database to run it.')
  process.exit(0)
}
const PG_SCHEMA = `locus_bench_tokens_${String(process.pid)}`
const SUBSCRIBERS = Number(process.env.LOCUS_BENCH_SUBSCRIBERS ?? (smoke ? 50 : 1_000))
const CHUNKS = Number(process.env.LOCUS_BENCH_CHUNKS ?? (smoke ? 200 : 1_000))
const GAP_MS = Number(process.env.LOCUS_BENCH_GAP_MS ?? 5)

const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error('run with node --expose-gc (pnpm --filter @locus/server bench does)')
const wallNow = (): number => performance.timeOrigin + performance.now()
const percentile = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
const ms = (value: number): string => `${value.toFixed(2)} ms`

// The model: one streamed answer, a chunk every GAP_MS once the gate opens, each chunk's text its send time.
let openGate: () => void = () => undefined
const gate = new Promise<void>((resolve) => {
  openGate = resolve
})
const model: Server = createServer((request, response) => {
  request.resume()
  request.on('end', () => {
    response.writeHead(200, { 'content-type': 'text/event-stream' })
    void gate.then(() => {
      let sent = 0
      const timer = setInterval(() => {
        if (sent === CHUNKS) {
          clearInterval(timer)
          response.end('data: [DONE]\n\n')
          return
        }
        sent += 1
        response.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: `${wallNow().toFixed(3)} ` } }] })}\n\n`)
      }, GAP_MS)
    })
  })
})
await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve))
const modelUrl = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1/chat/completions`

// A minimal host over the model's own stream: each chunk's text goes to onText as it is read. The floor is here.
const floor: number[] = []
const host: AgentHost = {
  name: 'loopback-model',
  specificationVersion: 'v1',
  openSession: () => ({
    transcript: () => [],
    async prompt(text, options) {
      const response = await fetch(modelUrl, { method: 'POST', body: JSON.stringify({ stream: true, messages: [{ role: 'user', content: text }] }), signal: options.signal })
      const reader = (response.body as ReadableStream<Uint8Array>).getReader()
      const decoder = new TextDecoder()
      let buffer = ''
      let answer = ''
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        const at = wallNow()
        buffer += decoder.decode(value, { stream: true })
        let end = buffer.indexOf('\n\n')
        while (end >= 0) {
          const frame = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          end = buffer.indexOf('\n\n')
          if (!frame.startsWith('data: {')) continue
          const piece = (JSON.parse(frame.slice(6)) as { choices: { delta: { content: string } }[] }).choices[0]?.delta.content ?? ''
          floor.push(at - Number(piece))
          answer += piece
          options.onText?.({ kind: 'delta', llmAttempt: 1, text: piece })
        }
      }
      options.onText?.({ kind: 'end', llmAttempt: 1 })
      return { text: answer, stopReason: 'end' }
    },
  }),
}

const talker = defineWorkflow({ name: 'talker', run: async ({ agent }) => ({ ok: true, chars: (await agent('stream')).answer.length }) })
const scratch = mkdtempSync(join(tmpdir(), 'locus-token-bench-'))
const pgStore = STORE === 'postgres' ? createPostgresRunStore({ connectionString: PG_URL, schema: PG_SCHEMA }) : undefined
const baseStore: RunStore = pgStore ?? createFileRunStore(scratch)
// Counts the writes of the run's stream: the writer batches them, at most one per 50 ms.
const appendTimes: number[] = []
const realStreams = baseStore.streams as RunStreams
const streams: RunStreams = {
  ...realStreams,
  append: (runId, records) => {
    appendTimes.push(performance.now())
    return realStreams.append(runId, records)
  },
}
const runtime = createRuntime({ workflows: [talker], store: { ...baseStore, streams }, host })
const server = await startServer({ runtime, port: 0, env: {}, shutdownGraceMs: 1_000 })

try {
  console.log(`@locus/server token stream on loopback${smoke ? ' (smoke size)' : ''}, ${STORE === 'postgres' ? 'PostgreSQL' : 'file'} store; Node ${process.version}`)
  const started = await fetch(`${server.url}/v1/workflows/talker/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
  const { runId } = (await started.json()) as { runId: string }
  gc()
  const heapBase = process.memoryUsage().heapUsed
  const script = fileURLToPath(new URL('./token-subscribers.mjs', import.meta.url))
  const child = spawn(process.execPath, [script, `${server.url}/v1/runs/${runId}/stream?format=raw`, String(SUBSCRIBERS)], { stdio: ['ignore', 'pipe', 'inherit'] })
  let output = ''
  const connected = new Promise<void>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk
      if (output.includes('{"connected":true}')) resolve()
    })
    child.once('exit', (code) => {
      reject(new Error(`the subscribers exited (${String(code)}) before all connected`))
    })
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
  await connected
  // Every subscriber is open and waiting: the heap they hold, before any token.
  await new Promise((resolve) => setTimeout(resolve, 200))
  gc()
  const heapOpen = process.memoryUsage().heapUsed
  const streamStart = performance.now()
  openGate()
  await runtime.live(runId)?.done
  const streamMs = performance.now() - streamStart
  if ((await exited) !== 0) throw new Error('the subscribers failed')
  const clients = JSON.parse(output.trim().split('\n').at(-1) ?? '{}') as { p50: number; p99: number; max: number; samples: number; minReceived: number; maxReceived: number }
  floor.sort((left, right) => left - right)
  const floorP50 = percentile(floor, 50)
  const floorP99 = percentile(floor, 99)
  console.log(`\n1. ${SUBSCRIBERS} clients of GET /v1/runs/{id}/stream?format=raw on one run; the model streams ${CHUNKS} chunks, one every ${GAP_MS} ms`)
  console.log(`   floor: the host reads the model's chunk      p50 ${ms(floorP50)}, p99 ${ms(floorP99)} (${floor.length} chunks)`)
  console.log(`   clients read the record over HTTP            p50 ${ms(clients.p50)}, p99 ${ms(clients.p99)}, max ${ms(clients.max)} (${clients.samples} deliveries)`)
  console.log(`   added by store + route: p50 ${ms(clients.p50 - floorP50)}, p99 ${ms(clients.p99 - floorP99)} (${(clients.p50 / Math.max(floorP50, 0.001)).toFixed(1)}x the floor at p50)`)
  console.log(`   every client received every delta: ${clients.minReceived === CHUNKS && clients.maxReceived === CHUNKS ? 'yes' : `NO (between ${clients.minReceived} and ${clients.maxReceived} of ${CHUNKS})`}`)
  const writesPerSecond = appendTimes.length / (streamMs / 1000)
  // The bound is one write per 50 ms while the model streams, and one more at the end: the busiest second of the
  // writes before the last (the end's) is what may not pass 20.
  const beforeEnd = [...appendTimes].sort((left, right) => left - right).slice(0, -1)
  let busiestSecond = 0
  for (const [index, at] of beforeEnd.entries()) busiestSecond = Math.max(busiestSecond, beforeEnd.slice(index).filter((other) => other < at + 1000).length)
  console.log(
    `\n2. store writes for the stream: ${appendTimes.length} in ${ms(streamMs)}, ${writesPerSecond.toFixed(1)} per second on average; ${busiestSecond} in its busiest second before the end's write (${CHUNKS} chunks, ${(CHUNKS / Math.max(appendTimes.length, 1)).toFixed(1)} records per write)`,
  )
  console.log(`\n3. heap with ${SUBSCRIBERS} open streams waiting on the run: ${((heapOpen - heapBase) / 1024 / 1024).toFixed(2)} MiB above the run alone, ${((heapOpen - heapBase) / SUBSCRIBERS / 1024).toFixed(1)} KiB per subscriber (${((heapOpen - heapBase) / SUBSCRIBERS / 1024 * 1000 / 1024).toFixed(1)} MiB per 1,000)`)
  reportTarget('added latency, chunk to client event, p50', clients.p50 - floorP50, 25, ' ms')
  reportTarget('store writes per stream in its busiest second (one per 50 ms, the end aside)', busiestSecond, 20, '/s')
} finally {
  await server.close()
  model.close()
  rmSync(scratch, { recursive: true, force: true })
  if (pgStore !== undefined) {
    await pgStore.close()
    const admin = new pg.Client({ connectionString: PG_URL })
    await admin.connect()
    await admin.query(`drop schema if exists ${PG_SCHEMA} cascade`)
    await admin.end()
  }
}
