import type { JournalLine, JournalLineInput, RunView, SignalReceivedLine, SignalVia, SignalWaitEndLine } from '@locus/journal'
import type { JsonValue } from '@locus/outcome'
import type { RunStore } from '@locus/store'
import type { z } from 'zod'
import type { DeferredAnswerSource } from './deferrals.js'
import type { SignalHandler } from './define.js'
import { describeZodIssues } from './zod-issues.js'

/**
 * A run's mailbox lives beside its deferral answers in the store, under ids
 * `signal-<n>` (n = 0, 1, 2...): a sender takes the first free slot (the
 * store's first put wins), so senders on any machine never overwrite each
 * other, and a PostgreSQL store wakes a parked run on the put as it does for
 * an answer. The run journals each slot it reads as `signal_received` with
 * `signalSeq: n`, and reads from the slot after the last one its journal holds.
 */
export const SIGNAL_SLOT_PREFIX = 'signal-'

export const signalSlotId = (seq: number): string => `${SIGNAL_SLOT_PREFIX}${String(seq)}`

/** What a sender keeps in a mailbox slot. */
export interface KeptSignal {
  readonly kind: 'signal'
  readonly name: string
  readonly payload: JsonValue
  readonly from: string
  readonly via: SignalVia
}

/** What sending a signal did. */
export type SignalOutcome =
  | { readonly ok: true; readonly status: 'stored'; readonly signalSeq: number }
  | { readonly ok: false; readonly status: 'unknown'; readonly message: string; readonly declared: readonly string[] }
  | { readonly ok: false; readonly status: 'invalid'; readonly issues: readonly string[] }
  | { readonly ok: false; readonly status: 'finished'; readonly message: string }

/** Checks a signal against a workflow's declared ones: its name, then its payload. */
export function checkSignal(signals: Readonly<Record<string, z.ZodType>> | undefined, workflow: string, name: string, payload: unknown): Exclude<SignalOutcome, { ok: true }> | { readonly ok: true; readonly payload: JsonValue } {
  const declared = Object.keys(signals ?? {})
  const schema = signals?.[name]
  if (schema === undefined || !Object.hasOwn(signals ?? {}, name)) {
    return { ok: false, status: 'unknown', declared, message: `Workflow "${workflow}" declares no signal "${name}". Declared: ${declared.join(', ') || '(none)'}.` }
  }
  const parsed = schema.safeParse(payload)
  if (!parsed.success) return { ok: false, status: 'invalid', issues: describeZodIssues(parsed.error, 'payload') }
  return { ok: true, payload: (payload ?? null) as JsonValue }
}

/**
 * Keeps a signal in the run's mailbox, in the first free slot from `from`
 * (the count the run's journal holds is a good start: a slot below it is
 * taken). Nothing here checks the signal; {@link checkSignal} does first.
 */
export async function keepSignal(store: RunStore, runId: string, signal: KeptSignal, start: number): Promise<number> {
  const text = JSON.stringify(signal)
  for (let seq = start; ; seq += 1) {
    const kept = await store.putDeferredAnswer(runId, signalSlotId(seq), text)
    if (kept.stored) return seq
  }
}

function parseKept(text: string): KeptSignal | undefined {
  try {
    const parsed = JSON.parse(text) as Partial<KeptSignal> | null
    if (parsed?.kind === 'signal' && typeof parsed.name === 'string' && typeof parsed.from === 'string' && typeof parsed.via === 'string') return parsed as KeptSignal
  } catch {
    // Not a signal this runtime wrote: skipped.
  }
  return undefined
}

/** What a resume carries over about signals from the journals of earlier executions. */
export interface RecordedSignals {
  readonly received: readonly SignalReceivedLine[]
  readonly waits: ReadonlyMap<string, { readonly dueAt?: number; readonly end?: SignalWaitEndLine }>
}

/** The signals and waits a run's fold holds: what a resume or replay starts its inbox from. */
export function recordedSignalsOf(view: RunView): RecordedSignals {
  const waits = new Map<string, { dueAt?: number; end?: SignalWaitEndLine }>()
  for (const open of view.openSignalWaits()) waits.set(open.waitId, open.dueAt === undefined ? {} : { dueAt: Date.parse(open.dueAt) })
  for (const [waitId, end] of view.signalWaitEnds()) waits.set(waitId, { end })
  return { received: view.signals(), waits }
}

interface Waiter {
  readonly name: string
  readonly deliver: (signal: SignalReceivedLine) => void
}

/** How many mailbox slots one look reads. */
const LOOK_BATCH = 16

/**
 * The signals of one run: the ones its journal holds (buffered until a wait
 * or handler takes each, once), and the mailbox it reads new ones from while
 * the script runs. A child run shares its root's.
 */
/** What the inbox needs of its run: to journal a line and commit it before anyone sees it (a RunState has both). */
export interface InboxRun {
  emit(line: JournalLineInput): JournalLine
  commitStart(): Promise<void> | undefined
}

export class SignalInbox {
  private readonly received: SignalReceivedLine[] = []
  /** Signal seqs a wait or handler took, here or (a wait's) in an earlier execution. */
  private readonly taken = new Set<number>()
  private readonly waiters = new Set<Waiter>()
  private readonly handlers = new Map<string, SignalHandler>()
  private next = 0
  private poll: NodeJS.Timeout | undefined
  private unwatch: (() => void) | undefined
  private looking = false
  private closed = false

  constructor(
    private readonly run: InboxRun,
    private readonly source: DeferredAnswerSource | undefined,
    readonly recorded: RecordedSignals,
  ) {
    for (const line of recorded.received) {
      this.received.push(line)
      this.next = Math.max(this.next, line.signalSeq + 1)
    }
    for (const wait of recorded.waits.values()) if (wait.end?.signalSeq !== undefined) this.taken.add(wait.end.signalSeq)
  }

  /** Starts looking at the mailbox: once now, then every `pollMs` until {@link close}. */
  open(): void {
    if (this.source === undefined || this.closed) return
    const source = this.source
    setImmediate(() => {
      void this.look()
    })
    this.poll = setInterval(() => {
      void this.look()
    }, source.pollMs)
    this.poll.unref()
    // A store that says when something was kept for the run (PostgreSQL's NOTIFY) is looked at then too.
    this.unwatch = source.watch?.(() => {
      void this.look()
    })
  }

  close(): void {
    this.closed = true
    clearInterval(this.poll)
    this.poll = undefined
    this.unwatch?.()
    this.unwatch = undefined
  }

  /** Reads new mailbox slots, journals each signal (durably) before any wait or handler sees it, then delivers. */
  async look(): Promise<void> {
    const source = this.source
    if (source === undefined || this.looking || this.closed) return
    this.looking = true
    try {
      for (;;) {
        const ids = Array.from({ length: LOOK_BATCH }, (_, index) => signalSlotId(this.next + index))
        const found = await source.read(ids)
        let taken = 0
        for (const id of ids) {
          const text = found.get(id)
          // The execution may have ended during the read above.
          // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- `closed` changes across the await
          if (text === undefined || this.closed) break
          const kept = parseKept(text)
          const signalSeq = this.next
          this.next += 1
          taken += 1
          if (kept === undefined) continue
          const line = this.run.emit({ type: 'signal_received', name: kept.name, payload: kept.payload, from: kept.from, via: kept.via, signalSeq }) as SignalReceivedLine
          await this.run.commitStart()
          this.received.push(line)
          this.dispatch(line)
        }
        if (taken < LOOK_BATCH) return
      }
    } catch {
      // The store could not be read this time: the next look tries again.
    } finally {
      this.looking = false
    }
  }

  /**
   * A signal sent with the run's start, journaled by the start itself: kept
   * like one read from the mailbox, whose reading goes on after it.
   */
  receivedAtStart(line: SignalReceivedLine): void {
    this.received.push(line)
    this.next = Math.max(this.next, line.signalSeq + 1)
  }

  /** Gives a signal to its handler, or the first wait on its name; else it stays buffered. */
  private dispatch(line: SignalReceivedLine): void {
    if (this.taken.has(line.signalSeq)) return
    const handler = this.handlers.get(line.name)
    if (handler !== undefined) {
      this.taken.add(line.signalSeq)
      void Promise.resolve()
        .then(() => handler(line.payload, { from: line.from, via: line.via }))
        .catch((error: unknown) => {
          this.run.emit({ type: 'log', level: 'error', message: `the onSignal("${line.name}") handler threw on signal ${String(line.signalSeq)}: ${error instanceof Error ? error.message : String(error)}`, data: { signal: line.name, signalSeq: line.signalSeq } })
        })
      return
    }
    for (const waiter of this.waiters) {
      if (waiter.name !== line.name) continue
      this.taken.add(line.signalSeq)
      this.waiters.delete(waiter)
      waiter.deliver(line)
      return
    }
  }

  /** The first received signal of `name` nothing took yet. */
  private buffered(name: string): SignalReceivedLine | undefined {
    return this.received.find((line) => line.name === name && !this.taken.has(line.signalSeq))
  }

  /** The payload a recorded signal carried. */
  payloadOf(signalSeq: number): JsonValue {
    return this.received.find((line) => line.signalSeq === signalSeq)?.payload ?? null
  }

  /** Registers the handler of `name`; signals already received and not taken go to it now, in order. */
  onSignal(name: string, handler: SignalHandler): void {
    this.handlers.set(name, handler)
    for (const line of this.received) if (line.name === name) this.dispatch(line)
  }

  /** Waits for the next signal of `name` no one took; resolves undefined on `dueAt` or abort. */
  take(name: string): SignalReceivedLine | undefined {
    const line = this.buffered(name)
    if (line !== undefined) this.taken.add(line.signalSeq)
    return line
  }

  wait(name: string, signal: AbortSignal, until: Promise<void>): Promise<SignalReceivedLine | undefined> {
    return new Promise((resolve) => {
      const waiter: Waiter = {
        name,
        deliver: (line) => {
          signal.removeEventListener('abort', stop)
          resolve(line)
        },
      }
      const stop = (): void => {
        if (this.waiters.delete(waiter)) resolve(undefined)
      }
      signal.addEventListener('abort', stop, { once: true })
      void until.then(stop)
      this.waiters.add(waiter)
      // A look now: the signal may be in the mailbox already.
      void this.look()
    })
  }
}
