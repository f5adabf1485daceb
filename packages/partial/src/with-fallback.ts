import { z } from 'zod'
import type { Answer } from './answer.js'
import type { Gap } from './gap.js'
import { PartialInputError, formatIssuePath } from './partial-error.js'

/** What {@link withFallback} reports when it takes the fallback route. */
export interface DegradedEvent {
  readonly type: 'run_degraded'
  /** The route that could not answer. */
  readonly from: string
  /** The route taken instead. */
  readonly to: string
  /** Required tools that were missing on the primary route. */
  readonly reason: readonly string[]
  /** Every gap of the primary answer. */
  readonly gaps: readonly Gap[]
  /** The caveat attached to the fallback answer. */
  readonly caveat: string
}

/** Options of {@link withFallback}. */
export interface FallbackOptions {
  /**
   * The sentence that tells the reader this answer came from the fallback
   * route and what that means, such as "Live systems were unavailable, so
   * this is from the documents and may be out of date." Mandatory.
   */
  readonly caveat: string
  /**
   * Receives the degradation before the fallback runs; route it to the run
   * journal or a logger. Mandatory: a silent detour is the failure this exists to prevent.
   */
  readonly onDegraded: (event: DegradedEvent) => void | Promise<void>
  /**
   * Name of the primary route in the event.
   * @default 'primary'
   */
  readonly from?: string
  /**
   * Name of the fallback route in the event.
   * @default 'fallback'
   */
  readonly to?: string
}

const FallbackOptionsSchema = z.object({
  caveat: z.string().trim().min(1, 'the caveat is mandatory: tell the reader that this answer came from the fallback route'),
  onDegraded: z.custom<FallbackOptions['onDegraded']>((value) => typeof value === 'function', {
    error: 'onDegraded must be a function that journals or logs the degradation',
  }),
  from: z.string().min(1).optional(),
  to: z.string().min(1).optional(),
})

/**
 * Runs the primary route; when its answer could not be given (`found: false`),
 * reports the degradation through `onDegraded` and answers from the fallback
 * route instead, with the mandatory caveat appended to the fallback's own.
 *
 * The degraded answer is `partial`, keeps the primary's gaps (the missing
 * required tool is still a gap for the metrics), carries everything either
 * route gathered, and says in `degraded` where it came from. An answer the
 * primary could give is returned unchanged and the fallback never runs.
 *
 * @example
 * ```ts
 * const answer = await withFallback(
 *   () => answerPartial(run, assessPartial(run.plan, run.results), generate),
 *   () => answerFromDocuments(run.question),
 *   {
 *     caveat: 'Live systems were unavailable, so this is from the documents and may be out of date.',
 *     from: 'live', to: 'documents',
 *     onDegraded: (event) => journal.write(event),
 *   },
 * )
 * ```
 */
export async function withFallback(
  primary: () => Answer | Promise<Answer>,
  fallback: (primaryAnswer: Answer) => Answer | Promise<Answer>,
  options: FallbackOptions,
): Promise<Answer> {
  const parsed = FallbackOptionsSchema.safeParse(options)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new PartialInputError(formatIssuePath('options', issue?.path ?? []), `${issue?.message ?? 'invalid'}.`, parsed.error)
  }
  const first = await primary()
  if (first.found) return first

  const from = options.from ?? 'primary'
  const to = options.to ?? 'fallback'
  const reason = [...new Set(first.gaps.filter((gap) => gap.criticality === 'required').map((gap) => gap.tool))]
  const caveat = options.caveat.trim()
  await options.onDegraded({ type: 'run_degraded', from, to, reason, gaps: first.gaps, caveat })

  const second = await fallback(first)
  return {
    ...second,
    caveats: [...second.caveats, caveat],
    gaps: [...first.gaps, ...second.gaps],
    partial: true,
    gathered: [...first.gathered, ...second.gathered],
    degraded: { from, to, reason },
  }
}
