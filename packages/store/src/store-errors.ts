import { LocusError, hasLocusErrorCode } from '@locus/outcome'

export const RUN_EXISTS = 'RUN_EXISTS'
export const RUN_NOT_FOUND = 'RUN_NOT_FOUND'
export const EXECUTION_EXISTS = 'EXECUTION_EXISTS'
export const ARTIFACT_KEY_INVALID = 'ARTIFACT_KEY_INVALID'
export const ARTIFACT_EXISTS = 'ARTIFACT_EXISTS'
export const STORE_OPTIONS_INVALID = 'STORE_OPTIONS_INVALID'
export const LEASE_LOST = 'LEASE_LOST'
export const RUN_OWNED = 'RUN_OWNED'

/** The codes this package owns; no other package throws them. */
export const STORE_ERROR_CODES = [
  RUN_EXISTS,
  RUN_NOT_FOUND,
  EXECUTION_EXISTS,
  ARTIFACT_KEY_INVALID,
  ARTIFACT_EXISTS,
  STORE_OPTIONS_INVALID,
  LEASE_LOST,
  RUN_OWNED,
] as const
export type StoreErrorCode = (typeof STORE_ERROR_CODES)[number]

/** A root execution was asked for a run id that is taken; nothing was written. */
export class RunExistsError extends LocusError {
  declare readonly code: typeof RUN_EXISTS
  readonly runId: string
  /** Where the run that holds the id is (its directory for the file store). */
  readonly location: string
  constructor(runId: string, location: string, cause?: unknown) {
    super(
      `Run "${runId}" exists already (${location}); a run id names one run. Continue it with \`locus resume ${runId}\`, ` +
        `check it with \`locus replay ${runId}\`, or start a new run without --run-id.`,
      { code: RUN_EXISTS, cause },
    )
    this.name = 'RunExistsError'
    this.runId = runId
    this.location = location
  }
  static override isInstance(value: unknown): value is RunExistsError {
    return hasLocusErrorCode(value, RUN_EXISTS)
  }
}

/** Who holds a run, as its store recorded it: a process on a host, since when, for which execution. */
export interface RunOwner {
  readonly pid: number
  readonly hostname: string
  readonly runId: string
  readonly executionId: string
  /** ISO time the owner claimed the run. */
  readonly startedAt: string
  /** ISO time the owning process started. */
  readonly processStartedAt: string
  /** The process's start as the kernel counts it (`<bootId>:<ticks>`, Linux), null elsewhere: a reused pid is told apart by it. */
  readonly processStart: string | null
  /** Names this claim among all claims of the run. */
  readonly token: string
}

/**
 * A run is held by a live owner (a running run or resume, in this process or
 * another): only one execution continues a run at a time. Nothing was written.
 */
export class RunOwnedError extends LocusError {
  declare readonly code: typeof RUN_OWNED
  readonly runId: string
  /** The holder as the store recorded it, when it could be read. */
  readonly owner: RunOwner | undefined
  /** Where the claim is kept (the lock file of the file store, a lease row...), for messages. */
  readonly location: string
  constructor(runId: string, message: string, details: { readonly owner?: RunOwner | undefined; readonly location: string; readonly cause?: unknown }) {
    super(message, { code: RUN_OWNED, cause: details.cause })
    this.name = 'RunOwnedError'
    this.runId = runId
    this.owner = details.owner
    this.location = details.location
  }
  static override isInstance(value: unknown): value is RunOwnedError {
    return hasLocusErrorCode(value, RUN_OWNED)
  }
}

/**
 * A writer's lease on a run moved on (it expired and another worker took it,
 * or it was released): the append it tried was not committed, and this writer
 * must write nothing more to the run.
 */
export class LeaseLostError extends LocusError {
  declare readonly code: typeof LEASE_LOST
  readonly runId: string
  /** The epoch the writer held. */
  readonly epoch: number
  /** The epoch the store holds now, or undefined when no lease is held. */
  readonly currentEpoch: number | undefined
  constructor(runId: string, epoch: number, currentEpoch: number | undefined) {
    super(
      `Run "${runId}": this writer's lease (epoch ${epoch}) is lost` +
        (currentEpoch === undefined ? ', and no worker holds the run now' : `; epoch ${currentEpoch} holds the run now`) +
        '. Nothing was written; the current owner continues the run.',
      { code: LEASE_LOST },
    )
    this.name = 'LeaseLostError'
    this.runId = runId
    this.epoch = epoch
    this.currentEpoch = currentEpoch
  }
  static override isInstance(value: unknown): value is LeaseLostError {
    return hasLocusErrorCode(value, LEASE_LOST)
  }
}

/** No run by that id in this store. */
export class RunNotFoundError extends LocusError {
  declare readonly code: typeof RUN_NOT_FOUND
  readonly runId: string
  constructor(runId: string, where: string) {
    super(`No run "${runId}" in ${where}; list the runs there with \`locus ls\`.`, { code: RUN_NOT_FOUND })
    this.name = 'RunNotFoundError'
    this.runId = runId
  }
  static override isInstance(value: unknown): value is RunNotFoundError {
    return hasLocusErrorCode(value, RUN_NOT_FOUND)
  }
}

/** A child execution id is taken within its run. */
export class ExecutionExistsError extends LocusError {
  declare readonly code: typeof EXECUTION_EXISTS
  readonly runId: string
  readonly executionId: string
  constructor(runId: string, executionId: string, cause?: unknown) {
    super(`Execution "${executionId}" of run "${runId}" exists already; each execution has one writer, so pick another id.`, {
      code: EXECUTION_EXISTS,
      cause,
    })
    this.name = 'ExecutionExistsError'
    this.runId = runId
    this.executionId = executionId
  }
  static override isInstance(value: unknown): value is ExecutionExistsError {
    return hasLocusErrorCode(value, EXECUTION_EXISTS)
  }
}

/** An artifact key that is empty, absolute, or would leave its execution. */
export class ArtifactKeyError extends LocusError {
  declare readonly code: typeof ARTIFACT_KEY_INVALID
  readonly key: string
  constructor(key: unknown) {
    super(
      `Invalid artifact key ${JSON.stringify(key)}: a key is a relative path of "/"-separated names (letters, digits, ".", "_", "-"), ` +
        'none of them empty, "." or "..", so it stays inside its execution.',
      { code: ARTIFACT_KEY_INVALID },
    )
    this.name = 'ArtifactKeyError'
    this.key = String(key)
  }
  static override isInstance(value: unknown): value is ArtifactKeyError {
    return hasLocusErrorCode(value, ARTIFACT_KEY_INVALID)
  }
}

/** An exclusive artifact write found the key taken; the stored content is unchanged. */
export class ArtifactExistsError extends LocusError {
  declare readonly code: typeof ARTIFACT_EXISTS
  readonly key: string
  constructor(key: string, cause?: unknown) {
    super(`Artifact "${key}" exists already and was written exclusively; the stored content is kept.`, { code: ARTIFACT_EXISTS, cause })
    this.name = 'ArtifactExistsError'
    this.key = key
  }
  static override isInstance(value: unknown): value is ArtifactExistsError {
    return hasLocusErrorCode(value, ARTIFACT_EXISTS)
  }
}

/** Bad arguments to a store function, naming the field. */
export class StoreOptionsError extends LocusError {
  declare readonly code: typeof STORE_OPTIONS_INVALID
  constructor(message: string) {
    super(message, { code: STORE_OPTIONS_INVALID })
    this.name = 'StoreOptionsError'
  }
  static override isInstance(value: unknown): value is StoreOptionsError {
    return hasLocusErrorCode(value, STORE_OPTIONS_INVALID)
  }
}

const KEY_SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/

/** Returns the key when it stays inside its execution; throws {@link ArtifactKeyError} otherwise. */
export function validateArtifactKey(key: string): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > 1024) throw new ArtifactKeyError(key)
  for (const segment of key.split('/')) {
    if (!KEY_SEGMENT.test(segment) || segment === '..' || segment === '.') throw new ArtifactKeyError(key)
  }
  return key
}

/** What a deferral id may hold: it names a file in the file store, so no separators and no leading dot. */
const DEFERRED_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$/

/** Returns `id` when it can name a deferral; throws `StoreOptionsError` naming it otherwise. */
export function validateDeferredId(id: string): string {
  if (typeof id !== 'string' || !DEFERRED_ID.test(id)) {
    throw new StoreOptionsError(`Invalid deferral id ${JSON.stringify(id)}: a deferral id is letters, digits, ".", "_" and "-" (as a deferred_open line shows it).`)
  }
  return id
}
