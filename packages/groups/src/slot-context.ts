import { AsyncLocalStorage } from 'node:async_hooks'
import type { GroupKind } from './group-event.js'
import { GroupInputError, describeValue } from './group-input-error.js'
import { type RunScope, ScopeState } from './run-scope.js'
import type { Slot } from './slot.js'

/**
 * What the innermost running branch is: its group, its position and, for a
 * pipeline, the stage. The runtime stamps agent() and tool() records with it.
 */
export interface SlotContext {
  readonly groupId: string
  readonly groupKind: GroupKind
  readonly index: number
  /** Present inside a pipeline stage. */
  readonly stageIndex?: number
  readonly label?: string
  readonly phase?: string
}

/** A branch's own labels; see {@link withSlotLabels}. */
export interface SlotLabels {
  readonly label?: string
  readonly phase?: string
}

/**
 * What AsyncLocalStorage carries: the scope, the slot that allocates ids, and
 * the labels visible to `currentSlot()`. A new frame is cheap; a slot is shared
 * by all stages of a pipeline item and by `withSlotLabels` inside a branch.
 */
export class Frame {
  constructor(
    readonly scope: ScopeState,
    readonly slot: Slot,
    readonly stageIndex: number | undefined,
    readonly label: string | undefined,
    readonly phase: string | undefined,
  ) {}
}

export const frameStorage = new AsyncLocalStorage<Frame>()

/**
 * Outside any run, groups still work: ids come from this scope's root slot,
 * and each top-level group tree gets a fresh implicit scope of its own (see
 * `enterGroup`), so a hard stop in one tree never poisons the next.
 */
const implicitScope = new ScopeState({})
const implicitRootFrame = new Frame(implicitScope, implicitScope.rootSlot, undefined, undefined, undefined)

/** The active frame, or the implicit root frame outside any run. */
export function activeFrame(): Frame {
  return frameStorage.getStore() ?? implicitRootFrame
}

/**
 * The scope a new group runs in: its parent's, except under the implicit
 * default, where each top-level group tree gets a fresh scope (own latch).
 */
export function scopeForNewGroup(parent: Frame): ScopeState {
  return parent.scope === implicitScope ? new ScopeState({}) : parent.scope
}

/**
 * Runs `fn` inside `scope`, at the run root: groups created by `fn` and by
 * everything it awaits use the scope's signal, latch, concurrency and
 * observer, and take ids `1`, `2`, ... from the scope's root slot.
 *
 * @example
 * ```ts
 * const scope = createRunScope({ concurrency: 4 })
 * await runInScope(scope, async () => parallel([() => fetchA(), () => fetchB()]))
 * ```
 */
export function runInScope<T>(scope: RunScope, fn: () => T): T {
  if (!(scope instanceof ScopeState)) {
    throw new GroupInputError('runInScope scope', `expected a scope from createRunScope(), got ${describeValue(scope)}`, 'Create the scope with createRunScope().')
  }
  if (typeof fn !== 'function') {
    throw new GroupInputError('runInScope fn', `expected a function, got ${describeValue(fn)}`, 'Pass the function to run in the scope.')
  }
  return frameStorage.run(new Frame(scope, scope.rootSlot, undefined, undefined, undefined), fn)
}

/**
 * The active run scope: the one entered with `runInScope`, the implicit scope
 * of the current top-level group tree, or the implicit default outside both.
 */
export function currentScope(): RunScope {
  return activeFrame().scope
}

/**
 * The innermost running branch's slot, or `undefined` at the run root. Labels
 * are the branch's own, kept across awaits and nested groups.
 *
 * @example
 * ```ts
 * await parallel([async () => { await tick(); return currentSlot()?.index }]) // [0]
 * ```
 */
export function currentSlot(): SlotContext | undefined {
  const frame = frameStorage.getStore()
  if (frame === undefined) return undefined
  const group = frame.slot.group
  if (group === undefined) return undefined
  const context: { -readonly [K in keyof SlotContext]: SlotContext[K] } = { groupId: group.id, groupKind: group.kind, index: frame.slot.index }
  if (frame.stageIndex !== undefined) context.stageIndex = frame.stageIndex
  if (frame.label !== undefined) context.label = frame.label
  if (frame.phase !== undefined) context.phase = frame.phase
  return context
}

/**
 * Allocates the next deterministic child id in the current slot: `1`, `2`, ...
 * at the run root, `G[i].1`, `G[i].2`, ... inside branch `i` of group `G`. The
 * runtime uses it for agent() and tool() call ids; groups use it for their own
 * ids. Ids depend only on the group tree and creation order within a slot,
 * never on timing.
 *
 * @example
 * ```ts
 * await runInScope(createRunScope(), async () => {
 *   allocateChildId() // '1'
 *   await parallel([() => allocateChildId()]) // the group is '2'; the branch allocates '2[0].1'
 * })
 * ```
 */
export function allocateChildId(): string {
  return activeFrame().slot.nextChildId()
}

/**
 * Runs `fn` with the given label and/or phase as the current branch's own.
 * `currentSlot()` shows them inside `fn` and everything it awaits, nested
 * groups inherit them, and if the branch fails its failure record carries the
 * labels it declared last. Ids are unaffected: `fn` allocates from the same slot.
 *
 * @example
 * ```ts
 * await parallel([
 *   () => withSlotLabels({ label: 'billing', phase: 'research' }, () => lookupInvoices()),
 * ])
 * ```
 */
export function withSlotLabels<T>(labels: SlotLabels, fn: () => T): T {
  if (typeof labels !== 'object' || (labels as unknown) === null) {
    throw new GroupInputError('withSlotLabels labels', `expected { label?, phase? }, got ${describeValue(labels)}`, 'Pass an object with string fields.')
  }
  for (const key of ['label', 'phase'] as const) {
    const value: unknown = labels[key]
    if (value !== undefined && typeof value !== 'string') {
      throw new GroupInputError(`withSlotLabels labels.${key}`, `expected a string, got ${describeValue(value)}`, `Pass a string or leave ${key} out.`)
    }
  }
  if (typeof fn !== 'function') {
    throw new GroupInputError('withSlotLabels fn', `expected a function, got ${describeValue(fn)}`, 'Pass the function to run with these labels.')
  }
  const frame = activeFrame()
  const label = labels.label ?? frame.label
  const phase = labels.phase ?? frame.phase
  if (frame.slot.group !== undefined) {
    frame.slot.label = label
    frame.slot.phase = phase
  }
  return frameStorage.run(new Frame(frame.scope, frame.slot, frame.stageIndex, label, phase), fn)
}
