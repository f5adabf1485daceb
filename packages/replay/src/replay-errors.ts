import { LocusError, hasLocusErrorCode } from '@locus/outcome'

/** Every stable code a replay error carries. Branch on these, never on messages. */
export const REPLAY_ERROR_CODES = [
  'REPLAY_REQUEST_INVALID',
  'REPLAY_RECORDING_INVALID',
  'REPLAY_DUPLICATE_ORDINAL',
  'REPLAY_RECORDING_UNREADABLE',
  'REPLAY_ORDINAL_REPEATED',
  'REPLAY_OPTIONS_INVALID',
] as const
export type ReplayErrorCode = (typeof REPLAY_ERROR_CODES)[number]

/** One problem with one field, as the validating schema saw it. */
export interface ReplayFieldProblem {
  /** Dotted path of the field, e.g. `budgets.maxToolCalls`; `request` for the value itself. */
  readonly field: string
  readonly message: string
}

function describeProblems(problems: readonly ReplayFieldProblem[]): string {
  return problems.map((problem) => `${problem.field}: ${problem.message}`).join('; ')
}

/**
 * An `agent()` call whose identity fields cannot form a canonical request
 * (a prompt that is not a string, a negative `timeoutMs`, a budget that is
 * not a finite number...). `field` names the first offending field.
 */
export class CanonicalRequestError extends LocusError {
  declare readonly code: 'REPLAY_REQUEST_INVALID'
  /** The first offending field, e.g. `prompt` or `budgets.maxToolCalls`. */
  readonly field: string
  /** Every problem found, each naming its field. */
  readonly problems: readonly ReplayFieldProblem[]

  constructor(problems: readonly ReplayFieldProblem[], cause?: unknown) {
    super(
      `Cannot build the canonical request of this agent() call: ${describeProblems(problems)}. ` +
        'Fix the call options; identity fields must be plain JSON data.',
      { code: 'REPLAY_REQUEST_INVALID', cause },
    )
    this.name = 'CanonicalRequestError'
    this.field = problems[0]?.field ?? 'request'
    this.problems = problems
  }

  static override isInstance(value: unknown): value is CanonicalRequestError {
    return hasLocusErrorCode(value, 'REPLAY_REQUEST_INVALID')
  }
}

/** An entry handed to `createRecording` is malformed (an empty ordinal, a key that is not a string...). */
export class RecordingEntryError extends LocusError {
  declare readonly code: 'REPLAY_RECORDING_INVALID'
  /** Position of the entry in the input, from 0. */
  readonly index: number
  /** The first offending field of the entry. */
  readonly field: string
  readonly problems: readonly ReplayFieldProblem[]

  constructor(index: number, problems: readonly ReplayFieldProblem[], cause?: unknown) {
    super(`Recording entry ${index} is invalid: ${describeProblems(problems)}.`, { code: 'REPLAY_RECORDING_INVALID', cause })
    this.name = 'RecordingEntryError'
    this.index = index
    this.field = problems[0]?.field ?? 'entry'
    this.problems = problems
  }

  static override isInstance(value: unknown): value is RecordingEntryError {
    return hasLocusErrorCode(value, 'REPLAY_RECORDING_INVALID')
  }
}

/**
 * Two recording entries claim the same ordinal. An ordinal names one logical
 * `agent()` call, shared by all its attempts, so this means a discarded
 * attempt was recorded on its own or two calls were given one position.
 */
export class DuplicateOrdinalError extends LocusError {
  declare readonly code: 'REPLAY_DUPLICATE_ORDINAL'
  readonly ordinal: string

  constructor(ordinal: string) {
    super(
      `Two recorded calls share ordinal ${JSON.stringify(ordinal)}. Record one entry per logical agent() call ` +
        '(the final attempt), never one per physical attempt.',
      { code: 'REPLAY_DUPLICATE_ORDINAL' },
    )
    this.name = 'DuplicateOrdinalError'
    this.ordinal = ordinal
  }

  static override isInstance(value: unknown): value is DuplicateOrdinalError {
    return hasLocusErrorCode(value, 'REPLAY_DUPLICATE_ORDINAL')
  }
}

/** The journal of a run directory cannot be read at all (missing directory, no permission...). */
export class RecordingUnreadableError extends LocusError {
  declare readonly code: 'REPLAY_RECORDING_UNREADABLE'
  /** The directory of the journal that was asked for. */
  readonly runDir: string

  constructor(runDir: string, journalPath: string, cause?: unknown) {
    super(
      `Cannot load a recording from ${JSON.stringify(runDir)}: ${JSON.stringify(journalPath)} cannot be read. ` +
        'Pass the journal file of one execution (a file store names it as the execution\'s journalLocation).',
      { code: 'REPLAY_RECORDING_UNREADABLE', cause },
    )
    this.name = 'RecordingUnreadableError'
    this.runDir = runDir
  }

  static override isInstance(value: unknown): value is RecordingUnreadableError {
    return hasLocusErrorCode(value, 'REPLAY_RECORDING_UNREADABLE')
  }
}

/**
 * A replay session was asked twice for the same ordinal. Each logical call
 * asks once, however many attempts it makes; a second ask means ordinals are
 * not derived from the group tree, and replay would pair the wrong calls.
 */
export class OrdinalRepeatedError extends LocusError {
  declare readonly code: 'REPLAY_ORDINAL_REPEATED'
  readonly ordinal: string

  constructor(ordinal: string) {
    super(
      `The replay session was already asked for ordinal ${JSON.stringify(ordinal)}. Call session.next() once per ` +
        'logical agent() call (not once per attempt), with ordinals that are unique in the run.',
      { code: 'REPLAY_ORDINAL_REPEATED' },
    )
    this.name = 'OrdinalRepeatedError'
    this.ordinal = ordinal
  }

  static override isInstance(value: unknown): value is OrdinalRepeatedError {
    return hasLocusErrorCode(value, 'REPLAY_ORDINAL_REPEATED')
  }
}

/** Options passed to `createReplaySession` (or an argument of `next()`) are not what they should be. */
export class ReplayOptionsError extends LocusError {
  declare readonly code: 'REPLAY_OPTIONS_INVALID'
  readonly field: string
  readonly problems: readonly ReplayFieldProblem[]

  constructor(problems: readonly ReplayFieldProblem[], cause?: unknown) {
    super(`Invalid replay session input: ${describeProblems(problems)}.`, { code: 'REPLAY_OPTIONS_INVALID', cause })
    this.name = 'ReplayOptionsError'
    this.field = problems[0]?.field ?? 'options'
    this.problems = problems
  }

  static override isInstance(value: unknown): value is ReplayOptionsError {
    return hasLocusErrorCode(value, 'REPLAY_OPTIONS_INVALID')
  }
}

/** True for any error of this package, from any installed copy of it. */
export function isReplayError(value: unknown): value is LocusError & { code: ReplayErrorCode } {
  return REPLAY_ERROR_CODES.some((code) => hasLocusErrorCode(value, code))
}
