// Run by protocol.bench.ts in its own process with --expose-gc: one run that
// opens `count` deferred tool calls in parallel and holds them all open. The
// heap is read after a forced collection before the run starts and again once
// every deferral is open; then each deferral is resolved through the handle
// and the run must complete, so every one of them was live. Prints one JSON
// line. Arguments: <count> <memory|file> <source|dist> [runsDir for file].
//
// `source` loads the TypeScript sources through tsx, as every bench here does;
// `dist` loads the built packages (start it without --conditions=@locus/source),
// which is what an installed Locus runs: tsx compiles with esbuild's keepNames,
// which gives closures created per call a `name` property of their own, and
// that costs heap the built code does not pay.
import { z } from 'zod'
// Loaded by name: a process started with --conditions=@locus/source gets the
// runtime's sources, one started without it gets the build (dist/).
import type * as RuntimeModule from '@locus/runtime'

const count = Number(process.argv[2])
const storeKind = process.argv[3]
const build = process.argv[4]
const runsDir = process.argv[5]
if (!Number.isInteger(count) || count < 1 || (storeKind !== 'memory' && storeKind !== 'file') || (build !== 'source' && build !== 'dist') || (storeKind === 'file' && runsDir === undefined)) {
  throw new Error('usage: deferrals-heap-worker.ts <count> <memory|file> <source|dist> [runsDir]')
}
const { defineDeferredTool, defineWorkflow, startWorkflowRun } = await import('@locus/runtime')
const { createMemoryRunStore } = await import('@locus/store')
type RunOptions = RuntimeModule.RunOptions
const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error('run with node --expose-gc')

const approve = defineDeferredTool({ input: z.object({ index: z.number() }), output: z.object({ approved: z.boolean() }) })
const workflow = defineWorkflow({
  name: 'bench-open-deferrals',
  input: z.object({ count: z.number() }),
  tools: { approve },
  run: async ({ input, tool }) => {
    const answers = await Promise.all(Array.from({ length: input.count }, (_, index) => tool('approve', { index })))
    return { ok: true, answered: answers.length }
  },
})

function storeOptions(): Pick<RunOptions, 'store' | 'runsDir'> {
  return storeKind === 'memory' ? { store: createMemoryRunStore() } : { runsDir: runsDir as string }
}

const tick = (): Promise<void> =>
  new Promise((resolve) => {
    setImmediate(resolve)
  })

/** Starts a run that opens `open` deferrals and resolves once all of them are open. */
async function holdOpen(open: number, options: Pick<RunOptions, 'store' | 'runsDir'>) {
  let opened = 0
  let allOpen = (): void => undefined
  const ready = new Promise<void>((resolve) => {
    allOpen = resolve
  })
  const handle = await startWorkflowRun(workflow, {
    ...options,
    input: { count: open },
    durability: 'none',
    onEvent: (line) => {
      if (line.type === 'deferred_open' && (opened += 1) === open) allOpen()
    },
  })
  await ready
  // Let anything queued behind the last open settle before the heap is read.
  for (let index = 0; index < 3; index += 1) await tick()
  return handle
}

async function resolveAll(handle: Awaited<ReturnType<typeof holdOpen>>, expected: number): Promise<void> {
  const pending = handle.pendingDeferrals()
  if (pending.length !== expected) throw new Error(`${pending.length} deferrals open, expected ${expected}`)
  for (const id of pending) {
    const answer = handle.resolveDeferred(id, { approved: true })
    if (answer.status !== 'accepted') throw new Error(`resolving ${id}: ${answer.status}`)
  }
  const result = await handle.done
  if (result.disposition !== 'completed') throw new Error(`the run ended ${result.disposition}, expected completed`)
}

// Warm-up: the same path on a small run, so compiled code and lazily built
// schemas are in the baseline rather than counted against the deferrals.
const warmCount = Math.min(500, count)
await resolveAll(await holdOpen(warmCount, storeOptions()), warmCount)

const options = storeOptions()
gc()
gc()
const before = process.memoryUsage().heapUsed
const started = performance.now()
const handle = await holdOpen(count, options)
const openMs = performance.now() - started
gc()
gc()
const after = process.memoryUsage().heapUsed
const resolveStarted = performance.now()
await resolveAll(handle, count)
const resolveMs = performance.now() - resolveStarted
console.log(JSON.stringify({ count, store: storeKind, build, heapBytes: after - before, bytesPerDeferral: (after - before) / count, openMs, resolveMs }))
