import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'
import { agentCall, envelopeFor } from '../test/envelope-for.js'
import type { AgentCallRequest } from './canonical-request.js'
import { createRecording, type Recording } from './recording.js'
import { OrdinalRepeatedError, ReplayOptionsError } from './replay-errors.js'
import { type ReplayDivergence, createReplaySession } from './replay-session.js'
import { requestKey } from './request-key.js'

function requestAt(index: number): AgentCallRequest {
  return { agent: 'analyst', prompt: `step ${index}`, timeoutMs: 60_000, budgets: { maxToolCalls: 20 }, returnContractVersion: 2 }
}

/** A recording of `count` calls at ordinals "1".."count", the calls in `failed` recorded as failures. */
function recordingOf(count: number, failed: readonly number[] = []): Recording {
  return createRecording(
    Array.from({ length: count }, (_, offset) => {
      const index = offset + 1
      const request = requestAt(index)
      return {
        ordinal: String(index),
        key: requestKey(request),
        envelope: envelopeFor(String(index), failed.includes(index) ? 'failed' : 'completed'),
        request,
      }
    }),
  )
}

describe('createReplaySession', () => {
  it('while keys match, a recorded call returns its recorded envelope (the host is not called)', () => {
    const recording = recordingOf(3)
    const session = createReplaySession(recording)
    const decision = session.next({ ordinal: '2', request: { ...requestAt(2), attempts: 3, label: 'renamed' } })
    expect(decision).toEqual({ mode: 'replay', envelope: agentCall(recording.get('2'))?.envelope, key: recording.get('2')?.key })
    expect(session.divergence).toBeNull()
    expect(session.latched).toBe(false)
  })

  it('10 recorded calls, call 5 prompt changed: replays 1-4, runs 5-10 live, exactly one divergence reported', () => {
    const onDiverged = vi.fn<(divergence: ReplayDivergence) => void>()
    const session = createReplaySession(recordingOf(10), { onDiverged })
    const modes: string[] = []
    for (let index = 1; index <= 10; index += 1) {
      const request = index === 5 ? { ...requestAt(5), prompt: 'step 5, reworded' } : requestAt(index)
      const decision = session.next({ ordinal: String(index), request })
      modes.push(decision.mode === 'replay' ? 'replay' : decision.reason)
    }
    expect(modes).toEqual(['replay', 'replay', 'replay', 'replay', 'diverged', 'latched', 'latched', 'latched', 'latched', 'latched'])
    expect(onDiverged).toHaveBeenCalledTimes(1)
    const divergence = {
      ordinal: '5',
      expectedKey: requestKey(requestAt(5)),
      actualKey: requestKey({ ...requestAt(5), prompt: 'step 5, reworded' }),
      fields: ['prompt'],
    }
    expect(onDiverged).toHaveBeenCalledWith(divergence)
    expect(session.divergence).toEqual(divergence)
    const report = session.report()
    expect(report.counts).toEqual({ matched: 9, diverged: 1, missing: 0, extra: 0, replayed: 4, live: 6 })
    expect(report.calls.filter((call) => call.decision === 'replay').map((call) => call.ordinal)).toEqual(['1', '2', '3', '4'])
  })

  it('property: the latch never resets; after the first mismatch every next() is live', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 30 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 40 }),
        fc.boolean(),
        (recorded, changes, replayFailures) => {
          const onDiverged = vi.fn()
          const session = createReplaySession(recordingOf(recorded, [2]), { onDiverged, replayFailures })
          let tripped = false
          for (const [offset, changed] of changes.entries()) {
            const index = offset + 1
            const request = changed ? { ...requestAt(index), prompt: `changed ${index}` } : requestAt(index)
            const decision = session.next({ ordinal: String(index), request })
            const mismatch = changed && index <= recorded
            if (tripped) {
              expect(decision).toMatchObject({ mode: 'live', reason: 'latched' })
            } else if (mismatch) {
              expect(decision).toMatchObject({ mode: 'live', reason: 'diverged' })
              tripped = true
            }
            expect(session.latched).toBe(tripped)
          }
          expect(onDiverged).toHaveBeenCalledTimes(tripped ? 1 : 0)
        },
      ),
    )
  })

  it('a recorded call whose final attempt failed runs live by default, without tripping the latch', () => {
    const onDiverged = vi.fn()
    const session = createReplaySession(recordingOf(3, [2]), { onDiverged })
    expect(session.next({ ordinal: '1', request: requestAt(1) }).mode).toBe('replay')
    expect(session.next({ ordinal: '2', request: requestAt(2) })).toMatchObject({ mode: 'live', reason: 'recorded-failure' })
    expect(session.next({ ordinal: '3', request: requestAt(3) }).mode).toBe('replay')
    expect(session.latched).toBe(false)
    expect(onDiverged).not.toHaveBeenCalled()
  })

  it('replayFailures: true replays a recorded failure instead (a pure determinism check)', () => {
    const recording = recordingOf(2, [2])
    const session = createReplaySession(recording, { replayFailures: true })
    expect(session.next({ ordinal: '2', request: requestAt(2) })).toEqual({
      mode: 'replay',
      envelope: agentCall(recording.get('2'))?.envelope,
      key: requestKey(requestAt(2)),
    })
  })

  it('a call at an ordinal with no recording runs live and does not trip the latch', () => {
    const session = createReplaySession(recordingOf(2))
    expect(session.next({ ordinal: '1', request: requestAt(1) }).mode).toBe('replay')
    expect(session.next({ ordinal: '1[1]', request: requestAt(9) })).toMatchObject({ mode: 'live', reason: 'not-recorded' })
    expect(session.next({ ordinal: '2', request: requestAt(2) }).mode).toBe('replay')
    expect(session.next({ ordinal: '3', request: requestAt(3) })).toMatchObject({ mode: 'live', reason: 'not-recorded' })
    expect(session.latched).toBe(false)
  })

  it.each([
    ['budgets', { budgets: { maxToolCalls: 40 } }],
    ['returnContractVersion', { returnContractVersion: 3 }],
    ['choice', { choice: ['a', 'b'] }],
    ['timeoutMs', { timeoutMs: 1000 }],
    ['agent', { agent: 'reviewer' }],
  ])('changing the recorded %s diverges at that call and names the field', (field, change) => {
    const session = createReplaySession(recordingOf(3))
    session.next({ ordinal: '1', request: requestAt(1) })
    expect(session.next({ ordinal: '2', request: { ...requestAt(2), ...change } })).toMatchObject({ mode: 'live', reason: 'diverged' })
    expect(session.divergence).toMatchObject({ ordinal: '2', fields: [field] })
  })

  it('adding attempts, a label or a phase does not diverge', () => {
    const session = createReplaySession(recordingOf(3))
    session.next({ ordinal: '1', request: { ...requestAt(1), attempts: 3 } })
    session.next({ ordinal: '2', request: { ...requestAt(2), label: 'new label', phase: 'new phase' } })
    expect(session.latched).toBe(false)
    expect(session.report().identical).toBe(false)
    expect(session.report().counts).toMatchObject({ matched: 2, missing: 1, replayed: 2 })
  })

  it('a divergence against a partly known request names only the fields it knows, and none when the difference is elsewhere', () => {
    const full = requestAt(1)
    const journaled = { agent: full.agent, prompt: full.prompt, timeoutMs: full.timeoutMs }
    const recording = createRecording([
      { ordinal: '1', key: requestKey(full), envelope: envelopeFor('1'), request: journaled, requestFields: ['agent', 'prompt', 'timeoutMs'] },
    ])
    const budgetsChanged = createReplaySession(recording)
    budgetsChanged.next({ ordinal: '1', request: { ...full, budgets: { maxToolCalls: 1 } } })
    expect(budgetsChanged.divergence).toMatchObject({ ordinal: '1', fields: [] })
    const promptChanged = createReplaySession(recording)
    promptChanged.next({ ordinal: '1', request: { ...full, prompt: 'other' } })
    expect(promptChanged.divergence?.fields).toEqual(['prompt'])
  })

  it('a partly known request whose own key is the recorded key counts as whole, so added budgets are named', () => {
    const journaled = { agent: 'analyst', prompt: 'p' }
    const recording = createRecording([
      { ordinal: '1', key: requestKey(journaled), envelope: envelopeFor('1'), request: journaled, requestFields: ['agent', 'prompt', 'timeoutMs'] },
    ])
    const session = createReplaySession(recording)
    session.next({ ordinal: '1', request: { ...journaled, budgets: { maxToolCalls: 3 } } })
    expect(session.divergence?.fields).toEqual(['budgets'])
  })

  it('a recording without requests still diverges on the key, with no fields named', () => {
    const recording = createRecording([{ ordinal: '1', key: 'sha256:recorded', envelope: envelopeFor('1') }])
    const session = createReplaySession(recording)
    expect(session.next({ ordinal: '1', request: requestAt(1) })).toMatchObject({ mode: 'live', reason: 'diverged' })
    expect(session.divergence).toMatchObject({ expectedKey: 'sha256:recorded', fields: [] })
  })

  it('the latch is set before onDiverged runs, and stays set when it throws', () => {
    const session = createReplaySession(recordingOf(3), {
      onDiverged: () => {
        expect(session.latched).toBe(true)
        throw new Error('journal full')
      },
    })
    expect(() => session.next({ ordinal: '1', request: requestAt(9) })).toThrow('journal full')
    expect(session.next({ ordinal: '2', request: requestAt(2) })).toMatchObject({ mode: 'live', reason: 'latched' })
  })

  it('asking twice for one ordinal is an error naming it (one ask per logical call, not per attempt)', () => {
    const session = createReplaySession(recordingOf(2))
    session.next({ ordinal: '1', request: requestAt(1) })
    let thrown: unknown
    try {
      session.next({ ordinal: '1', request: requestAt(1) })
    } catch (error) {
      thrown = error
    }
    expect(OrdinalRepeatedError.isInstance(thrown)).toBe(true)
    expect(thrown).toMatchObject({ code: 'REPLAY_ORDINAL_REPEATED', ordinal: '1' })
  })

  it('refuses invalid options and an invalid ordinal with typed errors naming the field', () => {
    expect(() => createReplaySession(recordingOf(1), { replayFailures: 'yes' as unknown as boolean })).toThrow(
      expect.objectContaining({ code: 'REPLAY_OPTIONS_INVALID', field: 'replayFailures' }),
    )
    expect(() => createReplaySession(recordingOf(1), { onDiverged: 1 as unknown as () => void })).toThrow(
      expect.objectContaining({ field: 'onDiverged' }),
    )
    const session = createReplaySession(recordingOf(1))
    let thrown: unknown
    try {
      session.next({ ordinal: '', request: requestAt(1) })
    } catch (error) {
      thrown = error
    }
    expect(ReplayOptionsError.isInstance(thrown)).toBe(true)
    expect(thrown).toMatchObject({ field: 'ordinal' })
    expect(() => session.next({ ordinal: '1', request: { prompt: 3 } as unknown as AgentCallRequest })).toThrow(
      expect.objectContaining({ code: 'REPLAY_REQUEST_INVALID', field: 'prompt' }),
    )
  })
})

describe('ReplaySession.report', () => {
  it('lists matched, diverged, missing and extra calls correctly', () => {
    const session = createReplaySession(recordingOf(6, [3]))
    session.next({ ordinal: '1', request: requestAt(1) }) // matched, replayed
    session.next({ ordinal: '3', request: requestAt(3) }) // matched, recorded failure runs live
    session.next({ ordinal: '3[1]', request: requestAt(31) }) // extra, not recorded
    session.next({ ordinal: '4', request: { ...requestAt(4), timeoutMs: 5 } }) // diverged, trips the latch
    session.next({ ordinal: '5', request: requestAt(5) }) // matched by key, but live after the latch
    session.next({ ordinal: '6', request: { ...requestAt(6), prompt: 'x' } }) // diverged after the latch
    session.next({ ordinal: '10', request: requestAt(10) }) // extra
    // "2" is never asked for: missing.
    const report = session.report()
    expect(report.calls).toEqual([
      { ordinal: '1', status: 'matched', expectedKey: requestKey(requestAt(1)), actualKey: requestKey(requestAt(1)), decision: 'replay' },
      { ordinal: '2', status: 'missing', expectedKey: requestKey(requestAt(2)) },
      { ordinal: '3', status: 'matched', expectedKey: requestKey(requestAt(3)), actualKey: requestKey(requestAt(3)), decision: 'recorded-failure' },
      {
        ordinal: '4',
        status: 'diverged',
        expectedKey: requestKey(requestAt(4)),
        actualKey: requestKey({ ...requestAt(4), timeoutMs: 5 }),
        fields: ['timeoutMs'],
        decision: 'diverged',
      },
      { ordinal: '5', status: 'matched', expectedKey: requestKey(requestAt(5)), actualKey: requestKey(requestAt(5)), decision: 'latched' },
      {
        ordinal: '6',
        status: 'diverged',
        expectedKey: requestKey(requestAt(6)),
        actualKey: requestKey({ ...requestAt(6), prompt: 'x' }),
        fields: ['prompt'],
        decision: 'latched',
      },
    ])
    expect(report.extra).toEqual([
      { ordinal: '3[1]', key: requestKey(requestAt(31)) },
      { ordinal: '10', key: requestKey(requestAt(10)) },
    ])
    expect(report.counts).toEqual({ matched: 3, diverged: 2, missing: 1, extra: 2, replayed: 1, live: 6 })
    expect(report.divergence).toMatchObject({ ordinal: '4', fields: ['timeoutMs'] })
    expect(report.identical).toBe(false)
  })

  it('a faithful replay of the whole recording is identical', () => {
    const session = createReplaySession(recordingOf(4))
    for (let index = 1; index <= 4; index += 1) session.next({ ordinal: String(index), request: requestAt(index) })
    const report = session.report()
    expect(report.identical).toBe(true)
    expect(report.divergence).toBeNull()
    expect(report.counts).toEqual({ matched: 4, diverged: 0, missing: 0, extra: 0, replayed: 4, live: 0 })
  })
})
