import type { GroupEndEvent, GroupEvent, GroupKind, GroupStartEvent } from './group-event.js'
import { type GroupSlot, type SlotFailure, WorkflowGroupFailureError } from './group-failure-error.js'
import { GroupObserverError } from './group-observer-error.js'
import type { GroupSettings } from './group-options.js'
import { isHardStopError } from './hard-stop.js'
import { notDispatchedReasonOf } from './not-dispatched.js'
import type { ReturnedValueFailure } from './judge-value.js'
import type { ScopeState } from './run-scope.js'
import { Frame, scopeForNewGroup } from './slot-context.js'
import { Slot, type GroupIdentity } from './slot.js'
import { WorkflowCancelledError } from './workflow-cancelled-error.js'

// Per-position state, kept in a byte array rather than an object per slot.
const NOT_DISPATCHED = 0
const RUNNING = 1
const COMPLETED = 2
const FAILED = 3
/** A pipeline item whose next stage was not dispatched because of a stop. */
const STOPPED = 4
/** A position whose branch ended on work it never dispatched (a call its money budget could not afford). */
const REFUSED = 5

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

/**
 * The barrier both primitives share: dispatch in input order up to the
 * concurrency limit, stop dispatching once the scope stops, wait for every
 * started branch, then report once. Subclasses say how one position runs.
 */
export abstract class GroupRun implements GroupIdentity {
  readonly id: string
  abstract readonly kind: GroupKind
  protected readonly scope: ScopeState
  readonly total: number
  private readonly limit: number
  private readonly label: string | undefined
  private readonly phase: string | undefined
  private readonly parentGroupId: string | undefined
  private nextIndex = 0
  private running = 0
  private pumping = false
  private finished = false
  private completed = 0
  private failed = 0
  private refused = 0
  /** Completed values, or the raw value returned by a failed position (evidence). */
  protected readonly values: unknown[]
  private readonly states: Uint8Array
  private failures: (SlotFailure | undefined)[] | undefined
  /** Why each `not-dispatched` position was not dispatched, by index. */
  private refusals: Map<number, string> | undefined
  private resolve: ((values: unknown[]) => void) | undefined
  private reject: ((reason: unknown) => void) | undefined

  constructor(parent: Frame, total: number, settings: GroupSettings) {
    this.scope = scopeForNewGroup(parent)
    this.id = parent.slot.nextChildId()
    this.parentGroupId = parent.slot.group?.id
    this.total = total
    this.limit = settings.concurrency ?? this.scope.concurrency
    this.label = settings.label ?? parent.label
    this.phase = settings.phase ?? parent.phase
    this.values = new Array<unknown>(total)
    this.states = new Uint8Array(total)
  }

  /** Starts one position; must settle it through exactly one `settle*` call. */
  protected abstract dispatch(index: number): void

  /** Emits `group_start`, dispatches, and returns the promise the barrier settles. */
  start(): Promise<unknown[]> {
    return new Promise<unknown[]>((resolve, reject) => {
      this.resolve = resolve
      this.reject = reject
      const start: Mutable<GroupStartEvent> = { type: 'group_start', groupId: this.id, groupKind: this.kind, total: this.total }
      if (this.parentGroupId !== undefined) start.parentGroupId = this.parentGroupId
      if (this.label !== undefined) start.label = this.label
      if (this.phase !== undefined) start.phase = this.phase
      if (this.limit !== Number.POSITIVE_INFINITY) start.concurrency = this.limit
      const observerError = this.emit(start)
      if (observerError !== undefined) {
        // Nothing was dispatched, so there is nothing to wait for.
        this.finished = true
        reject(observerError)
        return
      }
      this.pump()
    })
  }

  /** A fresh slot for position `index`, carrying the labels branches inherit. */
  protected newSlot(index: number): Slot {
    return new Slot(this, index, this.label, this.phase)
  }

  /** The frame a branch or stage runs in. */
  protected frameFor(slot: Slot, stageIndex: number | undefined): Frame {
    return new Frame(this.scope, slot, stageIndex, slot.label, slot.phase)
  }

  /** True once the scope stopped dispatching (hard stop or cancellation). */
  protected get stopped(): boolean {
    return this.scope.stopped
  }

  protected settleCompleted(index: number, value: unknown): void {
    this.values[index] = value
    this.states[index] = COMPLETED
    this.completed += 1
    this.release()
  }

  protected settleThrown(index: number, error: unknown, slot: Slot, stageIndex: number | undefined): void {
    if (isHardStopError(error)) this.scope.latchHardStop(error as Error)
    const failure: Mutable<SlotFailure> = { index, kind: 'thrown', error }
    const reason = notDispatchedReasonOf(error)
    if (reason !== undefined) {
      this.refusals ??= new Map()
      this.refusals.set(index, reason)
      this.refused += 1
    }
    this.recordFailure(index, failure, slot, stageIndex)
  }

  protected settleReturned(index: number, value: unknown, verdict: ReturnedValueFailure, slot: Slot, stageIndex: number | undefined): void {
    this.values[index] = value
    const failure: Mutable<SlotFailure> =
      verdict.kind === 'boundary'
        ? { index, kind: 'boundary', error: verdict.error }
        : { index, kind: 'returned', reasons: verdict.reasons }
    if (verdict.kind === 'returned' && verdict.status !== undefined) failure.status = verdict.status
    this.recordFailure(index, failure, slot, stageIndex)
  }

  /** A pipeline item that did not get its next stage because the scope stopped. */
  protected settleStopped(index: number): void {
    this.states[index] = STOPPED
    this.release()
  }

  private recordFailure(index: number, failure: Mutable<SlotFailure>, slot: Slot, stageIndex: number | undefined): void {
    if (stageIndex !== undefined) failure.stageIndex = stageIndex
    if (slot.label !== undefined) failure.label = slot.label
    if (slot.phase !== undefined) failure.phase = slot.phase
    this.failures ??= new Array<SlotFailure | undefined>(this.total)
    this.failures[index] = failure
    if (this.refusals?.has(index) === true) {
      this.states[index] = REFUSED
    } else {
      this.states[index] = FAILED
      this.failed += 1
    }
    this.release()
  }

  private release(): void {
    this.running -= 1
    this.pump()
  }

  private pump(): void {
    // A branch may settle synchronously inside dispatch(); the loop below
    // picks up the freed capacity instead of recursing.
    if (this.pumping || this.finished) return
    this.pumping = true
    while (this.running < this.limit && this.nextIndex < this.total && !this.scope.stopped) {
      const index = this.nextIndex
      this.nextIndex += 1
      this.running += 1
      this.states[index] = RUNNING
      this.dispatch(index)
    }
    this.pumping = false
    if (this.running === 0 && (this.nextIndex === this.total || this.scope.stopped)) this.finish()
  }

  private emit(event: GroupEvent): GroupObserverError | undefined {
    const observer = this.scope.observer
    if (observer === undefined) return undefined
    try {
      observer(event)
      return undefined
    } catch (error) {
      return new GroupObserverError(event, error)
    }
  }

  private firstFailedStage(): number | undefined {
    if (this.failures === undefined) return undefined
    for (const failure of this.failures) if (failure !== undefined) return failure.stageIndex
    return undefined
  }

  private finish(): void {
    this.finished = true
    const resolve = this.resolve
    const reject = this.reject
    if (resolve === undefined || reject === undefined) return
    const stopCause = this.scope.stopCause
    const outcome = stopCause === 'hard-stop' ? 'hard-stopped' : stopCause ?? (this.failed > 0 || this.refused > 0 ? 'failed' : 'completed')
    const end: Mutable<GroupEndEvent> = {
      type: 'group_end',
      groupId: this.id,
      groupKind: this.kind,
      total: this.total,
      completed: this.completed,
      failed: this.failed,
      notDispatched: this.total - this.completed - this.failed,
      outcome,
    }
    const stageIndex = outcome === 'failed' ? this.firstFailedStage() : undefined
    if (stageIndex !== undefined) end.stageIndex = stageIndex
    if (this.label !== undefined) end.label = this.label
    if (this.phase !== undefined) end.phase = this.phase
    const observerError = this.emit(end)

    // Run-level stops win over the observer and over ordinary failures.
    try {
      if (outcome === 'hard-stopped') {
        reject(this.scope.hardStop)
      } else if (outcome === 'cancelled') {
        reject(this.cancellation())
      } else if (observerError !== undefined) {
        reject(observerError)
      } else if (outcome === 'failed') {
        reject(this.groupFailure(stageIndex))
      } else {
        resolve(this.values)
      }
    } catch (error) {
      // Building the evidence must never leave the group hanging.
      reject(error)
    }
  }

  private cancellation(): WorkflowCancelledError {
    const notDispatched: number[] = []
    for (let index = 0; index < this.total; index += 1) {
      const state = this.states[index]
      if (state === NOT_DISPATCHED || state === STOPPED || state === REFUSED) notDispatched.push(index)
    }
    return new WorkflowCancelledError({ groupId: this.id, groupKind: this.kind, notDispatched, cause: this.scope.signal?.reason as unknown })
  }

  private groupFailure(stageIndex: number | undefined): WorkflowGroupFailureError {
    const slots: GroupSlot[] = new Array<GroupSlot>(this.total)
    for (let index = 0; index < this.total; index += 1) {
      const failure = this.failures?.[index]
      const refusal = this.refusals?.get(index)
      if (failure !== undefined && refusal !== undefined) {
        slots[index] = { index, status: 'not-dispatched', reason: refusal, failure }
      } else if (failure === undefined) {
        slots[index] = { index, status: 'completed', value: this.values[index] }
      } else if (failure.kind === 'thrown') {
        slots[index] = { index, status: 'failed', failure }
      } else {
        slots[index] = { index, status: 'failed', failure, value: this.values[index] }
      }
    }
    return new WorkflowGroupFailureError(
      stageIndex === undefined
        ? { groupKind: this.kind, groupId: this.id, slots }
        : { groupKind: this.kind, groupId: this.id, slots, stageIndex },
    )
  }
}
