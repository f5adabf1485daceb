import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { readJournal } from '@locus/journal'
import { describe, expect, it } from 'vitest'
import { examplesDir, jsonLines, onJsonLine, settle, startLocus, tempDir } from './helpers.js'

/**
 * A workflow whose one agent call waits on a scripted host turn that never
 * answers: only an abort ends it. Nothing else holds Node's event loop.
 */
async function waitingWorkflow(): Promise<{ dir: string; runsDir: string }> {
  const dir = await tempDir('locus-waiting-')
  writeFileSync(
    join(dir, 'waits.mts'),
    [
      "import { defineWorkflow } from '@locus/runtime'",
      'export default defineWorkflow({',
      "  name: 'waits',",
      '  async run({ agent }) {',
      "    const { answer } = await agent('Wait for an answer that only a cancellation ends.')",
      '    return { ok: true, answer }',
      '  },',
      '})',
      '',
    ].join('\n'),
  )
  writeFileSync(join(dir, 'waits.fixtures.json'), JSON.stringify({ rules: [{ steps: [{ hang: true }] }] }))
  return { dir, runsDir: join(dir, 'runs') }
}

/** Starts `args` (with --json), waits until its agent call has started and a further `waitMs`, and reports whether it was still alive then. */
async function startWaiting(args: string[], cwd: string, waitMs: number) {
  const child = startLocus([...args, '--json'], { cwd })
  const done = settle(child)
  const started = new Promise<void>((resolve) => {
    onJsonLine(child, (line) => {
      if (line.type === 'agent_start') resolve()
    })
  })
  await Promise.race([started, done])
  await sleep(waitMs)
  // exitCode and signalCode stay null until the process has exited.
  const aliveBeforeSigint = child.exitCode === null && child.signalCode === null
  child.kill('SIGINT')
  return { aliveBeforeSigint, result: await done }
}

describe('a run that is waiting keeps its process until it settles', () => {
  it('`locus run` stays alive on a hung host turn, and Ctrl-C ends it cancelled with its run_end and result.json', async () => {
    const { dir, runsDir } = await waitingWorkflow()
    const { aliveBeforeSigint, result } = await startWaiting(['run', 'waits.mts', '--runs-dir', runsDir, '--run-id', 'waiting'], dir, 1500)
    // Before the fix Node found nothing pending and exited 13 after ~0.5 s, leaving the run unfinished.
    expect(aliveBeforeSigint).toBe(true)
    expect(result.code).toBe(130)
    expect(result.stderr).toMatch(/cancelling: started calls settle/)
    expect(jsonLines(result.stdout).at(-1)).toMatchObject({ type: 'summary', standing: 'cancelled', exitCode: 130 })
    const journal = readJournal(join(runsDir, 'waiting', 'journal.jsonl'))
    expect(journal.lines.at(-1)).toMatchObject({ type: 'run_end', disposition: 'cancelled' })
    expect(JSON.parse(readFileSync(join(runsDir, 'waiting', 'result.json'), 'utf8'))).toMatchObject({ disposition: 'cancelled' })
  })

  it('`locus resume` of a run that waits again stays alive too, and Ctrl-C ends the resumed execution cancelled', async () => {
    const { dir, runsDir } = await waitingWorkflow()
    const first = await startWaiting(['run', 'waits.mts', '--runs-dir', runsDir, '--run-id', 'again'], dir, 200)
    expect(first.result.code).toBe(130)
    const resumed = await startWaiting(['resume', 'again', '--runs-dir', runsDir], dir, 1500)
    expect(resumed.aliveBeforeSigint).toBe(true)
    expect(resumed.result.code).toBe(130)
    const executionDir = join(runsDir, 'again', 'executions', 'resume-001')
    expect(readJournal(join(executionDir, 'journal.jsonl')).lines.at(-1)).toMatchObject({ type: 'run_end', disposition: 'cancelled' })
    expect(existsSync(join(executionDir, 'result.json'))).toBe(true)
  })

  it('a reader that goes away mid-run (EPIPE) cancels the run, which still ends with its run_end', async () => {
    const runsDir = await tempDir()
    const child = startLocus(['run', join(examplesDir, 'long-fan-out/long-fan-out.ts'), '--host', 'scripted', '--runs-dir', runsDir, '--run-id', 'unread', '--json'])
    const exited = new Promise<number | null>((resolve) => {
      child.on('exit', (code) => {
        resolve(code)
      })
    })
    child.stderr?.resume()
    let closed = false
    onJsonLine(child, (line) => {
      if (!closed && line.type === 'agent_start') {
        closed = true
        // The reader stops reading, as `| head -1` does: the next write gets EPIPE.
        child.stdout?.destroy()
      }
    })
    const code = await exited
    expect(code).toBe(130)
    const journal = readJournal(join(runsDir, 'unread', 'journal.jsonl'))
    expect(journal.tornTail).toBeNull()
    expect(journal.lines.at(-1)).toMatchObject({ type: 'run_end', disposition: 'cancelled' })
    expect(JSON.parse(readFileSync(join(runsDir, 'unread', 'result.json'), 'utf8'))).toMatchObject({ disposition: 'cancelled' })
  })
})
