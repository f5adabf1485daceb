import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { readJournal } from '@locus/journal'
import { createRuntime } from '@locus/runtime'
import { createServer } from '@locus/server'
import { describe, expect, it } from 'vitest'
import { examplesDir, jsonLines, onJsonLine, repoRoot, runLocus, settle, startLocus, tempDir } from './helpers.js'

const fanOut = join(examplesDir, 'long-fan-out/long-fan-out.ts')

/** Starts the long fan-out with --json and sends `signal` once `answered` agent calls have ended. */
async function interruptFanOut(runsDir: string, runId: string, signal: NodeJS.Signals, answered: number) {
  const child = startLocus(['run', fanOut, '--host', 'scripted', '--runs-dir', runsDir, '--run-id', runId, '--json'])
  let ended = 0
  let sent = false
  onJsonLine(child, (line) => {
    if (line.type === 'agent_end') ended += 1
    if (ended >= answered && !sent) {
      sent = true
      child.kill(signal)
    }
  })
  return settle(child)
}

describe('cancelling, killing, resuming and replaying a run', () => {
  it('SIGINT during a fan-out: exit 130, the run recorded cancelled, the journal closed and readable', async () => {
    const runsDir = await tempDir()
    const result = await interruptFanOut(runsDir, 'interrupted', 'SIGINT', 2)
    expect(result.code).toBe(130)
    expect(result.stderr).toMatch(/cancelling: started calls settle/)
    const summary = jsonLines(result.stdout).at(-1)
    expect(summary).toMatchObject({ type: 'summary', standing: 'cancelled', exitCode: 130 })
    const journal = readJournal(join(runsDir, 'interrupted', 'journal.jsonl'))
    expect(journal.tornTail).toBeNull()
    expect(journal.invalid).toEqual([])
    expect(journal.lines.at(-1)).toMatchObject({ type: 'run_end', disposition: 'cancelled' })
    // Who asked is journaled: the terminal.
    expect(journal.lines.filter((line) => line.type === 'run_cancel_requested')).toEqual([
      expect.objectContaining({ reason: 'interrupted from the terminal (Ctrl-C)', by: 'cli' }),
    ])
    expect(JSON.parse(readFileSync(join(runsDir, 'interrupted', 'result.json'), 'utf8'))).toMatchObject({ disposition: 'cancelled' })
    // ...and `locus show` says who asked and why, from that line.
    const requested = journal.lines.find((line) => line.type === 'run_cancel_requested')
    const shown = await runLocus(['show', 'interrupted', '--runs-dir', runsDir, '--json'])
    expect(JSON.parse(shown.stdout)).toMatchObject({ cancelRequested: { by: 'cli', reason: 'interrupted from the terminal (Ctrl-C)', at: requested?.ts } })
    const text = await runLocus(['show', 'interrupted', '--runs-dir', runsDir])
    expect(text.stdout).toMatch(/cancel:\s+requested by cli at \S+: interrupted from the terminal \(Ctrl-C\)/)
  })

  it('SIGKILL part-way, then `locus resume` replays the finished calls and completes the run', async () => {
    const runsDir = await tempDir()
    const killed = await interruptFanOut(runsDir, 'killed', 'SIGKILL', 4)
    expect(killed.signal).toBe('SIGKILL')
    const shown = await runLocus(['show', 'killed', '--runs-dir', runsDir, '--json'])
    expect(JSON.parse(shown.stdout)).toMatchObject({ standing: 'unfinished' })

    const resumed = await runLocus(['resume', 'killed', '--runs-dir', runsDir, '--json'])
    expect(resumed.code).toBe(0)
    const summary = jsonLines(resumed.stdout).at(-1) as { standing: string; executionId: string; replayedCalls: number; agentCalls: number }
    expect(summary).toMatchObject({ standing: 'completed', executionId: 'resume-001', agentCalls: 12 })
    expect(summary.replayedCalls).toBeGreaterThanOrEqual(4)

    const after = await runLocus(['show', 'killed', '--runs-dir', runsDir])
    expect(after.stdout).toMatch(/^completed {2}long-fan-out {2}run killed \(execution resume-001\)/m)
    expect(after.stdout).toMatch(/resume-001 +resume +completed/)
    expect(after.stdout).toMatch(/killed +root +unfinished/)
    // The server reads the killed root as the CLI does, not as running for ever.
    const app = createServer({ runtime: createRuntime({ workflows: [], runsDir }) })
    const body = (await (await app.request('/v1/runs/killed')).json()) as { status: string; executions: { executionId: string; status: string }[] }
    expect(body.status).toBe('completed')
    expect(body.executions.map((execution) => [execution.executionId, execution.status])).toEqual([
      ['killed', 'unfinished'],
      ['resume-001', 'completed'],
    ])
  })

  it('a second Ctrl-C during `locus resume --durability none` exits at once, with the lines it had buffered in the journal', async () => {
    const dir = await tempDir()
    const runsDir = join(dir, 'runs')
    const hanging = join(dir, 'hanging')
    const runtimeEntry = join(repoRoot, 'packages', 'runtime', 'dist', 'index.js')
    const zodEntry = join(repoRoot, 'packages', 'runtime', 'node_modules', 'zod', 'index.js')
    // From its fourth step on, the tool says it started (a file) and then ignores cancellation for a while:
    // the first Ctrl-C leaves the resume running, with its last lines still buffered (durability none).
    writeFileSync(
      join(dir, 'steps.mts'),
      [
        "import { writeFileSync } from 'node:fs'",
        `import { defineTool, defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
        `import { z } from ${JSON.stringify(zodEntry)}`,
        'export default defineWorkflow({',
        "  name: 'steps',",
        `  tools: { step: defineTool({ input: z.object({ i: z.number() }), run: async ({ i }) => { if (i >= 3) writeFileSync(${JSON.stringify(hanging)}, 'yes'); await new Promise((r) => setTimeout(r, i >= 3 ? 20_000 : 20)); return { i } } }) },`,
        "  run: async ({ tool, log }) => { for (let i = 0; i < 6; i += 1) { log(`step ${i}`); await tool('step', { i }) } return { ok: true } },",
        '})',
      ].join('\n'),
    )
    const first = startLocus(['run', 'steps.mts', '--runs-dir', runsDir, '--run-id', 'steps', '--json'], { cwd: dir })
    onJsonLine(first, (line) => {
      if (line.type === 'tool_end' && (line as { toolCallId?: string }).toolCallId === 'tool-2') first.kill('SIGKILL')
    })
    await settle(first)

    const resume = startLocus(['resume', 'steps', '--runs-dir', runsDir, '--durability', 'none', '--json'], { cwd: dir })
    const ended = settle(resume)
    while (!existsSync(hanging)) await new Promise((resolve) => setTimeout(resolve, 2))
    resume.kill('SIGINT')
    let stderr = ''
    resume.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
      // The second Ctrl-C once the first was taken: the tool still runs, so only exiting at once ends the process.
      if (stderr.includes('cancelling') && !stderr.includes('exiting now')) resume.kill('SIGINT')
    })
    expect((await ended).code).toBe(130)
    expect(stderr).toContain('exiting now')
    // Appended just before the tool started, within the writer's idle interval: on disk only because the exit flushed them.
    const journal = readJournal(join(runsDir, 'steps', 'executions', 'resume-001', 'journal.jsonl'))
    expect(journal.lines.filter((line) => line.type === 'log').map((line) => (line as { message: string }).message)).toContain('step 3')
    expect(journal.lines.filter((line) => line.type === 'tool_start').length).toBeGreaterThanOrEqual(2)
  }, 60_000)

  it('`locus resume` of a completed run is a usage error', async () => {
    const runsDir = await tempDir()
    await runLocus(['run', join(examplesDir, 'classify/classify-choice.ts'), '--runs-dir', runsDir, '--run-id', 'done', '--quiet'])
    const result = await runLocus(['resume', 'done', '--runs-dir', runsDir])
    expect(result.code).toBe(2)
    expect(result.stderr).toMatch(/already completed; there is nothing to resume/)
  })

  it('`locus replay` exits 0 for an unchanged workflow and 1 after its prompt is edited', async () => {
    const dir = await tempDir()
    // An .mts copy outside the workspace: locus lends it @locus/runtime and zod.
    const workflow = join(dir, 'classify-choice.mts')
    copyFileSync(join(examplesDir, 'classify/classify-choice.ts'), workflow)
    copyFileSync(join(examplesDir, 'classify/classify-choice.fixtures.json'), join(dir, 'classify-choice.fixtures.json'))
    const runsDir = join(dir, 'runs')
    const run = await runLocus(['run', workflow, '--runs-dir', runsDir, '--run-id', 'original', '--quiet'], { cwd: dir })
    expect(run.code).toBe(0)

    const same = await runLocus(['replay', 'original', '--runs-dir', runsDir], { cwd: dir })
    expect(same.code).toBe(0)
    expect(same.stdout).toMatch(/identical/)

    writeFileSync(workflow, readFileSync(workflow, 'utf8').replace('Label this message as', 'Classify this message as one of'))
    const edited = await runLocus(['replay', 'original', '--runs-dir', runsDir], { cwd: dir })
    expect(edited.code).toBe(1)
    expect(edited.stdout).toMatch(/NOT identical/)
    expect(edited.stdout).toMatch(/diverged/)
    expect(edited.stdout).toMatch(/Diverged first at \S+ \(.*prompt.*\)/)

    const report = await runLocus(['replay', 'original', '--runs-dir', runsDir, '--json'], { cwd: dir })
    const last = jsonLines(report.stdout).at(-1) as { type: string; ok: boolean; report: { counts: { diverged: number } } }
    expect(last).toMatchObject({ type: 'replay', ok: false })
    expect(last.report.counts.diverged).toBeGreaterThan(0)
  })
})
