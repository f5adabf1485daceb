import { RuntimeInputError } from './errors.js'

/**
 * One concurrency limit of a workflow: at most `limit` runs whose `key(input)`
 * is the same string hold a slot at once (a run holds one while it executes;
 * a run parked on a deferral or a timer holds none). Among runs ready to
 * start, keys take turns, `weight` times as often for a key of weight 2 as for
 * one of weight 1.
 */
export interface ConcurrencyLimit<TInput = unknown> {
  // A method, so that a workflow with a typed input is still a WorkflowDefinition.
  key(input: TInput): string
  /** A positive whole number. */
  readonly limit: number
  /** How many turns the key gets for one of a weight-1 key. @default 1 */
  readonly weight?: number
}

/** Whether a run's deadline counts from its start (the wait is free) or from its enqueue (the wait spends it). */
export type DeadlineCounts = 'from-start' | 'from-enqueue'

/** One key a run holds a slot of: its value, the limit it is counted against (none for a fairness-only key), and its weight. */
export interface FlowKey {
  readonly key: string
  readonly limit?: number | undefined
  readonly weight: number
}

/** Why a run waited to start. */
export type QueuedReason = 'concurrency' | 'rate' | 'priority'

/** What a `queued` line says: the run's keys, why it waited and for how long. */
export interface QueuedInfo {
  readonly keys: readonly string[]
  readonly reason: QueuedReason
  readonly waitedMs: number
}

/** A value as a message shows it: JSON where it has one. */
function show(value: unknown): string {
  const json = JSON.stringify(value) as string | undefined
  return json ?? (typeof value === 'function' ? 'a function' : typeof value)
}

/** The priorities a run may have: 0 (the default) to 9; a higher one starts first among runs of the same key. */
export const MIN_PRIORITY = 0
export const MAX_PRIORITY = 9

/**
 * Checks a workflow's flow-control declaration at definition: each limit a
 * positive whole number, each key a function, each weight a positive number,
 * `deadlineCounts` one of its two values.
 *
 * @throws RuntimeInputError `WORKFLOW_DEFINITION_INVALID` naming the workflow and the declaration
 */
export function checkFlowDefinition(definition: { readonly name: string; readonly concurrency?: unknown; readonly deadlineCounts?: unknown }): void {
  const refuse = (issue: string): never => {
    throw new RuntimeInputError('WORKFLOW_DEFINITION_INVALID', `Workflow "${definition.name}": ${issue}.`, [issue])
  }
  if (definition.deadlineCounts !== undefined && definition.deadlineCounts !== 'from-start' && definition.deadlineCounts !== 'from-enqueue') {
    refuse(`deadlineCounts must be 'from-start' or 'from-enqueue', not ${JSON.stringify(definition.deadlineCounts)}`)
  }
  if (definition.concurrency === undefined) return
  if (!Array.isArray(definition.concurrency)) refuse('concurrency must be an array of { key, limit, weight? }')
  ;(definition.concurrency as readonly unknown[]).forEach((entry, index) => {
    const where = `concurrency[${String(index)}]`
    if (typeof entry !== 'object' || entry === null) refuse(`${where} must be { key, limit, weight? }`)
    const { key, limit, weight } = entry as Record<string, unknown>
    if (typeof key !== 'function') refuse(`${where}.key must be a function of the input returning a string`)
    if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1) refuse(`${where}.limit must be a positive whole number, not ${show(limit)}`)
    if (weight !== undefined && (typeof weight !== 'number' || !Number.isFinite(weight) || weight <= 0)) refuse(`${where}.weight must be a positive number, not ${show(weight)}`)
  })
}

/**
 * Checks a run's priority: a whole number from 0 to 9.
 *
 * @throws RuntimeInputError `RUN_OPTIONS_INVALID`
 */
export function checkPriority(priority: unknown): number {
  if (priority === undefined) return MIN_PRIORITY
  if (typeof priority !== 'number' || !Number.isSafeInteger(priority) || priority < MIN_PRIORITY || priority > MAX_PRIORITY) {
    throw new RuntimeInputError('RUN_OPTIONS_INVALID', `priority must be a whole number from ${String(MIN_PRIORITY)} to ${String(MAX_PRIORITY)}, not ${show(priority)}.`, [
      `priority: ${show(priority)}`,
    ])
  }
  return priority
}

/**
 * The keys a run of this workflow holds, from its input: each declared
 * limit's key, in order. `concurrencyKey` (given when enqueuing) stands in for
 * the first declared key's value, under that declaration's limit; a workflow
 * that declares none gets it as a key with no limit (it takes turns with the
 * other keys, and limits nothing).
 *
 * @throws RuntimeInputError `CONCURRENCY_KEY_INVALID` naming the workflow and the key, when a key function throws or returns something else than a non-empty string
 */
export function resolveFlowKeys(
  definition: { readonly name: string; readonly concurrency?: readonly ConcurrencyLimit<never>[] | undefined },
  input: unknown,
  concurrencyKey?: string,
): FlowKey[] {
  if (concurrencyKey !== undefined && (typeof concurrencyKey !== 'string' || concurrencyKey.length === 0)) {
    throw new RuntimeInputError('CONCURRENCY_KEY_INVALID', `Workflow "${definition.name}": concurrencyKey must be a non-empty string, not ${show(concurrencyKey)}.`, [
      'concurrencyKey: not a non-empty string',
    ])
  }
  const declared = definition.concurrency ?? []
  const keys: FlowKey[] = declared.map((entry, index) => {
    const where = `concurrency[${String(index)}].key`
    if (index === 0 && concurrencyKey !== undefined) return { key: concurrencyKey, limit: entry.limit, weight: entry.weight ?? 1 }
    let value: unknown
    try {
      value = (entry.key as (input: unknown) => unknown)(input)
    } catch (error) {
      throw new RuntimeInputError(
        'CONCURRENCY_KEY_INVALID',
        `Workflow "${definition.name}": ${where} threw (${error instanceof Error ? error.message : String(error)}); the run was not started or queued.`,
        [`${where}: threw`],
        error,
      )
    }
    if (typeof value !== 'string' || value.length === 0) {
      throw new RuntimeInputError(
        'CONCURRENCY_KEY_INVALID',
        `Workflow "${definition.name}": ${where} returned ${typeof value === 'string' ? 'an empty string' : (show(value))}, not a non-empty string; the run was not started or queued.`,
        [`${where}: not a non-empty string`],
      )
    }
    return { key: value, limit: entry.limit, weight: entry.weight ?? 1 }
  })
  if (declared.length === 0 && concurrencyKey !== undefined) keys.push({ key: concurrencyKey, weight: 1 })
  return keys
}

/** A slot a run holds in a {@link ConcurrencyLimiter}; release it once the run's execution ends. */
export interface ConcurrencySlot {
  /** What the run's `queued` line says, when it waited; undefined when it started at once. */
  readonly queued: QueuedInfo | undefined
  release(): void
}

/** What a run asks a {@link ConcurrencyLimiter} for. */
export interface ConcurrencyRequest {
  readonly keys: readonly FlowKey[]
  /** 0-9, higher first among runs of the same first key. @default 0 */
  readonly priority?: number | undefined
  /** Aborting it withdraws a request still waiting: its promise rejects with the signal's reason. */
  readonly signal?: AbortSignal | undefined
}

/** The in-process limiter: the same rules the PostgreSQL workers keep, for runs of one process. */
export interface ConcurrencyLimiter {
  acquire(request: ConcurrencyRequest): Promise<ConcurrencySlot>
  /** Per key: runs holding a slot, runs waiting, and how long the oldest has waited. */
  snapshot(): QueueSnapshot[]
}

/** One key of `GET /v1/queues` and `locus queues`. */
export interface QueueSnapshot {
  readonly key: string
  readonly running: number
  readonly waiting: number
  /** How long the key's oldest waiting run has waited; 0 when none waits. */
  readonly oldestWaitMs: number
}

interface Waiter {
  readonly seq: number
  readonly keys: readonly FlowKey[]
  readonly priority: number
  readonly enqueuedAt: number
  reason: QueuedReason | undefined
  readonly grant: (slot: ConcurrencySlot) => void
}

interface Lane {
  readonly key: string
  weight: number
  /** Stride scheduling: the lane whose pass is lowest goes next, and each turn adds 1/weight. */
  pass: number
  readonly waiters: Waiter[]
}

/**
 * An in-process {@link ConcurrencyLimiter}: a run starts once each of its
 * keys with a limit has fewer than that many runs holding a slot. Waiting runs
 * are grouped by their first key; the groups take turns (stride scheduling,
 * a key of weight w getting w turns for one of weight 1), and within a group
 * the highest priority goes first, then the earliest queued. A group whose
 * next run cannot start yet is skipped, never reordered.
 */
export function createConcurrencyLimiter(options: { readonly now?: () => number } = {}): ConcurrencyLimiter {
  const now = options.now ?? (() => performance.now())
  const running = new Map<string, number>()
  const lanes = new Map<string, Lane>()
  let seq = 0
  let virtualTime = 0

  const fits = (keys: readonly FlowKey[]): boolean => keys.every((key) => key.limit === undefined || (running.get(key.key) ?? 0) < key.limit)
  const laneKey = (keys: readonly FlowKey[]): string => keys[0]?.key ?? ''

  function take(keys: readonly FlowKey[]): () => void {
    for (const key of keys) running.set(key.key, (running.get(key.key) ?? 0) + 1)
    let released = false
    return () => {
      if (released) return
      released = true
      for (const key of keys) {
        const left = (running.get(key.key) ?? 1) - 1
        if (left <= 0) running.delete(key.key)
        else running.set(key.key, left)
      }
      pump()
    }
  }

  function pump(): void {
    for (;;) {
      let chosen: Lane | undefined
      for (const lane of lanes.values()) {
        const head = lane.waiters[0]
        if (head === undefined) continue
        if (!fits(head.keys)) {
          head.reason = 'concurrency'
          continue
        }
        if (chosen === undefined || lane.pass < chosen.pass) chosen = lane
      }
      if (chosen === undefined) return
      const waiter = chosen.waiters.shift() as Waiter
      virtualTime = Math.max(virtualTime, chosen.pass)
      chosen.pass += 1 / chosen.weight
      for (const other of chosen.waiters) other.reason ??= 'priority'
      if (chosen.waiters.length === 0) lanes.delete(chosen.key)
      const release = take(waiter.keys)
      waiter.grant({ queued: { keys: waiter.keys.map((key) => key.key), reason: waiter.reason ?? 'priority', waitedMs: Math.max(0, Math.round(now() - waiter.enqueuedAt)) }, release })
    }
  }

  return {
    acquire(request) {
      const priority = checkPriority(request.priority)
      const keys = request.keys
      const lane = lanes.get(laneKey(keys))
      // Nothing ahead of it and room on every key: it starts at once, and owes no `queued` line.
      if ((lane === undefined || lane.waiters.length === 0) && fits(keys)) {
        return Promise.resolve({ queued: undefined, release: take(keys) })
      }
      return new Promise<ConcurrencySlot>((resolve, reject) => {
        const waiter: Waiter = {
          seq: seq++,
          keys,
          priority,
          enqueuedAt: now(),
          reason: fits(keys) ? 'priority' : 'concurrency',
          grant: (slot) => {
            request.signal?.removeEventListener('abort', onAbort)
            resolve(slot)
          },
        }
        const name = laneKey(keys)
        let target = lanes.get(name)
        if (target === undefined) {
          target = { key: name, weight: keys[0]?.weight ?? 1, pass: virtualTime, waiters: [] }
          lanes.set(name, target)
        }
        // Higher priority first, then first come: inserted after every waiter it does not outrank.
        const at = target.waiters.findIndex((other) => other.priority < priority)
        if (at === -1) target.waiters.push(waiter)
        else target.waiters.splice(at, 0, waiter)
        const onAbort = (): void => {
          const list = lanes.get(name)?.waiters
          const index = list?.indexOf(waiter) ?? -1
          if (list !== undefined && index !== -1) list.splice(index, 1)
          if (list?.length === 0) lanes.delete(name)
          reject(request.signal?.reason instanceof Error ? request.signal.reason : new Error(String(request.signal?.reason ?? 'aborted')))
          pump()
        }
        if (request.signal?.aborted === true) {
          onAbort()
          return
        }
        request.signal?.addEventListener('abort', onAbort, { once: true })
        pump()
      })
    },
    snapshot() {
      const keys = new Map<string, { running: number; waiting: number; oldest: number | undefined }>()
      const entry = (key: string) => {
        let found = keys.get(key)
        if (found === undefined) {
          found = { running: 0, waiting: 0, oldest: undefined }
          keys.set(key, found)
        }
        return found
      }
      for (const [key, count] of running) entry(key).running = count
      for (const lane of lanes.values()) {
        for (const waiter of lane.waiters) {
          for (const key of waiter.keys) {
            const found = entry(key.key)
            found.waiting += 1
            found.oldest = found.oldest === undefined ? waiter.enqueuedAt : Math.min(found.oldest, waiter.enqueuedAt)
          }
        }
      }
      const at = now()
      return [...keys.entries()]
        .map(([key, found]) => ({ key, running: found.running, waiting: found.waiting, oldestWaitMs: found.oldest === undefined ? 0 : Math.max(0, Math.round(at - found.oldest)) }))
        .sort((a, b) => a.key.localeCompare(b.key))
    },
  }
}
