import type { JournalLine } from '@locus/journal'
import { abortAs, createRuntime, createScriptedHost, defineWorkflow } from '@locus/runtime'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { readRun, tempRunsDir } from './helpers.js'

const fanOut = defineWorkflow({
  name: 'fan-out',
  run: async ({ agent, parallel }) => ({ ok: true, answers: await parallel([1, 2, 3, 4].map((index) => () => agent(`item ${index}`))) }),
})
const waits = defineWorkflow({ name: 'waits', run: async ({ agent }) => ({ ok: true, answer: (await agent('hang')).answer }) })

function runtime(runsDir = tempRunsDir()) {
  const host = createScriptedHost({ rules: [{ match: { prompt: 'hang' }, steps: [{ hang: true }] }, { steps: [{ text: 'fine' }] }] })
  return createRuntime({ workflows: [fanOut, waits], host, runsDir })
}

describe('createRuntime', () => {
  it('starts a registered workflow by name and hands back one handle with the execution named', async () => {
    const rt = runtime()
    const run = await rt.start('fan-out')
    expect(run.executionId).toBe(run.runId)
    const result = await run.done
    expect(result.disposition).toBe('completed')
    const stored = await rt.get(run.runId)
    expect(stored.latest.summary).toMatchObject({ standing: 'completed', agentCalls: 4 })
    expect((await rt.list()).rows.map((row) => ({ runId: row.runId, workflow: row.workflow, status: row.status }))).toEqual([{ runId: run.runId, workflow: 'fan-out', status: 'completed' }])
  })

  it('hands onEvent every line as it is written, in order, before the end resolves; a signal aborted before the start cancels it as cli', async () => {
    const rt = runtime()
    const seen: JournalLine[] = []
    const run = await rt.start('fan-out', { onEvent: (line) => seen.push(line) })
    const result = await run.done
    expect(seen.map((line) => line.seq)).toEqual(readRun(result).lines.map((line) => line.seq))
    expect(seen.at(-1)?.type).toBe('run_end')
    // A Ctrl-C that lands before the handle exists still reaches the execution, with who asked.
    const controller = new AbortController()
    abortAs(controller, 'interrupted from the terminal (Ctrl-C)', 'cli')
    const cancelled = await (await rt.start('waits', { signal: controller.signal })).done
    expect(cancelled.disposition).toBe('cancelled')
    expect(readRun(cancelled).lines.find((line) => line.type === 'run_cancel_requested')).toMatchObject({ reason: 'interrupted from the terminal (Ctrl-C)', by: 'cli' })
    // Aborted while it waits, a resume of it is cancelled the same way.
    const later = new AbortController()
    const resumed = await rt.resume(cancelled.runId, { signal: later.signal })
    abortAs(later, 'second thoughts', 'cli')
    const ended = await resumed.done
    expect(ended.disposition).toBe('cancelled')
  })

  it('refuses an unknown workflow and a taken run id before anything starts', async () => {
    const rt = runtime()
    await expect(rt.start('nope')).rejects.toThrow(/No workflow named "nope"/)
    const first = await rt.start('fan-out', { runId: 'fixed-id' })
    await first.done
    await expect(rt.start('fan-out', { runId: 'fixed-id' })).rejects.toMatchObject({ code: 'RUN_EXISTS' })
  })

  it('gives a subscriber that joins at any point every line after its cursor, once and in order (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: 30 }), fc.integer({ min: -1, max: 10 }), async (joinAfterLines, afterSeq) => {
        const rt = runtime()
        const run = await rt.start('fan-out')
        let written = 0
        let seen: JournalLine[] | undefined
        const early = run.subscribe(() => {
          written += 1
          if (written === joinAfterLines && seen === undefined) {
            seen = []
            run.subscribe((line) => seen?.push(line), { afterSeq })
          }
        })
        await run.done
        early()
        const journal = readRun(await run.done).lines
        if (seen === undefined) {
          seen = []
          for await (const line of run.events({ afterSeq })) seen.push(line)
        }
        await new Promise((resolve) => setImmediate(resolve))
        expect(seen.map((line) => line.seq)).toEqual(journal.filter((line) => line.seq > afterSeq).map((line) => line.seq))
      }),
      { numRuns: 15 },
    )
  })

  it('cancels a live run by id, and resumes it by name from the journal', async () => {
    const rt = runtime()
    const run = await rt.start('waits')
    const lines: string[] = []
    const iterate = (async () => {
      for await (const line of run.events()) lines.push(line.type)
    })()
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(rt.cancel(run.runId, 'stop')).toBe(true)
    expect((await run.done).disposition).toBe('cancelled')
    await iterate
    expect(lines.at(-1)).toBe('run_end')
    expect(rt.cancel(run.runId)).toBe(false)
    const resumed = await rt.resume(run.runId)
    expect(resumed.executionId).toBe('resume-001')
    resumed.cancel()
    expect((await resumed.done).disposition).toBe('cancelled')
  })
})
