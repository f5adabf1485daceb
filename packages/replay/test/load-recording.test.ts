import { readJournal } from '@locus/journal'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { FIXTURE_LAYOUT, type FixtureCall, loadFromDisk, logicalCallIdOf, tempRunsDir, writeRun } from './run-fixture.js'
import { agentCall } from './envelope-for.js'
import { RecordingUnreadableError } from '../src/replay-errors.js'
import { createReplaySession } from '../src/replay-session.js'
import { requestKey } from '../src/request-key.js'

const made: string[] = []
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function runsDir(): string {
  const dir = tempRunsDir()
  made.push(dir)
  return dir
}

function call(ordinal: string, attempts: FixtureCall['attempts'] = [{ outcome: 'completed' }], extra: Partial<FixtureCall> = {}): FixtureCall {
  return { ordinal, request: { agent: 'analyst', prompt: `prompt ${ordinal}`, timeoutMs: 60_000 }, attempts, ...extra }
}

describe('loadRecording', () => {
  it('records each finished logical call at its ordinal with the key of its agent_start and its final envelope', () => {
    const dir = join(runsDir(), 'run-1')
    writeRun(dir, [call('1'), call('2'), call('2[1].1')])
    const recording = loadFromDisk(dir)
    expect(recording.size).toBe(3)
    expect(recording.entries().map((entry) => entry.ordinal)).toEqual(['1', '2', '2[1].1'])
    const second = agentCall(recording.get('2'))
    expect(second?.key).toBe(requestKey({ agent: 'analyst', prompt: 'prompt 2', timeoutMs: 60_000 }))
    expect(second?.envelope).toMatchObject({ callId: `${logicalCallIdOf('2')}-a1`, status: 'completed', answer: 'answer to prompt 2' })
    expect(second?.request).toEqual({ agent: 'analyst', prompt: 'prompt 2', timeoutMs: 60_000 })
    expect(recording).toMatchObject({ executionDir: dir, tornTail: false, invalidLines: 0, skipped: [] })
  })

  it('a timed-out then retried call (two agent_start lines, one logicalCallId) occupies one ordinal, with the final attempt', () => {
    const dir = join(runsDir(), 'run-1')
    writeRun(dir, [call('1'), call('2', [{ outcome: 'failed', failureCause: 'call-timeout' }, { outcome: 'completed', answer: 'second try' }]), call('3')])
    const starts = readJournal(join(dir, FIXTURE_LAYOUT.journal)).lines.filter((line) => line.type === 'agent_start')
    expect(starts.filter((line) => line.ordinal === '2')).toHaveLength(2)
    const recording = loadFromDisk(dir)
    expect(recording.size).toBe(3)
    expect(recording.entries().map((entry) => entry.ordinal)).toEqual(['1', '2', '3'])
    expect(agentCall(recording.get('2'))?.envelope).toMatchObject({ attempt: 2, attempts: 2, status: 'completed', answer: 'second try' })
  })

  it('a call with no terminal record is not recorded (and is listed as unfinished)', () => {
    const dir = join(runsDir(), 'run-1')
    writeRun(dir, [call('1'), call('2', [{ outcome: 'unfinished' }])])
    const recording = loadFromDisk(dir)
    expect(recording.has('2')).toBe(false)
    expect(recording.size).toBe(1)
    expect(recording.skipped).toEqual([
      expect.objectContaining({ ordinal: '2', logicalCallId: logicalCallIdOf('2'), callId: `${logicalCallIdOf('2')}-a1`, reason: 'unfinished' }),
    ])
  })

  it('a call whose retry never finished is not recorded, even though its first attempt did', () => {
    const dir = join(runsDir(), 'run-1')
    writeRun(dir, [call('1', [{ outcome: 'failed', failureCause: 'host-turn-timeout' }, { outcome: 'unfinished' }])])
    const recording = loadFromDisk(dir)
    expect(recording.size).toBe(0)
    expect(recording.skipped[0]).toMatchObject({ ordinal: '1', callId: `${logicalCallIdOf('1')}-a2`, reason: 'unfinished' })
  })

  it('an attempt that threw (terminal error line) is finished; its envelope is recorded as a failure', () => {
    const dir = join(runsDir(), 'run-1')
    writeRun(dir, [call('1', [{ outcome: 'failed' }, { outcome: 'threw', failureCause: 'sdk-unavailable' }])])
    const recording = loadFromDisk(dir)
    expect(agentCall(recording.get('1'))?.envelope).toMatchObject({ attempt: 2, status: 'failed', failureCause: 'sdk-unavailable' })
  })

  it('tolerates a torn tail, reports it, and loses no complete line', () => {
    const dir = join(runsDir(), 'run-1')
    writeRun(dir, [call('1'), call('2')], { tornTail: '{"v":1,"seq":99,"type":"agent_st' })
    const recording = loadFromDisk(dir)
    expect(recording.tornTail).toBe(true)
    expect(recording.size).toBe(2)
  })

  it('skips, and names, calls whose envelope is missing or invalid, and ignores invalid lines', () => {
    const dir = join(runsDir(), 'run-1')
    writeRun(dir, [call('1'), call('2', [{ outcome: 'completed', writeEnvelope: false }]), call('3')])
    const third = join(dir, FIXTURE_LAYOUT.calls, `${logicalCallIdOf('3')}-a1`, FIXTURE_LAYOUT.callResult, 'result.json')
    writeFileSync(third, JSON.stringify({ ...JSON.parse(readFileSync(third, 'utf8')), status: 'maybe' }))
    writeFileSync(join(dir, FIXTURE_LAYOUT.journal), 'not json\n', { flag: 'a' })
    const recording = loadFromDisk(dir)
    expect(recording.size).toBe(1)
    expect(recording.skipped.map((skipped) => [skipped.ordinal, skipped.reason])).toEqual([
      ['2', 'missing-envelope'],
      ['3', 'invalid-envelope'],
    ])
    expect(recording.invalidLines).toBe(1)
  })

  it('skips a call journaled without a requestKey (nothing to compare against)', () => {
    const dir = join(runsDir(), 'run-1')
    writeRun(dir, [call('1', undefined, { journalKey: false })])
    expect(loadFromDisk(dir).skipped).toEqual([expect.objectContaining({ ordinal: '1', reason: 'no-request-key' })])
  })

  it('loads a nested execution directory (a resume attempt) on its own', () => {
    const root = join(runsDir(), 'run-1')
    writeRun(root, [call('1'), call('2', [{ outcome: 'unfinished' }])])
    const resumed = join(root, FIXTURE_LAYOUT.executions, 'resume-1')
    writeRun(resumed, [call('1'), call('2'), call('3')], { runId: 'resume-1' })
    expect(loadFromDisk(root).size).toBe(1)
    const recording = loadFromDisk(resumed)
    expect(recording.size).toBe(3)
    expect(recording.executionDir).toBe(resumed)
    expect(agentCall(recording.get('3'))?.envelope.paths.resultDir.startsWith(resumed)).toBe(true)
  })

  it('throws a typed error naming the directory when there is no journal', () => {
    const dir = join(runsDir(), 'absent')
    let thrown: unknown
    try {
      loadFromDisk(dir)
    } catch (error) {
      thrown = error
    }
    expect(RecordingUnreadableError.isInstance(thrown)).toBe(true)
    expect(thrown).toMatchObject({ code: 'REPLAY_RECORDING_UNREADABLE', runDir: dir })
    expect((thrown as Error).message).toContain('journal.jsonl')
  })

  it('end to end: resume replays the recorded prefix and continues live where the run stopped', () => {
    const dir = join(runsDir(), 'run-1')
    const calls = [call('1'), call('2', [{ outcome: 'failed', failureCause: 'provider-error' }]), call('3'), call('4', [{ outcome: 'unfinished' }])]
    writeRun(dir, calls)
    const session = createReplaySession(loadFromDisk(dir))
    const decisions = [...calls, call('5')].map((fixture) => {
      const decision = session.next({ ordinal: fixture.ordinal, request: { ...fixture.request, attempts: 2 } })
      return decision.mode === 'replay' ? 'replay' : decision.reason
    })
    expect(decisions).toEqual(['replay', 'recorded-failure', 'replay', 'not-recorded', 'not-recorded'])
    expect(session.latched).toBe(false)
  })

  it('a divergence against a loaded recording names the journaled field that changed', () => {
    const dir = join(runsDir(), 'run-1')
    writeRun(dir, [call('1'), call('2')])
    const session = createReplaySession(loadFromDisk(dir))
    session.next({ ordinal: '1', request: call('1').request })
    session.next({ ordinal: '2', request: { ...call('2').request, prompt: 'changed' } })
    expect(session.divergence).toMatchObject({ ordinal: '2', fields: ['prompt'] })
  })
})

describe('loadRecording on a broken journal', () => {
  it('two logical calls at one ordinal are an error naming the ordinal', () => {
    const dir = join(runsDir(), 'run-1')
    writeRun(dir, [call('1'), call('1', undefined, { logicalCallId: 'call-twin', request: { agent: 'analyst', prompt: 'twin' } })])
    expect(() => loadFromDisk(dir)).toThrow(expect.objectContaining({ code: 'REPLAY_DUPLICATE_ORDINAL', ordinal: '1' }))
  })
})
