/** The two group primitives. */
export const GROUP_KINDS = ['parallel', 'pipeline'] as const
export type GroupKind = (typeof GROUP_KINDS)[number]

/** How a group ended, as recorded on `group_end`. */
export const GROUP_END_OUTCOMES = ['completed', 'failed', 'hard-stopped', 'cancelled'] as const
export type GroupEndOutcome = (typeof GROUP_END_OUTCOMES)[number]

/** Emitted when a group is created, before any of its branches is dispatched. */
export interface GroupStartEvent {
  readonly type: 'group_start'
  /** The deterministic id of the group, as `2[3].1`. */
  readonly groupId: string
  readonly groupKind: GroupKind
  /** Number of positions (thunks or items). */
  readonly total: number
  /** The group whose branch created this one; absent at the run root. */
  readonly parentGroupId?: string
  readonly label?: string
  readonly phase?: string
  /** The concurrency limit; absent when unbounded. */
  readonly concurrency?: number
}

/**
 * Emitted once every started branch of the group has settled, before the
 * group's promise settles. `completed + failed + notDispatched === total`.
 */
export interface GroupEndEvent {
  readonly type: 'group_end'
  readonly groupId: string
  readonly groupKind: GroupKind
  readonly total: number
  /** Positions whose branch (every stage, for a pipeline) succeeded. */
  readonly completed: number
  /** Positions whose branch threw, returned a failure, or returned a value that cannot cross the JSON boundary. */
  readonly failed: number
  /** Positions whose work was never dispatched because of a hard stop or cancellation. */
  readonly notDispatched: number
  readonly outcome: GroupEndOutcome
  /** For a failed pipeline: the stage at which the first failed item (in input order) failed. */
  readonly stageIndex?: number
  readonly label?: string
  readonly phase?: string
}

/**
 * What a group reports to the run scope's observer. Field names match the
 * journal's `group_start` / `group_end` lines; the runtime adds the rest.
 */
export type GroupEvent = GroupStartEvent | GroupEndEvent
