import { type AttemptContext, offAbort, onAbort } from '@locus/retry'
import type { AgentCallOptions } from '../define.js'
import { type AgentSession, type CountedBudgets, HostError, type PromptOptions, type SessionRequest, type TurnResult, type TurnTextEvent, type Usage, failureCauseOf } from '../host.js'
import type { RunState } from '../run-state.js'
import { type AttemptEnd, addUsage, classifyTurn } from './attempt-end.js'
import { judgeAnswer } from './choice.js'
import { recordLlmAttempts } from './llm-attempts.js'
import { type RateRoom, waitForRate } from './rate-wait.js'

/** What one physical attempt sends: the prompt, the call's options and the session it asks the host for. */
export interface AttemptPlan {
  readonly prompt: string
  readonly options: AgentCallOptions
  readonly attempts: number
  readonly request: SessionRequest
  readonly budgets: CountedBudgets
}

/**
 * How long an attempt ended by its fuse or a cancellation waits for the
 * host's turn to settle, for the LLM attempts it reports. A host that honours
 * the abort settles at once; one that ignores it is not waited for longer.
 */
export const LATE_TURN_GRACE_MS = 1000

/** The turn's result once it settles within `ms`; `undefined` when it throws or takes longer. */
async function settledWithin(pending: Promise<TurnResult>, ms: number): Promise<TurnResult | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const expired = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => {
      resolve(undefined)
    }, ms)
    timer.unref()
  })
  try {
    return await Promise.race([pending.catch(() => undefined), expired])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Runs one physical attempt: opens a child session, sends the prompt, judges
 * the answer. The attempt ends early when the run is cancelled or when its
 * deadline (the call's `timeoutMs` fuse, armed by the retry loop on
 * `context.signal`) passes; the fuse is final, so an answer that arrives at
 * or after the deadline is never accepted, whichever promise settled first.
 * The opened session is left in `sessionRef` for the caller to close.
 */
export async function runAttempt(run: RunState, plan: AttemptPlan, context: AttemptContext, sessionRef: { session?: AgentSession }): Promise<AttemptEnd> {
  const host = run.host
  if (host === undefined) {
    return {
      kind: 'threw',
      failureCause: 'sdk-unavailable',
      error: new HostError('sdk-unavailable', 'No agent host is configured for this run; pass `host` to runWorkflowScript or --host to the CLI.'),
    }
  }
  const controller = new AbortController()
  let firedBy: 'call-timeout' | 'cancelled' | undefined
  // Settled by fire() itself rather than by a listener on the controller's signal: one attempt per
  // call, so every listener structure saved is saved a hundred thousand times in a long run.
  let settleAborted: (value: 'aborted') => void = () => undefined
  const aborted = new Promise<'aborted'>((resolve) => {
    settleAborted = resolve
  })
  const fire = (by: 'call-timeout' | 'cancelled'): void => {
    firedBy ??= by
    controller.abort()
    settleAborted('aborted')
  }
  const onRunAbort = (): void => {
    fire('cancelled')
  }
  const onFuse = (): void => {
    fire('call-timeout')
  }
  if (run.signal.aborted) onRunAbort()
  else onAbort(run.signal, onRunAbort)
  // The deadline is null without timeoutMs; only then is the attempt's signal never read.
  const fuse = context.deadline === null ? undefined : context.signal
  if (fuse?.aborted === true) onFuse()
  else fuse?.addEventListener('abort', onFuse, { once: true })
  const ended = (): boolean => {
    if (firedBy === undefined && context.deadline !== null && run.clock.now() >= context.deadline) fire('call-timeout')
    return firedBy !== undefined
  }
  let usage: Usage | undefined
  let lastStop: string | undefined
  const interrupted = (): AttemptEnd => ({
    kind: 'failed',
    failureCause: firedBy ?? 'cancelled',
    reason: firedBy === 'call-timeout' ? `the call's timeoutMs fuse (${plan.options.timeoutMs ?? 0} ms) expired and the child was aborted` : 'the run was cancelled',
    usage,
    stopReason: 'aborted',
  })
  const request = plan.request
  const onProgress = run.onProgress
  const streams = run.medium.streams
  const promptOptions: PromptOptions = {
    signal: controller.signal,
    ...(onProgress === undefined
      ? {}
      : {
          onProgress: (progress: { readonly kind: string }) => {
            onProgress({ ...progress, callId: request.callId, logicalCallId: request.logicalCallId, attempt: request.attempt, agent: request.agent })
          },
        }),
    ...(streams === undefined
      ? {}
      : {
          onText: (event: TurnTextEvent) => {
            // Text a host streams after our fuse or a cancellation fired belongs to an attempt already thrown away.
            if (firedBy === undefined) streams.text(request.callId, request.attempt, event)
          },
        }),
  }
  /** What the session has been sent so far: a turn's input is its whole history. */
  let sentChars = 0
  /** Sends one turn; undefined means our fuse or a cancellation ended it, whatever the host answered. */
  const turn = async (session: AgentSession, text: string): Promise<TurnResult | undefined> => {
    sentChars += text.length
    let room: RateRoom | undefined
    if (run.rateLimiter !== undefined) {
      // Shared rate limits: the turn waits for room before it is sent; the wait spends no attempt.
      room = await waitForRate(run, request, { inputChars: sentChars, signal: controller.signal })
      if (room === undefined || ended()) return undefined
    }
    // The host asks the same limits before each later request of the turn, and reports a Retry-After at once.
    const pending = session.prompt(text, room?.gate === undefined ? promptOptions : { ...promptOptions, rateGate: room.gate })
    const winner = await Promise.race([pending, aborted])
    if (winner === 'aborted') {
      // The host may ignore the abort; its late answer is discarded, never published. But the
      // requests it sent reached the model server: journal the LLM attempts it reports for the
      // turn (the one cut short says `cancelled`), once it settles, within a short grace.
      const late = await settledWithin(pending, LATE_TURN_GRACE_MS)
      if (late !== undefined) {
        recordLlmAttempts(run, request, plan.attempts, late.llmAttempts)
        room?.settle(late)
      }
      return undefined
    }
    usage = addUsage(usage, winner.usage)
    recordLlmAttempts(run, request, plan.attempts, winner.llmAttempts)
    room?.settle(winner)
    // An answer (or a host's own "aborted") that settled after the fuse fired or the run was
    // cancelled loses to them: the host saw our abort, and the cause is the one we fired.
    if (ended()) return undefined
    lastStop = winner.stopReason
    return winner
  }
  try {
    if (ended()) return interrupted()
    const session = await host.openSession(plan.request)
    sessionRef.session = session
    // The fuse may fire while the session opens: the request is then never sent.
    if (ended()) return interrupted()
    const first = await turn(session, plan.prompt)
    if (first === undefined) return interrupted()
    const failure = classifyTurn(first)
    if (failure !== undefined) return { kind: 'failed', ...failure, usage, stopReason: lastStop }
    const verdict = await judgeAnswer(first, plan, (text) => turn(session, text))
    if (verdict.kind === 'interrupted') return interrupted()
    if (verdict.kind === 'failed') return { ...verdict, usage, stopReason: lastStop }
    return { ...verdict, usage, stopReason: lastStop ?? 'end' }
  } catch (error) {
    if (ended()) return interrupted()
    return { kind: 'threw', failureCause: failureCauseOf(error), error }
  } finally {
    fuse?.removeEventListener('abort', onFuse)
    offAbort(run.signal, onRunAbort)
  }
}
