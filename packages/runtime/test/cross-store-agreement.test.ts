import type { JournalLine } from '@locus/journal'
import { type RunStore, createFileRunStore, createMemoryRunStore } from '@locus/store'
import { replayRun, runWorkflowScript } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { mixedHost, mixedWorkflow } from './fixtures/mixed-workflow.js'
import { tempRunsDir } from './helpers.js'

/** Without the stack traces of errors: where in this process's code an error passed is not a fact of the run. */
function withoutStacks(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutStacks)
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(Object.entries(value).filter(([key]) => key !== 'stack').map(([key, field]) => [key, withoutStacks(field)]))
}

/** What must agree between stores: every field of every line but when it was written, how long it took, and the ids a store names. */
function comparable(line: JournalLine): Record<string, unknown> {
  const { ts: _ts, runId: _runId, executionId: _executionId, durationMs: _durationMs, ...rest } = line as unknown as Record<string, unknown>
  return withoutStacks(rest) as Record<string, unknown>
}

async function linesOf(store: RunStore, runId: string, executionId: string): Promise<Record<string, unknown>[]> {
  const lines: Record<string, unknown>[] = []
  for await (const line of store.readLines({ runId, executionId })) lines.push(comparable(line))
  return lines
}

const clock = { now: () => 1_700_000_000_000, sleep: async () => undefined }

/** Runs the mixed workflow (a tool, a retried agent, a caught provider-error, a spawned child) in a store, then replays it there. */
async function runAndReplay(store: RunStore) {
  const run = await runWorkflowScript(mixedWorkflow, { store, runId: 'agree', input: { topic: 'tides' }, host: mixedHost(), clock })
  const replayed = await replayRun('agree', mixedWorkflow, { store, clock })
  return {
    result: run.result,
    disposition: run.disposition,
    root: await linesOf(store, 'agree', 'agree'),
    child: await linesOf(store, 'agree', 'child-5-a1'),
    replay: await linesOf(store, 'agree', replayed.run.executionId),
    verdict: { ok: replayed.ok, counts: replayed.report.counts, divergence: replayed.divergence },
  }
}

describe('the file and memory stores agree', () => {
  it('on the journals, results and replay verdicts of the same workflow, a caught provider-error included', async () => {
    const onFile = await runAndReplay(createFileRunStore(tempRunsDir()))
    const inMemory = await runAndReplay(createMemoryRunStore())
    expect(onFile.disposition).toBe('completed')
    expect(onFile.verdict).toMatchObject({ ok: true, divergence: null })
    expect(inMemory).toEqual(onFile)
  })
})
