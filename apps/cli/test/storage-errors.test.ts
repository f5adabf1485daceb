import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { type LocusResult, cleanEnv, cliPath, runLocus, settle, tempDir } from './helpers.js'

const failingFs = join(import.meta.dirname, 'fixtures', 'enospc-fs.mjs')

/** Runs `locus` with every write to a path containing `marker` failing with ENOSPC. */
function locusOnFullDisk(args: readonly string[], cwd: string, marker: string): Promise<LocusResult> {
  return settle(spawn(process.execPath, ['--import', failingFs, cliPath, ...args], { cwd, env: cleanEnv({ LOCUS_TEST_ENOSPC: marker }), stdio: ['ignore', 'pipe', 'pipe'] }))
}

const WORKFLOW = `export default async ({ tool }) => ({ ok: true, answer: 42 })\n`

describe('storage errors name the file and ENOSPC, and exit 2', () => {
  it('result.json failing to write after run_end', async () => {
    const dir = await tempDir()
    writeFileSync(join(dir, 'answer.mjs'), WORKFLOW)
    const run = await locusOnFullDisk(['run', 'answer.mjs', '--run-id', 'r1', '--runs-dir', 'runs'], dir, 'result.json')
    expect(run.stderr).toMatch(/result\.json\S*: ENOSPC/)
    expect(run.stderr).not.toMatch(/unexpected error/)
    expect(run.code).toBe(2)
  })

  it('locus replay on a full disk exits 2, never the 1 of a divergence', async () => {
    const dir = await tempDir()
    writeFileSync(join(dir, 'answer.mjs'), WORKFLOW)
    expect((await runLocus(['run', 'answer.mjs', '--run-id', 'r1', '--runs-dir', 'runs'], { cwd: dir })).code).toBe(0)
    const replay = await locusOnFullDisk(['replay', 'r1', '--runs-dir', 'runs'], dir, join(dir, 'runs'))
    expect(replay.stderr).toMatch(/ENOSPC/)
    expect(replay.stderr).toMatch(/runs/)
    expect(replay.stderr).not.toMatch(/NOT identical|unexpected error/)
    expect(replay.code).toBe(2)
  })

  it('locus resume on a full disk', async () => {
    const dir = await tempDir()
    writeFileSync(join(dir, 'flaky.mjs'), `export default async () => { if (process.env.FAIL_ONCE === '1') throw new Error('first time'); return { ok: true } }\n`)
    expect((await runLocus(['run', 'flaky.mjs', '--run-id', 'r2', '--runs-dir', 'runs'], { cwd: dir, env: { FAIL_ONCE: '1' } })).code).toBe(1)
    const resume = await locusOnFullDisk(['resume', 'r2', '--runs-dir', 'runs'], dir, join(dir, 'runs'))
    expect(resume.stderr).toMatch(/ENOSPC \(no space left on the device\)/)
    expect(resume.stderr).toMatch(new RegExp(join(dir, 'runs').replaceAll('/', '\\/')))
    expect(resume.stderr).not.toMatch(/unexpected error/)
    expect(resume.code).toBe(2)
  })
})
