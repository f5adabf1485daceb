// The protocol's per-call costs (issue #15), each against a baseline measured
// in the same process run, in interleaved rounds:
//  1. a remote tool served by a worker in this process, against a plain
//     in-process defineTool tool(), both as tool() calls inside a workflow run
//     on the memory store;
//  2. a round trip to a worker in a child process over the stdio transport
//     (newline-delimited JSON), against the floor of a raw NDJSON echo over a
//     child process's pipes, one message at a time (target: within 1.5x),
//     with the same raw client talking to the worker child as a split of
//     where the difference lies (worker side or transport side);
//  3. the heap one run holds per open deferral with 10,000 deferred tool calls
//     open at once, in a child process with --expose-gc (target: under 2 KiB).
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { measure, printTable, reportTarget } from '@locus/bench-kit'
import { createMemoryRunStore } from '@locus/store'
import { z } from 'zod'
import { type ToolExecuteTrigger, callRemoteTool, createInProcessTransport, createStdioTransport, createWorker, type TriggerTransport } from '@locus/protocol'
import { defineRemoteTool, defineTool, defineWorkflow, runWorkflowScript } from '@locus/runtime'

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const inProcessCalls = smoke ? 200 : 5_000
const stdioCalls = smoke ? 200 : 5_000
const deferralCount = smoke ? 1_000 : 10_000
const rounds = smoke ? 1 : 7
const warmupRounds = smoke ? 1 : 2

const packageDir = fileURLToPath(new URL('../..', import.meta.url))
const stdioWorker = fileURLToPath(new URL('stdio-worker.ts', import.meta.url))
const echoWorker = fileURLToPath(new URL('ndjson-echo-worker.ts', import.meta.url))
const heapWorker = fileURLToPath(new URL('deferrals-heap-worker.ts', import.meta.url))
/** Both children start the same way, so neither pays for a loader the other does not. */
const childNodeArgs = ['--conditions=@locus/source', '--import', 'tsx']

const started = performance.now()
const loadAtStart = loadavg()
console.log(`node ${process.version}, load average at start ${loadAtStart.map((load) => load.toFixed(2)).join(' ')}`)

// 1. In-process: a remote tool against a plain tool(), both in a run on the memory store.
const echoArgs = z.object({ id: z.string() })
const plainTool = defineTool({ input: echoArgs, run: (args: { id: string }) => ({ echoed: args }) })
const remoteTool = defineRemoteTool({ input: echoArgs })
/** A workflow of `calls` sequential tool() calls to `echo`, whichever tool that is. */
const callsWorkflow = (name: string, echo: typeof plainTool | typeof remoteTool) =>
  defineWorkflow({
    name,
    input: z.object({ calls: z.number() }),
    tools: { echo },
    run: async ({ input, tool }) => {
      for (let index = 0; index < input.calls; index += 1) await tool('echo', { id: 'x' })
      return { ok: true }
    },
  })
const plainWorkflow = callsWorkflow('bench-protocol-plain-calls', plainTool)
const remoteWorkflow = callsWorkflow('bench-protocol-remote-calls', remoteTool)
const inProcessWorker = createInProcessTransport(createWorker({ tools: { echo: (args) => ({ echoed: args }) } }))

/** One run of `calls` sequential tool() calls in a fresh memory store; fails loudly unless it completed. */
async function runCalls(workflow: typeof plainWorkflow, calls: number, worker?: TriggerTransport): Promise<void> {
  const result = await runWorkflowScript(workflow, { store: createMemoryRunStore(), input: { calls }, durability: 'none', ...(worker === undefined ? {} : { worker }) })
  if (result.disposition !== 'completed') throw new Error(`${workflow.name} ended ${result.disposition}`)
}

let callId = 0
/** `calls` sequential callRemoteTool calls (the seed's policy layer, no run around it). */
async function remoteCalls(transport: TriggerTransport, calls: number): Promise<void> {
  for (let index = 0; index < calls; index += 1) {
    const outcome = await callRemoteTool({ id: `c-${(callId += 1)}`, name: 'echo', arguments: { id: 'x' }, transport })
    if (!outcome.ok) throw new Error(`callRemoteTool failed: ${JSON.stringify(outcome)}`)
  }
}

const inProcessResults = await measure(
  [
    { name: 'plain tool() in a run', operations: inProcessCalls, run: () => runCalls(plainWorkflow, inProcessCalls) },
    { name: 'remote tool() in a run, in-process worker', operations: inProcessCalls, run: () => runCalls(remoteWorkflow, inProcessCalls, inProcessWorker) },
    { name: 'callRemoteTool, in-process worker, no run', operations: inProcessCalls, run: () => remoteCalls(inProcessWorker, inProcessCalls) },
  ],
  { rounds, warmupRounds },
)
printTable(`@locus/protocol: ${inProcessCalls} sequential calls of an instant tool, per call (memory store, durability 'none')`, inProcessResults, 'plain tool() in a run')

// 2. Stdio: a worker in a child process against a raw NDJSON echo over a child's pipes.
interface LineChild {
  roundTrip(message: unknown): Promise<unknown>
  close(): Promise<void>
}

/**
 * The floor's client: write one line to a child, wait for its line back, parse
 * it; one at a time. Against the echo child it is the floor; against the
 * worker child it shows what the worker side costs without the transport.
 */
function startRawClient(script: string): LineChild {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [...childNodeArgs, script], { cwd: packageDir, stdio: ['pipe', 'pipe', 'pipe'] })
  child.stderr.pipe(process.stderr)
  const lines = createInterface({ input: child.stdout, crlfDelay: Number.POSITIVE_INFINITY })
  let waiting: ((line: string) => void) | undefined
  lines.on('line', (line) => {
    const answer = waiting
    waiting = undefined
    answer?.(line)
  })
  return {
    roundTrip: (message) =>
      new Promise((resolve) => {
        waiting = (line) => {
          resolve(JSON.parse(line) as unknown)
        }
        child.stdin.write(JSON.stringify(message) + '\n')
      }),
    close: () =>
      new Promise((resolve) => {
        child.once('exit', () => {
          resolve()
        })
        child.stdin.end()
      }),
  }
}

const echo = startRawClient(echoWorker)
const rawToWorker = startRawClient(stdioWorker)
const stdio = createStdioTransport({ command: process.execPath, args: [...childNodeArgs, stdioWorker], cwd: packageDir })
let triggerId = 0
const trigger = (): ToolExecuteTrigger => ({ type: 'tool.execute', id: `t-${(triggerId += 1)}`, attempt: 1, deadline: null, name: 'echo', arguments: { id: 'x' } })

const stdioResults = await measure(
  [
    {
      name: 'floor: raw NDJSON echo over a child process',
      operations: stdioCalls,
      run: async () => {
        for (let index = 0; index < stdioCalls; index += 1) {
          const sent = trigger()
          const back = (await echo.roundTrip(sent)) as { id?: unknown }
          if (back.id !== sent.id) throw new Error('the echo answered another line')
        }
      },
    },
    {
      name: 'raw client to the worker child (no transport)',
      operations: stdioCalls,
      run: async () => {
        for (let index = 0; index < stdioCalls; index += 1) {
          const sent = trigger()
          const back = (await rawToWorker.roundTrip(sent)) as { actions?: { id?: unknown }[] }
          if (back.actions?.[0]?.id !== sent.id) throw new Error('the worker answered another trigger')
        }
      },
    },
    {
      name: 'stdio worker round trip (transport.send)',
      operations: stdioCalls,
      run: async () => {
        for (let index = 0; index < stdioCalls; index += 1) {
          const sent = trigger()
          const [answer] = await stdio.send(sent)
          if (answer?.type !== 'tool.result' || answer.id !== sent.id) throw new Error(`the worker answered ${JSON.stringify(answer)}`)
        }
      },
    },
    { name: 'callRemoteTool over stdio, no run', operations: stdioCalls, run: () => remoteCalls(stdio, stdioCalls) },
    { name: 'remote tool() in a run over stdio', operations: stdioCalls, run: () => runCalls(remoteWorkflow, stdioCalls, stdio) },
  ],
  { rounds, warmupRounds },
)
const floorName = 'floor: raw NDJSON echo over a child process'
const stdioRatios = printTable(`@locus/protocol: ${stdioCalls} sequential round trips to a child process over stdin/stdout, per call`, stdioResults, floorName)
await Promise.all([echo.close(), rawToWorker.close(), stdio.close()])
reportTarget('stdio worker round trip vs raw NDJSON echo', stdioRatios.get('stdio worker round trip (transport.send)') ?? Number.NaN, 1.5)
reportTarget('remote tool() in a run over stdio vs raw NDJSON echo', stdioRatios.get('remote tool() in a run over stdio') ?? Number.NaN, 1.5)

// 3. Open deferrals: heap per deferral with `deferralCount` open in one run, each probe in its own process.
interface HeapProbe {
  readonly count: number
  readonly bytesPerDeferral: number
  readonly heapBytes: number
  readonly openMs: number
  readonly resolveMs: number
}
const runsScratch = mkdtempSync(join(tmpdir(), 'locus-protocol-bench-'))
function probeHeap(store: 'memory' | 'file', build: 'source' | 'dist'): HeapProbe {
  const args = ['--expose-gc', ...(build === 'source' ? ['--conditions=@locus/source'] : []), '--import', 'tsx', heapWorker, String(deferralCount), store, build]
  if (store === 'file') args.push(join(runsScratch, `runs-${build}`))
  const probe = spawnSync(process.execPath, args, { cwd: packageDir, encoding: 'utf8' })
  if (probe.status !== 0) throw new Error(`the heap probe (${store}, ${build}) failed:\n${probe.stderr}`)
  return JSON.parse(probe.stdout.trim().split('\n').at(-1) ?? '{}') as HeapProbe
}
const probes = [
  { name: 'memory store, TypeScript source through tsx', ...probeHeap('memory', 'source') },
  { name: 'memory store, built dist/ (as installed)', ...probeHeap('memory', 'dist') },
  { name: 'runs directory (journal on disk), source', ...probeHeap('file', 'source') },
]
rmSync(runsScratch, { recursive: true, force: true })
const nameWidth = Math.max(...probes.map((probe) => probe.name.length))
console.log(`\n@locus/protocol: one run holding ${deferralCount} open deferred tool calls, heap above a collected baseline (child process, --expose-gc)`)
console.log(`${'case'.padEnd(nameWidth)}  ${'per deferral'.padStart(12)}  ${'whole run'.padStart(10)}  ${'open all'.padStart(9)}  ${'resolve all'.padStart(11)}`)
for (const probe of probes) {
  console.log(
    `${probe.name.padEnd(nameWidth)}  ${`${(probe.bytesPerDeferral / 1024).toFixed(2)} KiB`.padStart(12)}  ${`${(probe.heapBytes / 2 ** 20).toFixed(1)} MiB`.padStart(10)}  ${`${(probe.openMs / 1000).toFixed(2)} s`.padStart(9)}  ${`${(probe.resolveMs / 1000).toFixed(2)} s`.padStart(11)}`,
  )
}
for (const probe of probes.slice(0, 2)) reportTarget(`heap per open deferral, ${probe.name}`, probe.bytesPerDeferral / 1024, 2, ' KiB')

console.log(`\nload average at end ${loadavg().map((load) => load.toFixed(2)).join(' ')}; whole bench: ${((performance.now() - started) / 1000).toFixed(0)} s`)
