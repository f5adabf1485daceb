import { type RetryClock, systemClock } from '@locus/retry'
import { LATE_ANSWER_MEMORY, TransportError, type TriggerTransport, attemptTriggerId } from './transport.js'
import type { Action, Trigger } from './wire-schemas.js'

/** The name a worker lists to take `llm.execute` triggers (any agent, any model). */
export const LLM_TRIGGER_ROUTE = 'llm.execute'

/** Which workers may take a trigger: a `tool.execute` goes to workers serving its tool, an `llm.execute` to those listing {@link LLM_TRIGGER_ROUTE}. */
export function routeOfTrigger(trigger: Trigger): string {
  return trigger.type === 'tool.execute' ? trigger.name : LLM_TRIGGER_ROUTE
}

/** Options of {@link createTriggerQueue}. */
export interface TriggerQueueOptions {
  /**
   * How long a worker holding triggers may go without a poll or an answer
   * before it counts as gone: its triggers then fail as retryable
   * `provider_error`. An open poll counts as contact. @default 60_000
   */
  readonly claimTimeoutMs?: number | undefined
  /** Time and timers; tests pass `createManualClock()` from @locus/retry. @default systemClock */
  readonly clock?: RetryClock | undefined
}

/** One long poll of {@link TriggerQueue.poll}. */
export interface TriggerPoll {
  /** Names the worker; the same name on its next poll or answer keeps its claims alive. */
  readonly worker: string
  /** The tools it serves (and {@link LLM_TRIGGER_ROUTE} for LLM calls). */
  readonly tools: readonly string[]
  /** How long to wait for a trigger when none is queued; 0 answers at once. */
  readonly waitMs: number
  /** At most this many triggers in one answer. @default 10 */
  readonly max?: number | undefined
  /** Ends the wait (the client went away, the server shuts down); nothing is claimed after it aborts. */
  readonly signal?: AbortSignal | undefined
}

/** What {@link TriggerQueue.answer} did with each action. */
export interface AnswerReport {
  /** The trigger ids whose send settled with these actions. */
  readonly accepted: string[]
  /** Actions that matched no trigger this worker holds, each with why. */
  readonly ignored: { readonly id: string | null; readonly reason: string }[]
}

/** Counts of {@link TriggerQueue.stats}. */
export interface TriggerQueueStats {
  /** Triggers no worker has taken yet. */
  readonly queued: number
  /** Triggers a worker holds and has not answered. */
  readonly claimed: number
  /** Polls waiting for a trigger right now. */
  readonly polling: number
  /** Workers holding claims or polling. */
  readonly workers: number
}

/**
 * A {@link TriggerTransport} that workers pull from: `send` queues a trigger,
 * a worker's `poll` claims the triggers of the tools it serves, and its
 * `answer` settles them. A worker that goes away while it holds triggers
 * (no poll and no answer for `claimTimeoutMs`) fails them as retryable
 * `provider_error`, so a retry policy sends the next attempt to a worker
 * still polling. Each trigger a worker sees has an id unique in the queue
 * (the call's id and a suffix), which its actions must echo.
 */
export interface TriggerQueue extends TriggerTransport {
  /** How long a worker holding triggers may go without contact before they fail. */
  readonly claimTimeoutMs: number
  /** Claims up to `max` queued triggers for `worker`, waiting up to `waitMs` for the first one. */
  poll(request: TriggerPoll): Promise<Trigger[]>
  /**
   * Settles the triggers `worker` holds with the actions naming their ids, as
   * in `{ actions: [...] }`; an action for a trigger it does not hold (never
   * claimed, claimed by another worker, already answered, or expired) is
   * ignored and reported. Counts as contact, also with no actions.
   */
  answer(worker: string, actions: readonly Action[]): AnswerReport
  stats(): TriggerQueueStats
}

interface Entry {
  /** The trigger as workers see it: its id made unique in this queue. */
  readonly trigger: Trigger
  /** The id the engine gave it, put back on the answer. */
  readonly callId: string
  readonly route: string
  readonly onLateAnswer: ((actions: Action[]) => void) | undefined
  readonly resolve: (actions: Action[]) => void
  readonly reject: (error: Error) => void
  /** Who holds it, once claimed. */
  worker: WorkerState | undefined
}

interface Waiter {
  readonly worker: WorkerState
  readonly tools: ReadonlySet<string>
  readonly deliver: (triggers: Trigger[]) => void
}

interface WorkerState {
  readonly name: string
  /** The triggers it holds, by id. */
  readonly claims: Map<string, Entry>
  openPolls: number
  /** Aborts the pending lease timer. */
  lease: AbortController | undefined
}

const DEFAULT_CLAIM_TIMEOUT_MS = 60_000
const DEFAULT_MAX = 10

/**
 * Creates a {@link TriggerQueue}: the transport behind workers that reach the
 * engine over HTTP (`GET /v1/worker/triggers`, `POST /v1/worker/actions` of
 * the Locus server), usable as a runtime's `worker`.
 *
 * @example
 * ```ts
 * const workers = createTriggerQueue({ claimTimeoutMs: 30_000 })
 * const runtime = createRuntime({ workflows, defaults: { worker: workers } })
 * const [trigger] = await workers.poll({ worker: 'w1', tools: ['render_report'], waitMs: 30_000 })
 * ```
 */
export function createTriggerQueue(options: TriggerQueueOptions = {}): TriggerQueue {
  const claimTimeoutMs = options.claimTimeoutMs ?? DEFAULT_CLAIM_TIMEOUT_MS
  if (!(Number.isFinite(claimTimeoutMs) && claimTimeoutMs > 0)) {
    throw new RangeError(`createTriggerQueue: claimTimeoutMs must be a positive number of milliseconds, got ${String(options.claimTimeoutMs)}`)
  }
  const clock = options.clock ?? systemClock
  /** Unclaimed triggers, oldest first. */
  const queued: Entry[] = []
  /** Every trigger sent and not settled, by id: queued or claimed. */
  const open = new Map<string, Entry>()
  const waiters: Waiter[] = []
  const workers = new Map<string, WorkerState>()
  /** Claimed triggers whose send was abandoned, by id, with the worker that held them: its answer is late. Oldest first. */
  const abandoned = new Map<string, { readonly worker: string; readonly entry: Entry }>()
  let closed = false
  let sent = 0

  function workerNamed(name: string): WorkerState {
    let state = workers.get(name)
    if (state === undefined) {
      state = { name, claims: new Map(), openPolls: 0, lease: undefined }
      workers.set(name, state)
    }
    return state
  }

  /** Contact from a worker: its lease starts over, and runs only while it holds claims and has no poll open. */
  function touch(worker: WorkerState): void {
    worker.lease?.abort()
    worker.lease = undefined
    if (worker.openPolls > 0) return
    if (worker.claims.size === 0) {
      workers.delete(worker.name)
      return
    }
    const lease = new AbortController()
    worker.lease = lease
    void clock.sleep(claimTimeoutMs, lease.signal).then(() => {
      if (lease.signal.aborted || worker.lease !== lease) return
      worker.lease = undefined
      workers.delete(worker.name)
      for (const entry of [...worker.claims.values()]) {
        settle(entry)
        entry.reject(
          new TransportError(
            `the worker "${worker.name}" went away while it held ${describe(entry.trigger)}: no answer and no poll for ${claimTimeoutMs} ms`,
            true,
          ),
        )
      }
    })
  }

  /** Takes an entry out of every structure; the caller resolves or rejects it. */
  function settle(entry: Entry): void {
    open.delete(entry.trigger.id)
    const index = queued.indexOf(entry)
    if (index >= 0) queued.splice(index, 1)
    const holder = entry.worker
    if (holder !== undefined) {
      holder.claims.delete(entry.trigger.id)
      entry.worker = undefined
      if (holder.claims.size === 0 && holder.openPolls === 0) {
        holder.lease?.abort()
        holder.lease = undefined
        workers.delete(holder.name)
      }
    }
  }

  function claim(entry: Entry, worker: WorkerState): Trigger {
    const index = queued.indexOf(entry)
    if (index >= 0) queued.splice(index, 1)
    entry.worker = worker
    worker.claims.set(entry.trigger.id, entry)
    return entry.trigger
  }

  function takeQueued(worker: WorkerState, tools: ReadonlySet<string>, max: number): Trigger[] {
    const taken: Trigger[] = []
    for (const entry of [...queued]) {
      if (taken.length >= max) break
      if (tools.has(entry.route)) taken.push(claim(entry, worker))
    }
    return taken
  }

  /** Hands a new trigger to the longest-waiting poll that serves its tool, if any. */
  function offer(entry: Entry): void {
    const index = waiters.findIndex((waiter) => waiter.tools.has(entry.route))
    if (index < 0) return
    const [waiter] = waiters.splice(index, 1) as [Waiter]
    waiter.deliver([claim(entry, waiter.worker)])
  }

  return {
    claimTimeoutMs,
    send(trigger, sendOptions) {
      if (closed) return Promise.reject(new TransportError('the worker queue is closed', false))
      const signal = sendOptions?.signal
      if (signal?.aborted === true) return Promise.reject(new TransportError('the call was cancelled before it was sent', false))
      // Call ids are unique within a run, not across the runs sharing a queue, and each attempt reuses its call's
      // id: the id a worker sees is made unique, so an answer reaches its own attempt and a late one is recognised.
      sent += 1
      const wired = { ...trigger, id: attemptTriggerId(trigger.id, sent) }
      return new Promise<Action[]>((resolve, reject) => {
        const onAbort = (): void => {
          const holder = entry.worker
          settle(entry)
          if (holder !== undefined && entry.onLateAnswer !== undefined) {
            abandoned.set(wired.id, { worker: holder.name, entry })
            for (const oldest of abandoned.keys()) {
              if (abandoned.size <= LATE_ANSWER_MEMORY) break
              abandoned.delete(oldest)
            }
          }
          reject(new TransportError('the call was abandoned (its deadline passed or it was cancelled)', false))
        }
        const entry: Entry = {
          trigger: wired,
          callId: trigger.id,
          route: routeOfTrigger(trigger),
          onLateAnswer: sendOptions?.onLateAnswer,
          resolve: (actions) => {
            signal?.removeEventListener('abort', onAbort)
            resolve(actions.map((action) => ({ ...action, id: trigger.id })))
          },
          reject: (error) => {
            signal?.removeEventListener('abort', onAbort)
            reject(error)
          },
          worker: undefined,
        }
        signal?.addEventListener('abort', onAbort, { once: true })
        open.set(wired.id, entry)
        queued.push(entry)
        offer(entry)
      })
    },

    poll(request) {
      const max = request.max ?? DEFAULT_MAX
      if (!(Number.isInteger(max) && max >= 1)) return Promise.reject(new RangeError(`poll: max must be a whole number >= 1, got ${String(request.max)}`))
      const worker = workerNamed(request.worker)
      const tools = new Set(request.tools)
      if (closed || request.signal?.aborted === true) {
        touch(worker)
        return Promise.resolve([])
      }
      const ready = takeQueued(worker, tools, max)
      if (ready.length > 0 || !(request.waitMs > 0)) {
        touch(worker)
        return Promise.resolve(ready)
      }
      worker.openPolls += 1
      worker.lease?.abort()
      worker.lease = undefined
      return new Promise<Trigger[]>((resolve) => {
        const stop = new AbortController()
        const finish = (triggers: Trigger[]): void => {
          if (stop.signal.aborted) return
          stop.abort()
          const index = waiters.indexOf(waiter)
          if (index >= 0) waiters.splice(index, 1)
          request.signal?.removeEventListener('abort', onAbort)
          worker.openPolls -= 1
          touch(worker)
          resolve(triggers)
        }
        const onAbort = (): void => {
          finish([])
        }
        const waiter: Waiter = { worker, tools, deliver: finish }
        waiters.push(waiter)
        request.signal?.addEventListener('abort', onAbort, { once: true })
        void clock.sleep(request.waitMs, stop.signal).then(() => {
          finish([])
        })
      })
    },

    answer(name, actions) {
      const worker = workers.get(name)
      const byId = new Map<string, Action[]>()
      const ignored: { id: string | null; reason: string }[] = []
      for (const action of actions) {
        if (action.id === undefined) {
          ignored.push({ id: null, reason: `a ${action.type} action must name the trigger it answers by id` })
          continue
        }
        byId.set(action.id, [...(byId.get(action.id) ?? []), action])
      }
      const accepted: string[] = []
      for (const [id, answered] of byId) {
        const entry = worker?.claims.get(id)
        const late = entry === undefined ? abandoned.get(id) : undefined
        if (late !== undefined && late.worker === name) {
          abandoned.delete(id)
          try {
            late.entry.onLateAnswer?.(answered.map((action) => ({ ...action, id: late.entry.callId })))
          } catch {
            // The attempt was given up on; a hook that throws has no caller left to tell.
          }
          ignored.push({ id, reason: 'the attempt was given up on (its deadline passed or it was cancelled) before this answer came: it is recorded as late and ignored' })
          continue
        }
        if (entry === undefined) {
          const other = open.get(id)
          const reason =
            other === undefined
              ? 'no open trigger has this id: it was answered already, its call ended (deadline or cancel), or it never existed'
              : other.worker === undefined
                ? `the trigger is not claimed yet; poll for it as "${name}" first`
                : `the trigger is held by another worker`
          ignored.push({ id, reason })
          continue
        }
        settle(entry)
        entry.resolve(answered)
        accepted.push(id)
      }
      if (worker !== undefined && workers.get(name) === worker) touch(worker)
      return { accepted, ignored }
    },

    stats() {
      let claimed = 0
      for (const worker of workers.values()) claimed += worker.claims.size
      return { queued: queued.length, claimed, polling: waiters.length, workers: workers.size }
    },

    close() {
      closed = true
      abandoned.clear()
      for (const waiter of [...waiters]) waiter.deliver([])
      for (const entry of [...open.values()]) {
        settle(entry)
        entry.reject(new TransportError('the worker queue was closed', false))
      }
      for (const worker of workers.values()) worker.lease?.abort()
      workers.clear()
      return Promise.resolve()
    },
  }
}

function describe(trigger: Trigger): string {
  return `${trigger.type === 'tool.execute' ? trigger.name : 'an llm.execute'} (trigger ${trigger.id}, attempt ${trigger.attempt})`
}
