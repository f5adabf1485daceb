import { readJournal } from '@locus/journal'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { FIXTURE_LAYOUT, type FixtureCall, loadFromDisk, tempRunsDir, writeRun } from './run-fixture.js'
import { recordingFromLines } from '../src/load-recording.js'

const made: string[] = []
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function call(ordinal: string, attempts: FixtureCall['attempts'] = [{ outcome: 'completed' }]): FixtureCall {
  return { ordinal, request: { agent: 'analyst', prompt: `prompt ${ordinal}`, timeoutMs: 60_000 }, attempts }
}

describe('recordingFromLines: the recording of a run kept in a store, from its lines alone', () => {
  it('records what loadRecording records from the same journal, for every call whose lines hold its result', () => {
    const root = tempRunsDir()
    made.push(root)
    const dir = join(root, 'run-1')
    writeRun(dir, [call('1'), call('2', [{ outcome: 'failed', failureCause: 'call-timeout' }, { outcome: 'completed', answer: 'second try' }]), call('3', [{ outcome: 'failed', failureCause: 'provider-error' }]), call('4', [{ outcome: 'unfinished' }])])
    const lines = readJournal(join(dir, FIXTURE_LAYOUT.journal)).lines
    const fromDisk = loadFromDisk(dir)
    const fromLines = recordingFromLines(lines, 'memory:run-1')
    const recordedFromLines = new Set(fromLines.entries().map((entry) => entry.ordinal))
    // A completed agent_end without its answer is the only thing the lines cannot supply.
    const answerless = new Set(lines.flatMap((line) => (line.type === 'agent_end' && line.status === 'completed' && line.answer === undefined ? [line.ordinal] : [])))
    for (const entry of fromDisk.entries()) {
      if (answerless.has(entry.ordinal)) {
        expect(fromLines.skipped).toContainEqual(expect.objectContaining({ ordinal: entry.ordinal, reason: 'missing-envelope' }))
      } else {
        expect(recordedFromLines.has(entry.ordinal)).toBe(true)
        expect(fromLines.get(entry.ordinal)?.key).toBe(entry.key)
      }
    }
    expect(fromLines.has('4')).toBe(false)
    expect(fromLines.skipped).toContainEqual(expect.objectContaining({ ordinal: '4', reason: 'unfinished' }))
    expect(fromLines).toMatchObject({ executionDir: 'memory:run-1', tornTail: false, invalidLines: 0 })
    expect(fromLines.size).toBeGreaterThan(0)
  })
})
