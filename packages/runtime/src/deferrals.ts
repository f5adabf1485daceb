import type { DecisionVia } from '@locus/journal'
import type { JsonValue } from '@locus/outcome'
import { offAbort, onAbort } from '@locus/retry'
import { type RunStore, validateDeferredId } from '@locus/store'
import type { z } from 'zod'
import { RuntimeInputError } from './errors.js'
import { describeZodIssues } from './zod-issues.js'

/** Who settled a deferral and through which surface; the run's `deferred_settled` line records both. */
export interface DeferredDecider {
  /** An API key's name (or `anonymous`), the inspector's signed-in key, `cli`, `callback`... */
  readonly decidedBy?: string | undefined
  readonly via?: DecisionVia | undefined
}

/** An answer to a deferral: the tool's result, or the seed's `tool.error`, and who gave it. */
export type DeferredAnswer =
  | ({ readonly kind: 'resolved'; readonly result: JsonValue } & DeferredDecider)
  | ({ readonly kind: 'rejected'; readonly error: string; readonly retryable: boolean; readonly code?: string | undefined } & DeferredDecider)

/** What a deferral's wait ends with: an answer, or its deadline passing first ({@link Deferrals.expire}). */
export const DEFERRAL_EXPIRED = Symbol('deferral expired')

/** What resolving or rejecting a deferral did. */
export type DeferredAnswerOutcome =
  | { readonly ok: true; readonly status: 'accepted' | 'already-answered' | 'stored' }
  | { readonly ok: false; readonly status: 'invalid'; readonly issues: readonly string[] }
  | { readonly ok: false; readonly status: 'conflict' | 'unknown'; readonly message: string }

/** Where answers given from another process are kept for a run: its store, looked at every `pollMs`. */
export interface DeferredAnswerSource {
  readonly pollMs: number
  read(ids: readonly string[]): Promise<ReadonlyMap<string, string>>
  /** Removes a kept answer the run refused, so the deferral can be answered again. */
  withdraw(id: string, answer: string): Promise<boolean>
  /** Calls `onKept` when the store says something was kept for the run (a hint to look now); returns the stop function. Absent: look every `pollMs` only. */
  readonly watch?: ((onKept: () => void) => () => void) | undefined
}

/** The answers a run's store keeps, looked at every `pollMs` while a deferral waits, and at once when the store says one was kept. */
export function storeAnswerSource(store: RunStore, runId: string, pollMs: number): DeferredAnswerSource {
  const watch = store.watchDeferredAnswers === undefined ? undefined : (onKept: () => void) => store.watchDeferredAnswers?.(runId, onKept) ?? (() => undefined)
  return { pollMs, read: (ids) => store.readDeferredAnswers(runId, ids), withdraw: (id, answer) => store.withdrawDeferredAnswer(runId, id, answer), watch }
}

/** Told when a kept answer is refused: the deferral stays open, and the answer was withdrawn from the store. */
export type RefusedAnswerListener = (id: string, problems: readonly string[]) => void

/**
 * One waiting deferral: no timer and no promise chain of its own beyond the
 * caller's, since a run may hold thousands of them open.
 */
interface OpenDeferral {
  readonly output: z.ZodType | undefined
  readonly resolve: (answer: DeferredAnswer | typeof DEFERRAL_EXPIRED) => void
  readonly reject: (error: Error) => void
  readonly signal: AbortSignal
  readonly onAbort: () => void
}

/** The decision alone: the same answer given by someone else, or through another surface, is the same answer. */
function decisionOf(answer: DeferredAnswer): string {
  return answer.kind === 'resolved'
    ? JSON.stringify(['resolved', answer.result])
    : JSON.stringify(['rejected', answer.error, answer.retryable, answer.code ?? null])
}

function sameAnswer(left: DeferredAnswer, right: DeferredAnswer): boolean {
  return decisionOf(left) === decisionOf(right)
}

/** A decider's fields that are set, to spread into an answer. */
export function deciderFields(decider: DeferredDecider | undefined): DeferredDecider {
  return decider === undefined ? {} : deciderOf(decider)
}

/** A decider's fields as they may travel: a non-empty name, a known surface; anything else is left out. */
function deciderOf(parsed: Partial<DeferredDecider>): DeferredDecider {
  const vias: readonly unknown[] = ['api', 'ui', 'cli', 'callback', 'host']
  return {
    ...(typeof parsed.decidedBy === 'string' && parsed.decidedBy !== '' ? { decidedBy: parsed.decidedBy } : {}),
    ...(vias.includes(parsed.via) ? { via: parsed.via } : {}),
  }
}

function parseAnswer(text: string): DeferredAnswer | undefined {
  try {
    const parsed = JSON.parse(text) as (Partial<DeferredAnswer> & Partial<DeferredDecider>) | null
    if (parsed?.kind === 'resolved' && 'result' in parsed) return { kind: 'resolved', result: parsed.result, ...deciderOf(parsed) }
    if (parsed?.kind === 'rejected' && typeof parsed.error === 'string') {
      return { kind: 'rejected', error: parsed.error, retryable: parsed.retryable === true, ...(typeof parsed.code === 'string' ? { code: parsed.code } : {}), ...deciderOf(parsed) }
    }
  } catch {
    // Not an answer this runtime wrote: ignored below.
  }
  return undefined
}

/**
 * The deferrals of one run (a child shares its root's): open ones wait here
 * for an answer from the handle (in this process) or from the run's store
 * (another process, such as `locus resolve` or a server, kept it there).
 * One poll serves every open deferral of the run, and only while one is
 * open. Each deferral takes one answer; the same answer again is a no-op, a
 * different one a conflict.
 */
export class Deferrals {
  private readonly open = new Map<string, OpenDeferral>()
  private readonly answered = new Map<string, DeferredAnswer | typeof DEFERRAL_EXPIRED>()
  /** Kept answers refused whose withdrawal failed, by id and text, so the same text is not judged twice. */
  private readonly refused = new Set<string>()
  private poll: NodeJS.Timeout | undefined
  private unwatch: (() => void) | undefined
  private looking: Promise<void> | undefined
  private lookSoon = false

  constructor(
    private readonly source: DeferredAnswerSource | undefined,
    private readonly onRefused: RefusedAnswerListener = () => undefined,
  ) {}

  /** The ids waiting now. */
  pending(): string[] {
    return [...this.open.keys()]
  }

  /** Registers an open deferral; resolves with its answer. An answer already kept by the store settles it at its first look. */
  wait(id: string, output: z.ZodType | undefined, signal: AbortSignal): Promise<DeferredAnswer | typeof DEFERRAL_EXPIRED> {
    return new Promise<DeferredAnswer | typeof DEFERRAL_EXPIRED>((resolve, reject) => {
      if (signal.aborted) {
        reject(abortReason(signal))
        return
      }
      const abandon = (): void => {
        this.close(id)
        reject(abortReason(signal))
      }
      // Through one listener per signal: thousands of deferrals may wait on the run's signal.
      onAbort(signal, abandon)
      this.open.set(id, { output, resolve, reject, signal, onAbort: abandon })
      this.watch()
    })
  }

  /** Answers an open deferral of this run (validating a result against the tool's output schema). */
  answer(id: string, answer: DeferredAnswer): DeferredAnswerOutcome {
    const done = this.answered.get(id)
    if (done === DEFERRAL_EXPIRED) return { ok: false, status: 'conflict', message: `Deferral ${id} expired before this answer came; its onTimeout policy settled it.` }
    if (done !== undefined) {
      return sameAnswer(done, answer)
        ? { ok: true, status: 'already-answered' }
        : { ok: false, status: 'conflict', message: `Deferral ${id} was already answered differently; an answer is final.` }
    }
    const open = this.open.get(id)
    if (open === undefined) return { ok: false, status: 'unknown', message: `No open deferral ${id} in this execution.` }
    if (answer.kind === 'resolved' && open.output !== undefined) {
      const parsed = open.output.safeParse(answer.result)
      if (!parsed.success) return { ok: false, status: 'invalid', issues: describeZodIssues(parsed.error, 'result') }
    }
    this.close(id)
    this.answered.set(id, answer)
    open.resolve(answer)
    return { ok: true, status: 'accepted' }
  }

  /**
   * Ends an open deferral at its deadline: its wait resolves with
   * {@link DEFERRAL_EXPIRED}, and a later answer is a conflict. False when it
   * is not open (an answer came first, and its wait has it).
   */
  expire(id: string): boolean {
    const open = this.open.get(id)
    if (open === undefined) return false
    this.close(id)
    this.answered.set(id, DEFERRAL_EXPIRED)
    open.resolve(DEFERRAL_EXPIRED)
    return true
  }

  private close(id: string): void {
    const open = this.open.get(id)
    if (open === undefined) return
    offAbort(open.signal, open.onAbort)
    this.open.delete(id)
    if (this.open.size === 0 && this.poll !== undefined) {
      clearInterval(this.poll)
      this.poll = undefined
      this.unwatch?.()
      this.unwatch = undefined
    }
  }

  /** Looks at the store once soon (deferrals opened together share that look), then every `pollMs` while any is open. */
  private watch(): void {
    const source = this.source
    if (source === undefined) return
    if (!this.lookSoon) {
      this.lookSoon = true
      setImmediate(() => {
        this.lookSoon = false
        void this.look(source)
      })
    }
    // Another process may answer while this one waits: the store may say so at once, and it is looked at every pollMs.
    if (this.poll === undefined) {
      this.poll = setInterval(() => {
        void this.look(source)
      }, source.pollMs)
      this.unwatch = source.watch?.(() => {
        void this.look(source)
      })
    }
  }

  /** Reads the run's store once now (or waits for the read under way), so an answer kept there is seen before a deadline is applied. */
  async lookNow(): Promise<void> {
    if (this.source !== undefined) await this.look(this.source)
  }

  private look(source: DeferredAnswerSource): Promise<void> {
    if (this.looking !== undefined) return this.looking
    if (this.open.size === 0) return Promise.resolve()
    const looking = this.readKept(source).finally(() => {
      this.looking = undefined
    })
    this.looking = looking
    return looking
  }

  private async readKept(source: DeferredAnswerSource): Promise<void> {
    try {
      for (const [id, text] of await source.read([...this.open.keys()])) {
        if (this.refused.has(`${id}\n${text}`)) continue
        const answer = parseAnswer(text)
        const outcome = answer === undefined ? undefined : this.answer(id, answer)
        if (outcome !== undefined && outcome.status !== 'invalid') continue
        // Refused: the deferral stays open, and the answer leaves the store so a right one can be given.
        const problems = outcome?.status === 'invalid' ? outcome.issues : ['the kept answer is not an answer (a resolved result or a rejection)']
        if (!(await source.withdraw(id, text).catch(() => false))) this.refused.add(`${id}\n${text}`)
        this.onRefused(id, problems)
      }
    } catch {
      // The store could not be read this time (a dropped connection, say): the next look tries again.
    }
  }
}

function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason ?? 'the deferral was abandoned'))
}

/**
 * Keeps an answer for a deferral of a run in its store, for the process that
 * executes the run (it looks there while it waits) or for the next `resume`.
 * The first answer is final: the same one again is `already-answered`, a
 * different one a `conflict`.
 */
export async function keepDeferredAnswer(store: RunStore, runId: string, id: string, answer: DeferredAnswer): Promise<DeferredAnswerOutcome> {
  try {
    validateDeferredId(id)
  } catch {
    throw new RuntimeInputError('RUN_OPTIONS_INVALID', `Invalid deferral id "${id}": ids are letters, digits, ".", "_" and "-", as the run's deferred_open line shows them.`, ['deferredId: invalid'])
  }
  const text = JSON.stringify(answer)
  const kept = await store.putDeferredAnswer(runId, id, text)
  if (kept.stored) return { ok: true, status: 'stored' }
  const earlier = parseAnswer(kept.answer)
  return earlier !== undefined && sameAnswer(earlier, answer)
    ? { ok: true, status: 'already-answered' }
    : { ok: false, status: 'conflict', message: `Deferral ${id} already has a different answer; an answer is final.` }
}
