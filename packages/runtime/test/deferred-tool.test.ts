import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { readJournal } from '@locus/journal'
import { type JournalLine } from '@locus/journal'
import { createRuntime, defineDeferredTool, defineWorkflow, keepDeferredAnswer, resumeRun, startWorkflowRun } from '@locus/runtime'
import { type RunStore, createFileRunStore, createMemoryRunStore } from '@locus/store'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { approvalWorkflow } from './fixtures/approval-workflow.js'
import { linesOfType, readRun, tempRunsDir } from './helpers.js'

/** Resolves with the first deferral id a run opens. */
function opened(lines: JournalLine[]): Promise<string> {
  return new Promise((resolve) => {
    const check = setInterval(() => {
      const open = lines.find((line) => line.type === 'deferred_open')
      if (open?.type === 'deferred_open') {
        clearInterval(check)
        resolve(open.deferredId)
      }
    }, 2)
  })
}

async function approvalRun(runsDir: string, extra: Record<string, unknown> = {}) {
  const lines: JournalLine[] = []
  const chargeLog = join(runsDir, 'charges.log')
  const handle = await startWorkflowRun(approvalWorkflow(chargeLog), { runsDir, onEvent: (line) => lines.push(line), ...extra })
  return { handle, lines, chargeLog }
}

describe('a deferred tool', () => {
  it('opens its deferral in the journal before anyone can answer, waits, and completes with the answer', async () => {
    const { handle, lines } = await approvalRun(tempRunsDir())
    const id = await opened(lines)
    expect(handle.pendingDeferrals()).toEqual([id])
    expect(handle.resolveDeferred(id, { approved: true, by: 'ana' })).toEqual({ ok: true, status: 'accepted' })
    const run = await handle.done
    expect(run.result).toMatchObject({ ok: true, approval: { approved: true, by: 'ana' } })
    const journal = readRun(run).lines
    const types = journal.map((line) => line.type)
    expect(types.indexOf('deferred_open')).toBeLessThan(types.indexOf('deferred_settled'))
    expect(linesOfType(journal, 'deferred_settled')[0]).toMatchObject({ deferredId: id, outcome: 'resolved', result: { approved: true, by: 'ana' } })
    expect(linesOfType(journal, 'tool_end').at(-1)).toMatchObject({ tool: 'approve', status: 'completed', result: { approved: true, by: 'ana' } })
  })

  it('keeps the deferral open on a result that breaks the output schema; a second answer must be the same', async () => {
    const { handle, lines } = await approvalRun(tempRunsDir())
    const id = await opened(lines)
    const invalid = handle.resolveDeferred(id, { approved: 'yes' })
    expect(invalid).toMatchObject({ ok: false, status: 'invalid', issues: expect.arrayContaining([expect.stringContaining('approved')]) })
    expect(handle.pendingDeferrals()).toEqual([id])
    expect(handle.resolveDeferred(id, { approved: false, by: 'bo' })).toMatchObject({ ok: true, status: 'accepted' })
    expect(handle.resolveDeferred(id, { approved: false, by: 'bo' })).toMatchObject({ ok: true, status: 'already-answered' })
    expect(handle.resolveDeferred(id, { approved: true, by: 'bo' })).toMatchObject({ ok: false, status: 'conflict' })
    expect((await handle.done).disposition).toBe('failed')
  })

  it('rejects as the seed’s tool.error: terminal unless retryable, which opens the next attempt under a new id', async () => {
    const flow = defineWorkflow({
      name: 'retry-approval',
      tools: { approve: defineDeferredTool({ input: z.object({}), retry: { timeout_secs: null, max_retries: 2, backoff_base_secs: 0, backoff_max_secs: 0 } }) },
      run: async ({ tool }) => ({ ok: true, answer: await tool('approve', {}) }),
    })
    const lines: JournalLine[] = []
    const handle = await startWorkflowRun(flow, { runsDir: tempRunsDir(), onEvent: (line) => lines.push(line) })
    const first = await opened(lines)
    handle.rejectDeferred(first, { error: 'reviewer away', retryable: true, code: 'provider_error' })
    await new Promise((resolve) => setTimeout(resolve, 20))
    const second = handle.pendingDeferrals()[0]
    expect(second).toBeDefined()
    expect(second).not.toBe(first)
    handle.rejectDeferred(second ?? '', { error: 'no', code: 'refused' })
    const run = await handle.done
    expect(run.disposition).toBe('failed')
    expect(linesOfType(readRun(run).lines, 'deferred_settled').map((line) => line.outcome)).toEqual(['rejected', 'rejected'])
  })

  it('closes an open deferral as cancelled when the run is cancelled', async () => {
    const { handle, lines } = await approvalRun(tempRunsDir())
    await opened(lines)
    handle.cancel('closing time')
    const run = await handle.done
    expect(run.disposition).toBe('cancelled')
    expect(linesOfType(readRun(run).lines, 'deferred_settled')).toMatchObject([{ outcome: 'cancelled' }])
  })

  it('survives kill -9: an answer given while no process holds the run is picked up by resume, nothing opens twice and the charge runs once', async () => {
    const runsDir = tempRunsDir()
    const chargeLog = join(runsDir, 'charges.log')
    const waiter = spawn(process.execPath, ['--conditions=@locus/source', '--import', 'tsx', fileURLToPath(new URL('./fixtures/approval-waiter.ts', import.meta.url)), runsDir, chargeLog], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
    })
    let output = ''
    waiter.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    const runId = await new Promise<string>((resolve) => {
      const check = setInterval(() => {
        const match = /"runId":"([^"]+)"/.exec(output)
        if (match === null) return
        try {
          const journal = readJournal(join(runsDir, match[1] ?? '', 'journal.jsonl'))
          if (journal.lines.some((line) => line.type === 'deferred_open')) {
            clearInterval(check)
            resolve(match[1] ?? '')
          }
        } catch {
          // not written yet
        }
      }, 20)
    })
    waiter.kill('SIGKILL')
    await new Promise((resolve) => waiter.once('exit', resolve))
    const open = linesOfType(readJournal(join(runsDir, runId, 'journal.jsonl')).lines, 'deferred_open')
    expect(open).toHaveLength(1)
    const id = open[0]?.deferredId ?? ''
    expect(await keepDeferredAnswer(createFileRunStore(runsDir), runId, id, { kind: 'resolved', result: { approved: true, by: 'ops' } })).toMatchObject({ ok: true, status: 'stored' })
    const resumed = await resumeRun(runId, approvalWorkflow(chargeLog), { runsDir })
    expect(resumed.result).toMatchObject({ ok: true, approval: { approved: true, by: 'ops' } })
    const resumedLines = readJournal(join(resumed.executionDir, 'journal.jsonl')).lines
    expect(linesOfType(resumedLines, 'deferred_open')).toHaveLength(0)
    expect(linesOfType(resumedLines, 'deferred_settled')).toMatchObject([{ deferredId: id, outcome: 'resolved' }])
    expect(readFileSync(chargeLog, 'utf8')).toBe('42\n')
  }, 30_000)
})

describe('answers kept by the store', () => {
  /** A memory store that counts its looks for answers and reports each look's ids. */
  function watchedStore() {
    const store = createMemoryRunStore()
    const looks: string[][] = []
    let onLook: (() => void) | undefined
    const watched: RunStore = Object.assign(Object.create(store) as RunStore, {
      async readDeferredAnswers(runId: string, ids?: Iterable<string>) {
        const asked = ids === undefined ? [] : [...ids]
        looks.push(asked)
        const answers = await store.readDeferredAnswers(runId, asked)
        onLook?.()
        return answers
      },
    })
    const nextLook = (): Promise<void> =>
      new Promise((resolve) => {
        onLook = resolve
      })
    return { store: watched, looks, nextLook }
  }

  const fanOut = defineWorkflow({
    name: 'fan-out-approvals',
    input: z.object({ count: z.number() }),
    tools: { approve: defineDeferredTool({ input: z.object({ index: z.number() }), output: z.object({ approved: z.boolean() }) }) },
    run: async ({ input, tool }) => ({ ok: true, approved: (await Promise.all(Array.from({ length: input.count }, (_, index) => tool('approve', { index })))).length }),
  })

  it('looks once for all open deferrals of a run, and stops looking once none is open', async () => {
    const { store, looks, nextLook } = watchedStore()
    const runtime = createRuntime({ store, workflows: [fanOut] })
    const first = nextLook()
    const handle = await runtime.start(fanOut, { input: { count: 40 } })
    await first
    // One look asked for every open deferral at once, not one look (or one timer) per deferral.
    expect(looks[0]).toHaveLength(40)
    expect(looks).toHaveLength(1)
    for (const id of handle.runId === '' ? [] : (await runtime.pendingDeferrals(handle.runId)).map((pending) => pending.deferredId)) {
      expect(handle.answerDeferred(id, { kind: 'resolved', result: { approved: true } })).toEqual({ ok: true, status: 'accepted' })
    }
    expect((await handle.done).disposition).toBe('completed')
    const after = looks.length
    await new Promise((resolve) => setTimeout(resolve, 600))
    expect(looks.length).toBe(after)
  })

  it('refuses a kept answer that fails the output schema: it withdraws it, says so in the journal, and a right answer kept later settles the deferral', async () => {
    const { store, nextLook } = watchedStore()
    const runtime = createRuntime({ store, workflows: [fanOut] })
    const handle = await runtime.start(fanOut, { input: { count: 1 } })
    const [pending] = await runtime.pendingDeferrals(handle.runId)
    const id = pending?.deferredId ?? ''
    expect(id).not.toBe('')
    // Kept without the tool's schema at hand (as a shell without the workflow keeps it): the run checks it when it reads it.
    expect(await keepDeferredAnswer(store, handle.runId, id, { kind: 'resolved', result: { approved: 'yes' } })).toEqual({ ok: true, status: 'stored' })
    const withdrawn = nextLook()
    await withdrawn
    await nextLook()
    expect(await store.readDeferredAnswers(handle.runId)).toEqual(new Map())
    expect(await runtime.pendingDeferrals(handle.runId)).toMatchObject([{ deferredId: id }])
    expect(await keepDeferredAnswer(store, handle.runId, id, { kind: 'resolved', result: { approved: true } })).toEqual({ ok: true, status: 'stored' })
    const result = await handle.done
    expect(result.disposition).toBe('completed')
    const lines: JournalLine[] = []
    for await (const line of store.readLines({ runId: handle.runId, executionId: handle.executionId })) lines.push(line)
    expect(linesOfType(lines, 'log').filter((line) => line.level === 'warn')).toMatchObject([{ data: { deferredId: id, problems: [expect.stringMatching(/approved/)] } }])
    expect(linesOfType(lines, 'deferred_settled')).toMatchObject([{ deferredId: id, outcome: 'resolved', result: { approved: true } }])
  })

  it('keeps the first answer of a run no process executes, recognises a repeat and refuses a different one', async () => {
    const store = createMemoryRunStore()
    const runtime = createRuntime({ store, workflows: [fanOut] })
    const handle = await runtime.start(fanOut, { input: { count: 1 } })
    const [pending] = await runtime.pendingDeferrals(handle.runId)
    handle.cancel('stop here')
    await handle.done
    // Cancelling settled the deferral, so there is nothing left to answer.
    expect(await runtime.answerDeferred(handle.runId, pending?.deferredId ?? '', { kind: 'resolved', result: { approved: true } })).toMatchObject({ ok: false, status: 'conflict' })
    expect(await runtime.answerDeferred(handle.runId, 'tool-9-a1', { kind: 'resolved', result: { approved: true } })).toMatchObject({ ok: false, status: 'unknown' })
    await expect(keepDeferredAnswer(store, handle.runId, '../x', { kind: 'resolved', result: null })).rejects.toThrow(/Invalid deferral id/)
  })
})

describe('answers from a runtime that does not execute the run', () => {
  it('checks a result against the tool of the run’s workflow before keeping it, and the executing runtime picks a kept one up', async () => {
    const store = createMemoryRunStore()
    const workflow = defineWorkflow({
      name: 'one-approval',
      tools: { approve: defineDeferredTool({ input: z.object({ amount: z.number() }), output: z.object({ approved: z.boolean() }) }) },
      run: async ({ tool }) => ({ ok: true, approval: await tool('approve', { amount: 3 }) }),
    })
    const executing = createRuntime({ store, workflows: [workflow] })
    // Another process (a server that only serves, a shell): same store, same workflows, nothing running.
    const answering = createRuntime({ store, workflows: [workflow] })
    const handle = await executing.start(workflow)
    const [pending] = await answering.pendingDeferrals(handle.runId)
    const id = pending?.deferredId ?? ''
    const invalid = await answering.answerDeferred(handle.runId, id, { kind: 'resolved', result: { approved: 'yes' } })
    expect(invalid).toMatchObject({ ok: false, status: 'invalid', issues: [expect.stringMatching(/approved/)] })
    // Nothing was kept, so the right answer is still free to be given.
    expect(await store.readDeferredAnswers(handle.runId)).toEqual(new Map())
    expect(await answering.answerDeferred(handle.runId, id, { kind: 'resolved', result: { approved: true } })).toEqual({ ok: true, status: 'stored' })
    expect(await handle.done).toMatchObject({ disposition: 'completed', result: { ok: true, approval: { approved: true } } })
  })
})
