// Issue #21's "locus check-deploy runs on the demo's runs in CI": the demo's
// workflows run into a temporary runs directory as `npm run demo` runs them
// (docs/examples/demo.ts: three examples, then the long fan-out killed with
// SIGKILL part-way and resumed), and the built CLI checks those runs against
// the same files, and against a copy of the fan-out whose prompt changed.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { examplesDir, onJsonLine, runLocus, settle, startLocus, tempDir } from './helpers.js'

/** The workflow files docs/examples/demo.ts runs, with the exit each is meant to end with. */
const DEMO_EXAMPLES = [
  { file: 'research/research-fan-out.ts', exit: 1 },
  { file: 'triage/triage-pipeline.ts', exit: 0 },
  { file: 'classify/classify-choice.ts', exit: 0 },
] as const
const FAN_OUT = 'long-fan-out/long-fan-out.ts'
const demoWorkflows = [...DEMO_EXAMPLES.map((example) => example.file), FAN_OUT].flatMap((file) => ['--workflows', join(examplesDir, file)])

// The changed copy sits under docs/examples (in its ignored .locus-pi directory) so that its
// imports resolve from the examples' node_modules, as the original's do.
const scratch = join(examplesDir, '.locus-pi')
mkdirSync(scratch, { recursive: true })
const changedDir = mkdtempSync(join(scratch, 'check-deploy-'))
afterAll(() => {
  rmSync(changedDir, { recursive: true, force: true })
})

interface DeployReport {
  readonly ok: boolean
  readonly runs: readonly { runId: string; workflow: string; standing: string; verdict: string; divergence?: { ordinal: string; fields: string[] }; liveAgain: { agent: number } }[]
}

/** Starts the long fan-out with --json and kills it with SIGKILL once four agent calls have answered, as the demo does. */
async function killFanOut(runsDir: string, runId: string): Promise<void> {
  const child = startLocus(['run', join(examplesDir, FAN_OUT), '--host', 'scripted', '--runs-dir', runsDir, '--run-id', runId, '--json'])
  let answered = 0
  onJsonLine(child, (line) => {
    if (line.type === 'agent_end' && (answered += 1) === 4) child.kill('SIGKILL')
  })
  expect((await settle(child)).signal).toBe('SIGKILL')
}

/** Every demo workflow has its run in the report, and each replays identically. */
function expectAllIdentical(report: DeployReport): void {
  expect(report.ok).toBe(true)
  expect(report.runs.map((run) => run.workflow).sort()).toEqual(['classify-choice', 'long-fan-out', 'research-fan-out', 'triage-pipeline'])
  for (const run of report.runs) expect({ runId: run.runId, verdict: run.verdict }).toEqual({ runId: run.runId, verdict: 'identical' })
}

async function checkDeploy(workflows: readonly string[], runsDir: string): Promise<{ code: number | null; report: DeployReport }> {
  const result = await runLocus(['check-deploy', ...workflows, '--runs-dir', runsDir, '--all', '--json'])
  expect(result.stderr).toBe('')
  return { code: result.code, report: JSON.parse(result.stdout) as DeployReport }
}

describe("locus check-deploy on the demo's runs", () => {
  it('passes the demo code as it is, before and after the killed run is resumed, and names the unfinished run a changed prompt would diverge', async () => {
    const runsDir = join(await tempDir(), 'runs')
    const [, ...runs] = await Promise.all([
      killFanOut(runsDir, 'fan-out-killed'),
      ...DEMO_EXAMPLES.map(async (example) => {
        const run = await runLocus(['run', join(examplesDir, example.file), '--host', 'scripted', '--runs-dir', runsDir, '--quiet'])
        expect({ file: example.file, exit: run.code }).toEqual({ file: example.file, exit: example.exit })
        return run
      }),
    ])
    expect(runs).toHaveLength(DEMO_EXAMPLES.length)

    // The code as it is: every run replays identically, the killed one (which would continue on resume) included.
    const unchanged = await checkDeploy(demoWorkflows, runsDir)
    expect(unchanged.code).toBe(0)
    expectAllIdentical(unchanged.report)
    expect(unchanged.report.runs.find((run) => run.runId === 'fan-out-killed')).toMatchObject({ standing: 'unfinished', verdict: 'identical' })

    // A deploy that changes the fan-out's prompt: the killed run diverges at its first call, and is named.
    const original = readFileSync(join(examplesDir, FAN_OUT), 'utf8')
    const changedSource = original.replace("`Summarise last week's incidents in ${region}.`", "`Summarise this week's incidents in ${region}.`")
    expect(changedSource).not.toBe(original)
    const changed = join(changedDir, 'long-fan-out.ts')
    writeFileSync(changed, changedSource)
    const changedWorkflows = [...DEMO_EXAMPLES.flatMap((example) => ['--workflows', join(examplesDir, example.file)]), '--workflows', changed]
    const diverged = await checkDeploy(changedWorkflows, runsDir)
    expect(diverged.code).toBe(1)
    expect(diverged.report.ok).toBe(false)
    expect(diverged.report.runs.filter((run) => run.verdict !== 'identical')).toEqual([
      expect.objectContaining({ runId: 'fan-out-killed', workflow: 'long-fan-out', standing: 'unfinished', verdict: 'diverged', divergence: { ordinal: expect.any(String), fields: ['prompt'] } }),
    ])
    expect(diverged.report.runs.find((run) => run.runId === 'fan-out-killed')?.liveAgain.agent).toBeGreaterThanOrEqual(4)

    // The demo then resumes the killed run; every run of the demo now replays identically against the code on disk.
    expect((await runLocus(['resume', 'fan-out-killed', '--runs-dir', runsDir, '--quiet'])).code).toBe(0)
    const passed = await checkDeploy(demoWorkflows, runsDir)
    expect(passed.code).toBe(0)
    expectAllIdentical(passed.report)
  })
})
