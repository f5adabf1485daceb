import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { JsonValue } from '@locus/outcome'
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

interface OpenDeferral {
  readonly output: z.ZodType | undefined
  settle(answer: DeferredAnswer): void
}

/** The directory of answers given while no process held the run: `<run>/deferred/<id>.json`. */
export const DEFERRED_DIR = 'deferred'

function sameAnswer(left: DeferredAnswer, right: DeferredAnswer): boolean {
  return JSON.stringify(left) === JSON.stringify(right)
}

/**
 * The deferrals of one execution: open ones wait here for an answer from the
 * handle (in this process) or from the run's `deferred/` directory (another
 * process, such as `locus resolve`, wrote it). Each deferral takes one answer;
 * the same answer again is a no-op, a different one a conflict.
 */
export class Deferrals {
  private readonly open = new Map<string, OpenDeferral>()
  private readonly answered = new Map<string, DeferredAnswer>()

  constructor(private readonly answersDir: string | undefined) {}

  /** The ids waiting now. */
  pending(): string[] {
    return [...this.open.keys()]
  }

  /** Registers an open deferral; resolves with its answer. An answer already stored on disk settles it at once. */
  wait(id: string, output: z.ZodType | undefined, signal: AbortSignal): Promise<DeferredAnswer> {
    return new Promise<DeferredAnswer>((resolve, reject) => {
      let poll: NodeJS.Timeout | undefined
      const finish = (): void => {
        if (poll !== undefined) clearInterval(poll)
        signal.removeEventListener('abort', onAbort)
        this.open.delete(id)
      }
      const onAbort = (): void => {
        finish()
        reject(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason ?? 'the deferral was abandoned')))
      }
      this.open.set(id, {
        output,
        settle: (answer) => {
          finish()
          this.answered.set(id, answer)
          resolve(answer)
        },
      })
      if (signal.aborted) {
        onAbort()
        return
      }
      signal.addEventListener('abort', onAbort, { once: true })
      if (this.answersDir !== undefined) {
        const check = (): void => {
          const stored = readStoredAnswer(this.answersDir as string, id)
          if (stored !== undefined) this.answer(id, stored)
        }
        check()
        // Another process may answer while this one waits: look for its file now and then.
        if (this.open.has(id)) poll = setInterval(check, 100)
      }
    })
  }

  /** Answers an open deferral of this execution (validating a result against the tool's output schema). */
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
    open.settle(answer)
    return { ok: true, status: 'accepted' }
  }
}

function readStoredAnswer(dir: string, id: string): DeferredAnswer | undefined {
  const path = join(dir, `${id}.json`)
  if (!existsSync(path)) return undefined
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as DeferredAnswer
  } catch {
    // Being written right now: the next look reads it whole.
    return undefined
  }
}

/**
 * Stores an answer for a deferral of a run that no process may be holding,
 * whole (a temporary file renamed into place), so a waiting or resumed
 * execution picks it up. A different answer already stored is refused.
 */
export function storeDeferredAnswer(runDir: string, id: string, answer: DeferredAnswer): DeferredAnswerOutcome {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$/.test(id)) {
    throw new RuntimeInputError('RUN_OPTIONS_INVALID', `Invalid deferral id "${id}": ids are letters, digits, ".", "_" and "-".`, ['deferredId: invalid'])
  }
  const dir = join(runDir, DEFERRED_DIR)
  mkdirSync(dir, { recursive: true })
  const existing = readStoredAnswer(dir, id)
  if (existing !== undefined) {
    return sameAnswer(existing, answer)
      ? { ok: true, status: 'already-answered' }
      : { ok: false, status: 'conflict', message: `Deferral ${id} already has a different answer; an answer is final.` }
  }
  const temporary = join(dir, `.${id}.${process.pid}.tmp`)
  writeFileSync(temporary, JSON.stringify(answer))
  renameSync(temporary, join(dir, `${id}.json`))
  return { ok: true, status: 'stored' }
}
