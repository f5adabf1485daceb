import type { GroupEvent } from './group-event.js'
import { GroupInputError, describeValue } from './group-input-error.js'
import { Slot } from './slot.js'

/** Settings of a run scope; every field is optional. */
export interface RunScopeOptions {
  /** The host's cancellation signal. Once aborted, groups dispatch nothing new. */
  readonly signal?: AbortSignal
  /**
   * Default concurrency of every group created in the scope (a group's own
   * `concurrency` option wins). A positive integer or `Infinity`.
   * @default Infinity (unbounded)
   */
  readonly concurrency?: number
  /** Receives `group_start` and `group_end`. Must not throw. */
  readonly observer?: (event: GroupEvent) => void
}

/** Why a scope stopped dispatching, if it did. */
export type ScopeStopCause = 'hard-stop' | 'cancelled'

/**
 * The state one run shares with every group inside it: the host's
 * cancellation signal, the hard-stop latch, the default concurrency and the
 * event observer. Create one per run with {@link createRunScope} and enter it
 * with `runInScope`.
 */
export interface RunScope {
  /** The host's cancellation signal, if any. */
  readonly signal: AbortSignal | undefined
  /** Default concurrency of groups in this scope (`Infinity` when unbounded). */
  readonly concurrency: number
  /** The first hard error observed in the scope, or `undefined`. */
  readonly hardStop: Error | undefined
  /** `'hard-stop'` or `'cancelled'` once the scope stopped dispatching (whichever came first), else `undefined`. */
  readonly stopCause: ScopeStopCause | undefined
  /**
   * Records a hard, run-level error. The first call wins; later calls are
   * ignored. From then on no group in the scope dispatches queued work, and
   * every group rejects with this object once its started branches settle.
   */
  latchHardStop(error: Error): void
}

/** Checks a concurrency value and returns it, or throws a {@link GroupInputError} naming `field`. */
export function validateConcurrency(value: unknown, field: string): number {
  if (value === Number.POSITIVE_INFINITY || (typeof value === 'number' && Number.isInteger(value) && value >= 1)) {
    return value
  }
  throw new GroupInputError(
    field,
    `expected a positive integer or Infinity, got ${describeValue(value)}`,
    'Pass the largest number of branches that may run at once, or omit it for no limit.',
  )
}

/** The one implementation of {@link RunScope}; internal to this package. */
export class ScopeState implements RunScope {
  readonly signal: AbortSignal | undefined
  readonly concurrency: number
  readonly observer: ((event: GroupEvent) => void) | undefined
  /** The run root: the slot whose children are `1`, `2`, ... */
  readonly rootSlot = new Slot(undefined, 0, undefined, undefined)
  private latched: Error | undefined
  private cancelledFirst = false

  constructor(options: RunScopeOptions) {
    this.signal = options.signal
    this.concurrency = options.concurrency ?? Number.POSITIVE_INFINITY
    this.observer = options.observer
  }

  get hardStop(): Error | undefined {
    return this.latched
  }

  /** True once a hard error is latched or the signal aborted; checked before every dispatch. */
  get stopped(): boolean {
    return this.latched !== undefined || this.signal?.aborted === true
  }

  get stopCause(): ScopeStopCause | undefined {
    if (this.latched !== undefined && !this.cancelledFirst) return 'hard-stop'
    if (this.signal?.aborted === true) return 'cancelled'
    return undefined
  }

  latchHardStop(error: Error): void {
    if (this.latched !== undefined) return
    // Whichever stop came first decides how the run ends: an operator's
    // cancellation is not turned into a failure by a cap hit while draining.
    this.cancelledFirst = this.signal?.aborted === true
    this.latched = error
  }
}

/**
 * Creates the scope of one run. Options are validated; a bad one throws a
 * {@link GroupInputError} naming it.
 *
 * @example
 * ```ts
 * const controller = new AbortController()
 * const events: GroupEvent[] = []
 * const scope = createRunScope({ signal: controller.signal, concurrency: 8, observer: (event) => events.push(event) })
 * const results = await runInScope(scope, () => parallel([() => 1, () => 2]))
 * ```
 */
export function createRunScope(options: RunScopeOptions = {}): RunScope {
  if (typeof options !== 'object' || (options as unknown) === null) {
    throw new GroupInputError('createRunScope options', `expected an object, got ${describeValue(options)}`, 'Pass an options object or nothing.')
  }
  const { signal, concurrency, observer } = options as Record<string, unknown>
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new GroupInputError('createRunScope options.signal', `expected an AbortSignal, got ${describeValue(signal)}`, 'Pass AbortController.signal.')
  }
  if (concurrency !== undefined) validateConcurrency(concurrency, 'createRunScope options.concurrency')
  if (observer !== undefined && typeof observer !== 'function') {
    throw new GroupInputError('createRunScope options.observer', `expected a function, got ${describeValue(observer)}`, 'Pass (event) => void.')
  }
  return new ScopeState(options)
}
