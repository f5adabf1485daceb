import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { JournalLine } from '@locus/journal'
import { createRuntime, defineDeferredTool, defineWorkflow, rejectedUpdatesOf } from '@locus/runtime'
import { type RunStore, createFileRunStore, createMemoryRunStore } from '@locus/store'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function fileStore(): RunStore {
  const dir = mkdtempSync(join(tmpdir(), 'locus-updates-'))
  dirs.push(dir)
  return createFileRunStore(dir)
}

async function allLines(store: RunStore, runId: string): Promise<JournalLine[]> {
  const lines: JournalLine[] = []
  for (const info of await store.listExecutions(runId)) for await (const line of store.readLines(info)) lines.push(line)
  return lines
}

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

const updateLines = (lines: readonly JournalLine[]): string[] =>
  lines.flatMap((line) => (line.type === 'update_received' || line.type === 'update_completed' || line.type === 'update_failed' ? [`${line.type}:${line.name}`] : []))

/** Handler calls, by update id: a rerun shows as a second entry. */
let calls: string[] = []
/** What the `slow` handler waits for. */
let release: () => void = () => undefined
let released = new Promise<void>((resolve) => {
  release = resolve
})
function resetRelease(): void {
  released = new Promise<void>((resolve) => {
    release = resolve
  })
}

const cart = defineWorkflow({
  name: 'cart',
  signals: { checkout: z.object({}) },
  updates: {
    addItem: {
      input: z.object({ sku: z.string(), qty: z.int().min(1) }),
      output: z.object({ count: z.int() }),
      validate: (input) => ((input as { sku: string }).sku.startsWith('x-') ? `sku ${(input as { sku: string }).sku} is discontinued` : undefined),
    },
    slow: { input: z.null(), output: z.literal('done') },
    broken: { input: z.enum(['throw', 'bad-output']), output: z.string() },
  },
  tools: { gate: defineDeferredTool({ input: z.object({}), output: z.object({ go: z.boolean() }) }) },
  async run({ tool, onUpdate, waitForSignal }) {
    const items: string[] = []
    // The script is busy while the first update arrives: it is journaled and waits for its handler.
    await tool('gate', {})
    onUpdate(
      'addItem',
      (input, { updateId }) => {
        calls.push(updateId)
        items.push((input as { sku: string }).sku)
        return { count: items.length }
      },
      // A completed update is not run again: its recorded input rebuilds the list.
      { restore: (input) => items.push((input as { sku: string }).sku) },
    )
    onUpdate('slow', async (_input, { updateId }) => {
      calls.push(updateId)
      await released
      return 'done'
    })
    onUpdate('broken', (input) => {
      if (input === 'throw') throw new Error('the cart is closed')
      return 42
    })
    await waitForSignal('checkout')
    return { items }
  },
})

async function answerGate(runtime: ReturnType<typeof createRuntime>, runId: string): Promise<void> {
  const pending = await runtime.pendingDeferrals(runId)
  expect((await runtime.answerDeferred(runId, pending[0]?.deferredId ?? '', { kind: 'resolved', result: { go: true } })).ok).toBe(true)
}

describe('updates into a running run', () => {
  it('journals an update sent before its handler exists, runs it once the handler registers, and answers its result', async () => {
    calls = []
    const store = fileStore()
    const runtime = createRuntime({ workflows: [cart], store })
    const run = await runtime.start('cart', { input: {} })
    await lineSeen(run, (line) => line.type === 'deferred_open')
    const first = runtime.update(run.runId, 'addItem', { sku: 'a-1', qty: 2 }, { from: 'ops-key', via: 'api' })
    const received = await lineSeen(run, (line) => line.type === 'update_received')
    expect(received).toMatchObject({ name: 'addItem', input: { sku: 'a-1', qty: 2 }, from: 'ops-key', via: 'api', updateSeq: 0 })
    // Buffered: no handler yet, so nothing ran.
    expect(calls).toEqual([])
    await answerGate(runtime, run.runId)
    const answered = await first
    expect(answered).toMatchObject({ ok: true, status: 'completed', result: { count: 1 } })
    expect(calls).toEqual([(answered as { updateId: string }).updateId])
    expect(await runtime.update(run.runId, 'addItem', { sku: 'b-2', qty: 1 })).toMatchObject({ ok: true, status: 'completed', result: { count: 2 } })
    await runtime.signal(run.runId, 'checkout', {})
    const result = await run.done
    expect(result.result).toEqual({ items: ['a-1', 'b-2'] })
    const lines = await allLines(store, run.runId)
    expect(updateLines(lines)).toEqual(['update_received:addItem', 'update_completed:addItem', 'update_received:addItem', 'update_completed:addItem'])
    expect(lines.find((line) => line.type === 'update_completed')).toMatchObject({ updateId: (answered as { updateId: string }).updateId, output: { count: 1 } })
  })

  it('refuses an undeclared name, an input failing its schema or validate, and a finished run: nothing journaled, rejections audited', async () => {
    const store = createMemoryRunStore()
    const runtime = createRuntime({ workflows: [cart], store })
    const run = await runtime.start('cart', { input: {} })
    await lineSeen(run, (line) => line.type === 'deferred_open')
    expect(await runtime.update(run.runId, 'removeItem', {})).toMatchObject({ ok: false, status: 'unknown', declared: ['addItem', 'slow', 'broken'] })
    const invalid = await runtime.update(run.runId, 'addItem', { sku: 'a-1', qty: 0 }, { from: 'ops-key', via: 'api' })
    expect(invalid).toMatchObject({ ok: false, status: 'invalid' })
    expect((invalid as unknown as { issues: string[] }).issues.join(' ')).toContain('input.qty')
    const rejected = await runtime.update(run.runId, 'addItem', { sku: 'x-9', qty: 1 }, { from: 'cli', via: 'cli' })
    expect(rejected).toMatchObject({ ok: false, status: 'rejected', issues: ['sku x-9 is discontinued'] })
    const audit = await rejectedUpdatesOf(store, run.runId)
    expect(audit.map((record) => [record.name, record.stage, record.from, record.via, record.updateId])).toEqual([
      ['addItem', 'schema', 'ops-key', 'api', (invalid as { updateId: string }).updateId],
      ['addItem', 'validate', 'cli', 'cli', (rejected as { updateId: string }).updateId],
    ])
    expect(audit[1]?.issues).toEqual(['sku x-9 is discontinued'])
    run.cancel('test over')
    await run.done
    expect(updateLines(await allLines(store, run.runId))).toEqual([])
    expect(await runtime.update(run.runId, 'addItem', { sku: 'a-1', qty: 1 })).toMatchObject({ ok: false, status: 'finished' })
    expect([...(await store.readDeferredAnswers(run.runId)).keys()].filter((id) => id.startsWith('update-'))).toEqual([])
  })

  it('answers accepted with the update id when the wait runs out, and journals the result later', async () => {
    calls = []
    resetRelease()
    const store = createMemoryRunStore()
    const runtime = createRuntime({ workflows: [cart], store })
    const run = await runtime.start('cart', { input: {} })
    await lineSeen(run, (line) => line.type === 'deferred_open')
    await answerGate(runtime, run.runId)
    const early = await runtime.update(run.runId, 'slow', null, undefined, { waitMs: 30 })
    expect(early).toMatchObject({ ok: true, status: 'accepted' })
    const updateId = (early as { updateId: string }).updateId
    release()
    const end = await lineSeen(run, (line) => line.type === 'update_completed')
    expect(end).toMatchObject({ updateId, output: 'done' })
    await runtime.signal(run.runId, 'checkout', {})
    await run.done
  })

  it('answers failed when the handler throws or returns what its output schema refuses', async () => {
    const store = createMemoryRunStore()
    const runtime = createRuntime({ workflows: [cart], store })
    const run = await runtime.start('cart', { input: {} })
    await lineSeen(run, (line) => line.type === 'deferred_open')
    await answerGate(runtime, run.runId)
    expect(await runtime.update(run.runId, 'broken', 'throw')).toMatchObject({ ok: false, status: 'failed', error: 'the cart is closed' })
    const bad = await runtime.update(run.runId, 'broken', 'bad-output')
    expect(bad).toMatchObject({ ok: false, status: 'failed' })
    expect((bad as { error: string }).error).toContain('output schema')
    await runtime.signal(run.runId, 'checkout', {})
    expect((await run.done).disposition).toBe('completed')
    expect(updateLines(await allLines(store, run.runId))).toEqual(['update_received:broken', 'update_failed:broken', 'update_received:broken', 'update_failed:broken'])
  })

  it('a cancel does not wait for a handler still running: the run ends cancelled and the sender hears the run ended', async () => {
    resetRelease()
    const store = createMemoryRunStore()
    const runtime = createRuntime({ workflows: [cart], store })
    const run = await runtime.start('cart', { input: {} })
    await lineSeen(run, (line) => line.type === 'deferred_open')
    await answerGate(runtime, run.runId)
    const pending = runtime.update(run.runId, 'slow', null, undefined, { waitMs: 10_000 })
    await lineSeen(run, (line) => line.type === 'update_received')
    run.cancel('operator')
    expect((await run.done).disposition).toBe('cancelled')
    expect(await pending).toMatchObject({ ok: false, status: 'finished' })
    release()
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(updateLines(await allLines(store, run.runId))).toEqual(['update_received:slow'])
  })

  it('a resume runs again an update received and not completed, never a completed one; a replay runs none', async () => {
    calls = []
    resetRelease()
    const store = fileStore()
    const runtime = createRuntime({ workflows: [cart], store })
    const run = await runtime.start('cart', { input: {} })
    await lineSeen(run, (line) => line.type === 'deferred_open')
    await answerGate(runtime, run.runId)
    const done = await runtime.update(run.runId, 'addItem', { sku: 'a-1', qty: 1 })
    expect(done).toMatchObject({ status: 'completed' })
    const completedId = (done as { updateId: string }).updateId
    // A slow one is received and its handler started when the process stops (no update_completed).
    const pending = runtime.update(run.runId, 'slow', null, undefined, { waitMs: 10_000 })
    const received = await lineSeen(run, (line) => line.type === 'update_received' && line.name === 'slow')
    const slowId = (received as { updateId: string }).updateId
    expect(calls).toEqual([completedId, slowId])
    run.suspend('deploy')
    expect((await run.done).suspended).toBe(true)
    resetRelease()
    const resumed = await runtime.resume(run.runId)
    await lineSeen(resumed, (line) => line.type === 'run_start')
    // The completed update is not run again; the slow one is.
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(calls).toEqual([completedId, slowId, slowId])
    release()
    // The sender that waited across the stop gets the resumed execution's answer.
    expect(await pending).toMatchObject({ ok: true, status: 'completed', updateId: slowId, result: 'done' })
    await runtime.signal(run.runId, 'checkout', {})
    const ended = await resumed.done
    expect(ended.disposition).toBe('completed')
    // restore() rebuilt what the completed handler kept in memory.
    expect(ended.result).toEqual({ items: ['a-1'] })
    const lines = await allLines(store, run.runId)
    expect(lines.filter((line) => line.type === 'update_received').map((line) => line.updateSeq)).toEqual([0, 1])
    expect(lines.filter((line) => line.type === 'update_completed').map((line) => line.updateId)).toEqual([completedId, slowId])
    // A replay serves both from the journal: no handler runs.
    const before = calls.length
    const replayed = await runtime.replay(run.runId)
    expect((await replayed.done).result).toEqual({ items: ['a-1'] })
    expect(calls.length).toBe(before)
  })
})
