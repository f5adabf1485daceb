import { LocusError } from '@locus/outcome'
import { describe, expect, it } from 'vitest'
import type * as ReplayErrorsModule from './replay-errors.js'
import {
  CanonicalRequestError,
  DuplicateOrdinalError,
  OrdinalRepeatedError,
  REPLAY_ERROR_CODES,
  RecordingEntryError,
  RecordingUnreadableError,
  ReplayOptionsError,
  isReplayError,
} from './replay-errors.js'

const samples = [
  new CanonicalRequestError([{ field: 'prompt', message: 'prompt must be a string' }]),
  new RecordingEntryError(2, [{ field: 'key', message: 'key must be a string' }]),
  new DuplicateOrdinalError('2[1]'),
  new RecordingUnreadableError('/runs/x', '/runs/x/journal.jsonl', new Error('ENOENT')),
  new OrdinalRepeatedError('3'),
  new ReplayOptionsError([{ field: 'replayFailures', message: 'replayFailures must be true or false' }]),
]

describe('replay errors', () => {
  it('each is a LocusError with its own stable code, and the codes are exactly REPLAY_ERROR_CODES', () => {
    expect(samples.map((error) => error.code)).toEqual([...REPLAY_ERROR_CODES])
    for (const error of samples) {
      expect(LocusError.isInstance(error)).toBe(true)
      expect(isReplayError(error)).toBe(true)
    }
    expect(isReplayError(new LocusError('x', { code: 'OTHER' }))).toBe(false)
  })

  it('isInstance matches its own code only', () => {
    expect(DuplicateOrdinalError.isInstance(samples[2])).toBe(true)
    expect(DuplicateOrdinalError.isInstance(samples[4])).toBe(false)
    expect(CanonicalRequestError.isInstance(samples[0])).toBe(true)
  })

  it('isInstance recognises an error from a second installed copy of the package', async () => {
    const specifier = './replay-errors.ts?second-copy'
    const copy = (await import(/* @vite-ignore */ specifier)) as typeof ReplayErrorsModule
    expect(copy.DuplicateOrdinalError).not.toBe(DuplicateOrdinalError)
    const foreign = new copy.DuplicateOrdinalError('1')
    expect(foreign instanceof DuplicateOrdinalError).toBe(false)
    expect(DuplicateOrdinalError.isInstance(foreign)).toBe(true)
  })

  it('messages name the field or ordinal and what to do; the cause is kept', () => {
    expect(samples[0]?.message).toContain('prompt: prompt must be a string')
    expect(samples[2]?.message).toContain('"2[1]"')
    expect(samples[2]?.message).toContain('final attempt')
    expect((samples[3]?.cause as Error).message).toBe('ENOENT')
  })
})
