import { statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runLocus, tempDir } from './helpers.js'

/** Bytes of the value the workflow returns, on one line. */
const BLOB_BYTES = 8 * 1024 * 1024

describe('a large result is cut by size as well as by lines', () => {
  it('`locus run --quiet` and `locus show` print kilobytes of a multi-megabyte single-line result, and say where the whole is', async () => {
    const dir = await tempDir('locus-large-')
    writeFileSync(
      join(dir, 'large.mts'),
      [
        "import { defineWorkflow } from '@locus/runtime'",
        'export default defineWorkflow({',
        "  name: 'large',",
        `  async run() { return 'x'.repeat(${BLOB_BYTES}) },`,
        '})',
        '',
      ].join('\n'),
    )
    const runsDir = join(dir, 'runs')
    const run = await runLocus(['run', 'large.mts', '--runs-dir', runsDir, '--run-id', 'large', '--quiet', '--host', 'none'], { cwd: dir })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(statSync(join(runsDir, 'large', 'result.json')).size).toBeGreaterThan(BLOB_BYTES)
    const show = await runLocus(['show', 'large', '--runs-dir', runsDir], { cwd: dir })
    expect(show.code).toBe(0)
    for (const output of [run.stdout, show.stdout]) {
      expect(output.length).toBeLessThan(16 * 1024)
      expect(output).toMatch(/… \d+ more bytes; full result in runs\/large\/result\.json/)
    }
  })
})
