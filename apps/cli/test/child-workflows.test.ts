import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runLocus, tempDir } from './helpers.js'

describe('`locus run` and `locus show` with child workflows', () => {
  it('runs a workflow whose child fails, and shows the child with its disposition', async () => {
    const dir = await tempDir('locus-children-')
    writeFileSync(
      join(dir, 'parent.mts'),
      [
        "import { defineWorkflow } from '@locus/runtime'",
        "const lookup = defineWorkflow({ name: 'lookup', run: async () => ({ ok: true, partial: true }) })",
        'export default defineWorkflow({',
        "  name: 'parent',",
        '  async run({ spawn }) {',
        "    return { ok: true, found: await spawn(lookup, null) }",
        '  },',
        '})',
        '',
      ].join('\n'),
    )
    const runsDir = join(dir, 'runs')
    const run = await runLocus(['run', join(dir, 'parent.mts'), '--runs-dir', runsDir, '--run-id', 'kids'], { cwd: dir })
    expect(run.code).toBe(1)
    expect(run.stdout).toContain('child workflow lookup child-1 attempt 1/1 failed')
    expect(run.stdout).toContain('children: 1 (0 completed, 1 failed): lookup child-1-a1 failed')
    const show = await runLocus(['show', 'kids', '--runs-dir', runsDir], { cwd: dir })
    expect(show.code).toBe(0)
    expect(show.stdout).toMatch(/Child runs:\n {2}child-1-a1 +lookup failed/)
    const json = JSON.parse((await runLocus(['show', 'kids', '--runs-dir', runsDir, '--json'], { cwd: dir })).stdout) as { childFailed: number; childRuns: unknown[] }
    expect(json.childFailed).toBe(1)
    expect(json.childRuns).toEqual([{ executionId: 'child-1-a1', workflow: 'lookup', standing: 'failed' }])
  })
})
