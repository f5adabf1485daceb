// Load on the HTTP server over loopback, each figure beside an in-process
// floor measured in the same run:
// 1. runs started concurrently over HTTP, against runtime.start() in-process;
// 2. event-stream subscribers on one run: delivery latency from the journal
//    append to the client reading the frame (clients in a child process),
//    against RunHandle.subscribe in the server's process; every subscriber must
//    receive every line; peak heap per subscriber;
//    and against a bare Hono SSE broadcast of the same lines to as many
//    clients (bench/hono-floor.ts);
// 3. requests per second for GET /v1/runs/{id}, against runtime.get() and a
//    bare Hono route answering the same body;
// 4. GET /v1/runs?workflow= over 10,000 stored runs (summary rows), p50/p99,
//    against the store's listRunRows in-process;
// 5. the same listing on PostgreSQL (its locus_runs rows) when
//    LOCUS_TEST_PG_URL names a database, in a scratch schema dropped after.
// LOCUS_BENCH_SMOKE=1 runs every part at a small size in seconds.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { reportTarget } from '@locus/bench-kit'
import { createRuntime, defineWorkflow } from '@locus/runtime'
import { createFileRunStore } from '@locus/store'
import { createPostgresRunStore } from '@locus/store-postgres'
import pg from 'pg'
import { z } from 'zod'
import { startServer } from '../src/index.js'
import { broadcastFloor, jsonFloor, nodeBroadcastFloor } from './hono-floor.js'

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const CONCURRENT_STARTS = smoke ? 20 : 200
const SUBSCRIBERS = Number(process.env.LOCUS_BENCH_SUBSCRIBERS ?? (smoke ? 50 : 1_000))
const LINES = Number(process.env.LOCUS_BENCH_LINES ?? (smoke ? 100 : 1_000))
const PAUSE_MS = Number(process.env.LOCUS_BENCH_PAUSE_MS ?? 2)
const GETS = smoke ? 300 : 5_000
const GET_CONCURRENCY = 32
const GET_ROUNDS = smoke ? 1 : 5
const LISTED_RUNS = Number(process.env.LOCUS_BENCH_LISTED_RUNS ?? (smoke ? 500 : 10_000))
const LISTED_WORKFLOWS = 50
const LISTINGS = smoke ? 50 : 500
const PG_URL = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL

const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error('run with node --expose-gc (pnpm --filter @locus/server bench does)')
const wallNow = (): number => performance.timeOrigin + performance.now()
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
}
const ms = (value: number): string => `${value.toFixed(2)} ms`

/** The sorted durations of LISTINGS calls of `task`, one at a time. */
async function timed(task: (index: number) => Promise<unknown>): Promise<number[]> {
  const samples: number[] = []
  for (let index = 0; index < LISTINGS; index += 1) {
    const begin = performance.now()
    await task(index)
    samples.push(performance.now() - begin)
  }
  return samples.sort((a, b) => a - b)
}

/** Calls GET /v1/runs?workflow= for the `index`th workflow on `base` and checks it lists a full page. */
async function listPage(base: string, index: number): Promise<void> {
  const response = await fetch(`${base}/v1/runs?workflow=wf-${String(index % LISTED_WORKFLOWS)}&limit=20`)
  if (response.status !== 200) throw new Error(`GET /v1/runs answered ${response.status}`)
  const body = (await response.json()) as { runs: unknown[] }
  const expected = Math.min(20, LISTED_RUNS / LISTED_WORKFLOWS)
  if (body.runs.length !== expected) throw new Error(`GET /v1/runs listed ${body.runs.length} runs, expected ${expected}`)
}

let openGate: () => void = () => undefined
const gate = new Promise<void>((resolve) => {
  openGate = resolve
})

const quick = defineWorkflow({ name: 'quick', run: () => ({ ok: true }) })
const broadcast = defineWorkflow({
  name: 'broadcast',
  input: z.object({ lines: z.number().int().min(1), pauseMs: z.number().min(0) }),
  run: async ({ input, log }) => {
    await gate
    for (let index = 0; index < input.lines; index += 1) {
      // `t` is taken just before the append; both the floor and the HTTP clients measure from it.
      log('tick', { index, t: wallNow() })
      await sleep(input.pauseMs)
    }
    return { ok: true }
  },
})

const scratch = mkdtempSync(join(tmpdir(), 'locus-server-bench-'))
const runtime = createRuntime({ workflows: [quick, broadcast], runsDir: scratch })
const server = await startServer({ runtime, port: 0, env: {}, shutdownGraceMs: 1_000 })

interface SubscriberReport {
  readonly p50: number
  readonly p99: number
  readonly max: number
  readonly samples: number
  readonly minReceived: number
  readonly maxReceived: number
}

/** Follows a subscribers.mjs process: `connected` once every stream is open, `report()` its figures once it exits. */
function watchSubscribers(child: ReturnType<typeof spawn>): { connected: Promise<void>; report: () => Promise<SubscriberReport> } {
  let output = ''
  const connected = new Promise<void>((resolve, reject) => {
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk
      if (output.includes('{"connected":true}')) resolve()
    })
    child.once('exit', (code) => {
      reject(new Error(`the subscribers exited (${String(code)}) before all connected`))
    })
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
  return {
    connected,
    async report() {
      if ((await exited) !== 0) throw new Error('the subscribers failed')
      return JSON.parse(output.trim().split('\n').at(-1) ?? '{}') as SubscriberReport
    },
  }
}

async function settle(runIds: readonly string[]): Promise<void> {
  for (const runId of runIds) await runtime.live(runId)?.done.catch(() => undefined)
}

try {
  console.log(`@locus/server load on loopback${smoke ? ' (smoke size)' : ''}; Node ${process.version}`)

  // ---- 1. Concurrent starts.
  const floorStart = performance.now()
  const floorHandles = await Promise.all(Array.from({ length: CONCURRENT_STARTS }, () => runtime.start('quick')))
  const floorMs = performance.now() - floorStart
  await Promise.all(floorHandles.map((handle) => handle.done))
  const latencies: number[] = []
  const httpStart = performance.now()
  const accepted = await Promise.all(
    Array.from({ length: CONCURRENT_STARTS }, async () => {
      const sent = performance.now()
      const response = await fetch(`${server.url}/v1/workflows/quick/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
      const body = (await response.json()) as { runId: string }
      latencies.push(performance.now() - sent)
      if (response.status !== 202) throw new Error(`start answered ${response.status}`)
      return body.runId
    }),
  )
  const httpMs = performance.now() - httpStart
  await settle(accepted)
  latencies.sort((left, right) => left - right)
  console.log(`\n1. ${CONCURRENT_STARTS} runs started at once`)
  console.log(`   floor: runtime.start() x${CONCURRENT_STARTS} in-process   ${ms(floorMs)} for all`)
  console.log(`   POST /v1/workflows/quick/runs x${CONCURRENT_STARTS}        ${ms(httpMs)} for all (${(httpMs / floorMs).toFixed(2)}x the floor); per request p50 ${ms(percentile(latencies, 50))}, p99 ${ms(percentile(latencies, 99))}`)

  // ---- 2. Subscribers on one run.
  const started = await fetch(`${server.url}/v1/workflows/broadcast/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ input: { lines: LINES, pauseMs: PAUSE_MS } }),
  })
  const { runId } = (await started.json()) as { runId: string }
  const live = runtime.live(runId)
  if (live === undefined) throw new Error('the broadcast run is not live')
  const floor: number[] = []
  live.subscribe((line) => {
    if (line.type === 'log') floor.push(wallNow() - (line.data as { t: number }).t)
  })
  gc()
  const heapBase = process.memoryUsage().heapUsed
  let heapPeak = heapBase
  const sampler = setInterval(() => {
    heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed)
  }, 5)
  const script = fileURLToPath(new URL('./subscribers.mjs', import.meta.url))
  const child = spawn(process.execPath, [script, `${server.url}/v1/runs/${runId}/events`, String(SUBSCRIBERS)], { stdio: ['ignore', 'pipe', 'inherit'] })
  const subscribers = watchSubscribers(child)
  await subscribers.connected
  const openStreams = (await (await fetch(`${server.url}/readyz`)).json()) as { openStreams: number }
  const cpuBefore = process.cpuUsage()
  openGate()
  await live.done
  const clients = await subscribers.report()
  clearInterval(sampler)
  const cpu = process.cpuUsage(cpuBefore)
  // The same broadcast with none of Locus in the path: bare Hono SSE to as many clients, the same lines at the same pace.
  const bare = await broadcastFloor()
  let bareClients: SubscriberReport
  try {
    const bareChild = spawn(process.execPath, [script, `${bare.url}/events`, String(SUBSCRIBERS)], { stdio: ['ignore', 'pipe', 'inherit'] })
    const bareSubscribers = watchSubscribers(bareChild)
    await bareSubscribers.connected
    for (let index = 0; index < LINES; index += 1) {
      await bare.send(index + 1, JSON.stringify({ type: 'log', message: 'tick', data: { index, t: wallNow() } }))
      await sleep(PAUSE_MS)
    }
    bare.end()
    bareClients = await bareSubscribers.report()
  } finally {
    await bare.close()
  }
  // And with no framework at all: node:http writing one frame to every response, the least this machine can do.
  const bareNode = await nodeBroadcastFloor()
  let nodeClients: SubscriberReport
  try {
    const nodeChild = spawn(process.execPath, [script, `${bareNode.url}/events`, String(SUBSCRIBERS)], { stdio: ['ignore', 'pipe', 'inherit'] })
    const nodeSubscribers = watchSubscribers(nodeChild)
    await nodeSubscribers.connected
    for (let index = 0; index < LINES; index += 1) {
      bareNode.send(index + 1, JSON.stringify({ type: 'log', message: 'tick', data: { index, t: wallNow() } }))
      await sleep(PAUSE_MS)
    }
    bareNode.end()
    nodeClients = await nodeSubscribers.report()
  } finally {
    await bareNode.close()
  }
  floor.sort((left, right) => left - right)
  console.log(`\n2. ${SUBSCRIBERS} event-stream subscribers on one run of ${LINES} log lines, one every ${PAUSE_MS} ms (${openStreams.openStreams} streams open at the start)`)
  console.log(`   floor: RunHandle.subscribe in-process   p50 ${ms(percentile(floor, 50))}, p99 ${ms(percentile(floor, 99))} (${floor.length} lines)`)
  console.log(`   floor: bare Hono SSE broadcast         p50 ${ms(bareClients.p50)}, p99 ${ms(bareClients.p99)}, max ${ms(bareClients.max)} (${bareClients.samples} deliveries)`)
  console.log(`   floor: bare node:http broadcast        p50 ${ms(nodeClients.p50)}, p99 ${ms(nodeClients.p99)}, max ${ms(nodeClients.max)} (${nodeClients.samples} deliveries)`)
  console.log(`   GET /v1/runs/{id}/events over HTTP     p50 ${ms(clients.p50)}, p99 ${ms(clients.p99)}, max ${ms(clients.max)} (${clients.samples} deliveries; p99 ${(clients.p99 / bareClients.p99).toFixed(2)}x bare Hono's)`)
  console.log(`   server CPU while streaming: ${((cpu.user + cpu.system) / clients.samples).toFixed(2)} µs per delivery (user ${(cpu.user / 1000).toFixed(0)} ms, system ${(cpu.system / 1000).toFixed(0)} ms)`)
  console.log(`   every subscriber received every line: ${clients.minReceived === LINES && clients.maxReceived === LINES ? 'yes' : `NO (between ${clients.minReceived} and ${clients.maxReceived} of ${LINES})`}`)
  console.log(`   peak heap above the idle server: ${((heapPeak - heapBase) / 1024 / 1024).toFixed(1)} MiB, ${((heapPeak - heapBase) / SUBSCRIBERS / 1024).toFixed(1)} KiB per subscriber (uncollected garbage included)`)
  reportTarget('event delivery p99 over HTTP', clients.p99, 10, ' ms')
  reportTarget('event delivery p99 against bare Hono SSE', clients.p99 / bareClients.p99, 2, 'x')
  console.log(`   (p99 ${(clients.p99 / nodeClients.p99).toFixed(2)}x the bare node:http broadcast's ${ms(nodeClients.p99)}: what loopback TCP to ${SUBSCRIBERS} sockets costs on this machine with nothing else in the path)`)

  // ---- 3. GET /v1/runs/{id}.
  const target = accepted[0] as string
  async function pool(total: number, task: () => Promise<unknown>): Promise<number> {
    let next = 0
    const begin = performance.now()
    await Promise.all(
      Array.from({ length: GET_CONCURRENCY }, async () => {
        while (next < total) {
          next += 1
          await task()
        }
      }),
    )
    return (total / (performance.now() - begin)) * 1000
  }
  const floorRate = await pool(GETS, () => runtime.get(target))
  // The same body from a bare Hono route: what HTTP and the framework cost with nothing of Locus behind them.
  const sameBody = await (await fetch(`${server.url}/v1/runs/${target}`)).text()
  const bareGet = await jsonFloor(sameBody)
  // Rounds alternate between the two servers, so that neither gains from the client's (fetch's) warm-up on the other
  // or from a quieter moment of the machine; each side's median round is compared.
  const httpRates: number[] = []
  const bareRates: number[] = []
  try {
    for (let round = 0; round < GET_ROUNDS; round += 1) {
      httpRates.push(
        await pool(GETS, async () => {
          const response = await fetch(`${server.url}/v1/runs/${target}`)
          if (response.status !== 200) throw new Error(`GET answered ${response.status}`)
          await response.arrayBuffer()
        }),
      )
      bareRates.push(
        await pool(GETS, async () => {
          const response = await fetch(`${bareGet.url}/v1/runs/${target}`)
          await response.arrayBuffer()
        }),
      )
    }
  } finally {
    await bareGet.close()
  }
  const median = (values: number[]): number => [...values].sort((left, right) => left - right)[Math.floor(values.length / 2)] ?? Number.NaN
  const httpRate = median(httpRates)
  const bareRate = median(bareRates)
  console.log(`\n3. GET /v1/runs/{id} on a completed run, ${GET_CONCURRENCY} at a time, ${GET_ROUNDS} alternating rounds of ${GETS} requests per server, median round (client fetch in the same process)`)
  console.log(`   floor: runtime.get() in-process   ${floorRate.toFixed(0)} /s`)
  console.log(`   floor: bare Hono, same body       ${bareRate.toFixed(0)} requests/s`)
  console.log(`   GET /v1/runs/{id} over HTTP       ${httpRate.toFixed(0)} requests/s (${(floorRate / httpRate).toFixed(2)}x slower than runtime.get(); ${(httpRate / bareRate).toFixed(2)}x bare Hono's rate)`)
  // At least 0.8x bare Hono's rate is the same as bare Hono at most 1.25x ours.
  reportTarget("GET /v1/runs/{id}: bare Hono's rate over ours", bareRate / httpRate, 1.25)

  // ---- 4. GET /v1/runs?workflow= over many stored runs: rows only.
  const listDir = join(scratch, 'listed')
  const writer = createFileRunStore(listDir)
  for (let index = 0; index < LISTED_RUNS; index += 1) {
    const execution = await writer.createExecution({ runId: `run-${String(index).padStart(6, '0')}`, kind: 'root', now: () => 1_700_000_000_000 + index })
    execution.append({ type: 'run_start', workflow: `wf-${String(index % LISTED_WORKFLOWS)}`, input: {}, options: {} })
    if (index % 2 === 0) execution.append({ type: 'run_end', disposition: 'completed', ok: true, result: null, durationMs: 1 })
    await execution.close()
  }
  const listStore = createFileRunStore(listDir)
  const listRuntime = createRuntime({ workflows: [quick], store: listStore })
  const listServer = await startServer({ runtime: listRuntime, port: 0, env: {}, shutdownGraceMs: 1_000 })
  try {
    // The first listing of a store reads every row file; later ones keep what they read (a stat for each row shown).
    const coldBegin = performance.now()
    await listStore.listRunRows({ workflow: 'wf-0', limit: 20 })
    const coldMs = performance.now() - coldBegin
    const listFloor = await timed((index) => listStore.listRunRows({ workflow: `wf-${String(index % LISTED_WORKFLOWS)}`, limit: 20 }))
    const listHttp = await timed((index) => listPage(listServer.url, index))
    console.log(`\n4. GET /v1/runs?workflow=&limit=20 over ${LISTED_RUNS} stored runs of ${LISTED_WORKFLOWS} workflows (file store), ${LISTINGS} requests one at a time`)
    console.log(`   first listing of a cold store: ${ms(coldMs)} (reads every run.json once)`)
    console.log(`   floor: store.listRunRows in-process   p50 ${ms(percentile(listFloor, 50))}, p99 ${ms(percentile(listFloor, 99))}`)
    console.log(`   GET /v1/runs?workflow= over HTTP      p50 ${ms(percentile(listHttp, 50))}, p99 ${ms(percentile(listHttp, 99))} (p99 ${(percentile(listHttp, 99) / percentile(listFloor, 99)).toFixed(2)}x the floor's)`)
    reportTarget('GET /v1/runs?workflow= p99 over the file store', percentile(listHttp, 99), 20, ' ms')
  } finally {
    await listServer.close()
  }

  // ---- 5. The same listing on PostgreSQL (locus_runs rows), when a database is given.
  if (PG_URL === undefined) {
    console.log('\n5. GET /v1/runs?workflow= on PostgreSQL: skipped, set LOCUS_TEST_PG_URL to run it')
  } else {
    const schema = `locus_bench_list_${String(process.pid)}`
    const pgStore = createPostgresRunStore({ connectionString: PG_URL, schema, maxConnections: 16 })
    const pgRuntime = createRuntime({ workflows: [quick], store: pgStore })
    const pgServer = await startServer({ runtime: pgRuntime, port: 0, env: {}, shutdownGraceMs: 1_000 })
    try {
      const fillBegin = performance.now()
      let next = 0
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < LISTED_RUNS) {
            const index = next
            next += 1
            const execution = await pgStore.createExecution({ runId: `run-${String(index).padStart(6, '0')}`, kind: 'root', now: () => 1_700_000_000_000 + index })
            execution.append({ type: 'run_start', workflow: `wf-${String(index % LISTED_WORKFLOWS)}`, input: {}, options: {} })
            if (index % 2 === 0) execution.append({ type: 'run_end', disposition: 'completed', ok: true, result: null, durationMs: 1 })
            await execution.close()
          }
        }),
      )
      const fillMs = performance.now() - fillBegin
      const pgFloor = await timed((index) => pgStore.listRunRows({ workflow: `wf-${String(index % LISTED_WORKFLOWS)}`, limit: 20 }))
      const pgHttp = await timed((index) => listPage(pgServer.url, index))
      console.log(`\n5. GET /v1/runs?workflow=&limit=20 over ${LISTED_RUNS} stored runs of ${LISTED_WORKFLOWS} workflows (PostgreSQL), ${LISTINGS} requests one at a time`)
      console.log(`   writing the runs: ${ms(fillMs)} (16 at a time)`)
      console.log(`   floor: store.listRunRows in-process   p50 ${ms(percentile(pgFloor, 50))}, p99 ${ms(percentile(pgFloor, 99))}`)
      console.log(`   GET /v1/runs?workflow= over HTTP      p50 ${ms(percentile(pgHttp, 50))}, p99 ${ms(percentile(pgHttp, 99))} (p99 ${(percentile(pgHttp, 99) / percentile(pgFloor, 99)).toFixed(2)}x the floor's)`)
      reportTarget('GET /v1/runs?workflow= p99 over PostgreSQL', percentile(pgHttp, 99), 20, ' ms')
    } finally {
      await pgServer.close()
      await pgStore.close()
      const admin = new pg.Client({ connectionString: PG_URL })
      await admin.connect()
      await admin.query(`drop schema if exists ${schema} cascade`)
      await admin.end()
    }
  }
} finally {
  await server.close()
  rmSync(scratch, { recursive: true, force: true })
}
