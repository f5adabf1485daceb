import { type RetryClock, type RetryPolicy, parseRetryPolicy } from '@locus/retry'
import { LocusError, hasLocusErrorCode } from '@locus/outcome'
import type { TriggerTransport } from './transport.js'

export const PROTOCOL_HOST_OPTIONS_INVALID = 'PROTOCOL_HOST_OPTIONS_INVALID'

/** Options of `createProtocolHost`. */
export interface ProtocolHostOptions {
  /** How `llm.execute` triggers reach the worker: `createInProcessTransport(worker)`, `createStdioTransport(...)`, a trigger queue. */
  readonly transport: TriggerTransport
  /** The model named on each trigger when the agent's config names none. @default none: the worker picks */
  readonly model?: string | undefined
  /** The seed retry policy of LLM calls for an agent whose config sets no `retry`. @default no retry, no timeout */
  readonly retry?: RetryPolicy | undefined
  /** Where attempt deadlines and backoff are read and waited. @default the system clock */
  readonly clock?: RetryClock | undefined
  /** The host's name in run records. @default 'protocol' */
  readonly name?: string | undefined
}

/** Options of `createProtocolHost` that cannot work, each named with what to pass instead. */
export class ProtocolHostOptionsError extends LocusError {
  declare readonly code: typeof PROTOCOL_HOST_OPTIONS_INVALID
  readonly field: string

  constructor(field: string, message: string, cause?: unknown) {
    super(`createProtocolHost: ${message}`, { code: PROTOCOL_HOST_OPTIONS_INVALID, cause })
    this.name = 'ProtocolHostOptionsError'
    this.field = field
  }

  static override isInstance(value: unknown): value is ProtocolHostOptionsError {
    return hasLocusErrorCode(value, PROTOCOL_HOST_OPTIONS_INVALID)
  }
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.trim() !== ''
}

/** Checks the options, naming the first field that cannot work. */
export function checkProtocolHostOptions(options: unknown): ProtocolHostOptions {
  if (typeof options !== 'object' || options === null) {
    throw new ProtocolHostOptionsError('options', 'pass an object such as { transport: createInProcessTransport(worker) }')
  }
  const { transport, model, retry, clock, name } = options as Record<string, unknown>
  if (typeof transport !== 'object' || transport === null || typeof (transport as { send?: unknown }).send !== 'function') {
    throw new ProtocolHostOptionsError('transport', 'transport must be a TriggerTransport with send(trigger) (createInProcessTransport, createStdioTransport)')
  }
  if (model !== undefined && !isNonEmptyString(model)) throw new ProtocolHostOptionsError('model', 'model must be a non-empty string, or left out to let the worker choose')
  if (name !== undefined && !isNonEmptyString(name)) throw new ProtocolHostOptionsError('name', 'name must be a non-empty string')
  if (clock !== undefined && (typeof clock !== 'object' || clock === null || typeof (clock as RetryClock).now !== 'function' || typeof (clock as RetryClock).sleep !== 'function')) {
    throw new ProtocolHostOptionsError('clock', 'clock must have now() and sleep(ms, signal), like systemClock or createManualClock() from @locus/retry')
  }
  if (retry !== undefined) {
    try {
      parseRetryPolicy(retry)
    } catch (error) {
      throw new ProtocolHostOptionsError('retry', `retry is not a seed retry policy: ${error instanceof Error ? error.message : String(error)}`, error)
    }
  }
  return options as ProtocolHostOptions
}
