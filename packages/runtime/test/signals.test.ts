import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { JournalLine } from '@locus/journal'
import { createRuntime, defineDeferredTool, defineWorkflow } from '@locus/runtime'
import { type RunStore, createFileRunStore } from '@locus/store'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function fileStore(): RunStore {
  const dir = mkdtempSync(join(tmpdir(), 'locus-signals-'))
  dirs.push(dir)
  return createFileRunStore(dir)
}

async function allLines(store: RunStore, runId: string): Promise<JournalLine[]> {
  const lines: JournalLine[] = []
  for (const info of await store.listExecutions(runId)) for await (const line of store.readLines(info)) lines.push(line)
  return lines
}

/** Resolves once the run's journal holds a line that `match` accepts. */
async function lineSeen(handle: { subscribe(listener: (line: JournalLine) => void): () => void }, match: (line: JournalLine) => boolean): Promise<JournalLine> {
  return new Promise((resolve) => {
    const stop = handle.subscribe((line) => {
      if (!match(line)) return
      queueMicrotask(() => {
        stop()
      })
      resolve(line)
    })
  })
}

const approvalFlow = defineWorkflow({
  name: 'approval-flow',
  signals: { approve: z.object({ by: z.string() }), note: z.string() },
  queries: {
    approvals: (view) => view.signals().filter((line) => line.name === 'approve').length,
    status: (view) => view.runEnd?.disposition ?? 'running',
  },
  tools: { gate: defineDeferredTool({ input: z.object({}), output: z.object({ go: z.boolean() }) }) },
  async run({ tool, waitForSignal, onSignal }) {
    const notes: unknown[] = []
    onSignal('note', (payload) => {
      notes.push(payload)
    })
    // The script is busy elsewhere while the first signal arrives: it must be kept, not lost.
    await tool('gate', {})
    const first = await waitForSignal('approve')
    const second = await waitForSignal('approve', { timeout: 50 })
    return { first, second, notes }
  },
})

describe('signals into a running run', () => {
  it('journals a signal sent before its wait exists and delivers it once; the next wait times out', async () => {
    const store = fileStore()
    const runtime = createRuntime({ workflows: [approvalFlow], store })
    const run = await runtime.start('approval-flow', { input: {} })
    await lineSeen(run, (line) => line.type === 'deferred_open')
    const sent = await runtime.signal(run.runId, 'approve', { by: 'ana' }, { from: 'ops-key', via: 'api' })
    expect(sent).toEqual({ ok: true, status: 'stored', signalSeq: 0 })
    await runtime.signal(run.runId, 'note', 'first note', { from: 'cli', via: 'cli' })
    const received = await lineSeen(run, (line) => line.type === 'signal_received' && line.name === 'approve')
    expect(received).toMatchObject({ payload: { by: 'ana' }, from: 'ops-key', via: 'api', signalSeq: 0 })
    const pending = await runtime.pendingDeferrals(run.runId)
    expect((await runtime.answerDeferred(run.runId, pending[0]?.deferredId ?? '', { kind: 'resolved', result: { go: true } })).ok).toBe(true)
    const result = await run.done
    expect(result.disposition).toBe('completed')
    expect(result.result).toEqual({ first: { by: 'ana' }, second: { timedOut: true }, notes: ['first note'] })
    const lines = await allLines(store, run.runId)
    const kinds = lines.filter((line) => line.type.startsWith('signal_')).map((line) => (line.type === 'signal_received' ? `${line.type}:${line.name}` : line.type))
    // Received before any wait took it; the first wait found it buffered, the second started and timed out.
    expect(kinds.indexOf('signal_received:approve')).toBeLessThan(kinds.indexOf('signal_wait_end'))
    expect(lines.flatMap((line) => (line.type === 'signal_wait_end' ? [[line.signalSeq, line.timedOut]] : []))).toEqual([
      [0, undefined],
      [undefined, true],
    ])
  })

  it('keeps a signal the run journaled before it stopped, and a resumed run delivers it once', async () => {
    const store = fileStore()
    const runtime = createRuntime({ workflows: [approvalFlow], store })
    const run = await runtime.start('approval-flow', { input: {} })
    await lineSeen(run, (line) => line.type === 'deferred_open')
    await runtime.signal(run.runId, 'approve', { by: 'ana' }, { from: 'ops-key', via: 'api' })
    await lineSeen(run, (line) => line.type === 'signal_received')
    // The process stops between the signal and the wait (no run_end), as after a kill.
    run.suspend('deploy')
    expect((await run.done).suspended).toBe(true)
    // One more sent while no process holds the run: kept in the mailbox only.
    await runtime.signal(run.runId, 'approve', { by: 'bo' }, { from: 'cli', via: 'cli' })
    const resumed = await runtime.resume(run.runId)
    await lineSeen(resumed, (line) => line.type === 'deferred_open' || line.type === 'signal_received')
    const pending = await runtime.pendingDeferrals(run.runId)
    await runtime.answerDeferred(run.runId, pending[0]?.deferredId ?? '', { kind: 'resolved', result: { go: true } })
    const result = await resumed.done
    expect(result.result).toEqual({ first: { by: 'ana' }, second: { by: 'bo' }, notes: [] })
    // Each signal journaled once, whatever the executions.
    expect((await allLines(store, run.runId)).flatMap((line) => (line.type === 'signal_received' ? [line.signalSeq] : []))).toEqual([0, 1])
  })

  it('refuses an undeclared name, a bad payload and a finished run, writing nothing', async () => {
    const store = fileStore()
    const runtime = createRuntime({ workflows: [approvalFlow], store })
    const run = await runtime.start('approval-flow', { input: {} })
    await lineSeen(run, (line) => line.type === 'deferred_open')
    const unknown = await runtime.signal(run.runId, 'approved', {})
    expect(unknown).toMatchObject({ ok: false, status: 'unknown', declared: ['approve', 'note'] })
    const invalid = await runtime.signal(run.runId, 'approve', { by: 7 })
    expect(invalid.ok).toBe(false)
    expect(invalid).toMatchObject({ status: 'invalid' })
    expect((invalid as unknown as { issues: string[] }).issues.join(' ')).toContain('payload.by')
    expect([...(await store.readDeferredAnswers(run.runId)).keys()]).toEqual([])
    run.cancel('test over')
    await run.done
    const finished = await runtime.signal(run.runId, 'approve', { by: 'ana' })
    expect(finished).toMatchObject({ ok: false, status: 'finished' })
    expect([...(await store.readDeferredAnswers(run.runId)).keys()]).toEqual([])
  })
})

describe('a signal from the runtime that executes the run', () => {
  it('is read at once, not at the run\'s next look at its mailbox', async () => {
    // The mailbox's periodic look never fires here: only a look the sender asks for can deliver the signal.
    vi.useFakeTimers({ toFake: ['setInterval'] })
    try {
      const waiter = defineWorkflow({ name: 'waiter', signals: { go: z.number() }, run: async ({ waitForSignal }) => ({ got: await waitForSignal('go') }) })
      const runtime = createRuntime({ workflows: [waiter], store: fileStore() })
      const handle = await runtime.start('waiter')
      await lineSeen(handle, (line) => line.type === 'signal_wait_start')
      expect(await runtime.signal(handle.runId, 'go', 5)).toMatchObject({ ok: true, status: 'stored' })
      expect((await handle.done).result).toEqual({ got: 5 })
    } finally {
      vi.useRealTimers()
    }
  })
})

describe('queries', () => {
  it('answers from the store alone, for a run no process holds', async () => {
    const store = fileStore()
    const first = createRuntime({ workflows: [approvalFlow], store })
    const run = await first.start('approval-flow', { input: {} })
    await lineSeen(run, (line) => line.type === 'deferred_open')
    await first.signal(run.runId, 'approve', { by: 'ana' })
    await lineSeen(run, (line) => line.type === 'signal_received')
    run.suspend('deploy')
    await run.done
    // Another runtime, another "process": nothing holds the run, only the store has it.
    const reader = createRuntime({ workflows: [approvalFlow], store })
    expect(reader.live(run.runId)).toBeUndefined()
    expect(await reader.query(run.runId, 'approvals')).toEqual({ ok: true, result: 1 })
    expect(await reader.query(run.runId, 'status')).toEqual({ ok: true, result: 'running' })
    expect(await reader.query(run.runId, 'nope')).toMatchObject({ ok: false, status: 'unknown', declared: ['approvals', 'status'] })
  })
})
