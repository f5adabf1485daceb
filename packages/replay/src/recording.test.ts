import { describe, expect, it } from 'vitest'
import { CANONICAL_REQUEST_FIELDS } from './canonical-request.js'
import { type AgentRecordingEntry, type RecordingEntry, createRecording } from './recording.js'
import { DuplicateOrdinalError, RecordingEntryError } from './replay-errors.js'
import { requestKey } from './request-key.js'
import { agentCall, envelopeFor } from '../test/envelope-for.js'

function entry(ordinal: string, prompt = `prompt ${ordinal}`): AgentRecordingEntry {
  const request = { agent: 'analyst', prompt }
  return { ordinal, key: requestKey(request), envelope: envelopeFor(ordinal), request }
}

describe('createRecording', () => {
  it('exposes get, has and size by ordinal', () => {
    const recording = createRecording([entry('1'), entry('2')])
    expect(recording.size).toBe(2)
    expect(agentCall(recording.get('2'))?.envelope.callId).toBe('call-2-a1')
    expect(recording.has('1')).toBe(true)
    expect(recording.get('3')).toBeUndefined()
  })

  it('entries() lists calls in natural ordinal order, whatever the input order', () => {
    const recording = createRecording(['10', '2[3].1', '2', '1'].map((ordinal) => entry(ordinal)))
    expect(recording.entries().map((call) => call.ordinal)).toEqual(['1', '2', '2[3].1', '10'])
  })

  it('duplicate ordinals are an error naming the ordinal', () => {
    let thrown: unknown
    try {
      createRecording([entry('1'), entry('2[1]'), entry('2[1]', 'other')])
    } catch (error) {
      thrown = error
    }
    expect(DuplicateOrdinalError.isInstance(thrown)).toBe(true)
    expect(thrown).toMatchObject({ code: 'REPLAY_DUPLICATE_ORDINAL', ordinal: '2[1]' })
    expect((thrown as Error).message).toContain('"2[1]"')
  })

  it('keeps the canonical form of a given request, and which fields it covers', () => {
    const recording = createRecording([
      { ...entry('1'), request: { agent: 'a', prompt: 'p', attempts: 3, label: 'x' } },
      { ...entry('2'), requestFields: ['prompt'] },
      { ordinal: '3', key: 'sha256:x', envelope: envelopeFor('3') },
    ])
    expect(recording.get('1')?.request).toEqual({ agent: 'a', prompt: 'p' })
    expect(recording.get('1')?.requestFields).toEqual(CANONICAL_REQUEST_FIELDS)
    expect(recording.get('2')?.requestFields).toEqual(['prompt'])
    expect(recording.get('3')?.request).toBeUndefined()
    expect(recording.get('3')?.requestFields).toEqual([])
  })

  it.each([
    ['ordinal', { ordinal: '' }],
    ['key', { key: 42 }],
    ['envelope', { envelope: null }],
    ['envelope.status', { envelope: { callId: 'c', status: 'maybe' } }],
    ['request.prompt', { request: { prompt: 1 } }],
    ['requestFields.0', { requestFields: ['attempts'] }],
  ])('refuses a malformed entry with a typed error naming the field (%s)', (field, change) => {
    const bad = { ...entry('1'), ...change } as unknown as RecordingEntry
    let thrown: unknown
    try {
      createRecording([entry('0'), bad])
    } catch (error) {
      thrown = error
    }
    expect(RecordingEntryError.isInstance(thrown)).toBe(true)
    expect(thrown).toMatchObject({ code: 'REPLAY_RECORDING_INVALID', index: 1, field })
  })
})
