import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as wait } from 'node:timers/promises'
import { type JournalLine, readJournal } from '@locus/journal'
import { describe, expect, it } from 'vitest'
import { runLocus, settle, startLocus, tempDir, waitForOutput } from './helpers.js'

/** Long enough for a resume started at once to start before the due time, on a slow machine too. */
const SLEEP_MS = 4_000

/** A workflow that charges (appending to a file, once per real run of the tool), sleeps, and reminds. */
async function sleepingWorkflow(sleepMs = SLEEP_MS): Promise<{ dir: string; runsDir: string; charges: string }> {
  const dir = await tempDir('locus-sleep-')
  const charges = join(dir, 'charges.txt')
  writeFileSync(charges, '')
  writeFileSync(
    join(dir, 'naps.mts'),
    [
      "import { appendFileSync } from 'node:fs'",
      "import { defineTool, defineWorkflow } from '@locus/runtime'",
      "import { z } from 'zod'",
      'export default defineWorkflow({',
      "  name: 'naps',",
      '  tools: {',
      `    charge: defineTool({ input: z.object({}), run: () => { appendFileSync(${JSON.stringify(charges)}, 'charged\\n'); return { charged: true } } }),`,
      '    remind: defineTool({ input: z.object({}), run: () => ({ reminded: true }) }),',
      '  },',
      '  async run({ tool, sleep }) {',
      "    await tool('charge', {})",
      `    await sleep('${String(sleepMs)}ms')`,
      "    await tool('remind', {})",
      '    return { ok: true }',
      '  },',
      '})',
      '',
    ].join('\n'),
  )
  return { dir, runsDir: join(dir, 'runs'), charges }
}

/** Runs the workflow until `locus run` says it sleeps, then SIGKILLs it; resolves the dueAt it printed. */
async function killedDuringSleep(dir: string, runsDir: string, runId: string): Promise<string> {
  const child = startLocus(['run', 'naps.mts', '--runs-dir', runsDir, '--run-id', runId], { cwd: dir })
  const ended = settle(child)
  const [, dueAt] = await waitForOutput(child, /waiting on timer timer-2 \(sleep\) until (\S+)/)
  child.kill('SIGKILL')
  expect((await ended).signal).toBe('SIGKILL')
  return dueAt ?? ''
}

function resumeLines(runsDir: string, runId: string): JournalLine[] {
  return readJournal(join(runsDir, runId, 'executions', 'resume-001', 'journal.jsonl')).lines
}

function linesOf<TType extends JournalLine['type']>(lines: readonly JournalLine[], type: TType): Extract<JournalLine, { type: TType }>[] {
  return lines.filter((line): line is Extract<JournalLine, { type: TType }> => line.type === type)
}

describe('sleep() survives a SIGKILL', () => {
  it('resumed after the due time: the timer fires at once, late, and the charge before it is not made again', async () => {
    const { dir, runsDir, charges } = await sleepingWorkflow(1_000)
    const dueAt = await killedDuringSleep(dir, runsDir, 'late')
    while (Date.now() <= Date.parse(dueAt) + 200) await wait(50)
    const resumed = await runLocus(['resume', 'late', '--runs-dir', runsDir], { cwd: dir })
    expect(resumed.stderr).toBe('')
    expect(resumed.code).toBe(0)
    expect(readFileSync(charges, 'utf8')).toBe('charged\n')
    const lines = resumeLines(runsDir, 'late')
    expect(linesOf(lines, 'timer_start')).toEqual([expect.objectContaining({ timerId: 'timer-2', dueAt, replayed: true })])
    const [fired] = linesOf(lines, 'timer_fired')
    expect(fired?.lateMs).toBeGreaterThanOrEqual(200)
    // At once: the resume did not wait another full sleep after it started.
    const started = linesOf(lines, 'run_start')[0]?.ts ?? ''
    expect(Date.parse(fired?.firedAt ?? '') - Date.parse(started)).toBeLessThan(500)
    expect(lines.at(-1)).toMatchObject({ type: 'run_end', disposition: 'completed' })
  })

  it('resumed before the due time: it waits only for what is left of the first dueAt', async () => {
    const { dir, runsDir, charges } = await sleepingWorkflow()
    const dueAt = await killedDuringSleep(dir, runsDir, 'early')
    expect(Date.now()).toBeLessThan(Date.parse(dueAt))
    const resumed = await runLocus(['resume', 'early', '--runs-dir', runsDir], { cwd: dir })
    expect(resumed.code).toBe(0)
    expect(resumed.stdout).toContain(`waiting on timer timer-2 (sleep) until ${dueAt}, started by an earlier execution`)
    expect(readFileSync(charges, 'utf8')).toBe('charged\n')
    const lines = resumeLines(runsDir, 'early')
    const started = Date.parse(linesOf(lines, 'run_start')[0]?.ts ?? '')
    expect(started).toBeLessThan(Date.parse(dueAt))
    const [fired] = linesOf(lines, 'timer_fired')
    // Fired at the first dueAt, not a whole sleep after the resume began.
    expect(Date.parse(fired?.firedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(dueAt))
    expect(fired?.lateMs).toBeLessThan(500)
  })
})
