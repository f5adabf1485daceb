// One check under the lock (issue #37): "already completed" is decided once the run is claimed, so of
// two `locus resume` started together, one held back by a slow workflow import, one resumes the run
// and the other is refused with exit 2, and the run gets one new execution.
import { existsSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { onJsonLine, settle, startLocus, tempDir } from './helpers.js'

/** Two agent calls; the second waits for a gate file, and the module's import takes LOCUS_TEST_IMPORT_DELAY_MS. */
const SLOW_IMPORT_WORKFLOW = `import { existsSync } from 'node:fs'
import { defineWorkflow } from '@locus/runtime'

await new Promise((resolve) => setTimeout(resolve, Number(process.env.LOCUS_TEST_IMPORT_DELAY_MS ?? '0')))
const gate = process.env.LOCUS_TEST_GATE ?? ''

export default defineWorkflow({
  name: 'slow-import',
  async run({ agent }) {
    const first = (await agent('first')).answer
    while (gate === '' || !existsSync(gate)) await new Promise((resolve) => setTimeout(resolve, 25))
    const second = (await agent('second')).answer
    return { ok: true, answers: [first, second] }
  },
})
`

describe('two resumes of one run started together', () => {
  it('yield one execution and one refusal: the held-back resume finds the run completed under the lock and exits 2', async () => {
    const dir = await tempDir()
    const workflow = join(dir, 'slow-import.mts')
    writeFileSync(workflow, SLOW_IMPORT_WORKFLOW)
    writeFileSync(join(dir, 'slow-import.fixtures.json'), JSON.stringify({ rules: [{ steps: [{ text: 'answer' }] }] }))
    const runsDir = join(dir, 'runs')

    // The run answers its first call, then waits for a gate that is not there yet: kill -9 it.
    const run = startLocus(['run', workflow, '--host', 'scripted', '--runs-dir', runsDir, '--run-id', 'raced', '--json'], { cwd: dir })
    onJsonLine(run, (line) => {
      if (line.type === 'agent_end') run.kill('SIGKILL')
    })
    expect((await settle(run)).signal).toBe('SIGKILL')

    const gate = join(dir, 'gate')
    writeFileSync(gate, '')
    // Both pass the early check at once; the slow one imports the workflow for 3 s, the quick one resumes meanwhile.
    const slow = startLocus(['resume', 'raced', '--runs-dir', runsDir, '--quiet'], { cwd: dir, env: { LOCUS_TEST_GATE: gate, LOCUS_TEST_IMPORT_DELAY_MS: '3000' } })
    const quick = startLocus(['resume', 'raced', '--runs-dir', runsDir, '--quiet'], { cwd: dir, env: { LOCUS_TEST_GATE: gate } })
    const [slowResult, quickResult] = await Promise.all([settle(slow), settle(quick)])

    expect(quickResult.code, quickResult.stderr).toBe(0)
    expect(slowResult.code, slowResult.stdout).toBe(2)
    // The refusal came from the check under the lock, which names the execution that completed the run.
    expect(slowResult.stderr).toMatch(/Run "raced" already completed \(execution resume-001\); there is nothing to resume/)
    const executions = readdirSync(join(runsDir, 'raced', 'executions')).filter((name) => name.startsWith('resume-'))
    expect(executions).toEqual(['resume-001'])
    expect(existsSync(join(runsDir, 'raced', 'owner.lock'))).toBe(false)
  })
})
