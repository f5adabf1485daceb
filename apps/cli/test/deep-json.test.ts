import { existsSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runLocus, tempDir } from './helpers.js'

const WORKFLOW = `export default async ({ input }) => ({ ok: true, input })\n`
const DEEP_RESULT = `export default async () => {
  let value = 1
  for (let level = 0; level < 3000; level += 1) value = [value]
  return { ok: true, value }
}
`

describe('deeply nested JSON', () => {
  it('a 3,000-level input exits 2 naming the limit, and no run is created', async () => {
    const dir = await tempDir()
    writeFileSync(join(dir, 'echo.mjs'), WORKFLOW)
    const deep = `${'['.repeat(3000)}${']'.repeat(3000)}`
    writeFileSync(join(dir, 'deep.json'), deep)
    for (const args of [['--input', deep], ['--input-file', 'deep.json']]) {
      const run = await runLocus(['run', 'echo.mjs', ...args, '--runs-dir', 'runs'], { cwd: dir })
      expect(run.code).toBe(2)
      expect(run.stderr).toMatch(/nests more than 512 levels deep/)
      expect(run.stderr).not.toMatch(/unexpected/i)
    }
    expect(existsSync(join(dir, 'runs')) ? readdirSync(join(dir, 'runs')) : []).toEqual([])
  })

  it('a 3,000-level result fails the run as too deep, with its journal complete, not a crash', async () => {
    const dir = await tempDir()
    writeFileSync(join(dir, 'deep-result.mjs'), DEEP_RESULT)
    const run = await runLocus(['run', 'deep-result.mjs', '--run-id', 'deep-1', '--runs-dir', 'runs'], { cwd: dir })
    expect(run.code).toBe(1)
    expect(run.stderr).not.toMatch(/unexpected/i)
    const show = await runLocus(['show', 'deep-1', '--json', '--runs-dir', 'runs'], { cwd: dir })
    expect(show.stdout).toMatch(/more than 512 levels deep/)
  })
})
