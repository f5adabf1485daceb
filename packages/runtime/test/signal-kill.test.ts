// A signal sent before the script reaches its waitForSignal is delivered once,
// also when the process running the run is SIGKILLed between the signal and
// the wait (issue #36): whether the dead process had journaled the signal or
// the signal reached the run only after it died, the resumed run gets it once.
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { JournalLine } from '@locus/journal'
import { createRuntime } from '@locus/runtime'
import { createFileRunStore } from '@locus/store'
import { describe, expect, it } from 'vitest'
import { signalWorkflow } from './fixtures/signal-workflow.js'
import { tempRunsDir } from './helpers.js'

async function linesOf(runsDir: string, runId: string): Promise<JournalLine[]> {
  const store = createFileRunStore(runsDir)
  const lines: JournalLine[] = []
  for (const info of await store.listExecutions(runId)) for await (const line of store.readLines(info)) lines.push(line)
  return lines
}

/** Starts the holder process and answers its run id once the run holds before its wait (the `hold` call started). */
async function holdingRun(runsDir: string, sideLog: string): Promise<{ child: ChildProcess; runId: string }> {
  const child = spawn(process.execPath, ['--conditions=@locus/source', '--import', 'tsx', fileURLToPath(new URL('./fixtures/signal-holder.ts', import.meta.url)), runsDir, sideLog], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
  let runId = ''
  await expect
    .poll(
      async () => {
        runId = /"runId":"([^"]+)"/.exec(output)?.[1] ?? ''
        if (runId === '' || !existsSync(join(runsDir, runId))) return false
        return (await linesOf(runsDir, runId)).some((line) => line.type === 'tool_start' && line.tool === 'hold')
      },
      { timeout: 20_000, interval: 25 },
    )
    .toBe(true)
  return { child, runId }
}

async function kill(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
}

describe('a signal sent before its wait, across a SIGKILL', () => {
  it('journaled by the process that was then killed: the resumed run gets it once, and the finished tool does not run again', async () => {
    const runsDir = tempRunsDir()
    const sideLog = join(runsDir, 'side.log')
    const { child, runId } = await holdingRun(runsDir, sideLog)
    const sender = createRuntime({ workflows: [signalWorkflow(sideLog, false)], runsDir })
    expect(await sender.signal(runId, 'go', { n: 7 })).toMatchObject({ ok: true, status: 'stored' })
    // The live process takes the signal from the store and journals it, while its script still holds.
    await expect.poll(async () => (await linesOf(runsDir, runId)).filter((line) => line.type === 'signal_received').length, { timeout: 10_000 }).toBe(1)
    await kill(child)

    const resumed = await (await sender.resume(runId)).done
    expect(resumed).toMatchObject({ disposition: 'completed', result: { ok: true, got: { n: 7 } } })
    const lines = await linesOf(runsDir, runId)
    expect(lines.filter((line) => line.type === 'signal_received' && !('replayed' in line && line.replayed === true)).map((line) => (line as { signalSeq: number }).signalSeq)).toEqual([0])
    expect(readFileSync(sideLog, 'utf8')).toBe('record\n')
  }, 60_000)

  it('sent after the process was killed, before any resume: the resumed run gets it once', async () => {
    const runsDir = tempRunsDir()
    const sideLog = join(runsDir, 'side.log')
    const { child, runId } = await holdingRun(runsDir, sideLog)
    await kill(child)
    const sender = createRuntime({ workflows: [signalWorkflow(sideLog, false)], runsDir })
    expect(await sender.signal(runId, 'go', { n: 9 })).toMatchObject({ ok: true, status: 'stored' })
    const resumed = await (await sender.resume(runId)).done
    expect(resumed).toMatchObject({ disposition: 'completed', result: { ok: true, got: { n: 9 } } })
    const received = (await linesOf(runsDir, runId)).filter((line) => line.type === 'signal_received')
    expect(received).toHaveLength(1)
    expect(readFileSync(sideLog, 'utf8')).toBe('record\n')
    // A second resume of the finished run is refused; the signal is not delivered again anywhere.
    await expect(sender.resume(runId)).rejects.toThrow()
  }, 60_000)
})
