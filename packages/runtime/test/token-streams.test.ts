import { createManualClock } from '@locus/retry'
import { type RunStore, type StreamRecord, createFileRunStore, createMemoryRunStore } from '@locus/store'
import type { JournalLine } from '@locus/journal'
import { createScriptedHost, defineWorkflow, resumeRun, startWorkflowRun } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { settle, tempRunsDir } from './helpers.js'

async function streamOf(store: RunStore, runId: string): Promise<StreamRecord[]> {
  const read = await store.streams?.read(runId, { limit: 10_000 })
  return [...(read?.records ?? [])]
}

const textOf = (records: readonly StreamRecord[]): string => records.map((record) => record.text ?? '').join('')

describe('token streams of agent calls', () => {
  for (const [name, makeStore] of [
    ['file', () => createFileRunStore(tempRunsDir())],
    ['memory', () => createMemoryRunStore()],
  ] as const) {
    it(`marks a timed-out attempt's streamed text discarded and keeps the retry's complete, apart from the journal (${name} store)`, async () => {
      const clock = createManualClock()
      const store = makeStore()
      const host = createScriptedHost({
        clock,
        rules: [{ match: { agent: 'analyst' }, steps: [{ hang: true, partial: 'zebra quagga okapi ' }, { text: 'the final summary of T-1' }] }],
      })
      const handle = await startWorkflowRun(
        async ({ agent }) => {
          const { answer } = await agent('Summarise T-1', { agent: 'analyst', attempts: 2, timeoutMs: 60_000 })
          return { ok: true, answer }
        },
        { host, clock, store, budgets: { maxTotalAgentInvocations: 5 } },
      )
      await settle()
      await clock.advance(60_000)
      const run = await handle.done
      expect(run).toMatchObject({ disposition: 'completed', result: { answer: 'the final summary of T-1' } })
      const records = await streamOf(store, run.runId)
      expect(records.map((record) => record.offset)).toEqual(records.map((_, index) => index))
      const lines: JournalLine[] = []
      for await (const line of store.readLines({ runId: run.runId, executionId: run.runId })) lines.push(line)
      const starts = lines.filter((line) => line.type === 'agent_start')
      const [first, second] = starts.map((line) => line.callId)
      const firstRecords = records.filter((record) => record.callId === first)
      expect(firstRecords.map((record) => record.kind)).toEqual(['delta', 'delta', 'delta', 'discarded'])
      expect(textOf(firstRecords)).toBe('zebra quagga okapi ')
      expect(firstRecords.at(-1)).toMatchObject({ kind: 'discarded', cause: 'call-timeout', attempt: 1, llmAttempt: 1, executionId: run.runId })
      const secondRecords = records.filter((record) => record.callId === second)
      expect(secondRecords.at(-1)).toMatchObject({ kind: 'end', attempt: 2, llmAttempt: 1 })
      // The text that counts is the journal's answer, token for token.
      const agentEnd = lines.find((line) => line.type === 'agent_end' && line.status === 'completed')
      expect(textOf(secondRecords)).toBe(agentEnd?.type === 'agent_end' ? agentEnd.answer : undefined)
      // The journal never holds a token of the discarded text.
      expect(JSON.stringify(lines)).not.toContain('quagga')
      // The run's end starts the stream's retention.
      expect((await store.streams?.read(run.runId))?.endedAt).toBeTypeOf('number')
    })
  }

  it('batches a stream by the injected clock: one write at once, then at most one per 50 ms', async () => {
    const clock = createManualClock()
    const store = createMemoryRunStore()
    const words = Array.from({ length: 40 }, (_, index) => `w${String(index)}`).join(' ')
    const host = createScriptedHost({ clock, rules: [{ steps: [{ hang: true, partial: words }, { text: 'done' }] }] })
    const handle = await startWorkflowRun(async ({ agent }) => ({ ok: true, answer: (await agent('x', { attempts: 2, timeoutMs: 1000 })).answer }), { host, clock, store })
    await settle()
    // Forty deltas arrived at once: one write went out, the rest wait for the clock.
    expect((await streamOf(store, handle.runId)).length).toBeLessThanOrEqual(1)
    await clock.advance(49)
    await settle()
    const before = (await store.listRuns())[0]?.runId ?? ''
    expect(await streamOf(store, before)).toHaveLength(1)
    await clock.advance(1)
    await settle()
    expect(await streamOf(store, before)).toHaveLength(40)
    await clock.advance(1000)
    const run = await handle.done
    const records = await streamOf(store, run.runId)
    expect(records.filter((record) => record.kind === 'discarded')).toHaveLength(1)
    expect(textOf(records.filter((record) => record.attempt === 2))).toBe('done')
  })

  it('a resumed execution discards, as superseded, what an earlier one streamed for a call it runs again and never closed', async () => {
    const store = createMemoryRunStore()
    const host = createScriptedHost({ rules: [{ steps: [{ hang: true, partial: 'half an answer ' }, { text: 'the whole answer' }] }] })
    const talk = defineWorkflow({ name: 'talk', run: async ({ agent }) => ({ ok: true, answer: (await agent('talk')).answer }) })
    const first = await startWorkflowRun(talk, { host, store, runId: 'sup-1' })
    while ((await streamOf(store, 'sup-1')).length < 3) await settle()
    first.cancel('stopped to resume')
    expect((await first.done).disposition).toBe('cancelled')
    const before = await streamOf(store, 'sup-1')
    expect(before.at(-1)).toMatchObject({ kind: 'discarded', cause: 'cancelled', executionId: 'sup-1', callId: 'call-1-a1' })
    // What a process that died mid-request leaves: a request of the same call that streamed and was never closed.
    const dead = { executionId: 'sup-1', callId: 'call-1-a1', attempt: 1, llmAttempt: 2 }
    await store.streams?.append('sup-1', [{ ...dead, kind: 'delta', text: 'lost half ' }])
    const resumed = await resumeRun('sup-1', talk, { host, store })
    expect(resumed).toMatchObject({ disposition: 'completed', result: { answer: 'the whole answer' } })
    const after = (await streamOf(store, 'sup-1')).slice(before.length + 1)
    // The dead request first, closed as superseded; the request closed before is not closed again; then the run-again call's answer.
    expect(after[0]).toMatchObject({ ...dead, kind: 'discarded', cause: 'superseded' })
    expect(after.filter((record) => record.kind === 'discarded')).toHaveLength(1)
    expect(after.slice(1).every((record) => record.executionId === 'resume-001')).toBe(true)
    expect(textOf(after.slice(1))).toBe('the whole answer')
    expect(after.at(-1)).toMatchObject({ kind: 'end' })
  })
})
