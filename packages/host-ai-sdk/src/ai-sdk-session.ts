import { LocusError, prepareWorkflowResult } from '@locus/outcome'
import type { RetryClock } from '@locus/retry'
import type { AgentSession, ArtifactSink, HostTool, RateGate, SessionRequest, TranscriptEntry, TurnResult, TurnTextEvent } from '@locus/host-contract'
import type { ModelMessage, ToolResultPart, ToolSet } from 'ai'
import type { AiSdkAttemptLog, AiSdkLanguageModel } from './ai-sdk-host-options.js'
import type { LlmFailure } from './classify-llm-error.js'
import type { LlmAttempt, LlmProgress } from './llm-attempt.js'
import { type LlmStep, type LlmStepRequest, generateStep, streamStep } from './llm-step.js'
import type { AiModule } from './load-sdk.js'
import type { AgentSettings } from './resolve-agent-settings.js'
import { type LlmAttemptRecord, runLlmCall } from './run-llm-call.js'
import { type TurnBudgetBound, TurnBudgetWatch } from './turn-budget.js'

/** The file, in each call's transcript directory, that lists every physical LLM attempt as JSON lines. */
export const LLM_ATTEMPTS_FILE = 'llm-attempts.jsonl'

/** Everything a session needs, resolved by the host when it opens one. */
export interface AiSdkSessionContext {
  readonly ai: AiModule
  readonly model: AiSdkLanguageModel
  readonly settings: AgentSettings
  readonly request: SessionRequest
  readonly clock: RetryClock
  readonly onLlmAttempt: ((attempt: LlmAttempt) => void) | undefined
  readonly onProgress: ((progress: LlmProgress) => void) | undefined
  readonly progressIntervalMs: number
  readonly attemptLog: AiSdkAttemptLog
}

/** What `prompt` accepts: the runtime's signal, and where this turn's progress goes. */
export interface AiSdkPromptOptions {
  readonly signal: AbortSignal
  /** Progress of this turn's streamed LLM calls, besides the host's `onProgress`. */
  readonly onProgress?: ((progress: LlmProgress) => void) | undefined
  /**
   * The answer's text as it streams, per LLM request of the session
   * (`llmAttempt` counts every request sent, retries included): deltas, then
   * `end`, or `discarded` with a cause when the request failed and its text
   * was thrown away. Without streaming, one delta with the whole text.
   */
  readonly onText?: ((event: TurnTextEvent) => void) | undefined
  /** The run's shared rate limits, asked before each request of the turn after its first, and told a 429's `Retry-After` at once. */
  readonly rateGate?: RateGate | undefined
}

/**
 * A turn's result with the evidence of its LLM calls: every physical attempt
 * of every LLM call of the turn, in order, retried ones included. The runtime
 * reads `llmAttempts` to journal them; a runtime that does not know the field
 * ignores it.
 */
export interface AiSdkTurnResult extends TurnResult {
  readonly llmAttempts: readonly LlmAttempt[]
}

type ToolOutput = ToolResultPart['output']

// Errors about the tool call itself go back to the model as a tool error it can
// react to; any other Locus error (a cancellation, a run deadline, an invocation
// cap) is control flow and ends the turn.
const TOOL_FEEDBACK_CODES = new Set(['TOOL_CALL_FAILED', 'TOOL_INPUT_INVALID', 'UNKNOWN_TOOL'])

function isToolFeedback(error: unknown): boolean {
  return !LocusError.isInstance(error) || TOOL_FEEDBACK_CODES.has(error.code)
}

function describeThrown(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function toToolOutput(value: unknown): ToolOutput {
  if (typeof value === 'string') return { type: 'text', value }
  try {
    return { type: 'json', value: prepareWorkflowResult(value) as never }
  } catch (error) {
    return { type: 'error-text', value: `the tool returned a value that cannot be sent to the model as JSON: ${describeThrown(error)}` }
  }
}

/** What a request carried that a refusal may be about. */
interface SentRequest {
  readonly maxOutputTokens: number | undefined
  readonly tools: number
}

const MAX_TOKENS_COMPLAINT = /max_tokens|max_completion_tokens|max_output_tokens|maxOutputTokens|max_new_tokens|completion tokens|output tokens|maximum context length|context length|context window/i
const TOOLS_COMPLAINT = /\btools?\b|tool_choice|tool choice|function.?call|--jinja|--enable-auto-tool-choice/i

/**
 * Says how an LLM call failed in the words of what happened: the status and
 * code, how many attempts and why no more, and, for a refusal that names the
 * request's output-token cap or its tools, the setting that changes it.
 */
function describeFailure(
  failure: LlmFailure,
  attempts: number,
  reason: 'terminal' | 'exhausted',
  context: { readonly retrySource: AgentSettings['sources']['retry']; readonly maxAttempts: number; readonly sent: SentRequest },
): string {
  const what = failure.status === undefined ? `no HTTP status, ${failure.code}` : `HTTP ${failure.status} ${failure.code}`
  // "LLM attempts": these are the HTTP requests of one LLM call, not the transport attempts of the agent() call.
  const plural = (count: number, what = 'LLM attempt'): string => `${count} ${what}${count === 1 ? '' : 's'}`
  let why: string
  if (reason === 'terminal') why = `terminal, not retried, after ${plural(attempts)}`
  else if (context.retrySource === 'none') why = `after ${plural(attempts)}: no retry policy applies to this call (give the host or the role a retry policy to retry it)`
  else why = `after ${plural(attempts)} (retries exhausted: the retry policy allows ${plural(context.maxAttempts, 'attempt')})`
  let hint = ''
  const refused = !failure.retryable && (failure.status === undefined || (failure.status >= 400 && failure.status < 500))
  if (refused && context.sent.maxOutputTokens !== undefined && MAX_TOKENS_COMPLAINT.test(failure.error)) {
    hint =
      `. The server refused the request's output-token cap (max_tokens ${context.sent.maxOutputTokens}, the call's remaining output budget): ` +
      'lower it with --max-output-tokens <n> (budgets.maxOutputTokens in a workflow), or give the host maxOutputTokens set to what the model allows'
  } else if (refused && context.sent.tools > 0 && TOOLS_COMPLAINT.test(failure.error)) {
    hint =
      `. The request offered the workflow's ${context.sent.tools} tool${context.sent.tools === 1 ? '' : 's'} and the server refused them: ` +
      'this server or model has no tool support; turn tools off with the host option tools: false (agents.<role>.tools: false for one role)'
  }
  return `the LLM call failed with ${what}, ${why}: ${failure.error}${hint}`
}

/** The `max_tokens` a request sends: the call's remaining budget, capped at what the model accepts. */
function outputCap(remaining: number | undefined, modelCap: number | null | undefined): number | undefined {
  if (modelCap === null) return undefined
  if (modelCap === undefined) return remaining
  return remaining === undefined ? modelCap : Math.min(remaining, modelCap)
}

const ABORTED: unique symbol = Symbol('aborted')

/** Settles with the promise's value, or with {@link ABORTED} as soon as `signal` aborts. */
async function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | typeof ABORTED> {
  let onAbort: (() => void) | undefined
  const aborted = new Promise<typeof ABORTED>((resolve) => {
    onAbort = () => {
      resolve(ABORTED)
    }
    signal.addEventListener('abort', onAbort, { once: true })
  })
  try {
    return await Promise.race([promise, aborted])
  } finally {
    if (onAbort !== undefined) signal.removeEventListener('abort', onAbort)
  }
}

/**
 * One child session over the AI SDK: a message history that every prompt,
 * clarification turns included, extends. Each LLM call of a turn goes through
 * the role's retry policy; tool calls the model asks for run through the
 * runtime's `HostTool.invoke` (so they are journaled) and count against the
 * call's tool-call budget across the whole session.
 */
export class AiSdkSession implements AgentSession {
  readonly #context: AiSdkSessionContext
  readonly #messages: ModelMessage[] = []
  readonly #transcript: TranscriptEntry[] = []
  readonly #tools: ToolSet | undefined
  readonly #toolsByName: ReadonlyMap<string, HostTool>
  /** Where LLM attempts are logged; undefined when the run is not stored on a disk (the journal still has them). */
  /** Where the attempt log goes: the request's artifact sink, undefined when nothing is kept. */
  readonly #artifacts: ArtifactSink | undefined
  /** The attempt log written so far: a sink stores an artifact whole, so each write carries every line. */
  #attemptLog = ''
  /** Attempts not yet written, while `on-failure` waits for a failure. */
  #pendingAttempts: LlmAttempt[] | undefined
  #turn = 0
  /** LLM requests sent by this session so far, retries included: the `llmAttempt` of its text events. */
  #llmRequests = 0
  #toolCalls = 0
  #outputTokens = 0

  constructor(context: AiSdkSessionContext) {
    this.#context = context
    const { request, ai, settings } = context
    this.#toolsByName = new Map(request.tools.map((tool) => [tool.name, tool]))
    this.#tools =
      request.tools.length === 0 || !settings.tools
        ? undefined
        : Object.fromEntries(
            request.tools.map((tool) => [tool.name, ai.tool({ ...(tool.description === undefined ? {} : { description: tool.description }), inputSchema: tool.input })]),
          )
    this.#artifacts = request.artifacts
    this.#pendingAttempts = context.attemptLog === 'on-failure' ? [] : undefined
    if (settings.system !== undefined) this.#transcript.push({ role: 'system', content: settings.system })
  }

  transcript(): readonly TranscriptEntry[] {
    return this.#transcript
  }

  async prompt(text: string, options: AiSdkPromptOptions): Promise<AiSdkTurnResult> {
    const { signal } = options
    // The turn's own controller: the caller's abort and the host's turn budget both end it.
    const turnController = new AbortController()
    const onCallerAbort = (): void => {
      turnController.abort(signal.reason)
    }
    if (signal.aborted) onCallerAbort()
    else signal.addEventListener('abort', onCallerAbort, { once: true })
    const watch = new TurnBudgetWatch(this.#context.clock, this.#context.settings.turnBudget, () => {
      turnController.abort()
    })
    try {
      return await this.#runTurn(text, turnController.signal, watch, options)
    } finally {
      watch.stop()
      signal.removeEventListener('abort', onCallerAbort)
    }
  }

  async #runTurn(
    text: string,
    signal: AbortSignal,
    watch: TurnBudgetWatch,
    turnOptions: Pick<AiSdkPromptOptions, 'onProgress' | 'onText' | 'rateGate'>,
  ): Promise<AiSdkTurnResult> {
    const { onProgress: onTurnProgress, onText, rateGate } = turnOptions
    const { ai, model, settings, request, clock } = this.#context
    this.#turn += 1
    const turn = this.#turn
    this.#messages.push({ role: 'user', content: text })
    this.#transcript.push({ role: 'user', content: text })
    let inputTokens = 0
    let outputTokens = 0
    const llmAttempts: LlmAttempt[] = []
    const end = (result: Omit<TurnResult, 'usage'>): AiSdkTurnResult => {
      this.#transcript.push({ role: 'assistant', content: result.text === '' && result.reason !== undefined ? result.reason : result.text, stopReason: result.stopReason })
      return { ...result, usage: { inputTokens, outputTokens }, llmAttempts }
    }
    const aborted = (): AiSdkTurnResult => {
      const bound = watch.expired
      if (bound !== undefined) return end({ text: '', stopReason: 'aborted', failureCause: 'host-turn-timeout', reason: watch.describe(bound) })
      return end({ text: '', stopReason: 'aborted', reason: 'the turn was aborted before the model answered' })
    }
    const progressListeners = [this.#context.onProgress, onTurnProgress].filter((listener) => listener !== undefined)
    // The runtime found room for the turn's first request before calling prompt; every later one asks the gate.
    let requestsAsked = 0
    const rate =
      rateGate === undefined
        ? undefined
        : {
            beforeRequest: async (requestSignal: AbortSignal) => {
              if (requestsAsked++ > 0) await rateGate.beforeRequest(requestSignal)
            },
            retryAfter: (ms: number) => {
              rateGate.retryAfter(settings.modelId, ms)
            },
          }

    for (let step = 1; ; step += 1) {
      if (signal.aborted) return aborted()
      const budget = request.budgets.maxOutputTokens
      const remaining = budget === undefined ? undefined : budget - this.#outputTokens
      if (remaining !== undefined && remaining <= 0) {
        return end({ text: '', stopReason: 'length', reason: `the child spent its output-token budget of ${budget ?? 0} tokens` })
      }
      const maxOutputTokens = outputCap(remaining, settings.maxOutputTokens)
      const stepRequest: LlmStepRequest = {
        model,
        ...(settings.system === undefined ? {} : { system: settings.system }),
        // A copy: the SDK must not see messages this turn appends while a late attempt is still running.
        messages: [...this.#messages],
        ...(this.#tools === undefined ? {} : { tools: this.#tools }),
        ...(maxOutputTokens === undefined ? {} : { maxOutputTokens }),
      }
      const firstTokens = new Map<number, number>()
      // What the provider reported for each attempt that answered; counted chunks are not usage.
      const usages = new Map<number, NonNullable<LlmAttempt['usage']>>()
      const outputBefore = outputTokens
      /** Each retry attempt of this step's request, by the session-wide `llmAttempt` its text carries. */
      const requestOrdinals = new Map<number, number>()
      const send = async (attemptSignal: AbortSignal, attempt: number): Promise<LlmStep> => {
        const llmAttempt = (this.#llmRequests += 1)
        requestOrdinals.set(attempt, llmAttempt)
        const requestWatch = watch.startRequest()
        const sentAt = clock.now()
        let textChars = 0
        let chunks = 0
        let lastProgressAt = Number.NEGATIVE_INFINITY
        const emit = (kind: LlmProgress['kind'], tokens: number): void => {
          const now = clock.now()
          lastProgressAt = now
          const firstToken = firstTokens.get(attempt)
          const progress: LlmProgress = {
            runId: request.runId,
            callId: request.callId,
            logicalCallId: request.logicalCallId,
            agent: request.agent,
            model: settings.modelId,
            turn,
            step,
            attempt,
            kind,
            outputTokens: outputBefore + tokens,
            textChars,
            elapsedMs: now - sentAt,
            ...(firstToken === undefined ? {} : { timeToFirstTokenMs: firstToken }),
          }
          for (const listener of progressListeners) listener(progress)
        }
        try {
          if (!settings.streaming) {
            const generated = await generateStep(ai, stepRequest, attemptSignal)
            if (onText !== undefined && generated.text !== '') onText({ kind: 'delta', llmAttempt, text: generated.text })
            if (generated.inputTokens !== undefined && generated.outputTokens !== undefined) usages.set(attempt, { inputTokens: generated.inputTokens, outputTokens: generated.outputTokens, ...generated.usageDetails })
            return generated
          }
          const result = await streamStep(ai, stepRequest, attemptSignal, {
            activity: () => {
              requestWatch.touch()
            },
            chunk: (chars, text) => {
              if (onText !== undefined && text !== undefined && text !== '') onText({ kind: 'delta', llmAttempt, text })
              chunks += 1
              textChars += chars
              if (!firstTokens.has(attempt)) {
                firstTokens.set(attempt, clock.now() - sentAt)
                if (progressListeners.length > 0) emit('first-token', chunks)
              } else if (progressListeners.length > 0 && clock.now() - lastProgressAt >= this.#context.progressIntervalMs) {
                emit('tokens', chunks)
              }
            },
          })
          if (progressListeners.length > 0) emit('step-end', result.outputTokens ?? result.chunks)
          if (result.inputTokens !== undefined && result.outputTokens !== undefined) usages.set(attempt, { inputTokens: result.inputTokens, outputTokens: result.outputTokens, ...result.usageDetails })
          return result
        } finally {
          requestWatch.end()
        }
      }
      const outcome = await runLlmCall(send, {
        policy: settings.retry,
        clock,
        signal,
        rate,
        onAttempt: (record) => {
          const llmAttempt = requestOrdinals.get(record.attempt)
          if (onText !== undefined && llmAttempt !== undefined) {
            // A request that did not answer has its text thrown away, whether the host retries it or gives up.
            onText(record.outcome === 'succeeded' ? { kind: 'end', llmAttempt } : { kind: 'discarded', llmAttempt, cause: `llm-${record.outcome}` })
          }
          const firstToken = firstTokens.get(record.attempt)
          const usage = record.outcome === 'succeeded' ? usages.get(record.attempt) : undefined
          const bound: TurnBudgetBound | undefined = record.outcome === 'cancelled' ? watch.expired : undefined
          const attempt = this.#recordAttempt(turn, step, {
            ...record,
            ...(bound === undefined
              ? {}
              : { outcome: 'timed-out', code: 'deadline_exceeded', retryable: false, error: watch.describe(bound), turnBudget: bound }),
            ...(firstToken === undefined ? {} : { timeToFirstTokenMs: firstToken }),
            ...(usage === undefined ? {} : { usage }),
          })
          llmAttempts.push(attempt)
        },
      })
      if (!outcome.ok) {
        if (outcome.reason === 'cancelled') return aborted()
        return end({
          text: '',
          stopReason: 'error',
          failureCause: 'provider-error',
          reason: describeFailure(outcome.failure, outcome.attempts, outcome.reason, {
            retrySource: settings.sources.retry,
            maxAttempts: settings.retry.max_retries,
            sent: { maxOutputTokens, tools: this.#tools === undefined ? 0 : Object.keys(this.#tools).length },
          }),
        })
      }
      const result = outcome.value
      // A stream that reports no usage is counted by its chunks, so the output budget still holds.
      const stepOutput = result.outputTokens ?? result.chunks
      inputTokens += result.inputTokens ?? 0
      outputTokens += stepOutput
      this.#outputTokens += stepOutput
      this.#messages.push(...result.responseMessages)

      switch (result.finishReason) {
        case 'length':
          return end({ text: result.text, stopReason: 'length' })
        case 'content-filter':
          return end({
            text: result.text,
            stopReason: 'content-filter',
            failureCause: 'provider-error',
            reason: 'the provider\'s content filter stopped the answer (finish_reason content_filter)',
          })
        case 'error':
          return end({ text: result.text, stopReason: 'error', failureCause: 'provider-error', reason: 'the provider reported an error as the finish reason' })
        case 'stop':
        case 'tool-calls':
        case 'other':
          break
      }
      if (result.toolCalls.length === 0) return end({ text: result.text, stopReason: 'end' })
      if (result.text !== '') this.#transcript.push({ role: 'assistant', content: result.text })

      const results: ToolResultPart[] = []
      for (const call of result.toolCalls) {
        this.#toolCalls += 1
        const limit = request.budgets.maxToolCalls
        if (limit !== undefined && this.#toolCalls > limit) {
          return end({
            text: '',
            stopReason: 'tool-call-budget',
            failureCause: 'tool-call-budget',
            reason: `the model asked for tool call ${this.#toolCalls} ("${call.toolName}") with a budget of ${limit} tool calls`,
          })
        }
        this.#transcript.push({ role: 'assistant', tool: call.toolName, content: JSON.stringify(call.input ?? null) })
        const tool = this.#toolsByName.get(call.toolName)
        if (call.invalid === true || tool === undefined) {
          // The SDK already answered an unknown tool or invalid input with a tool error in the history.
          this.#transcript.push({ role: 'tool', tool: call.toolName, content: `error: ${describeThrown(call.error)}` })
          continue
        }
        const output = await this.#invoke(tool, call.input, signal)
        // The turn budget may have run out while the tool ran; the tool was handed the abort.
        if (output === undefined) return aborted()
        results.push({ type: 'tool-result', toolCallId: call.toolCallId, toolName: call.toolName, output })
      }
      if (results.length > 0) this.#messages.push({ role: 'tool', content: results })
    }
  }

  /** Runs a tool through the runtime; `undefined` when the turn was aborted first (the tool keeps the abort signal). */
  async #invoke(tool: HostTool, input: unknown, signal: AbortSignal): Promise<ToolOutput | undefined> {
    if (signal.aborted) return undefined
    try {
      const pending = tool.invoke(input, signal)
      const value = await raceAbort(pending, signal)
      if (value === ABORTED) {
        pending.catch(() => undefined)
        return undefined
      }
      const output = toToolOutput(value)
      this.#transcript.push({ role: 'tool', tool: tool.name, content: output.type === 'json' ? JSON.stringify(output.value) : String((output as { value?: unknown }).value) })
      return output
    } catch (error) {
      if (!isToolFeedback(error)) throw error
      const message = `tool "${tool.name}" failed: ${describeThrown(error)}`
      this.#transcript.push({ role: 'tool', tool: tool.name, content: `error: ${message}` })
      return { type: 'error-text', value: message }
    }
  }

  #recordAttempt(turn: number, step: number, record: LlmAttemptRecord & Partial<Pick<LlmAttempt, 'timeToFirstTokenMs' | 'turnBudget'>>): LlmAttempt {
    const { request, settings, onLlmAttempt } = this.#context
    const attempt: LlmAttempt = {
      runId: request.runId,
      callId: request.callId,
      logicalCallId: request.logicalCallId,
      agent: request.agent,
      model: settings.modelId,
      turn,
      step,
      streamed: settings.streaming,
      ...record,
    }
    this.#appendAttempt(attempt)
    onLlmAttempt?.(attempt)
    return attempt
  }

  #appendAttempt(attempt: LlmAttempt): void {
    const mode = this.#context.attemptLog
    if (mode === 'off') return
    let lines: LlmAttempt[] = [attempt]
    if (this.#pendingAttempts !== undefined) {
      // `on-failure`: a session without trouble writes nothing; the first failure writes its history.
      this.#pendingAttempts.push(attempt)
      if (attempt.outcome === 'succeeded') return
      lines = this.#pendingAttempts
      this.#pendingAttempts = undefined
    }
    if (this.#artifacts === undefined) return
    this.#attemptLog += lines.map((line) => JSON.stringify(line) + '\n').join('')
    this.#artifacts.write(LLM_ATTEMPTS_FILE, this.#attemptLog)
  }
}
