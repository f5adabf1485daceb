import { toLocusError } from '@locus/outcome'
import { type GroupOptions, type GroupSettings, readGroupOptions, requireFunctions } from './group-options.js'
import { GroupRun } from './group-run.js'
import { judgeReturnedValue } from './judge-value.js'
import { type Frame, activeFrame, frameStorage } from './slot-context.js'
import type { Slot } from './slot.js'
import type { SuccessValue } from './success-value.js'

/** One branch of a `parallel()` group: a function that starts the work when called. */
export type ParallelThunk<T = unknown> = () => T | PromiseLike<T>

/**
 * The success array of `parallel()`: each thunk's awaited return value, in
 * input order, without the members that would have failed the group.
 */
export type ParallelResults<TThunks extends readonly ParallelThunk[]> = {
  -readonly [K in keyof TThunks]: SuccessValue<Awaited<ReturnType<TThunks[K]>>>
}

class ParallelRun extends GroupRun {
  readonly kind = 'parallel'
  private readonly thunks: readonly ParallelThunk[]

  constructor(parent: Frame, thunks: readonly ParallelThunk[], settings: GroupSettings) {
    super(parent, thunks.length, settings)
    this.thunks = thunks
  }

  protected dispatch(index: number): void {
    const slot = this.newSlot(index)
    let result: unknown
    try {
      result = frameStorage.run(this.frameFor(slot, undefined), this.thunks[index] as ParallelThunk)
    } catch (error) {
      this.settleThrown(index, error, slot, undefined)
      return
    }
    if ((typeof result !== 'object' || result === null) && typeof result !== 'function') {
      this.settleValue(slot, result)
      return
    }
    // A native promise is used as is; anything else (a thenable, a plain
    // object) goes through Promise.resolve, which reads `then` safely.
    // Two small closures per branch cost less heap than an async wrapper.
    const promise = result instanceof Promise ? (result as Promise<unknown>) : Promise.resolve(result)
    promise.then(
      (value: unknown) => {
        this.settleValue(slot, value)
      },
      (error: unknown) => {
        this.settleThrown(slot.index, error, slot, undefined)
      },
    )
  }

  private settleValue(slot: Slot, value: unknown): void {
    const failure = judgeReturnedValue(value)
    if (failure === undefined) this.settleCompleted(slot.index, value)
    else this.settleReturned(slot.index, value, failure, slot, undefined)
  }
}

/**
 * Runs thunks as one fail-closed, full-barrier group and returns their values
 * in input order.
 *
 * A branch fails when it throws, when its direct return value cannot cross
 * `prepareWorkflowResult` (a BigInt, a cycle, a throwing `toJSON`), or when the
 * detached value is a semantic failure (`ok: false`, `partial: true`, or status
 * `failed` / `blocked` / `cancelled`). A failure does not cut the group short:
 * every branch, queued ones included, runs and settles, then the group rejects
 * with one {@link WorkflowGroupFailureError}. A fulfilled `null` is a value.
 *
 * Hard errors ({@link WorkflowInvocationCapError}, {@link WorkflowRunDeadlineError})
 * and host cancellation are different: queued branches are not started, started
 * ones settle, and the group rejects with the hard error itself or a
 * {@link WorkflowCancelledError}.
 *
 * @example
 * ```ts
 * const [facts, history] = await parallel([() => lookup(id), () => summarise(id)], { concurrency: 4 })
 * ```
 */
export function parallel<const TThunks extends readonly ParallelThunk[]>(
  thunks: TThunks,
  options?: GroupOptions,
): Promise<ParallelResults<TThunks>> {
  let settings: GroupSettings
  try {
    requireFunctions(thunks, 'parallel thunks', 'functions (thunks)')
    settings = readGroupOptions(options, 'parallel')
  } catch (error) {
    return Promise.reject(toLocusError(error))
  }
  return new ParallelRun(activeFrame(), thunks, settings).start() as Promise<ParallelResults<TThunks>>
}
