import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { readJournal } from '@locus/journal'
import { describe, expect, it } from 'vitest'
import { onJsonLine, runLocus, settle, startLocus, tempDir } from './helpers.js'

/** Takes `add` updates until the `stop` signal; nothing else holds it. */
async function tallyWorkflow(): Promise<{ dir: string; runsDir: string }> {
  const dir = await tempDir('locus-update-')
  writeFileSync(
    join(dir, 'tally.mts'),
    [
      "import { defineWorkflow } from '@locus/runtime'",
      "import { z } from 'zod'",
      'export default defineWorkflow({',
      "  name: 'tally',",
      '  signals: { stop: z.null() },',
      "  updates: { add: { input: z.object({ by: z.number().int() }), output: z.object({ total: z.number() }), validate: (input) => (input.by < 0 ? 'by: no negative amounts' : undefined) } },",
      '  async run({ onUpdate, waitForSignal }) {',
      '    let total = 0',
      "    onUpdate('add', (input) => ({ total: (total += input.by) }))",
      "    await waitForSignal('stop')",
      '    return { ok: true, total }',
      '  },',
      '})',
      '',
    ].join('\n'),
  )
  return { dir, runsDir: join(dir, 'runs') }
}

describe('locus update', () => {
  it("sends an update to a run another process executes and prints its handler's result; refusals exit non-zero and journal nothing", async () => {
    const { dir, runsDir } = await tallyWorkflow()
    const child = startLocus(['run', 'tally.mts', '--runs-dir', runsDir, '--run-id', 'tally', '--json'], { cwd: dir })
    const done = settle(child)
    await Promise.race([
      new Promise<void>((resolve) => {
        onJsonLine(child, (line) => {
          if (line.type === 'signal_wait_start') resolve()
        })
      }),
      done,
    ])
    const [first, rejected] = await Promise.all([
      runLocus(['update', 'tally', 'add', '--data', '{"by":7}', '--runs-dir', runsDir, '--wait', '20'], { cwd: dir }),
      runLocus(['update', 'tally', 'add', '--data', '{"by":-1}', '--runs-dir', runsDir], { cwd: dir }),
    ])
    expect(first.stderr).toBe('')
    expect({ code: first.code, stdout: first.stdout.trim() }).toEqual({ code: 0, stdout: '{"total":7}' })

    expect(rejected.code).not.toBe(0)
    expect(rejected.stderr).toContain('by: no negative amounts')

    expect((await runLocus(['signal', 'tally', 'stop', '--runs-dir', runsDir], { cwd: dir })).code).toBe(0)
    const ended = await done
    expect(ended.code).toBe(0)
    const lines = readJournal(join(runsDir, 'tally', 'journal.jsonl')).lines
    expect(lines.flatMap((line) => (line.type === 'update_received' ? [[line.input, line.from, line.via]] : []))).toEqual([
      [{ by: 7 }, 'cli', 'cli'],
    ])
    expect(lines.at(-1)).toMatchObject({ type: 'run_end', disposition: 'completed', result: { ok: true, total: 7 } })
  })
})
