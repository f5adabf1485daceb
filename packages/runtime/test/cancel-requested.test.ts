// A cancel request is journaled once, as run_cancel_requested { reason, by },
// by the execution it stops, whichever way it came: the handle, the runtime,
// or the signal a caller gave the run; a suspension is not one.
import type { JournalLine } from '@locus/journal'
import { abortAs, createRuntime, createScriptedHost, defineDeferredTool, defineWorkflow, drainRuns, resumeRun } from '@locus/runtime'
import { type ExecutionWriter, LeaseLostError, type RunStore, createMemoryRunStore } from '@locus/store'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'

type MemoryStore = ReturnType<typeof createMemoryRunStore>

async function allLines(store: MemoryStore, runId: string): Promise<JournalLine[]> {
  const lines: JournalLine[] = []
  for (const info of await store.listExecutions(runId)) for await (const line of store.readLines({ runId, executionId: info.executionId })) lines.push(line)
  return lines
}

const requests = (lines: readonly JournalLine[]): { executionId: string; reason: string; by: string }[] =>
  lines.flatMap((line) => (line.type === 'run_cancel_requested' ? [{ executionId: line.executionId, reason: line.reason, by: line.by }] : []))

const approval = defineWorkflow({
  name: 'approval',
  tools: { approve: defineDeferredTool({ input: z.object({ n: z.number() }), output: z.object({ ok: z.boolean() }) }) },
  run: async ({ tool }) => ({ ok: true, answer: await tool('approve', { n: 1 }) }),
})

describe('run_cancel_requested', () => {
  it('records who asked through runtime.cancel, once however often it is asked, before run_end', async () => {
    const store = createMemoryRunStore()
    const runtime = createRuntime({ workflows: [approval], store })
    const handle = await runtime.start('approval')
    expect(runtime.cancel(handle.runId, 'not needed any more', 'key-0a1b2c3d')).toBe(true)
    handle.cancel('a second time', 'cli')
    expect((await handle.done).disposition).toBe('cancelled')
    const lines = await allLines(store, handle.runId)
    expect(requests(lines)).toEqual([{ executionId: handle.runId, reason: 'not needed any more', by: 'key-0a1b2c3d' }])
    const types = lines.map((line) => line.type)
    expect(types.indexOf('run_cancel_requested')).toBeLessThan(types.indexOf('run_end'))
  })

  it('says host for a cancel that names nobody', async () => {
    const store = createMemoryRunStore()
    const handle = await createRuntime({ workflows: [approval], store }).start('approval')
    handle.cancel()
    await handle.done
    expect(requests(await allLines(store, handle.runId))).toEqual([{ executionId: handle.runId, reason: 'cancelled by the host', by: 'host' }])
  })

  it('carries who asked through the signal a caller gave a resume (abortAs)', async () => {
    const store = createMemoryRunStore()
    const runtime = createRuntime({ workflows: [approval], store })
    const first = await runtime.start('approval')
    first.suspend('parking it')
    await first.done
    const controller = new AbortController()
    const resumed = await resumeRun(first.runId, approval, {
      store,
      signal: controller.signal,
      onEvent: (line) => {
        if (line.type === 'run_start') abortAs(controller, 'interrupted from the terminal (Ctrl-C)', 'cli')
      },
    })
    expect(resumed.disposition).toBe('cancelled')
    const lines = await allLines(store, first.runId)
    // The suspension of the first execution was no cancel request.
    expect(requests(lines)).toEqual([{ executionId: 'resume-001', reason: 'interrupted from the terminal (Ctrl-C)', by: 'cli' }])
  })

  it('names who drained a working run at shutdown once its grace ran out, and journals nothing for a suspended one', async () => {
    const store = createMemoryRunStore()
    const busy = defineWorkflow({ name: 'busy', run: async ({ agent }) => ({ ok: true, answer: (await agent('hang')).answer }) })
    const runtime = createRuntime({ workflows: [busy, approval], store, host: createScriptedHost({ rules: [{ steps: [{ hang: true }] }] }) })
    const working = await runtime.start('busy')
    const waiting = await runtime.start('approval')
    await new Promise<void>((resolve) => {
      if (waiting.waitingOnly()) resolve()
      else
        waiting.onWaitingChange((now) => {
          if (now) resolve()
        })
    })
    // The grace period ends when the test says: no real timer.
    let graceOver = (): void => undefined
    const drained = drainRuns([working, waiting], {
      graceMs: 1_000,
      reason: 'the server is shutting down',
      by: 'server',
      setTimer: (callback) => {
        graceOver = callback
        return { cancel: () => undefined }
      },
    })
    expect((await waiting.done).suspended).toBe(true)
    graceOver()
    const report = await drained
    expect(report.cancelled).toEqual([working.runId])
    expect(requests(await allLines(store, working.runId))).toEqual([{ executionId: working.runId, reason: 'the server is shutting down', by: 'server' }])
    expect(requests(await allLines(store, waiting.runId))).toEqual([])
  })

  it.each(['cancel', 'suspend'] as const)('a %s after the writer failed (a lost lease) journals nothing and throws nothing out of the abort listener', async (stop) => {
    const inner = createMemoryRunStore()
    let lost = false
    // Every append refused once the lease is gone, as the PostgreSQL writer does.
    const store: RunStore = Object.assign(Object.create(inner) as RunStore, {
      async createExecution(options: Parameters<RunStore['createExecution']>[0]): Promise<ExecutionWriter> {
        const writer = await inner.createExecution(options)
        return Object.assign(Object.create(writer) as ExecutionWriter, {
          append(input: Parameters<ExecutionWriter['append']>[0]) {
            if (lost) throw new LeaseLostError(writer.runId, 1, 2)
            return writer.append(input)
          },
        })
      },
    })
    const uncaught: unknown[] = []
    const onUncaught = (error: unknown): void => {
      uncaught.push(error)
    }
    process.on('uncaughtException', onUncaught)
    try {
      const handle = await createRuntime({ workflows: [approval], store }).start('approval')
      await new Promise<void>((resolve) => {
        if (handle.waitingOnly()) resolve()
        else
          handle.onWaitingChange((now) => {
            if (now) resolve()
          })
      })
      lost = true
      if (stop === 'cancel') handle.cancel('lease lost')
      else handle.suspend('lease lost')
      // The run's ending reports the writer's failure; however it ends, it ends.
      await handle.done.catch(() => undefined)
      await new Promise((resolve) => setImmediate(resolve))
      expect(uncaught).toEqual([])
      expect(requests(await allLines(inner, handle.runId))).toEqual([])
    } finally {
      process.off('uncaughtException', onUncaught)
    }
  })
})
