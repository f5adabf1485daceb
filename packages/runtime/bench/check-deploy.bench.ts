// The deploy check (issue #21): checkDeploy over many unfinished runs, against
// replaying the same runs one by one as `locus replay <runId>` does, measured
// in the same process run. Two baselines: the spawned CLI itself (sampled: a
// subset of the runs each round, its per-run cost being what it is), and its
// library equivalent in this process (readStoredRun, then replayRun), which
// leaves out process start and loading the workflow file. Then the peak heap
// of one checkDeploy over all the runs, in a child process with --expose-gc.
import { execFile, spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { measure, printTable, reportTarget } from '@locus/bench-kit'
import { checkDeploy, createScriptedHost, readStoredRun, recordedStart, replayRun, startWorkflowRun } from '@locus/runtime'
import { createFileRunStore } from '@locus/store'
import workflow from './check-deploy-workflow.js'

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const runCount = smoke ? 20 : 1_000
const callsPerRun = smoke ? 10 : 100
const rounds = smoke ? 1 : 3
/** Runs `locus replay` is spawned on each round: at about a second a run, all 1,000 would take a quarter of an hour a round. */
const cliSample = smoke ? 2 : 20

const packageDir = fileURLToPath(new URL('..', import.meta.url))
const workflowFile = fileURLToPath(new URL('check-deploy-workflow.ts', import.meta.url))
const cli = join(packageDir, '..', '..', 'apps', 'cli', 'dist', 'cli.js')
const scratch = mkdtempSync(join(tmpdir(), 'locus-check-deploy-bench-'))
const host = createScriptedHost({ rules: [{ steps: [{ text: 'Nothing unusual.', usage: { inputTokens: 120, outputTokens: 12 } }] }] })

/** Records `count` runs of `calls` calls into `runsDir`, each cancelled while it waits on its deferred approval. */
async function recordRuns(runsDir: string, count: number, calls: number): Promise<string[]> {
  const runIds: string[] = []
  const recordOne = async (batch: number): Promise<void> => {
    const handle = await startWorkflowRun(workflow, {
      runsDir,
      host,
      input: { batch, calls },
      source: workflowFile,
      onEvent: (line) => {
        if (line.type === 'deferred_open') {
          setImmediate(() => {
            handle.cancel('left waiting on its approval for the deploy check')
          })
        }
      },
    })
    const result = await handle.done
    if (result.disposition !== 'cancelled') throw new Error(`run ${result.runId} ended ${result.disposition}, expected cancelled`)
    runIds.push(result.runId)
  }
  // Four at a time, so recording overlaps its disk writes; this is set-up, not timed.
  for (let batch = 0; batch < count; batch += 4) {
    await Promise.all(Array.from({ length: Math.min(4, count - batch) }, (_, offset) => recordOne(batch + offset)))
  }
  return runIds
}

/** `locus replay <runId>` without the process: read the run, take its recorded input, replay it into a new replay execution. */
async function replayLikeTheCli(runsDir: string, runId: string): Promise<boolean> {
  const stored = await readStoredRun(createFileRunStore(runsDir), runId)
  const input = recordedStart(stored).fallbackInput
  const replayed = await replayRun(runId, workflow, { runsDir, ...(input === undefined ? {} : { input }) })
  return replayed.ok
}

const started = performance.now()
const runsDir = join(scratch, 'runs')
const runIds = await recordRuns(runsDir, runCount, callsPerRun)
console.log(`recorded ${runCount} unfinished runs of ${callsPerRun} calls (+1 deferred) in ${((performance.now() - started) / 1000).toFixed(1)} s`)

// Every replay writes a replay-NNN execution into the run it checks, so each round of each baseline gets its own fresh copy.
const libraryCopies = Array.from({ length: rounds }, (_, round) => {
  const copy = join(scratch, `library-${round}`)
  cpSync(runsDir, copy, { recursive: true })
  return copy
})
const sampled = runIds.filter((_, index) => index % Math.floor(runCount / cliSample) === 0).slice(0, cliSample)
const cliCopies = Array.from({ length: rounds }, (_, round) => {
  const copy = join(scratch, `cli-${round}`)
  mkdirSync(copy)
  for (const runId of sampled) cpSync(join(runsDir, runId), join(copy, runId), { recursive: true })
  return copy
})

// Warm both paths up on a few runs of their own, untimed.
const warmDir = join(scratch, 'warm-up')
const warmIds = await recordRuns(warmDir, 3, callsPerRun)
await checkDeploy({ runsDir: warmDir, workflows: [workflow] })
for (const runId of warmIds) await replayLikeTheCli(warmDir, runId)

const run = promisify(execFile)
const canSpawnCli = existsSync(cli)
if (!canSpawnCli) console.log(`(${cli} is not built: the spawned-CLI baseline is left out; pnpm build first)`)
let checkRound = 0
let libraryRound = 0
let cliRound = 0
const results = await measure(
  [
    {
      name: 'checkDeploy over all runs',
      operations: runCount,
      run: async () => {
        const report = await checkDeploy({ runsDir, workflows: [workflow] })
        checkRound += 1
        const identical = report.runs.filter((checked) => checked.verdict === 'identical').length
        if (!report.ok || identical !== runCount) throw new Error(`checkDeploy round ${checkRound}: ${identical} of ${runCount} runs identical`)
      },
    },
    {
      name: 'locus replay one by one (library: readStoredRun + replayRun)',
      operations: runCount,
      run: async () => {
        const copy = libraryCopies[libraryRound++] as string
        for (const runId of runIds) if (!(await replayLikeTheCli(copy, runId))) throw new Error(`replay of ${runId} was not identical`)
      },
    },
    ...(canSpawnCli
      ? [
          {
            name: `locus replay one by one (spawned CLI, ${cliSample} runs sampled)`,
            operations: cliSample,
            run: async () => {
              const copy = cliCopies[cliRound++] as string
              for (const runId of sampled) await run(process.execPath, [cli, 'replay', runId, '--runs-dir', copy], { cwd: packageDir })
            },
          },
        ]
      : []),
  ],
  { rounds, warmupRounds: 0 },
)
const baselineName = 'locus replay one by one (library: readStoredRun + replayRun)'
const ratios = printTable(`@locus/runtime: deploy check over ${runCount} unfinished runs of ${callsPerRun} calls, per run`, results, baselineName)
const check = results.find((result) => result.name === 'checkDeploy over all runs')
console.log(`checkDeploy over all ${runCount} runs: ${(((check?.nsPerOp ?? Number.NaN) * runCount) / 1e9).toFixed(2)} s`)
// "At least 4x faster" is a ratio of at most 0.25 against each baseline.
const cliRow = results.find((result) => result.name.includes('spawned CLI'))
if (cliRow !== undefined && check !== undefined) reportTarget('checkDeploy vs locus replay one by one (spawned CLI)', check.nsPerOp / cliRow.nsPerOp, 0.25)
reportTarget('checkDeploy vs locus replay one by one (library equivalent)', ratios.get('checkDeploy over all runs') ?? Number.NaN, 0.25)

const heapWorker = fileURLToPath(new URL('check-deploy-heap-worker.ts', import.meta.url))
const probe = spawnSync(process.execPath, ['--expose-gc', '--conditions=@locus/source', '--import', 'tsx', heapWorker, runsDir], { cwd: packageDir, encoding: 'utf8' })
if (probe.status !== 0) throw new Error(`the heap probe failed:\n${probe.stderr}`)
const heap = JSON.parse(probe.stdout.trim().split('\n').at(-1) ?? '{}') as { peakBytes: number; runs: number; identical: number; elapsedMs: number }
console.log(`\npeak heap of checkDeploy over ${heap.runs} runs (${heap.identical} identical) in a child process: ${(heap.peakBytes / 2 ** 20).toFixed(1)} MiB above a collected baseline (${(heap.elapsedMs / 1000).toFixed(2)} s)`)
reportTarget('checkDeploy peak heap', heap.peakBytes / 2 ** 20, 128, ' MiB')
console.log(`\nwhole bench: ${((performance.now() - started) / 1000).toFixed(0)} s`)
rmSync(scratch, { recursive: true, force: true })
