import { LocusError, hasLocusErrorCode } from '@locus/outcome'
import type { GroupEvent } from './group-event.js'

export const GROUP_OBSERVER_FAILED = 'GROUP_OBSERVER_FAILED'

/**
 * The run scope's observer threw while receiving a group event. Events are the
 * journal's record of the group, so a lost event is not ignored: the group
 * rejects with this error (after its barrier, for `group_end`; before any
 * dispatch, for `group_start`). The observer's own error is the `cause`.
 */
export class GroupObserverError extends LocusError {
  declare readonly code: typeof GROUP_OBSERVER_FAILED
  /** The event the observer failed to take. */
  readonly eventType: GroupEvent['type']
  /** The group whose event it was. */
  readonly groupId: string

  constructor(event: GroupEvent, cause: unknown) {
    super(
      `The run scope observer threw on ${event.type} of group ${event.groupId}; the event was not recorded. ` +
        'Fix the observer (see the cause); it must not throw.',
      { code: GROUP_OBSERVER_FAILED, cause },
    )
    this.name = 'GroupObserverError'
    this.eventType = event.type
    this.groupId = event.groupId
  }

  /** True for this error from any installed copy of the package. */
  static override isInstance(value: unknown): value is GroupObserverError {
    return hasLocusErrorCode(value, GROUP_OBSERVER_FAILED)
  }
}
