/**
 * Peak heap of one long run and of its resume, each in a process of its own
 * (`pnpm --filter @locus/bench run bench:run-heap`): issue #20 asks both to
 * stay under 64 MB at 100,000 calls. In `bench:compare` the resume row shares
 * its process with the other systems' rows, whose state (LangGraph's 100,000
 * checkpoints) raises the heap V8 lets garbage fill; here nothing else is
 * alive. For each phase it prints the peak of `used_heap_size` above the heap
 * after a forced collection (garbage not yet collected included, sampled
 * every 32 calls) and the heap still held after a forced collection at the
 * last call, per call. The host used for recording keeps nothing per call.
 *
 * `LOCUS_BENCH_RUN_HEAP_CALLS` sets the size (100,000 unless set);
 * `LOCUS_BENCH_SMOKE=1` uses 2,000.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { getHeapStatistics } from 'node:v8'
import { type AgentHost, HostError, defineWorkflow, resumeRun, runWorkflowScript } from '@locus/runtime'

const ANSWER = 'recorded answer'
const RUN_ID = 'recorded'

function callsFromEnvironment(): number {
  if (process.env.LOCUS_BENCH_SMOKE === '1') return 2000
  const raw = process.env.LOCUS_BENCH_RUN_HEAP_CALLS
  if (raw === undefined || raw === '') return 100_000
  const calls = Number(raw)
  if (!Number.isSafeInteger(calls) || calls < 100) throw new Error(`LOCUS_BENCH_RUN_HEAP_CALLS must be a whole number of calls >= 100, got "${raw}". Unset it for 100,000.`)
  return calls
}

/** One phase in this process: 'record' runs the workflow, 'resume' resumes it with a host that must not be called. */
async function phase(which: 'record' | 'resume', runsDir: string, calls: number): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) throw new Error('run-heap needs --expose-gc')
  let peak = 0
  let heldAtEnd = Number.NaN
  const sample = (): void => {
    peak = Math.max(peak, getHeapStatistics().used_heap_size)
  }
  const workflow = defineWorkflow({
    name: 'bench-run-heap',
    run: async ({ agent }) => {
      let answered = 0
      for (let index = 0; index < calls; index += 1) {
        if (index % 32 === 0) sample()
        if (index === calls - 1) {
          gc()
          heldAtEnd = getHeapStatistics().used_heap_size
        }
        const { answer } = await agent(`Question ${index}: what changed since the last report?`)
        if (answer === ANSWER) answered += 1
      }
      return { answered }
    },
  })
  // A host that answers at once and, unlike the scripted host, keeps no log of its calls.
  const host: AgentHost =
    which === 'record'
      ? { name: 'instant', openSession: () => ({ transcript: () => [], prompt: () => Promise.resolve({ text: ANSWER, stopReason: 'end' }) }) }
      : {
          name: 'must-not-be-called',
          openSession: () => {
            throw new HostError('sdk-unavailable', 'resume called the host: a recorded call was not replayed')
          },
        }
  gc()
  const baseline = getHeapStatistics().used_heap_size
  peak = baseline
  const started = performance.now()
  const result =
    which === 'record'
      ? await runWorkflowScript(workflow, { host, runsDir, runId: RUN_ID, durability: 'batch' })
      : await resumeRun(RUN_ID, workflow, { host, runsDir, durability: 'batch' })
  sample()
  const seconds = (performance.now() - started) / 1000
  const answered = (result.result as { answered?: number } | null)?.answered
  if (result.disposition !== 'completed' || answered !== calls) throw new Error(`${which} did not answer every call: ${JSON.stringify(result.error ?? result.result)}`)
  console.log(JSON.stringify({ which, seconds, peakMiB: (peak - baseline) / 2 ** 20, heldBytesPerCall: (heldAtEnd - baseline) / calls }))
}

const [, , role, runsDirArgument, callsArgument] = process.argv
if (role === 'record' || role === 'resume') {
  await phase(role, runsDirArgument as string, Number(callsArgument))
} else {
  const calls = callsFromEnvironment()
  const runsDir = mkdtempSync(join(tmpdir(), 'locus-run-heap-'))
  const self = fileURLToPath(import.meta.url)
  try {
    console.log(`run-heap: ${calls.toLocaleString('en-US')} sequential agent() calls on a runs directory, Node ${process.version}`)
    for (const which of ['record', 'resume'] as const) {
      const child = spawnSync(process.execPath, ['--expose-gc', '--conditions=@locus/source', '--import', 'tsx', self, which, runsDir, String(calls)], { encoding: 'utf8' })
      if (child.status !== 0) throw new Error(`the ${which} process failed (${String(child.status)}): ${child.stderr}`)
      const line = child.stdout.trim().split('\n').at(-1) ?? '{}'
      const figures = JSON.parse(line) as { seconds: number; peakMiB: number; heldBytesPerCall: number }
      const verdict = figures.peakMiB <= 64 ? 'met' : 'MISSED'
      console.log(
        `${which === 'record' ? 'run   ' : 'resume'}: ${figures.seconds.toFixed(1)} s, peak heap ${figures.peakMiB.toFixed(1)} MiB (target <= 64 MiB: ${verdict}), held at the last call ${figures.heldBytesPerCall.toFixed(0)} B per call`,
      )
    }
  } finally {
    rmSync(runsDir, { recursive: true, force: true })
  }
}
