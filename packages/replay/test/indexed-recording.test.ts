import { readJournal } from '@locus/journal'
import fc from 'fast-check'
import { appendFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { agentCall } from './envelope-for.js'
import { FIXTURE_LAYOUT, type FixtureAttempt, type FixtureCall, loadFromDisk, logicalCallIdOf, tempRunsDir, writeRun } from './run-fixture.js'
import { createRecordingBuilder } from '../src/load-recording.js'
import { type Recording, mergeRecordings } from '../src/recording.js'
import { createReplaySession } from '../src/replay-session.js'
import { requestKey } from '../src/request-key.js'

const made: string[] = []
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function runDir(): string {
  const root = tempRunsDir()
  made.push(root)
  return join(root, 'run-1')
}

const attemptArbitrary: fc.Arbitrary<FixtureAttempt> = fc.record({
  outcome: fc.constantFrom('completed', 'failed', 'threw', 'unfinished'),
  writeEnvelope: fc.boolean(),
})

/** What the recording of a fixture run must hold, from the loader's documented rules alone. */
function expectedOf(calls: readonly FixtureCall[], options: { answersInJournal: boolean; envelopeFiles: boolean }) {
  const recorded = new Map<string, { key: string; status: 'completed' | 'failed'; answer?: string; attempt: number }>()
  const skipped: [string, string][] = []
  for (const call of calls) {
    const final = call.attempts.at(-1) as FixtureAttempt
    const attempt = call.attempts.length
    if (final.outcome === 'unfinished') {
      skipped.push([call.ordinal, 'unfinished'])
      continue
    }
    // The answer is on the agent_end line only for a completed attempt written with answers; otherwise it is in the envelope file.
    const onLine = final.outcome === 'completed' ? options.answersInJournal : final.outcome === 'failed'
    if (!onLine && (final.writeEnvelope === false || !options.envelopeFiles)) {
      skipped.push([call.ordinal, 'missing-envelope'])
      continue
    }
    if (call.journalKey === false) {
      skipped.push([call.ordinal, 'no-request-key'])
      continue
    }
    const status = final.outcome === 'completed' ? 'completed' : 'failed'
    recorded.set(call.ordinal, { key: requestKey(call.request), status, attempt, ...(status === 'completed' ? { answer: `answer to ${call.request.prompt}` } : {}) })
  }
  return { recorded, skipped }
}

describe('a recording read from a journal', () => {
  it('holds exactly the calls the rules say, each read back with its final attempt, whatever the mix of outcomes', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ attempts: fc.array(attemptArbitrary, { minLength: 1, maxLength: 3 }), journalKey: fc.boolean(), prompt: fc.string({ maxLength: 40 }) }), { maxLength: 8 }),
        fc.boolean(),
        fc.boolean(),
        (drawn, answersInJournal, envelopeFiles) => {
          const dir = runDir()
          const calls: FixtureCall[] = drawn.map((call, index) => ({ ordinal: String(index + 1), request: { agent: 'analyst', prompt: call.prompt }, attempts: call.attempts, journalKey: call.journalKey }))
          writeRun(dir, calls, { answersInJournal, envelopeFiles })
          const recording = loadFromDisk(dir)
          const expected = expectedOf(calls, { answersInJournal, envelopeFiles })
          expect(recording.skipped.map((call) => [call.ordinal, call.reason])).toEqual(expected.skipped)
          expect(recording.keys?.().map((call) => [call.ordinal, call.key])).toEqual([...expected.recorded].map(([ordinal, call]) => [ordinal, call.key]))
          for (const [ordinal, want] of expected.recorded) {
            const got = agentCall(recording.get(ordinal))
            expect(got?.key).toBe(want.key)
            expect(got?.envelope).toMatchObject({ status: want.status, attempt: want.attempt, callId: `${logicalCallIdOf(ordinal)}-a${want.attempt}` })
            if (want.answer !== undefined) expect(got?.envelope).toMatchObject({ answer: want.answer })
          }
          expect(recording.entries().map((call) => call.ordinal)).toEqual([...expected.recorded.keys()])
          recording.close?.()
          rmSync(dir, { recursive: true, force: true })
        },
      ),
      { numRuns: 120 },
    )
  })

  it('reads an answer from the journal when it is asked for, not when the journal is loaded', () => {
    const dir = runDir()
    writeRun(dir, [{ ordinal: '1', request: { agent: 'analyst', prompt: 'p' }, attempts: [{ outcome: 'completed', answer: 'first words' }] }], { answersInJournal: true, envelopeFiles: false })
    const recording = loadFromDisk(dir)
    // Rewrite the answer in place, same length: a recording that kept the answer would still say "first words".
    const path = join(dir, FIXTURE_LAYOUT.journal)
    writeFileSync(path, readFileSync(path, 'utf8').replace('first words', 'other words'))
    recording.close?.()
    expect(agentCall(recording.get('1'))?.envelope).toMatchObject({ answer: 'other words' })
    // Appends do no harm: journals only grow.
    appendFileSync(path, `${JSON.stringify({ v: 1, seq: 99, ts: '2026-09-22T16:21:00.000Z', type: 'log', message: 'later' })}\n`)
    expect(agentCall(recording.get('1'))?.envelope).toMatchObject({ answer: 'other words' })
  })

  it('says clearly when the bytes it indexed are gone', () => {
    const dir = runDir()
    writeRun(dir, [{ ordinal: '1', request: { agent: 'analyst', prompt: 'p' }, attempts: [{ outcome: 'completed' }] }], { answersInJournal: true })
    const recording = loadFromDisk(dir)
    writeFileSync(join(dir, FIXTURE_LAYOUT.journal), '')
    recording.close?.()
    expect(() => recording.get('1')).toThrow(/journal/)
  })

  it('merged with a later execution, answers each ordinal from the execution that recorded it last', () => {
    const root = runDir()
    const resumed = join(root, FIXTURE_LAYOUT.executions, 'resume-001')
    const request = (ordinal: string) => ({ agent: 'analyst', prompt: `prompt ${ordinal}` })
    writeRun(root, [{ ordinal: '1', request: request('1'), attempts: [{ outcome: 'completed', answer: 'root one' }] }, { ordinal: '2', request: request('2'), attempts: [{ outcome: 'failed' }] }], { answersInJournal: true })
    writeRun(resumed, [{ ordinal: '2', request: request('2'), attempts: [{ outcome: 'completed', answer: 'resumed two' }] }], { answersInJournal: true, runId: 'resume-001' })
    const merged = mergeRecordings([loadFromDisk(root), loadFromDisk(resumed)])
    expect(merged.size).toBe(2)
    expect(agentCall(merged.get('1'))?.envelope).toMatchObject({ answer: 'root one' })
    expect(agentCall(merged.get('2'))?.envelope).toMatchObject({ answer: 'resumed two', status: 'completed' })
    expect(merged.keys?.().map((call) => call.ordinal)).toEqual(['1', '2'])
    merged.close?.()
  })

  it('keeps a request key that is not a sha256 digest as it is', () => {
    const dir = runDir()
    writeRun(dir, [{ ordinal: '1', request: { agent: 'analyst', prompt: 'p' }, attempts: [{ outcome: 'completed' }] }], { answersInJournal: true })
    const path = join(dir, FIXTURE_LAYOUT.journal)
    const key = requestKey({ agent: 'analyst', prompt: 'p' })
    writeFileSync(path, readFileSync(path, 'utf8').replace(key, 'custom:key-1'))
    expect(loadFromDisk(dir).get('1')?.key).toBe('custom:key-1')
  })

  it('a retry that changed the request key is recorded with the final key; a tool call keeps its first', () => {
    const builder = createRecordingBuilder('memory:run-1')
    const dir = runDir()
    writeRun(dir, [{ ordinal: '1', request: { agent: 'analyst', prompt: 'p' }, attempts: [{ outcome: 'failed' }, { outcome: 'completed' }] }], { answersInJournal: true })
    let seen = 0
    for (const line of readJournal(join(dir, FIXTURE_LAYOUT.journal)).lines) {
      const changed = line.type === 'agent_start' && line.attempt === 2 ? { ...line, requestKey: 'sha256:' + 'ab'.repeat(32) } : line
      builder.add(changed)
      seen += 1
    }
    expect(seen).toBeGreaterThan(0)
    expect(builder.finish().get('1')?.key).toBe('sha256:' + 'ab'.repeat(32))
  })
})

describe('a replay report over an indexed recording', () => {
  it('walks the keys and never reads the answers of calls it does not replay', () => {
    const dir = runDir()
    writeRun(dir, ['1', '2', '3'].map((ordinal) => ({ ordinal, request: { agent: 'analyst', prompt: `p${ordinal}` }, attempts: [{ outcome: 'completed' as const }] })), { answersInJournal: true })
    const loaded = loadFromDisk(dir)
    let reads = 0
    const counting: Recording = {
      get: (ordinal) => {
        reads += 1
        return loaded.get(ordinal)
      },
      has: (ordinal) => loaded.has(ordinal),
      size: loaded.size,
      entries: () => {
        throw new Error('report() must not read every answer back')
      },
      keys: () => loaded.keys?.() ?? [],
    }
    const session = createReplaySession(counting)
    expect(session.next({ ordinal: '1', request: { agent: 'analyst', prompt: 'p1' } }).mode).toBe('replay')
    const report = session.report()
    expect(reads).toBe(1)
    expect(report.counts).toMatchObject({ matched: 1, missing: 2, replayed: 1 })
    expect(report.calls[0]).toMatchObject({ ordinal: '1', status: 'matched', actualKey: requestKey({ agent: 'analyst', prompt: 'p1' }) })
  })
})
