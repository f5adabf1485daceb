import { toLocusError } from '@locus/outcome'
import { type GroupOptions, type GroupSettings, readGroupOptions, requireFunctions } from './group-options.js'
import { GroupInputError } from './group-input-error.js'
import { GroupRun } from './group-run.js'
import { judgeReturnedValue } from './judge-value.js'
import type { SuccessValue } from './success-value.js'
import { type Frame, activeFrame, frameStorage } from './slot-context.js'

/** What a stage learns besides its input: the original item and where it is. */
export interface PipelineStageContext<TItem = unknown> {
  /** The item this chain started from. */
  readonly item: TItem
  /** The item's position in the input. */
  readonly index: number
  /** This stage's position in `stages`. */
  readonly stageIndex: number
}

/**
 * One stage of a pipeline: receives the previous stage's output (the item
 * itself for stage 0) and returns this stage's output.
 */
// `any` by default so that an untyped stage list accepts stages of any input type.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type PipelineStage<TInput = any, TOutput = unknown, TItem = unknown> = (
  value: TInput,
  context: PipelineStageContext<TItem>,
) => TOutput | PromiseLike<TOutput>

/** What a stage's output contributes downstream: awaited, failure shapes removed. */
type Passed<T> = SuccessValue<Awaited<T>>

class PipelineRun extends GroupRun {
  readonly kind = 'pipeline'
  private readonly items: readonly unknown[]
  private readonly stages: readonly PipelineStage[]

  constructor(parent: Frame, items: readonly unknown[], stages: readonly PipelineStage[], settings: GroupSettings) {
    super(parent, items.length, settings)
    this.items = items
    this.stages = stages
  }

  protected dispatch(index: number): void {
    void this.runItem(index)
  }

  // Stages of one item run in order in one slot, so ids they allocate stay
  // deterministic; a failed stage ends the item, other items go on.
  private async runItem(index: number): Promise<void> {
    const slot = this.newSlot(index)
    const item = this.items[index]
    let value: unknown = item
    for (let stageIndex = 0; stageIndex < this.stages.length; stageIndex += 1) {
      if (stageIndex > 0 && this.stopped) {
        this.settleStopped(index)
        return
      }
      const context: PipelineStageContext = { item, index, stageIndex }
      let output: unknown
      try {
        output = await frameStorage.run(this.frameFor(slot, stageIndex), this.stages[stageIndex] as PipelineStage, value, context)
      } catch (error) {
        this.settleThrown(index, error, slot, stageIndex)
        return
      }
      const failure = judgeReturnedValue(output)
      if (failure !== undefined) {
        this.settleReturned(index, output, failure, slot, stageIndex)
        return
      }
      value = output
    }
    this.settleCompleted(index, value)
  }
}

/**
 * Runs every item through the stages in order, items concurrently (up to
 * `concurrency`), stages of one item one after another, as one fail-closed,
 * full-barrier group. Returns each item's last stage output, in input order.
 *
 * Each stage's direct return value is judged like a `parallel()` branch value.
 * When a stage fails, later stages do not run for that item; other items
 * continue to the barrier, then the group rejects with one
 * {@link WorkflowGroupFailureError} whose failures carry the `stageIndex`
 * where each item failed. Hard stops and cancellation stop dispatching new
 * items and new stages.
 *
 * @example
 * ```ts
 * const summaries = await pipeline(ticketIds, [
 *   (id: string) => fetchTicket(id),
 *   (ticket: Ticket) => summarise(ticket),
 * ], { concurrency: 4 })
 * ```
 */
export function pipeline<TItem, T1>(
  items: readonly TItem[],
  stages: readonly [PipelineStage<TItem, T1, TItem>],
  options?: GroupOptions,
): Promise<Passed<T1>[]>
export function pipeline<TItem, T1, T2>(
  items: readonly TItem[],
  stages: readonly [PipelineStage<TItem, T1, TItem>, PipelineStage<Passed<T1>, T2, TItem>],
  options?: GroupOptions,
): Promise<Passed<T2>[]>
export function pipeline<TItem, T1, T2, T3>(
  items: readonly TItem[],
  stages: readonly [PipelineStage<TItem, T1, TItem>, PipelineStage<Passed<T1>, T2, TItem>, PipelineStage<Passed<T2>, T3, TItem>],
  options?: GroupOptions,
): Promise<Passed<T3>[]>
export function pipeline<TItem, T1, T2, T3, T4>(
  items: readonly TItem[],
  stages: readonly [
    PipelineStage<TItem, T1, TItem>,
    PipelineStage<Passed<T1>, T2, TItem>,
    PipelineStage<Passed<T2>, T3, TItem>,
    PipelineStage<Passed<T3>, T4, TItem>,
  ],
  options?: GroupOptions,
): Promise<Passed<T4>[]>
export function pipeline(items: readonly unknown[], stages: readonly PipelineStage[], options?: GroupOptions): Promise<unknown[]>
export function pipeline(items: readonly unknown[], stages: readonly PipelineStage[], options?: GroupOptions): Promise<unknown[]> {
  let settings: GroupSettings
  try {
    if (!Array.isArray(items)) {
      throw new GroupInputError('pipeline items', 'expected an array', 'Pass the items to run through the stages as an array.')
    }
    requireFunctions(stages, 'pipeline stages', 'stage functions')
    if (stages.length === 0) {
      throw new GroupInputError('pipeline stages', 'expected at least one stage, got an empty array', 'Pass one or more stage functions.')
    }
    settings = readGroupOptions(options, 'pipeline')
  } catch (error) {
    return Promise.reject(toLocusError(error))
  }
  return new PipelineRun(activeFrame(), items, stages, settings).start()
}
