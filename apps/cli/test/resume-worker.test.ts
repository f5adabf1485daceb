import { existsSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { jsonLines, runLocus, tempDir } from './helpers.js'

// A workflow whose two remote tool calls are served by a stdio worker.
const WORKFLOW = `import { defineRemoteTool, defineWorkflow } from '@locus/runtime'
import { z } from 'zod'

export default defineWorkflow({
  name: 'two-lookups',
  tools: { lookup: defineRemoteTool({ input: z.object({ id: z.string() }), output: z.object({ id: z.string(), by: z.string() }) }) },
  run: async ({ tool }) => ({ ok: true, first: await tool('lookup', { id: 'a' }), second: await tool('lookup', { id: 'b' }) }),
})
`

// The worker answers every lookup, naming itself, except 'b' while a file named broken lies beside it.
const WORKER = `import { existsSync } from 'node:fs'
import { createInterface } from 'node:readline'
const name = process.argv[2] ?? 'worker'
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue
  const trigger = JSON.parse(line)
  const broken = trigger.arguments.id === 'b' && existsSync(new URL('./broken', import.meta.url))
  const action = broken
    ? { type: 'tool.error', id: trigger.id, error: 'the lookup service is down', retryable: false }
    : { type: 'tool.result', id: trigger.id, result: { id: trigger.arguments.id, by: name } }
  process.stdout.write(JSON.stringify({ actions: [action] }) + '\\n')
}
`

async function failedRun(dir: string, runId: string): Promise<void> {
  writeFileSync(join(dir, 'broken'), '')
  const run = await runLocus(['run', 'two-lookups.mts', '--run-id', runId, '--worker', 'node worker.mjs first', '--host', 'none', '--runs-dir', 'runs', '--quiet'], { cwd: dir })
  expect(run.code).toBe(1)
  rmSync(join(dir, 'broken'))
}

describe('locus resume and a stdio worker', () => {
  it('records the worker command in run_start and starts the same worker on resume', async () => {
    const dir = await tempDir()
    writeFileSync(join(dir, 'two-lookups.mts'), WORKFLOW)
    writeFileSync(join(dir, 'worker.mjs'), WORKER)
    await failedRun(dir, 'run-1')
    const journal = await runLocus(['journal', 'run-1', '--type', 'run_start', '--json', '--runs-dir', 'runs'], { cwd: dir })
    expect(jsonLines(journal.stdout)[0]).toMatchObject({ options: { workerSettings: { transport: 'stdio', command: 'sh', args: ['-c', 'exec node worker.mjs first'], cwd: dir } } })
    const resumed = await runLocus(['resume', 'run-1', '--runs-dir', 'runs', '--json'], { cwd: dir })
    expect(resumed.stderr).toBe('')
    expect(resumed.code).toBe(0)
    expect(jsonLines(resumed.stdout).at(-1)).toMatchObject({ standing: 'completed', result: { first: { id: 'a', by: 'first' }, second: { id: 'b', by: 'first' } } })
    expect(existsSync(join(dir, 'broken'))).toBe(false)
  })

  it('--worker overrides the recorded worker', async () => {
    const dir = await tempDir()
    writeFileSync(join(dir, 'two-lookups.mts'), WORKFLOW)
    writeFileSync(join(dir, 'worker.mjs'), WORKER)
    await failedRun(dir, 'run-2')
    const resumed = await runLocus(['resume', 'run-2', '--worker', 'node worker.mjs second', '--runs-dir', 'runs'], { cwd: dir })
    expect(resumed.code).toBe(0)
    expect(resumed.stdout).toMatch(/worker node worker\.mjs second/)
    const result = await runLocus(['show', 'run-2', '--json', '--runs-dir', 'runs'], { cwd: dir })
    // The first lookup is replayed from the recording; only the second ran live, on the new worker.
    expect(JSON.parse(result.stdout)).toMatchObject({ result: { first: { by: 'first' }, second: { by: 'second' } } })
  })
})
