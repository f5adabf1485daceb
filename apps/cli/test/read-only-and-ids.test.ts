import { chmodSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { RUN_ID_RULE } from '@locus/journal'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { examplesDir, runLocus, tempDir } from './helpers.js'

/** What a directory holds, with each entry's size and modification time, and the directory's own mtime (it changes when an entry is created or removed). */
function snapshot(dir: string): { dirMtime: number; entries: string[] } {
  return {
    dirMtime: statSync(dir).mtimeMs,
    entries: readdirSync(dir)
      .sort()
      .map((name) => {
        const stat = statSync(join(dir, name))
        return `${name} ${stat.size} ${stat.mtimeMs}`
      }),
  }
}

const readOnlyDirs: string[] = []

function makeReadOnly(dir: string): void {
  chmodSync(dir, 0o555)
  readOnlyDirs.push(dir)
}

afterAll(() => {
  for (const dir of readOnlyDirs) chmodSync(dir, 0o755)
})

describe('`locus report` only reads', () => {
  let runsDir: string

  beforeAll(async () => {
    runsDir = join(await tempDir(), 'runs')
    const run = await runLocus(['run', join(examplesDir, 'research/research-fan-out.ts'), '--runs-dir', runsDir, '--run-id', 'research', '--quiet'])
    expect(run.code).toBe(1)
    chmodSync(join(runsDir, 'outcomes.sqlite'), 0o444)
    makeReadOnly(runsDir)
  })

  // Under root, chmod does not stop a write, so each test also checks that nothing was created, changed or removed.
  it('reports from a read-only runs directory and creates, changes or removes nothing in it', async () => {
    const before = snapshot(runsDir)
    const result = await runLocus(['report', '--runs-dir', runsDir, '--json'])
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    const report = JSON.parse(result.stdout) as { outcomes: { partial: number }; gaps: { totalGaps: number } }
    expect(report.outcomes.partial).toBe(1)
    expect(report.gaps.totalGaps).toBe(1)
    expect(snapshot(runsDir)).toEqual(before)
  })

  it('reports an empty table for a read-only runs directory without a store, and does not create one', async () => {
    const empty = await tempDir()
    makeReadOnly(empty)
    const before = snapshot(empty)
    const result = await runLocus(['report', '--runs-dir', empty])
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/complete +0 /)
    expect(snapshot(empty)).toEqual(before)
    expect(before.entries).toEqual([])
  })
})

describe('an id that could escape the runs directory is refused with the id rule, by every command', () => {
  let runsDir: string

  beforeAll(async () => {
    runsDir = await tempDir()
  })

  for (const command of ['show', 'resume', 'replay', 'journal']) {
    for (const id of ['../x', '/etc']) {
      it(`locus ${command} ${id}`, async () => {
        const result = await runLocus([command, id, '--runs-dir', runsDir])
        expect(result.code).toBe(2)
        expect(result.stderr).toContain(`locus: Invalid run id ${JSON.stringify(id)}: ids name directories under the runs directory, so they must be ${RUN_ID_RULE}.`)
        expect(result.stderr).not.toMatch(/No run/)
      })
    }
  }

  it('`locus run --run-id` states the same rule in the same words', async () => {
    const result = await runLocus(['run', join(examplesDir, 'classify/classify-choice.ts'), '--run-id', '../x', '--runs-dir', runsDir])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain(`locus: Invalid run id "../x": ids name directories under the runs directory, so they must be ${RUN_ID_RULE}.`)
  })
})
