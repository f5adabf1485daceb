import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { defineDeferredTool, defineWorkflow, startWorkflowRun } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { runLocus, tempDir } from './helpers.js'

const SOURCE = `import { defineDeferredTool, defineWorkflow } from '@locus/runtime'
import { z } from 'zod'

export default defineWorkflow({
  name: 'approval',
  tools: { approve: defineDeferredTool({ input: z.object({ amount: z.number() }), output: z.object({ approved: z.boolean() }) }) },
  run: async ({ tool }) => ({ ok: true, approval: await tool('approve', { amount: 7 }) }),
})
`

describe('locus resolve checks an answer against the recorded workflow first', () => {
  it('exits 2 naming the field, keeps nothing, and then takes a fitting answer', async () => {
    const dir = await tempDir()
    const runsDir = join(dir, 'runs')
    const file = join(dir, 'approval.mts')
    writeFileSync(file, SOURCE)
    const approval = defineWorkflow({
      name: 'approval',
      tools: { approve: defineDeferredTool({ input: z.object({ amount: z.number() }), output: z.object({ approved: z.boolean() }) }) },
      run: async ({ tool }) => ({ ok: true, approval: await tool('approve', { amount: 7 }) }),
    })
    let deferredId: string | undefined
    const settled: unknown[] = []
    // This process holds the run, recording approval.mts as its workflow file; `locus resolve` is the other shell.
    const handle = await startWorkflowRun(approval, {
      runsDir,
      runId: 'run-1',
      source: file,
      durability: 'line',
      onEvent: (line) => {
        deferredId ??= line.type === 'deferred_open' ? line.deferredId : undefined
        if (line.type === 'deferred_settled') settled.push(line)
      },
    })
    while (deferredId === undefined) await new Promise((resolve) => setTimeout(resolve, 5))
    const id = deferredId
    const invalid = await runLocus(['resolve', 'run-1', id, '--result', '{"approved":"yes"}', '--runs-dir', runsDir], { cwd: dir })
    expect(invalid.code).toBe(2)
    expect(invalid.stderr).toMatch(/result\.approved/)
    expect(invalid.stderr).toMatch(/approve/)
    expect(existsSync(join(runsDir, 'run-1', 'deferred', `${id}.json`))).toBe(false)
    const valid = await runLocus(['resolve', 'run-1', id, '--result', '{"approved":true}', '--runs-dir', runsDir], { cwd: dir })
    expect(valid.code).toBe(0)
    const result = await handle.done
    expect(result.result).toEqual({ ok: true, approval: { approved: true } })
    // The run journals who decided: `locus resolve`, through the store, from another process.
    expect(settled).toEqual([expect.objectContaining({ deferredId: id, outcome: 'resolved', decidedBy: 'cli', via: 'cli' })])
  })
})
