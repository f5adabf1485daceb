import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { readJournal } from '@locus/journal'
import { describe, expect, it } from 'vitest'
import { type LocusResult, examplesDir, onJsonLine, runLocus, settle, startLocus, tempDir } from './helpers.js'

/** Every file under a directory with its modification time and bytes, to show that nothing in it changed. */
function snapshot(directory: string): Record<string, string> {
  const files: Record<string, string> = {}
  const walk = (current: string): void => {
    for (const entry of readdirSync(current, { withFileTypes: true })) {
      const path = join(current, entry.name)
      if (entry.isDirectory()) walk(path)
      else files[relative(directory, path)] = `${statSync(path).mtimeMs}:${readFileSync(path, 'base64')}`
    }
  }
  walk(directory)
  return files
}

/**
 * A fan-out whose last two calls wait for a gate file before asking the host
 * (when LOCUS_TEST_GATE names one): the run to kill, and a resume that holds
 * the run while its rivals try to take it.
 */
const GATED_WORKFLOW = `import { existsSync } from 'node:fs'
import { defineWorkflow } from '@locus/runtime'

const gate = process.env.LOCUS_TEST_GATE ?? ''

export default defineWorkflow({
  name: 'gated',
  async run({ agent, parallel }) {
    const answers = await parallel([0, 1, 2, 3].map((index) => async () => {
      if (index >= 2) while (gate === '' || !existsSync(gate)) await new Promise((resolve) => setTimeout(resolve, 25))
      return (await agent(\`item \${index}\`)).answer
    }))
    return { ok: true, answers }
  },
})
`

describe('run ownership', () => {
  it('`locus run --run-id` of an existing run exits 2, names resume and replay, and writes nothing to the run', async () => {
    const runsDir = await tempDir()
    const workflow = join(examplesDir, 'classify/classify-choice.ts')
    const first = await runLocus(['run', workflow, '--runs-dir', runsDir, '--run-id', 'done', '--quiet'])
    expect(first.code).toBe(0)
    const before = snapshot(join(runsDir, 'done'))

    const again = await runLocus(['run', workflow, '--runs-dir', runsDir, '--run-id', 'done'])
    expect(again.code).toBe(2)
    expect(again.stderr).toMatch(/^locus: Run done already exists in .*, and a new run never writes into an existing one\./)
    expect(again.stderr).toContain('`locus resume done`')
    expect(again.stderr).toContain('`locus replay done`')
    expect(again.stdout).not.toMatch(/completed/)
    expect(snapshot(join(runsDir, 'done'))).toEqual(before)
  })

  it('four concurrent `locus resume` of a killed run: exactly one resumes it, three exit 2 naming the owner', async () => {
    const dir = await tempDir()
    const workflow = join(dir, 'gated.mts')
    writeFileSync(workflow, GATED_WORKFLOW)
    writeFileSync(join(dir, 'gated.fixtures.json'), JSON.stringify({ rules: [{ steps: [{ text: 'answer' }] }] }))
    const runsDir = join(dir, 'runs')

    // The run: two calls answer, two wait for a gate that never opens; kill -9 it.
    const run = startLocus(['run', workflow, '--host', 'scripted', '--runs-dir', runsDir, '--run-id', 'killed', '--json'], { cwd: dir })
    let answered = 0
    onJsonLine(run, (line) => {
      if (line.type === 'agent_end') answered += 1
      if (answered === 2) run.kill('SIGKILL')
    })
    const killed = await settle(run)
    expect(killed.signal, killed.stderr).toBe('SIGKILL')
    expect(existsSync(join(runsDir, 'killed', 'owner.lock'))).toBe(true)

    const gate = join(dir, 'gate')
    const resumes = [0, 1, 2, 3].map(() => startLocus(['resume', 'killed', '--runs-dir', runsDir, '--quiet'], { cwd: dir, env: { LOCUS_TEST_GATE: gate } }))
    let exited = 0
    const results: Promise<LocusResult>[] = resumes.map(async (child) => {
      const result = await settle(child)
      exited += 1
      return result
    })
    // The winner's live calls wait for the gate: open it once the three others have been refused (or after a bound).
    for (let waited = 0; waited < 1_200 && exited < 3; waited += 1) await new Promise((resolve) => setTimeout(resolve, 50))
    writeFileSync(gate, 'open')
    const ended = await Promise.all(results)

    const codes = ended.map((result) => result.code).sort()
    expect(codes, JSON.stringify(ended.map((result) => result.stderr))).toEqual([0, 2, 2, 2])
    for (const refused of ended.filter((result) => result.code === 2)) {
      expect(refused.stderr).toMatch(/locus: Run "killed" is owned by process \d+ on .* \(execution resume-001, since /)
    }
    expect(readdirSync(join(runsDir, 'killed', 'executions'))).toEqual(['resume-001'])
    const journal = readJournal(join(runsDir, 'killed', 'executions', 'resume-001', 'journal.jsonl'))
    expect(journal.invalid).toEqual([])
    expect(journal.lines.filter((line) => line.type === 'run_start')).toHaveLength(1)
    const seqs = journal.lines.map((line) => line.seq)
    expect(seqs).toEqual([...seqs].sort((left, right) => left - right))
    expect(new Set(seqs).size).toBe(seqs.length)
    // The two calls the killed run finished were replayed, not asked again.
    expect(journal.lines.filter((line) => line.type === 'agent_end' && line.replayed === true)).toHaveLength(2)
    expect(journal.lines.at(-1)).toMatchObject({ type: 'run_end', disposition: 'completed' })
    expect(existsSync(join(runsDir, 'killed', 'owner.lock'))).toBe(false)
  }, 120_000)
})
