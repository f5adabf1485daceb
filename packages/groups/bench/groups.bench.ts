// Cost per branch of parallel() over instant async thunks, next to
// Promise.allSettled and a p-limit(16) baseline over the same thunks, all
// measured in one run; then heap held per in-flight slot.
import { AsyncLocalStorage } from 'node:async_hooks'
import { measure, printTable, reportTarget, retainedHeapBytes } from '@locus/bench-kit'
import { parallel } from '@locus/groups'
import pLimit from 'p-limit'

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const count = smoke ? 100 : 10_000
const heapCount = smoke ? 1_000 : 100_000
const rounds = smoke ? 1 : 15
const warmupRounds = smoke ? 0 : 3

const thunks = Array.from({ length: count }, (_, index) => async () => index)
const storage = new AsyncLocalStorage<number>()
let sink = 0

const results = await measure(
  [
    {
      name: 'Promise.allSettled',
      operations: count,
      run: async () => {
        sink += (await Promise.allSettled(thunks.map((thunk) => thunk()))).length
      },
    },
    {
      name: 'allSettled + ALS.run per thunk',
      operations: count,
      run: async () => {
        sink += (await Promise.allSettled(thunks.map((thunk, index) => storage.run(index, thunk)))).length
      },
    },
    {
      name: 'p-limit(16)',
      operations: count,
      run: async () => {
        const limit = pLimit(16)
        sink += (await Promise.all(thunks.map((thunk) => limit(thunk)))).length
      },
    },
    {
      name: 'parallel() unbounded',
      operations: count,
      run: async () => {
        sink += (await parallel(thunks)).length
      },
    },
    {
      name: 'parallel() concurrency 16',
      operations: count,
      run: async () => {
        sink += (await parallel(thunks, { concurrency: 16 })).length
      },
    },
  ],
  { rounds, warmupRounds },
)
const ratios = printTable(`@locus/groups: cost per branch, ${count} instant async thunks`, results, 'p-limit(16)')
reportTarget('parallel() concurrency 16 vs p-limit(16)', ratios.get('parallel() concurrency 16') ?? Number.NaN, 2)
reportTarget('parallel() unbounded vs p-limit(16)', ratios.get('parallel() unbounded') ?? Number.NaN, 2)

// Heap per slot: every branch started and waiting on one gate, so the group's
// bookkeeping for all of them is live at once.
async function heapPerSlot(start: (gated: (() => Promise<number>)[]) => Promise<unknown>): Promise<number> {
  let open: (value: number) => void = () => undefined
  const gate = new Promise<number>((resolve) => {
    open = resolve
  })
  const gated = Array.from({ length: heapCount }, () => () => gate)
  const { bytes, keep } = await retainedHeapBytes(() => ({ pending: start(gated) }))
  open(1)
  await (keep as { pending: Promise<unknown> }).pending
  return bytes / heapCount
}
// Each is measured twice and the second, warm figure kept, so one-time costs
// (compiled code, the first AsyncLocalStorage use) do not land on one case.
const startAllSettled = (gated: (() => Promise<number>)[]): Promise<unknown> => Promise.allSettled(gated.map((thunk) => thunk()))
const startParallel = (gated: (() => Promise<number>)[]): Promise<unknown> => parallel(gated)
await heapPerSlot(startAllSettled)
const allSettledHeap = await heapPerSlot(startAllSettled)
await heapPerSlot(startParallel)
const parallelHeap = await heapPerSlot(startParallel)
console.log(`\nheap per in-flight slot, ${heapCount} branches (all started, none settled)`)
console.log(`Promise.allSettled        ${allSettledHeap.toFixed(0)} B`)
console.log(`parallel() unbounded      ${parallelHeap.toFixed(0)} B`)
reportTarget('parallel() heap per slot', parallelHeap, 1024, ' B')
if (sink < 0) console.log(sink)
