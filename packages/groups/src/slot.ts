import type { GroupKind } from './group-event.js'

/** The identity of a group, as a slot sees it. */
export interface GroupIdentity {
  readonly id: string
  readonly kind: GroupKind
}

/**
 * One position in the group tree: the run root, a `parallel()` branch, or a
 * `pipeline()` item (all stages of an item share it). Children created in a
 * slot take creation numbers 1, 2, 3... from this slot's own counter, so
 * concurrent siblings never race for ids.
 */
export class Slot {
  /** How many children have been created in this slot. */
  private created = 0
  /** The branch's own label: inherited at dispatch, replaced by `withSlotLabels` inside it. */
  label: string | undefined
  /** The branch's own phase, likewise. */
  phase: string | undefined

  constructor(
    /** The group this slot belongs to; `undefined` for the run root. */
    readonly group: GroupIdentity | undefined,
    readonly index: number,
    label: string | undefined,
    phase: string | undefined,
  ) {
    this.label = label
    this.phase = phase
  }

  /** Allocates the next child id in this slot: `1`, `2`... at the root, `G[i].k` below a group. */
  nextChildId(): string {
    this.created += 1
    return this.group === undefined ? String(this.created) : `${this.group.id}[${this.index}].${this.created}`
  }
}
