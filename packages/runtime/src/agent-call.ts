import { AGENT_RESULT_SCHEMA, type AgentResultEnvelope, serializeError } from '@locus/journal'
import { allocateChildId, currentSlot } from '@locus/groups'
import type { FailureCause } from '@locus/outcome'
import { type AgentCallRequest, requestKey } from '@locus/replay'
import { isTransportRetryable, parseAttempts } from '@locus/retry'
import { z } from 'zod'
import { overrideBudgets } from './budgets.js'
import type { AgentAnswer, AgentCallOptions } from './define.js'
import { AgentCallError, RuntimeInputError, SchemaValidationError, TransportRetryRefusedError } from './errors.js'
import { type AgentSession, type CallBudgets, type CountedBudgets, HostError, type HostTool, type LlmAttemptRecord, type SessionRequest, type TurnResult, type Usage, failureCauseOf } from './host.js'
import { positionToken } from './ids.js'
import type { RunState } from './run-state.js'
import { type ToolCallParent, callTool } from './tool-call.js'
import { CallBudgetsSchema } from './run-options.js'
import { describeZodIssues } from './zod-issues.js'

const agentOptionsSchema = z
  .object({
    agent: z.string().min(1).optional(),
    label: z.string().optional(),
    phase: z.string().optional(),
    attempts: z.unknown().optional(),
    timeoutMs: z.number().int('timeoutMs must be a whole number of milliseconds').positive('timeoutMs must be at least 1').optional(),
    choice: z
      .array(z.string().min(1, 'a choice may not be empty'))
      .min(1, 'choice must list at least one value')
      .refine((choices) => new Set(choices).size === choices.length, 'choice values must be unique')
      .optional(),
    choiceFallback: z.string().optional(),
    budgets: CallBudgetsSchema.optional(),
    accept: z.custom<(answer: string) => true | string>((value) => typeof value === 'function', { error: 'accept must be a function' }).optional(),
    worktree: z.string().min(1).optional(),
    workspaceHandle: z.string().min(1).optional(),
  })
  .strict()


/** How one physical attempt ended. */
type AttemptEnd =
  | { kind: 'answered'; answer: string; usedFallback: boolean; usage: Usage | undefined; stopReason: string }
  | { kind: 'failed'; failureCause: FailureCause; reason: string; usage: Usage | undefined; stopReason: string | undefined; choiceAnswers?: string[] }
  | { kind: 'threw'; failureCause: FailureCause; error: unknown }

function addUsage(total: Usage | undefined, more: Usage | undefined): Usage | undefined {
  if (more === undefined) return total
  if (total === undefined) return more
  return { inputTokens: total.inputTokens + more.inputTokens, outputTokens: total.outputTokens + more.outputTokens }
}

/** Matches an answer to the declared choices: exact after trimming, then case-insensitively. */
export function matchChoice(text: string, choices: readonly string[]): string | undefined {
  const trimmed = text.trim().replace(/^["'`]+|["'`.!]+$/g, '').trim()
  if (choices.includes(trimmed)) return trimmed
  const lower = trimmed.toLowerCase()
  return choices.find((choice) => choice.toLowerCase() === lower)
}

function clarificationPrompt(answer: string, choices: readonly string[]): string {
  return (
    `Your answer ${JSON.stringify(answer.trim().slice(0, 200))} is not one of the allowed values. ` +
    `Reply with exactly one of: ${choices.map((choice) => JSON.stringify(choice)).join(', ')}. Reply with the value only.`
  )
}

/**
 * Decides on the typed cause, wherever it came from: `sdk-unavailable` means
 * there is no channel to answer on, so the call throws and never writes an
 * `agent_end`, whether the host threw it or returned it as a classified turn.
 */
function throwsWhenUnavailable(end: AttemptEnd): AttemptEnd {
  if (end.kind !== 'failed' || end.failureCause !== 'sdk-unavailable') return end
  return { kind: 'threw', failureCause: 'sdk-unavailable', error: new HostError('sdk-unavailable', end.reason) }
}

/** Classifies a turn that came back without our fuse or a cancellation firing. */
function classifyTurn(result: TurnResult): { failureCause: FailureCause; reason: string } | undefined {
  if (result.failureCause !== undefined) return { failureCause: result.failureCause, reason: result.reason ?? result.failureCause }
  switch (result.stopReason) {
    case 'end':
      return undefined
    case 'length':
      return {
        failureCause: 'provider-error',
        reason: 'stopReason=length: the provider stopped at its output-token limit, so the answer is not exact text; it is kept in the transcript only',
      }
    case 'tool-call-budget':
      return { failureCause: 'tool-call-budget', reason: result.reason ?? 'the child exceeded its tool-call budget' }
    case 'content-filter':
      return { failureCause: 'provider-error', reason: result.reason ?? 'the provider filtered the answer' }
    case 'error':
      return { failureCause: 'provider-error', reason: result.reason ?? 'the provider reported an error' }
    case 'aborted':
      return { failureCause: 'unclassified', reason: result.reason ?? 'the host aborted the turn on its own' }
  }
}

interface AttemptPlan {
  readonly prompt: string
  readonly options: AgentCallOptions
  readonly request: SessionRequest
  readonly budgets: CountedBudgets
}

async function runAttempt(run: RunState, plan: AttemptPlan, sessionRef: { session?: AgentSession }): Promise<AttemptEnd> {
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
  const onRunAbort = (): void => {
    firedBy ??= 'cancelled'
    controller.abort()
  }
  if (run.signal.aborted) onRunAbort()
  else run.signal.addEventListener('abort', onRunAbort, { once: true })
  const fuse = new AbortController()
  const timeoutMs = plan.options.timeoutMs
  const fuseAt = timeoutMs === undefined ? undefined : run.clock.now() + timeoutMs
  if (timeoutMs !== undefined) {
    run.clock.sleep(timeoutMs, fuse.signal).then(
      () => {
        if (fuse.signal.aborted) return
        firedBy ??= 'call-timeout'
        controller.abort()
      },
      () => undefined,
    )
  }
  /**
   * True once our fuse or a cancellation has ended the attempt. The fuse is
   * final: it counts as fired as soon as the clock reaches it, even before its
   * timer callback has run, so an answer that arrives at or after `timeoutMs`
   * is never accepted, whichever promise happened to settle first.
   */
  const ended = (): boolean => {
    if (firedBy === undefined && fuseAt !== undefined && run.clock.now() >= fuseAt) {
      firedBy = 'call-timeout'
      controller.abort()
    }
    return firedBy !== undefined
  }
  const aborted = new Promise<'aborted'>((resolve) => {
    if (controller.signal.aborted) resolve('aborted')
    else controller.signal.addEventListener('abort', () => { resolve('aborted') }, { once: true })
  })
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
  const promptOptions =
    onProgress === undefined
      ? { signal: controller.signal }
      : {
          signal: controller.signal,
          onProgress: (progress: { readonly kind: string }) => {
            onProgress({ ...progress, callId: request.callId, logicalCallId: request.logicalCallId, attempt: request.attempt, agent: request.agent })
          },
        }
  /** Sends one turn; undefined means our fuse or a cancellation ended it, whatever the host answered. */
  const turn = async (session: AgentSession, text: string): Promise<TurnResult | undefined> => {
    const pending = session.prompt(text, promptOptions)
    const winner = await Promise.race([pending, aborted])
    if (winner === 'aborted') {
      // The host may ignore the abort; its late answer is discarded, never published.
      pending.catch(() => undefined)
      return undefined
    }
    usage = addUsage(usage, winner.usage)
    recordLlmAttempts(run, plan, winner.llmAttempts)
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
    if (first.text.trim() === '') return { kind: 'failed', failureCause: 'empty-answer', reason: 'the child answered with no text', usage, stopReason: lastStop }
    if (first.text.length > plan.budgets.maxAnswerChars) {
      return {
        kind: 'failed',
        failureCause: 'answer-too-long',
        reason: `the answer has ${first.text.length} characters, over the budget of ${plan.budgets.maxAnswerChars}; split the task`,
        usage,
        stopReason: lastStop,
      }
    }
    let answer = first.text
    let usedFallback = false
    const choices = plan.options.choice
    if (choices !== undefined) {
      let chosen = matchChoice(first.text, choices)
      if (chosen === undefined) {
        // Value repair: one clarification turn inside the same child, never a new child.
        const second = await turn(session, clarificationPrompt(first.text, choices))
        if (second === undefined) return interrupted()
        const secondFailure = classifyTurn(second)
        if (secondFailure !== undefined) return { kind: 'failed', ...secondFailure, usage, stopReason: lastStop }
        chosen = matchChoice(second.text, choices)
        if (chosen === undefined) {
          if (plan.options.choiceFallback === undefined) {
            return {
              kind: 'failed',
              failureCause: 'unparseable-answer',
              reason: `the answer was not one of the declared choices, twice`,
              usage,
              stopReason: lastStop,
              choiceAnswers: [first.text, second.text],
            }
          }
          chosen = plan.options.choiceFallback
          usedFallback = true
        }
      }
      answer = chosen
    }
    const verdict = plan.options.accept?.(answer) ?? true
    if (verdict !== true) return { kind: 'failed', failureCause: 'script-rejected', reason: verdict, usage, stopReason: lastStop }
    return { kind: 'answered', answer, usedFallback, usage, stopReason: lastStop ?? 'end' }
  } catch (error) {
    if (ended()) return interrupted()
    return { kind: 'threw', failureCause: failureCauseOf(error), error }
  } finally {
    fuse.abort()
    run.signal.removeEventListener('abort', onRunAbort)
  }
}

/**
 * Journals each LLM request attempt a host reports for a turn as an
 * `llm_attempt` line under the agent attempt, so a role's own retries are
 * visible apart from the call's. A record the line schema refuses is reported
 * as a warning, never allowed to fail the call.
 */
/** The turn-budget fields a caller set, passed to the host only when set so its own defaults apply otherwise. */
function turnBudgetOf(budgets: CallBudgets | undefined): Pick<CallBudgets, 'turnTimeoutMs' | 'turnIdleMs'> {
  if (budgets === undefined) return {}
  return {
    ...(budgets.turnTimeoutMs === undefined ? {} : { turnTimeoutMs: budgets.turnTimeoutMs }),
    ...(budgets.turnIdleMs === undefined ? {} : { turnIdleMs: budgets.turnIdleMs }),
  }
}

function recordLlmAttempts(run: RunState, plan: AttemptPlan, attempts: readonly LlmAttemptRecord[] | undefined): void {
  if (attempts === undefined) return
  const { request } = plan
  const attemptsOfCall = typeof plan.options.attempts === 'number' ? plan.options.attempts : 1
  for (const record of attempts) {
    try {
      run.emit({
        type: 'llm_attempt',
        callId: request.callId,
        logicalCallId: request.logicalCallId,
        attempt: request.attempt,
        attempts: Math.max(attemptsOfCall, request.attempt),
        agent: request.agent,
        model: record.model,
        turn: record.turn,
        step: record.step,
        llmAttempt: record.attempt,
        llmMaxAttempts: Math.max(record.maxAttempts, record.attempt),
        outcome: record.outcome,
        durationMs: Math.max(0, record.durationMs),
        streamed: record.streamed,
        ...(record.code === undefined ? {} : { code: record.code }),
        ...(record.status === undefined ? {} : { status: record.status }),
        ...(record.error === undefined ? {} : { error: record.error }),
        ...(record.retryable === undefined ? {} : { retryable: record.retryable }),
        ...(record.retryAfterMs === undefined ? {} : { retryAfterMs: record.retryAfterMs }),
        ...(record.delayBeforeNextMs === undefined ? {} : { delayBeforeNextMs: record.delayBeforeNextMs }),
        ...(record.timeToFirstTokenMs === undefined ? {} : { timeToFirstTokenMs: record.timeToFirstTokenMs }),
        ...(record.turnBudget === undefined ? {} : { turnBudget: record.turnBudget }),
      })
    } catch (error) {
      run.emit({ type: 'log', level: 'warn', message: `the host reported an LLM attempt the journal cannot hold: ${error instanceof Error ? error.message : String(error)}` })
    }
  }
}

/**
 * The workflow's tools as one attempt's child sees them: each call goes
 * through tool(), journaled under this attempt's callId and numbered within
 * it, never taking a position in the script's group tree.
 */
function toolsForAttempt(run: RunState, callId: string): HostTool[] {
  let count = 0
  const parent: ToolCallParent = { callId, next: () => (count += 1) }
  return run.hostTools.map((tool) => ({ ...tool, invoke: (args: unknown) => callTool(run, tool.name, args, {}, parent) }))
}

function describeCall(agent: string, label: string | undefined): string {
  return label === undefined ? `agent "${agent}"` : `agent "${agent}" (${label})`
}

/**
 * The version of the returned-outcome contract calls are made under. It is
 * part of every call's identity, so a recording made under another contract
 * diverges instead of replaying answers judged by different rules.
 */
export const RETURN_CONTRACT_VERSION = 2

/**
 * Answers a call from its recording: no child, no charge against the cap.
 * The call still leaves an agent_start and a `replayed` agent_end, so the
 * journal shows where each answer came from.
 */
function replayRecordedCall(
  run: RunState,
  envelope: AgentResultEnvelope,
  call: { ordinal: string; key: string; prompt: string; where: { agent: string; label?: string; phase?: string; groupId?: string }; attempts: number },
): AgentAnswer {
  const trio = { attempt: envelope.attempt, attempts: Math.max(envelope.attempts, envelope.attempt), logicalCallId: envelope.logicalCallId }
  run.emit({ type: 'agent_start', callId: envelope.callId, ...trio, ...call.where, ordinal: call.ordinal, requestKey: call.key, prompt: call.prompt })
  const usage = envelope.usage
  if (envelope.status === 'completed') {
    run.emit({
      type: 'agent_end',
      callId: envelope.callId,
      ...trio,
      ...call.where,
      ordinal: call.ordinal,
      status: 'completed',
      durationMs: 0,
      replayed: true,
      ...(usage === undefined ? {} : { usage }),
      ...(envelope.answer === undefined ? {} : { answer: envelope.answer }),
    })
    const answer = typeof envelope.answer === 'string' ? envelope.answer : JSON.stringify(envelope.answer ?? null)
    return { answer, usedFallback: false, callId: envelope.callId, logicalCallId: envelope.logicalCallId, attempt: trio.attempt, attempts: trio.attempts, usage }
  }
  const error = new AgentCallError(`${describeCall(call.where.agent, call.where.label)} failed with ${envelope.failureCause} (replayed from the recording)`, {
    failureCause: envelope.failureCause,
    callId: envelope.callId,
    logicalCallId: envelope.logicalCallId,
    attempt: trio.attempt,
    attempts: trio.attempts,
    agent: call.where.agent,
    label: call.where.label,
    phase: call.where.phase,
  })
  if (envelope.failureCause === 'sdk-unavailable') {
    // Replayed as it ran: a call with no channel throws, so its terminal record is an error line, never an agent_end.
    run.emit({ type: 'error', message: error.message, error: serializeError(error), failureCause: envelope.failureCause, callId: envelope.callId, ...trio, ...call.where, ordinal: call.ordinal })
    throw error
  }
  run.emit({
    type: 'agent_end',
    callId: envelope.callId,
    ...trio,
    ...call.where,
    ordinal: call.ordinal,
    status: 'failed',
    failureCause: envelope.failureCause,
    ...(envelope.reason === undefined ? {} : { reason: envelope.reason }),
    durationMs: 0,
    replayed: true,
  })
  throw error
}

/** The `agent()` of a workflow context. */
export async function callAgent(run: RunState, prompt: string, rawOptions: AgentCallOptions = {}): Promise<AgentAnswer> {
  if (typeof prompt !== 'string' || prompt.trim() === '') {
    throw new RuntimeInputError('RUN_OPTIONS_INVALID', 'agent(prompt): prompt must be a non-empty string', ['prompt: must be a non-empty string'])
  }
  const parsedOptions = agentOptionsSchema.safeParse(rawOptions)
  if (!parsedOptions.success) {
    const issues = describeZodIssues(parsedOptions.error, 'agent options')
    throw new RuntimeInputError('RUN_OPTIONS_INVALID', `Invalid agent() options:\n  ${issues.join('\n  ')}`, issues)
  }
  const options = rawOptions
  const attempts = parseAttempts(options.attempts)
  const binding = options.worktree !== undefined ? `worktree ${options.worktree}` : options.workspaceHandle !== undefined ? `workspaceHandle ${options.workspaceHandle}` : undefined
  if (attempts > 1 && binding !== undefined) throw new TransportRetryRefusedError(attempts, binding)

  const slot = currentSlot()
  const agent = options.agent ?? 'default'
  const label = options.label ?? slot?.label
  const phase = options.phase ?? slot?.phase
  const groupId = slot?.groupId
  const ordinal = allocateChildId()
  const logicalCallId = `call-${positionToken(ordinal)}`
  const where = { agent, ...(label === undefined ? {} : { label }), ...(phase === undefined ? {} : { phase }), ...(groupId === undefined ? {} : { groupId }) }

  const agents = run.workflow.agents
  if (agents !== undefined && agent !== 'default' && !(agent in agents)) {
    const error = new AgentCallError(
      `Unknown agent role "${agent}"; this workflow declares: ${Object.keys(agents).join(', ') || 'none'}.`,
      { failureCause: 'unknown-agent', callId: `${logicalCallId}-a1`, logicalCallId, attempt: 1, attempts, agent, label, phase },
    )
    run.emit({ type: 'error', message: error.message, error: serializeError(error), failureCause: 'unknown-agent', ...where, callId: error.callId })
    throw error
  }

  // What makes this call the same call on replay; attempts, label and phase never join it.
  const request: AgentCallRequest = {
    agent,
    prompt,
    choice: options.choice,
    choiceFallback: options.choiceFallback,
    timeoutMs: options.timeoutMs,
    budgets: options.budgets === undefined ? undefined : { ...options.budgets },
    returnContractVersion: RETURN_CONTRACT_VERSION,
  }
  const key = requestKey(request)
  if (run.replay !== undefined) {
    const decision = run.replay.next({ ordinal, request })
    if (decision.mode === 'replay') return replayRecordedCall(run, decision.envelope, { ordinal, key, prompt, where, attempts })
  }

  const { budgets, increases } = overrideBudgets(run.callDefaults, options.budgets)
  for (const increase of increases) {
    run.emit({ type: 'budget_change', budget: increase.budget, scope: 'call', from: increase.from, to: increase.to, callId: logicalCallId, reason: 'per-call override' })
  }

  for (let attempt = 1; ; attempt += 1) {
    // A later attempt was charged when its retry was claimed, before the retry line announced it.
    if (attempt === 1) run.chargeInvocation()
    const callId = `${logicalCallId}-a${attempt}`
    const outputs = run.medium.prepareCall(callId)
    const trio = { attempt, attempts, logicalCallId }
    run.emit({
      type: 'agent_start',
      callId,
      ...trio,
      ...where,
      ordinal,
      requestKey: key,
      prompt,
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    })
    const startedAt = run.clock.now()
    const sessionRef: { session?: AgentSession } = {}
    const request: SessionRequest = {
      runId: run.runId,
      callId,
      logicalCallId,
      attempt,
      agent,
      agentConfig: agents?.[agent],
      label,
      phase,
      budgets: {
        ...budgets,
        ...turnBudgetOf(run.perCallOverrides),
        ...turnBudgetOf(options.budgets),
      },
      tools: toolsForAttempt(run, callId),
      ...(outputs.transcriptDir === undefined ? {} : { transcriptDir: outputs.transcriptDir }),
      launchMode: run.launchMode,
    }
    const end = throwsWhenUnavailable(await runAttempt(run, { prompt, options, request, budgets }, sessionRef))
    const durationMs = run.clock.now() - startedAt
    outputs.writeTranscript(JSON.stringify(sessionRef.session?.transcript() ?? [], null, 2) + '\n')
    try {
      await sessionRef.session?.close?.()
    } catch {
      // closing is best effort; the attempt's outcome is already decided
    }
    const common = {
      schema: AGENT_RESULT_SCHEMA,
      callId,
      ...trio,
      agent,
      ordinal,
      requestKey: key,
      ...(end.kind !== 'threw' && end.stopReason !== undefined ? { stopReason: end.stopReason } : {}),
      ...(end.kind !== 'threw' && end.usage !== undefined ? { usage: end.usage } : {}),
      paths: outputs.envelopePaths,
    } as const
    const envelope: AgentResultEnvelope =
      end.kind === 'answered'
        ? { ...common, status: 'completed', answer: end.answer }
        : {
            ...common,
            status: 'failed',
            failureCause: end.failureCause,
            reason: end.kind === 'failed' ? end.reason : end.error instanceof Error ? end.error.message : String(end.error),
          }
    // Written once into a fresh directory; a crash mid-write leaves an envelope
    // that replay reports as invalid and re-runs, so no rename is needed.
    outputs.writeEnvelope(JSON.stringify(envelope, null, 2) + '\n')

    // Whether another attempt follows is settled before the terminal record is written: the run is
    // asked first (cancellation, deadline, invocation cap, retry budget), so no retry is announced
    // that the run then refuses, and a refused one is named on the record it would have followed.
    const wantsRetry = end.kind !== 'answered' && attempt < attempts && isTransportRetryable(end.failureCause)
    const refusal = wantsRetry ? run.claimAgentRetry() : undefined
    const retryRefused = refusal === undefined ? {} : { retryRefused: { by: refusal.by } }
    if (end.kind === 'threw') {
      run.emit({
        type: 'error',
        message: `${describeCall(agent, label)} attempt ${attempt}/${attempts} threw: ${end.error instanceof Error ? end.error.message : String(end.error)}`,
        error: serializeError(end.error),
        failureCause: end.failureCause,
        callId,
        ...trio,
        ...where,
        ...retryRefused,
      })
    } else {
      run.emit({
        type: 'agent_end',
        callId,
        ...trio,
        ...where,
        ordinal,
        status: end.kind === 'answered' ? 'completed' : 'failed',
        ...(end.kind === 'failed' ? { failureCause: end.failureCause, reason: end.reason } : { answer: end.answer }),
        ...(end.stopReason === undefined ? {} : { stopReason: end.stopReason }),
        ...(end.usage === undefined ? {} : { usage: end.usage }),
        durationMs,
        ...retryRefused,
      })
    }
    if (end.kind === 'answered') {
      return { answer: end.answer, usedFallback: end.usedFallback, callId, logicalCallId, attempt, attempts, usage: end.usage }
    }
    if (wantsRetry && refusal === undefined) {
      run.emit({
        type: 'retry',
        kind: 'agent',
        message: `[workflow:retry] ${describeCall(agent, label)} attempt ${attempt}/${attempts} ended ${end.failureCause}; re-sending the same prompt in a new child as attempt ${attempt + 1}`,
        logicalCallId,
        callId,
        fromAttempt: attempt,
        toAttempt: attempt + 1,
        attempts,
        cause: end.failureCause,
      })
      continue
    }
    // A cancellation, the deadline or the invocation cap ends the run as it always has; the budget ends only this call.
    if (refusal?.error !== undefined) run.refuse(refusal)
    if (end.kind === 'failed' && end.choiceAnswers !== undefined && options.choice !== undefined) {
      throw new SchemaValidationError({ choices: options.choice, answers: end.choiceAnswers, callId, logicalCallId })
    }
    const reason = end.kind === 'threw' ? (end.error instanceof Error ? end.error.message : String(end.error)) : end.reason
    const exhausted = attempt > 1 ? ` after ${attempt} attempts` : ''
    const refused = refusal === undefined ? '' : `; the run's retry budget refused attempt ${attempt + 1} of ${attempts}`
    throw new AgentCallError(`${describeCall(agent, label)} failed${exhausted} with ${end.failureCause}: ${reason}${refused}`, {
      failureCause: end.failureCause,
      callId,
      logicalCallId,
      attempt,
      attempts,
      agent,
      label,
      phase,
      cause: end.kind === 'threw' ? end.error : undefined,
    })
  }
}
