// Messages into running runs (issue #36), on the file store:
// - an update's round trip on a live run (`runtime.update` until its handler's
//   `update_completed` answers), sent by the runtime that executes the run
//   (it asks the execution to read its mailbox at once) and by another runtime
//   on the same runs directory (another process: the run finds it at its next
//   look at the mailbox, every 100 ms);
// - a signal's time from `runtime.signal` to the waiting script moving on,
//   from the same two senders.
// The floor, measured in the same process run, is the durable work an update
// cannot do without: one journaled tool() call of the same run (its start and
// end lines, committed) plus one small file written and read back in the runs
// directory (a mailbox slot).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { reportTarget } from '@locus/bench-kit'
import { createRuntime, defineTool, defineWorkflow } from '@locus/runtime'
import { z } from 'zod'

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const updates = smoke ? 20 : 200
const signals = smoke ? 10 : 50

let sentAt = 0
const moved: number[] = []

const counter = defineWorkflow({
  name: 'counter',
  input: z.object({ signals: z.number().int() }),
  signals: { ping: z.object({ n: z.number() }) },
  updates: { bump: { input: z.object({ n: z.number() }), output: z.object({ total: z.number() }) } },
  tools: { noop: defineTool({ input: z.object({ n: z.number() }), run: ({ n }) => ({ n }) }) },
  async run({ input, onUpdate, waitForSignal, tool }) {
    let total = 0
    onUpdate('bump', (update) => {
      total += (update as { n: number }).n
      return { total }
    })
    for (let index = 0; index < input.signals; index += 1) {
      await waitForSignal('ping')
      moved.push(performance.now() - sentAt)
      // The floor's tool calls ride on the same run, between the signals.
      if (index === 0) for (let call = 0; call < updates; call += 1) await tool('noop', { n: call })
    }
    return { ok: true, total }
  },
})

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN
}
const ms = (value: number): string => `${value.toFixed(2)} ms`

const scratch = mkdtempSync(join(tmpdir(), 'locus-messages-bench-'))
// The run's own timers do not hold the process open; the bench does while it measures.
const keepAlive = setInterval(() => undefined, 1_000)
try {
  const runtime = createRuntime({ workflows: [counter], runsDir: scratch })
  const other = createRuntime({ workflows: [counter], runsDir: scratch })
  // Two signals per sender, plus the first one that lets the floor's tool calls run.
  const handle = await runtime.start('counter', { input: { signals: 1 + 2 * signals } })

  async function roundTrips(sender: typeof runtime, count: number): Promise<number[]> {
    const samples: number[] = []
    for (let index = 0; index < count; index += 1) {
      const begin = performance.now()
      const outcome = await sender.update(handle.runId, 'bump', { n: 1 }, undefined, { waitMs: 10_000 })
      if (outcome.status !== 'completed') throw new Error(`update answered ${outcome.status}`)
      samples.push(performance.now() - begin)
    }
    return samples
  }
  async function signalMoves(sender: typeof runtime, count: number): Promise<number[]> {
    moved.length = 0
    for (let index = 0; index < count; index += 1) {
      const expected = moved.length + 1
      sentAt = performance.now()
      const outcome = await sender.signal(handle.runId, 'ping', { n: index })
      if (!outcome.ok) throw new Error(`signal answered ${outcome.status}`)
      while (moved.length < expected) await new Promise((resolve) => setTimeout(resolve, 1))
    }
    return [...moved]
  }

  // The first signal releases the floor's tool calls, timed from the journal: the first tool_start to the last tool_end.
  let firstStart = 0
  let lastEnd = 0
  let ends = 0
  const stop = handle.subscribe((line) => {
    if (line.type === 'tool_start' && firstStart === 0) firstStart = performance.now()
    if (line.type === 'tool_end') {
      ends += 1
      lastEnd = performance.now()
    }
  })
  await signalMoves(runtime, 1)
  while (ends < updates) await new Promise((resolve) => setTimeout(resolve, 5))
  stop()
  const perToolCall = (lastEnd - firstStart) / updates
  const fileTimes: number[] = []
  for (let index = 0; index < updates; index += 1) {
    const begin = performance.now()
    const path = join(scratch, `slot-${String(index)}.json`)
    writeFileSync(path, JSON.stringify({ kind: 'update', n: index }))
    readFileSync(path, 'utf8')
    fileTimes.push(performance.now() - begin)
  }
  const floorP50 = perToolCall + percentile(fileTimes, 50)
  const floorP99 = perToolCall + percentile(fileTimes, 99)

  const sameUpdates = await roundTrips(runtime, updates)
  const otherUpdates = await roundTrips(other, Math.max(5, Math.floor(updates / 10)))
  const sameSignals = await signalMoves(runtime, signals)
  const otherSignals = await signalMoves(other, Math.max(5, Math.floor(signals / 5)))
  // What is left of the run's signals, so it ends.
  for (let left = 1 + sameSignals.length + otherSignals.length; left < 1 + 2 * signals; left += 1) await runtime.signal(handle.runId, 'ping', { n: left })
  const result = await handle.done
  if (result.disposition !== 'completed') throw new Error(`the run ended ${result.disposition}`)

  console.log(`@locus/runtime messages on the file store; Node ${process.version}`)
  console.log(`   floor: one journaled tool() call of the run (${(perToolCall * 1000).toFixed(0)} µs, ${updates} in a row) + one mailbox-sized file written and read back: p50 ${ms(floorP50)}, p99 ${ms(floorP99)}`)
  console.log(`   update round trip, sender in the executing runtime (${sameUpdates.length}): p50 ${ms(percentile(sameUpdates, 50))}, p99 ${ms(percentile(sameUpdates, 99))} (p50 ${(percentile(sameUpdates, 50) / floorP50).toFixed(1)}x the floor)`)
  console.log(`   update round trip, sender in another runtime on the same runs directory (${otherUpdates.length}): p50 ${ms(percentile(otherUpdates, 50))}, p99 ${ms(percentile(otherUpdates, 99))} (the run's mailbox look every 100 ms)`)
  console.log(`   signal to the waiting script moving on, same runtime (${sameSignals.length}): p50 ${ms(percentile(sameSignals, 50))}, p99 ${ms(percentile(sameSignals, 99))}`)
  console.log(`   signal to the waiting script moving on, another runtime (${otherSignals.length}): p50 ${ms(percentile(otherSignals, 50))}, p99 ${ms(percentile(otherSignals, 99))}`)
  reportTarget('update round trip p50 on the file store (executing runtime)', percentile(sameUpdates, 50), 20, ' ms')
  reportTarget('signal to a waiting run moving on, p99, from another runtime', percentile(otherSignals, 99), 1_000, ' ms')
} finally {
  clearInterval(keepAlive)
  rmSync(scratch, { recursive: true, force: true })
}
