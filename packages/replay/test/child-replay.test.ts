import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type JournalLineInput, parseJournalLine } from '@locus/journal'
import fc from 'fast-check'
import { afterEach, describe, expect, it } from 'vitest'
import { childRequestKey } from '../src/child-request.js'
import { loadFromDisk } from './run-fixture.js'
import { createRecording } from '../src/recording.js'
import { createReplaySession } from '../src/replay-session.js'
import { toolRequestKey } from '../src/tool-request.js'

const made: string[] = []
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function writeJournal(inputs: readonly JournalLineInput[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'locus-child-replay-'))
  made.push(dir)
  mkdirSync(dir, { recursive: true })
  const lines = inputs.map((input, seq) => JSON.stringify(parseJournalLine({ v: 1, seq, ts: '2026-12-03T10:00:00.000Z', runId: 'run-1', executionId: 'run-1', ...input })))
  writeFileSync(join(dir, 'journal.jsonl'), lines.join('\n') + '\n')
  return dir
}

const request = { workflow: 'enrich', input: { id: 'T-1' } }
const key = childRequestKey(request)
const ids = { childCallId: 'child-1', workflow: 'enrich', maxAttempts: 1, ordinal: '1' }

describe('child workflow spawns in a recording', () => {
  it('records a completed spawn from its child_end and replays it while its key matches', () => {
    const dir = writeJournal([
      { type: 'child_start', ...ids, attempt: 1, childExecutionId: 'child-1-a1', requestKey: key, input: request.input },
      { type: 'child_end', ...ids, attempt: 1, childExecutionId: 'child-1-a1', status: 'completed', disposition: 'completed', result: { ok: true, n: 3 }, durationMs: 4 },
    ])
    const recording = loadFromDisk(dir)
    expect(recording.skipped).toEqual([])
    const session = createReplaySession(recording)
    const decision = session.next({ kind: 'child', ordinal: '1', request })
    expect(decision).toMatchObject({ mode: 'replay', record: { status: 'completed', result: { ok: true, n: 3 }, childExecutionId: 'child-1-a1' } })
  })

  it('leaves a child still running when the parent stopped out of the recording, so it is spawned again', () => {
    const dir = writeJournal([{ type: 'child_start', ...ids, attempt: 1, childExecutionId: 'child-1-a1', requestKey: key, input: request.input }])
    const recording = loadFromDisk(dir)
    expect(recording.size).toBe(0)
    expect(recording.skipped).toMatchObject([{ ordinal: '1', logicalCallId: 'child-1', reason: 'unfinished' }])
    expect(createReplaySession(recording).next({ kind: 'child', ordinal: '1', request })).toMatchObject({ mode: 'live', reason: 'not-recorded' })
  })

  it('names the differing field when a spawn asks for other input, and kind when a tool stands in its place', () => {
    const record = { callId: 'child-1', workflow: 'enrich', status: 'completed' as const, attempt: 1, maxAttempts: 1, childExecutionId: 'child-1-a1', result: null }
    fc.assert(
      fc.property(fc.jsonValue().filter((input) => JSON.stringify(input) !== JSON.stringify(request.input)), (input) => {
        const recording = createRecording([{ kind: 'child', ordinal: '1', key, record, request }])
        const changed = { workflow: 'enrich', input: JSON.parse(JSON.stringify(input)) as never }
        const session = createReplaySession(recording)
        const decision = session.next({ kind: 'child', ordinal: '1', request: changed })
        expect(decision.mode).toBe('live')
        expect(session.divergence?.fields).toEqual(['input'])
      }),
      { numRuns: 50 },
    )
    const asTool = createReplaySession(createRecording([{ kind: 'child', ordinal: '1', key, record, request }]))
    asTool.next({ kind: 'tool', ordinal: '1', request: { tool: 'enrich', args: request.input } })
    expect(asTool.divergence).toMatchObject({ fields: ['kind'], expectedKey: key, actualKey: toolRequestKey({ tool: 'enrich', args: request.input }) })
  })
})
