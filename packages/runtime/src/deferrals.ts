import type { JsonValue } from '@locus/outcome'
import { offAbort, onAbort } from '@locus/retry'
import { type RunStore, validateDeferredId } from '@locus/store'
import type { z } from 'zod'
import { RuntimeInputError } from './errors.js'
import { describeZodIssues } from './zod-issues.js'

/** An answer to a deferral: the tool's result, or the seed's `tool.error`. */
export type DeferredAnswer =
  | { readonly kind: 'resolved'; readonly result: JsonValue }
  | { readonly kind: 'rejected'; readonly error: string; readonly retryable: boolean; readonly code?: string | undefined }

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
}

/** The answers a run's store keeps, looked at every `pollMs` while a deferral waits. */
export function storeAnswerSource(store: RunStore, runId: string, pollMs: number): DeferredAnswerSource {
  return { pollMs, read: (ids) => store.readDeferredAnswers(runId, ids), withdraw: (id, answer) => store.withdrawDeferredAnswer(runId, id, answer) }
}

/** Told when a kept answer is refused: the deferral stays open, and the answer was withdrawn from the store. */
export type RefusedAnswerListener = (id: string, problems: readonly string[]) => void

/**
 * One waiting deferral: no timer and no promise chain of its own beyond the
 * caller's, since a run may hold thousands of them open.
 */
interface OpenDeferral {
  readonly output: z.ZodType | undefined
  readonly resolve: (answer: DeferredAnswer) => void
  readonly reject: (error: Error) => void
  readonly signal: AbortSignal
  readonly onAbort: () => void
}

function sameAnswer(left: DeferredAnswer, right: DeferredAnswer): boolean {
  return JSON.stringify(left) === JSON.stringify(right)
}

function parseAnswer(text: string): DeferredAnswer | undefined {
  try {
    const parsed = JSON.parse(text) as Partial<DeferredAnswer> | null
    if (parsed?.kind === 'resolved' && 'result' in parsed) return parsed as DeferredAnswer
    if (parsed?.kind === 'rejected' && typeof parsed.error === 'string') return { ...parsed, retryable: parsed.retryable === true } as DeferredAnswer
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
  private readonly answered = new Map<string, DeferredAnswer>()
  /** Kept answers refused whose withdrawal failed, by id and text, so the same text is not judged twice. */
  private readonly refused = new Set<string>()
  private poll: NodeJS.Timeout | undefined
  private looking = false
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
  wait(id: string, output: z.ZodType | undefined, signal: AbortSignal): Promise<DeferredAnswer> {
    return new Promise<DeferredAnswer>((resolve, reject) => {
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

  private close(id: string): void {
    const open = this.open.get(id)
    if (open === undefined) return
    offAbort(open.signal, open.onAbort)
    this.open.delete(id)
    if (this.open.size === 0 && this.poll !== undefined) {
      clearInterval(this.poll)
      this.poll = undefined
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
    // Another process may answer while this one waits.
    this.poll ??= setInterval(() => {
      void this.look(source)
    }, source.pollMs)
  }

  private async look(source: DeferredAnswerSource): Promise<void> {
    if (this.looking || this.open.size === 0) return
    this.looking = true
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
    } finally {
      this.looking = false
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
