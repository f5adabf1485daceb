import type { JournalLine, JournalLineInput, RunView, SignalVia, UpdateCompletedLine, UpdateFailedLine, UpdateReceivedLine } from '@locus/journal'
import { type JsonValue, prepareWorkflowResult } from '@locus/outcome'
import type { RunStore } from '@locus/store'
import type { DeferredAnswerSource } from './deferrals.js'
import type { OnUpdateOptions, UpdateHandler, UpdateSet } from './define.js'
import { describeZodIssues } from './zod-issues.js'

/**
 * A run's updates travel like its signals (see signals.ts): a sender keeps an
 * accepted update in the run's store, beside its deferral answers, under ids
 * `update-<n>` (n = 0, 1, 2...; first free slot wins, and a PostgreSQL store
 * queues a parked run again on the put). The process executing the run reads
 * each slot, journals it as `update_received` with `updateSeq: n`, runs the
 * `onUpdate` handler, and journals `update_completed` or `update_failed`; the
 * sender waits for that line.
 */
export const UPDATE_SLOT_PREFIX = 'update-'

/**
 * A rejected update (its input failed the schema or `validate`) is kept as an
 * audit record `audit-update-<updateId>` among the run's deferral answers:
 * never journaled, never read by the run (so outside the replay path), and
 * it wakes no parked run. {@link rejectedUpdatesOf} lists them.
 */
export const UPDATE_AUDIT_PREFIX = 'audit-update-'

export const updateSlotId = (seq: number): string => `${UPDATE_SLOT_PREFIX}${String(seq)}`

/** What a sender keeps in an update slot. */
export interface KeptUpdate {
  readonly kind: 'update'
  readonly updateId: string
  readonly name: string
  readonly input: JsonValue
  readonly from: string
  readonly via: SignalVia
}

/** The audit record of an update refused before anything was journaled. */
export interface RejectedUpdate {
  readonly kind: 'update_rejected'
  readonly updateId: string
  readonly name: string
  readonly input: unknown
  /** `schema`: the input did not fit the declared input schema; `validate`: the workflow's `validate` refused it. */
  readonly stage: 'schema' | 'validate'
  readonly issues: readonly string[]
  readonly from: string
  readonly via: SignalVia
  /** ISO 8601, wall clock of the sender. */
  readonly at: string
}

/** What sending an update did. */
export type UpdateOutcome =
  | { readonly ok: true; readonly status: 'completed'; readonly updateId: string; readonly result: JsonValue }
  /** Accepted and kept; the wait ran out before the handler finished. The result comes later (the journal's `update_completed`). */
  | { readonly ok: true; readonly status: 'accepted'; readonly updateId: string }
  | { readonly ok: false; readonly status: 'failed'; readonly updateId: string; readonly error: string }
  | { readonly ok: false; readonly status: 'unknown'; readonly message: string; readonly declared: readonly string[] }
  /** Refused by the input schema (`invalid`) or `validate` (`rejected`): nothing journaled, an audit record kept. */
  | { readonly ok: false; readonly status: 'invalid'; readonly updateId: string; readonly issues: readonly string[] }
  | { readonly ok: false; readonly status: 'rejected'; readonly updateId: string; readonly issues: readonly string[] }
  | { readonly ok: false; readonly status: 'finished'; readonly message: string; readonly updateId?: string }

type Refusal = Extract<UpdateOutcome, { status: 'unknown' }> | { readonly ok: false; readonly status: 'invalid' | 'rejected'; readonly issues: readonly string[] }

/** Checks an update against a workflow's declared ones: its name, its input schema, then `validate`. */
export function checkUpdate(updates: UpdateSet | undefined, workflow: string, name: string, input: unknown): Refusal | { readonly ok: true; readonly input: JsonValue } {
  const declared = Object.keys(updates ?? {})
  const declaration = updates === undefined || !Object.hasOwn(updates, name) ? undefined : updates[name]
  if (declaration === undefined) {
    return { ok: false, status: 'unknown', declared, message: `Workflow "${workflow}" declares no update "${name}". Declared: ${declared.join(', ') || '(none)'}.` }
  }
  const parsed = declaration.input.safeParse(input)
  if (!parsed.success) return { ok: false, status: 'invalid', issues: describeZodIssues(parsed.error, 'input') }
  const value = (input ?? null) as JsonValue
  let verdict: string | readonly string[] | undefined
  try {
    verdict = declaration.validate?.(value)
  } catch (error) {
    verdict = `validate threw: ${error instanceof Error ? error.message : String(error)}`
  }
  const issues = verdict === undefined ? [] : typeof verdict === 'string' ? [verdict] : [...verdict]
  if (issues.length > 0) return { ok: false, status: 'rejected', issues }
  return { ok: true, input: value }
}

/** Keeps an accepted update in the run's first free update slot from `start` (the count its journal holds is a good start). */
export async function keepUpdate(store: RunStore, runId: string, update: KeptUpdate, start: number): Promise<number> {
  const text = JSON.stringify(update)
  for (let seq = start; ; seq += 1) {
    const kept = await store.putDeferredAnswer(runId, updateSlotId(seq), text)
    if (kept.stored) return seq
  }
}

/** Keeps the audit record of a rejected update; the run never reads it. */
export async function auditRejectedUpdate(store: RunStore, runId: string, record: RejectedUpdate): Promise<void> {
  await store.putDeferredAnswer(runId, `${UPDATE_AUDIT_PREFIX}${record.updateId}`, JSON.stringify(record))
}

/** The rejected updates of a run, oldest first, from their audit records. */
export async function rejectedUpdatesOf(store: RunStore, runId: string): Promise<RejectedUpdate[]> {
  const kept = await store.readDeferredAnswers(runId)
  const records: RejectedUpdate[] = []
  for (const [id, text] of kept) {
    if (!id.startsWith(UPDATE_AUDIT_PREFIX)) continue
    try {
      const parsed = JSON.parse(text) as Partial<RejectedUpdate> | null
      if (parsed?.kind === 'update_rejected') records.push(parsed as RejectedUpdate)
    } catch {
      // Not a record this runtime wrote: skipped.
    }
  }
  return records.sort((left, right) => left.at.localeCompare(right.at))
}

function parseKept(text: string): KeptUpdate | undefined {
  try {
    const parsed = JSON.parse(text) as Partial<KeptUpdate> | null
    if (parsed?.kind === 'update' && typeof parsed.updateId === 'string' && typeof parsed.name === 'string' && typeof parsed.from === 'string' && typeof parsed.via === 'string') {
      return parsed as KeptUpdate
    }
  } catch {
    // Not an update this runtime wrote: skipped.
  }
  return undefined
}

/** What a resume or replay carries over about updates from the journals of earlier executions. */
export interface RecordedUpdates {
  readonly received: readonly UpdateReceivedLine[]
  readonly ends: ReadonlyMap<string, UpdateCompletedLine | UpdateFailedLine>
}

/** The updates a run's fold holds: what a resume or replay starts its inbox from. */
export function recordedUpdatesOf(view: RunView): RecordedUpdates {
  return { received: view.updates(), ends: view.updateEnds() }
}

/** What the inbox needs of its run: to journal a line and commit it, and to count a handler as work in flight. */
export interface UpdateRun {
  emit(line: JournalLineInput): JournalLine
  commitStart(): Promise<void> | undefined
  track<T>(call: () => Promise<T>): Promise<T>
}

/** How many mailbox slots one look reads. */
const LOOK_BATCH = 16

/**
 * The updates of one run: the ones its journal holds (an update with no end
 * line is buffered until its handler exists, then run), and the mailbox it
 * reads new ones from while the script runs.
 */
export class UpdateInbox {
  private readonly received: UpdateReceivedLine[] = []
  /** Update ids that ended (journaled) or whose handler started in this execution: never run (again). */
  private readonly done = new Set<string>()
  private readonly handlers = new Map<string, UpdateHandler>()
  /** The ends earlier executions journaled, by update id: what a `restore` is given. */
  private readonly recordedEnds: ReadonlyMap<string, UpdateCompletedLine | UpdateFailedLine>
  private readonly running = new Set<Promise<void>>()
  private next = 0
  private poll: NodeJS.Timeout | undefined
  private unwatch: (() => void) | undefined
  private looking = false
  private closed = false
  /** Set once the execution ends without waiting for its handlers: a late end is not journaled (a resume runs the update again). */
  private silenced = false

  constructor(
    private readonly run: UpdateRun,
    private readonly source: DeferredAnswerSource | undefined,
    private readonly declared: UpdateSet | undefined,
    recorded: RecordedUpdates,
  ) {
    for (const line of recorded.received) {
      this.received.push(line)
      this.next = Math.max(this.next, line.updateSeq + 1)
    }
    for (const updateId of recorded.ends.keys()) this.done.add(updateId)
    this.recordedEnds = recorded.ends
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

  /** Stops reading the mailbox; handlers already running go on (see {@link settled}). */
  close(): void {
    this.closed = true
    clearInterval(this.poll)
    this.poll = undefined
    this.unwatch?.()
    this.unwatch = undefined
  }

  /** Handlers still running journal nothing from now on (after a cancel or a suspension: their run_end or stop comes first). */
  silence(): void {
    this.silenced = true
  }

  /** Resolves once every handler started so far has journaled its end. */
  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running])
  }

  /** Reads new mailbox slots, journals each update (durably) before its handler runs, then dispatches. */
  async look(): Promise<void> {
    const source = this.source
    if (source === undefined || this.looking || this.closed) return
    this.looking = true
    try {
      for (;;) {
        const ids = Array.from({ length: LOOK_BATCH }, (_, index) => updateSlotId(this.next + index))
        const found = await source.read(ids)
        let taken = 0
        for (const id of ids) {
          const text = found.get(id)
          // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- `closed` changes across the await
          if (text === undefined || this.closed) break
          const kept = parseKept(text)
          const updateSeq = this.next
          this.next += 1
          taken += 1
          if (kept === undefined) continue
          // Counted as work in flight from here until its handler starts: the run is not "only waiting"
          // (a PostgreSQL worker would park it) between journaling the update and running it.
          let release = (): void => undefined
          void this.run.track(
            () =>
              new Promise<void>((resolve) => {
                release = resolve
              }),
          )
          try {
            const line = this.run.emit({ type: 'update_received', updateId: kept.updateId, name: kept.name, input: kept.input, from: kept.from, via: kept.via, updateSeq }) as UpdateReceivedLine
            await this.run.commitStart()
            this.received.push(line)
            this.dispatch(line)
          } finally {
            release()
          }
        }
        if (taken < LOOK_BATCH) return
      }
    } catch {
      // The store could not be read this time: the next look tries again.
    } finally {
      this.looking = false
    }
  }

  /** Runs an update's handler once, unless its end is journaled or it runs already; without a handler it stays buffered. */
  private dispatch(line: UpdateReceivedLine): void {
    if (this.done.has(line.updateId)) return
    const handler = this.handlers.get(line.name)
    if (handler === undefined) return
    this.done.add(line.updateId)
    const output = this.declared?.[line.name]?.output
    const running = this.run
      .track(async () => {
        let end: JournalLineInput
        try {
          const value: unknown = await handler(line.input, { from: line.from, via: line.via, updateId: line.updateId })
          const checked = output?.safeParse(value)
          if (checked !== undefined && !checked.success) {
            end = { type: 'update_failed', updateId: line.updateId, name: line.name, error: `the handler's result does not fit the output schema: ${describeZodIssues(checked.error, 'output').join('; ')}` }
          } else {
            end = { type: 'update_completed', updateId: line.updateId, name: line.name, output: prepareWorkflowResult(value ?? null) }
          }
        } catch (error) {
          end = { type: 'update_failed', updateId: line.updateId, name: line.name, error: (error instanceof Error ? error.message : String(error)) || 'the handler threw' }
        }
        if (this.silenced) return
        this.run.emit(end)
        await this.run.commitStart()
      })
      .catch(() => undefined)
      .finally(() => {
        this.running.delete(running)
      })
    this.running.add(running)
  }

  /**
   * Registers the handler of `name`. In mailbox order, each update of that
   * name an earlier execution completed goes to `restore` (not the handler:
   * it never runs twice), and each received and not ended to the handler.
   */
  onUpdate(name: string, handler: UpdateHandler, options?: OnUpdateOptions): void {
    this.handlers.set(name, handler)
    for (const line of this.received) {
      if (line.name !== name) continue
      const end = this.recordedEnds.get(line.updateId)
      if (end?.type === 'update_completed') options?.restore?.(line.input, end.output)
      this.dispatch(line)
    }
  }
}
