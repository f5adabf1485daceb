/**
 * The main job behind `npm run demo`: runs the examples through the built
 * `locus` binary (apps/cli/dist/cli.js) with the scripted host, prints each
 * run's summary and where its outputs/README.md is, kills and resumes the
 * long fan-out, checks it with `locus replay`, and ends with `locus report`.
 *
 * Some examples end `failed` on purpose (an honest partial answer is not a
 * success); the demo says so and still exits 0. It exits 1 only when an
 * example ends differently from what it is meant to show.
 */
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, rmSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { main as classifyReturns } from './outcomes/classify-returns.js'

const here = import.meta.dirname
const repoRoot = resolve(here, '..', '..')
const cli = join(repoRoot, 'apps', 'cli', 'dist', 'cli.js')
const runsDir = join(here, '.locus-pi', 'demo-runs')
const shown = (path: string): string => relative(repoRoot, path) || '.'

interface DemoExample {
  readonly file: string
  readonly title: string
  readonly expectedExit: number
  readonly why: string
}

const examples: readonly DemoExample[] = [
  {
    file: 'research/research-fan-out.ts',
    title: 'A research fan-out that answers partially and says what it could not check',
    expectedExit: 1,
    why: 'as designed: a partial answer is recorded as `partial` in the metrics, and the run is `failed`, never a success',
  },
  {
    file: 'triage/triage-pipeline.ts',
    title: 'A triage pipeline that rides out a flaky tool (backoff) and a timed-out model call (new child)',
    expectedExit: 0,
    why: 'both failures were retryable and the retries succeeded; see the retried calls in its outputs/README.md',
  },
  {
    file: 'classify/classify-choice.ts',
    title: 'Classification with exact choices, one clarification turn, and a declared fallback',
    expectedExit: 0,
    why: 'every answer was repaired or fell back as declared',
  },
]

function locus(args: readonly string[]): number {
  const result = spawnSync(process.execPath, [cli, ...args], { stdio: 'inherit', cwd: repoRoot })
  return result.status ?? 1
}

function heading(text: string): void {
  console.log(`\n${'='.repeat(Math.min(100, text.length))}\n${text}\n${'='.repeat(Math.min(100, text.length))}`)
}

/** Runs the long fan-out, kills it with SIGKILL after four calls have answered, and returns when it is dead. */
function runAndKill(runId: string): Promise<number> {
  return new Promise((resolveDone, reject) => {
    const child = spawn(
      process.execPath,
      [cli, 'run', join(here, 'long-fan-out', 'long-fan-out.ts'), '--host', 'scripted', '--runs-dir', runsDir, '--run-id', runId, '--json'],
      { stdio: ['ignore', 'pipe', 'inherit'], cwd: repoRoot },
    )
    let answered = 0
    let buffered = ''
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (chunk: string) => {
      buffered += chunk
      let newline = buffered.indexOf('\n')
      while (newline !== -1) {
        const line = JSON.parse(buffered.slice(0, newline)) as { type: string }
        buffered = buffered.slice(newline + 1)
        newline = buffered.indexOf('\n')
        if (line.type === 'agent_end') {
          answered += 1
          if (answered === 4) child.kill('SIGKILL')
        }
      }
    })
    child.on('error', reject)
    child.on('exit', () => {
      resolveDone(answered)
    })
  })
}

async function main(): Promise<number> {
  if (!existsSync(cli)) {
    console.error(`The locus binary is not built (${shown(cli)} is missing). Run \`pnpm build\` first, or \`npm run demo\` from the repository root.`)
    return 1
  }
  rmSync(runsDir, { recursive: true, force: true })
  const surprises: string[] = []

  heading('1. How returned values are judged (docs/examples/outcomes/classify-returns.ts)')
  const verdicts = classifyReturns()
  const failures = verdicts.filter((verdict) => verdict.verdict !== 'success').length
  console.log(`\n${verdicts.length} values judged: ${verdicts.length - failures} success, ${failures} failure or boundary error. Rules: docs/outcomes.md.`)

  let step = 2
  for (const example of examples) {
    heading(`${step}. ${example.title}\n   locus run docs/examples/${example.file} --host scripted`)
    step += 1
    const code = locus(['run', join(here, example.file), '--host', 'scripted', '--runs-dir', runsDir])
    const expected = code === example.expectedExit
    console.log(`\n-> exit ${code}: ${expected ? example.why : `UNEXPECTED, this example should exit ${example.expectedExit}`}`)
    if (!expected) surprises.push(`${example.file} exited ${code}, expected ${example.expectedExit}`)
  }

  heading(`${step}. A long fan-out, killed with SIGKILL part-way, then resumed and replayed`)
  const runId = `long-fan-out-${new Date().toISOString().replace(/\D/g, '').slice(0, 14)}`
  const answered = await runAndKill(runId)
  console.log(`Started run ${runId} and killed it (kill -9) after ${answered} of 12 calls had answered. What is on disk:\n`)
  locus(['show', runId, '--runs-dir', runsDir])
  console.log(`\n$ locus resume ${runId}`)
  const resumed = locus(['resume', runId, '--runs-dir', runsDir])
  if (resumed !== 0) surprises.push(`locus resume ${runId} exited ${resumed}, expected 0`)
  console.log(`\n$ locus replay ${runId}   (the determinism check: exit 1 if any call is asked differently)`)
  const replayed = locus(['replay', runId, '--runs-dir', runsDir])
  console.log(`\n-> replay exit ${replayed}${replayed === 0 ? ': the workflow asks exactly what the recording holds' : ''}`)
  if (replayed !== 0) surprises.push(`locus replay ${runId} exited ${replayed}, expected 0`)

  heading('Runs of this demo (locus ls) and where their outputs are')
  locus(['ls', '--runs-dir', runsDir])
  console.log('\nEach run wrote its journal, result.json and an outputs/README.md:')
  const listed = spawnSync(process.execPath, [cli, 'ls', '--runs-dir', runsDir, '--json'], { encoding: 'utf8', cwd: repoRoot })
  for (const line of listed.stdout.split('\n').filter((text) => text.trim() !== '')) {
    const run = JSON.parse(line) as { runId: string; workflow: string; standing: string; outputsReadme: string }
    console.log(`  ${run.workflow.padEnd(18)} ${run.standing.padEnd(10)} ${shown(run.outputsReadme)}`)
  }

  heading('The outcome report (locus report): partial answers get their own row; gaps are counted per tool')
  locus(['report', '--runs-dir', runsDir])

  console.log(
    `\nDemo finished. Some runs above ended failed on purpose: that is Locus telling the truth about them.` +
      `\nLook around, from the repository root: npm run locus -- show <runId> --runs-dir ${shown(runsDir)} (or journal, ls, report).` +
      `\nOr in a browser: npm run locus -- serve --workflows docs/examples/research --runs-dir ${shown(runsDir)}, then open the URL it prints (docs/inspector.md).` +
      '\nStart your own: npm run locus -- init my-workflow, then npm run locus -- run my-workflow.ts --host scripted (README: "Run your own workflow").',
  )
  if (surprises.length > 0) {
    console.error(`\nThe demo did not go as designed:\n  ${surprises.join('\n  ')}`)
    return 1
  }
  return 0
}

process.exitCode = await main()
