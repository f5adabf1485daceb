// Durable time (issue #33): how late a `sleep()` timer fires after its due
// time on the file store, p50 and p99, in two ways a process runs it:
// - live: the run stays in memory and sleeps on the real clock;
// - parked: the run is suspended after `parkAfterMs` (as `locus serve` does)
//   and `startTimerParking` resumes it from the store at its due time.
// The floor is a bare setTimeout's own lateness for the same delays, measured
// in the same process run. Lateness is what the journal says: `timer_fired.lateMs`.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { reportTarget } from '@locus/bench-kit'
import type { JournalLine } from '@locus/journal'
import { type RunHandle, createRuntime, createScriptedHost, defineWorkflow, startTimerParking, startWorkflowRun } from '@locus/runtime'
import { z } from 'zod'

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const runs = smoke ? 20 : 200
const sleepMs = smoke ? 1_000 : 1_500
const parkAfterMs = 50

const napper = defineWorkflow({
  name: 'napper',
  input: z.object({ ms: z.number() }),
  run: async ({ input, sleep }) => {
    await sleep(input.ms)
    return { ok: true }
  },
})

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN
}

/** The lateness of `count` bare timers of `ms`, started together. */
async function floor(count: number, ms: number): Promise<number[]> {
  return Promise.all(
    Array.from({ length: count }, () => {
      const due = Date.now() + ms
      return new Promise<number>((resolve) => {
        setTimeout(() => {
          resolve(Math.max(0, Date.now() - due))
        }, ms)
      })
    }),
  )
}

function firedLateness(lines: readonly JournalLine[]): number[] {
  return lines.flatMap((line) => (line.type === 'timer_fired' && line.replayed !== true ? [line.lateMs] : []))
}

/** `count` runs sleeping `ms` in memory, started together. */
async function live(runsDir: string, count: number, ms: number): Promise<number[]> {
  const late: number[] = []
  const handles = await Promise.all(Array.from({ length: count }, () =>
    startWorkflowRun(napper, {
      runsDir,
      input: { ms },
      onEvent: (line) => {
        late.push(...firedLateness([line]))
      },
    }),
  ))
  for (const handle of handles) {
    const result = await handle.done
    if (result.disposition !== 'completed') throw new Error(`run ${result.runId} ended ${result.disposition}`)
  }
  return late
}

/** `count` runs sleeping `ms`, each parked after `parkAfterMs` and resumed from the store when due. */
async function parked(runsDir: string, count: number, ms: number): Promise<number[]> {
  const runtime = createRuntime({ workflows: [napper], host: createScriptedHost({ rules: [] }), runsDir })
  const resumed: RunHandle[] = []
  let woken = 0
  let allWoken: () => void = () => undefined
  const done = new Promise<void>((resolve) => {
    allWoken = resolve
  })
  const parking = startTimerParking(runtime, {
    parkAfterMs,
    onResumed: (handle) => {
      resumed.push(handle)
      woken += 1
      if (woken === count) allWoken()
    },
    onError: (runId, error) => {
      console.error(`wake-up of ${runId} failed:`, error)
    },
  })
  // The parking's timers do not hold the process open (a server's socket does): this does, for the bench.
  const keepAlive = setInterval(() => undefined, 1_000)
  try {
    // Each watched as soon as it starts, as `locus serve` does.
    const first: RunHandle[] = []
    for (let index = 0; index < count; index += 1) {
      const handle = await runtime.start('napper', { input: { ms } })
      parking.watch(handle)
      first.push(handle)
    }
    for (const handle of first) {
      const result = await handle.done
      if (result.suspended !== true) throw new Error(`run ${result.runId} was not parked (${result.disposition})`)
    }
    await done
    for (const handle of resumed) {
      const result = await handle.done
      if (result.disposition !== 'completed') throw new Error(`run ${result.runId} ended ${result.disposition} after its wake-up`)
    }
    const late: number[] = []
    for (const handle of resumed) {
      for (const info of await runtime.store.listExecutions(handle.runId)) {
        const lines: JournalLine[] = []
        for await (const line of runtime.store.readLines(info)) lines.push(line)
        late.push(...firedLateness(lines))
      }
    }
    return late
  } finally {
    clearInterval(keepAlive)
    parking.close()
  }
}

const scratch = mkdtempSync(join(tmpdir(), 'locus-timers-bench-'))
try {
  const bare = await floor(runs, sleepMs)
  const inMemory = await live(join(scratch, 'live'), runs, sleepMs)
  const fromStore = await parked(join(scratch, 'parked'), runs, sleepMs)
  if (inMemory.length !== runs || fromStore.length !== runs) throw new Error(`expected ${runs} timer_fired lines each, got ${inMemory.length} and ${fromStore.length}`)
  console.log(`\nTimer firing lateness after the due time, file store, ${runs} runs sleeping ${sleepMs} ms together`)
  console.log('case                      p50        p99')
  for (const [name, values] of [
    ['setTimeout (floor)', bare],
    ['sleep(), live', inMemory],
    [`sleep(), parked ${parkAfterMs} ms`, fromStore],
  ] as const) {
    console.log(`${name.padEnd(24)}  ${`${percentile(values, 50).toFixed(0)} ms`.padStart(7)}  ${`${percentile(values, 99).toFixed(0)} ms`.padStart(8)}`)
  }
  reportTarget('sleep() live, p99 lateness', percentile(inMemory, 99), 250, ' ms')
  reportTarget(`sleep() parked and woken from the file store, p99 lateness`, percentile(fromStore, 99), 250, ' ms')
} finally {
  rmSync(scratch, { recursive: true, force: true })
}
