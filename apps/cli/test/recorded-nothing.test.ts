import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { examplesDir, jsonLines, runLocus, tempDir } from './helpers.js'

/** A run directory whose journal is 0 bytes: a `--durability none` run killed in its first moments leaves this. */
function emptyRun(runsDir: string, runId: string): void {
  mkdirSync(join(runsDir, runId), { recursive: true })
  writeFileSync(join(runsDir, runId, 'journal.jsonl'), '')
}

let dir: string
let runsDir: string
let workflow: string

beforeAll(async () => {
  dir = await tempDir('locus-empty-')
  runsDir = join(dir, 'runs')
  // An .mts copy outside the workspace: locus lends it @locus/runtime and zod.
  workflow = join(dir, 'classify-choice.mts')
  copyFileSync(join(examplesDir, 'classify/classify-choice.ts'), workflow)
  copyFileSync(join(examplesDir, 'classify/classify-choice.fixtures.json'), join(dir, 'classify-choice.fixtures.json'))
})

describe('a run whose journal is empty recorded nothing', () => {
  it('`locus show` says the journal is empty and recommends what works, not a resume that fails', async () => {
    emptyRun(runsDir, 'shown')
    const result = await runLocus(['show', 'shown', '--runs-dir', runsDir], { cwd: dir })
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/journal: +empty: no run_start line, so nothing was recorded/)
    expect(result.stdout).toMatch(/next: +nothing to resume from; start it again with `locus run <workflow file> --input '<json>'`/)
    expect(result.stdout).toMatch(/`locus resume shown --workflow <workflow file>`/)
    expect(result.stdout).not.toMatch(/`locus resume shown` continues it/)
    const json = JSON.parse((await runLocus(['show', 'shown', '--runs-dir', runsDir, '--json'], { cwd: dir })).stdout) as Record<string, unknown>
    expect(json).toMatchObject({ standing: 'unfinished', nothingRecorded: true })
  })

  it('`locus resume` says the journal is empty, not that the run "was started from code"', async () => {
    emptyRun(runsDir, 'resumed')
    const result = await runLocus(['resume', 'resumed', '--runs-dir', runsDir], { cwd: dir })
    expect(result.code).toBe(2)
    expect(result.stderr).toMatch(/Run resumed cannot be resumed: its journal runs\/resumed\/journal\.jsonl is empty: nothing was recorded/)
    expect(result.stderr).toMatch(/locus run <workflow file> --input '<json>'/)
    expect(result.stderr).toMatch(/locus resume resumed --workflow <workflow file>/)
    expect(result.stderr).not.toMatch(/started from code/)
  })

  it('`locus replay` says there is nothing to replay, even with --workflow', async () => {
    emptyRun(runsDir, 'replayed')
    for (const extra of [[], ['--workflow', workflow]]) {
      const result = await runLocus(['replay', 'replayed', '--runs-dir', runsDir, ...extra], { cwd: dir })
      expect(result.code).toBe(2)
      expect(result.stderr).toMatch(/Run replayed has nothing to replay: its journal .* is empty: nothing was recorded/)
      expect(result.stderr).not.toMatch(/started from code/)
    }
  })

  it('after `locus resume --workflow` runs it, `show` reports the resume and `replay` finds the workflow in its run_start', async () => {
    emptyRun(runsDir, 'recovered')
    const resumed = await runLocus(['resume', 'recovered', '--runs-dir', runsDir, '--workflow', workflow, '--json'], { cwd: dir })
    expect(resumed.code).toBe(0)
    expect(jsonLines(resumed.stdout).at(-1)).toMatchObject({ standing: 'completed', executionId: 'resume-001' })

    const shown = await runLocus(['show', 'recovered', '--runs-dir', runsDir], { cwd: dir })
    expect(shown.stdout).toMatch(/^completed {2}classify-choice {2}run recovered \(execution resume-001\)/m)

    // No --workflow: the root recorded none, so the workflow, options and input come from resume-001's run_start.
    const replayed = await runLocus(['replay', 'recovered', '--runs-dir', runsDir], { cwd: dir })
    expect(replayed.stderr).toBe('')
    expect(replayed.code).toBe(0)
    expect(replayed.stdout).toMatch(/identical/)
  })
})
