import { appendFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { LocusError, prepareWorkflowResult } from '@locus/outcome'
import type { RetryClock } from '@locus/retry'
import type { AgentSession, HostTool, SessionRequest, TranscriptEntry, TurnResult } from '@locus/runtime'
import type { GenerateTextResult, ModelMessage, ToolResultPart, ToolSet } from 'ai'
import type { AiSdkAttemptLog, AiSdkLanguageModel } from './ai-sdk-host-options.js'
import type { LlmFailure } from './classify-llm-error.js'
import type { LlmAttempt } from './llm-attempt.js'
import type { AiModule } from './load-sdk.js'
import type { AgentSettings } from './resolve-agent-settings.js'
import { type LlmAttemptRecord, runLlmCall } from './run-llm-call.js'

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
  readonly attemptLog: AiSdkAttemptLog
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

function describeFailure(failure: LlmFailure, attempts: number, reason: 'terminal' | 'exhausted'): string {
  const what = failure.status === undefined ? `no HTTP status, ${failure.code}` : `HTTP ${failure.status} ${failure.code}`
  const why = reason === 'exhausted' ? `after ${attempts} attempt${attempts === 1 ? '' : 's'} (retries exhausted)` : `terminal, not retried, after ${attempts} attempt${attempts === 1 ? '' : 's'}`
  return `the LLM call failed with ${what}, ${why}: ${failure.error}`
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
  readonly #attemptsFile: string
  #attemptsDirReady = false
  /** Attempts not yet written, while `on-failure` waits for a failure. */
  #pendingAttempts: LlmAttempt[] | undefined
  #turn = 0
  #toolCalls = 0
  #outputTokens = 0

  constructor(context: AiSdkSessionContext) {
    this.#context = context
    const { request, ai, settings } = context
    this.#toolsByName = new Map(request.tools.map((tool) => [tool.name, tool]))
    this.#tools =
      request.tools.length === 0
        ? undefined
        : Object.fromEntries(
            request.tools.map((tool) => [tool.name, ai.tool({ ...(tool.description === undefined ? {} : { description: tool.description }), inputSchema: tool.input })]),
          )
    this.#attemptsFile = join(request.transcriptDir, LLM_ATTEMPTS_FILE)
    this.#pendingAttempts = context.attemptLog === 'on-failure' ? [] : undefined
    if (settings.system !== undefined) this.#transcript.push({ role: 'system', content: settings.system })
  }

  transcript(): readonly TranscriptEntry[] {
    return this.#transcript
  }

  async prompt(text: string, options: { readonly signal: AbortSignal }): Promise<TurnResult> {
    const { signal } = options
    const { ai, model, settings, request, clock } = this.#context
    this.#turn += 1
    const turn = this.#turn
    this.#messages.push({ role: 'user', content: text })
    this.#transcript.push({ role: 'user', content: text })
    let inputTokens = 0
    let outputTokens = 0
    const end = (result: Omit<TurnResult, 'usage'>): TurnResult => {
      this.#transcript.push({ role: 'assistant', content: result.text === '' && result.reason !== undefined ? result.reason : result.text, stopReason: result.stopReason })
      return { ...result, usage: { inputTokens, outputTokens } }
    }
    const aborted = (): TurnResult => end({ text: '', stopReason: 'aborted', reason: 'the turn was aborted before the model answered' })

    for (let step = 1; ; step += 1) {
      if (signal.aborted) return aborted()
      const budget = request.budgets.maxOutputTokens
      const remaining = budget === undefined ? undefined : budget - this.#outputTokens
      if (remaining !== undefined && remaining <= 0) {
        return end({ text: '', stopReason: 'length', reason: `the child spent its output-token budget of ${budget ?? 0} tokens` })
      }
      const outcome = await runLlmCall(
        (attemptSignal) =>
          ai.generateText({
            model,
            ...(settings.system === undefined ? {} : { system: settings.system }),
            // A copy: the SDK must not see messages this turn appends while a late attempt is still running.
            messages: [...this.#messages],
            ...(this.#tools === undefined ? {} : { tools: this.#tools }),
            ...(remaining === undefined ? {} : { maxOutputTokens: remaining }),
            // Only our policy retries, so every attempt is seen and recorded.
            maxRetries: 0,
            abortSignal: attemptSignal,
          }),
        { policy: settings.retry, clock, signal, onAttempt: (record) => { this.#recordAttempt(turn, step, record) } },
      )
      if (!outcome.ok) {
        if (outcome.reason === 'cancelled') return aborted()
        return end({ text: '', stopReason: 'error', failureCause: 'provider-error', reason: describeFailure(outcome.failure, outcome.attempts, outcome.reason) })
      }
      const result: GenerateTextResult<ToolSet, never> = outcome.value
      inputTokens += result.usage.inputTokens ?? 0
      outputTokens += result.usage.outputTokens ?? 0
      this.#outputTokens += result.usage.outputTokens ?? 0
      this.#messages.push(...result.response.messages)

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
        results.push({ type: 'tool-result', toolCallId: call.toolCallId, toolName: call.toolName, output })
      }
      if (results.length > 0) this.#messages.push({ role: 'tool', content: results })
    }
  }

  async #invoke(tool: HostTool, input: unknown, signal: AbortSignal): Promise<ToolOutput> {
    try {
      const value = await tool.invoke(input, signal)
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

  #recordAttempt(turn: number, step: number, record: LlmAttemptRecord): void {
    const { request, settings, onLlmAttempt } = this.#context
    const attempt: LlmAttempt = {
      runId: request.runId,
      callId: request.callId,
      logicalCallId: request.logicalCallId,
      agent: request.agent,
      model: settings.modelId,
      turn,
      step,
      ...record,
    }
    this.#appendAttempt(attempt)
    onLlmAttempt?.(attempt)
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
    if (!this.#attemptsDirReady) {
      // The runtime creates the directory; a host used on its own may be given a fresh path.
      mkdirSync(this.#context.request.transcriptDir, { recursive: true })
      this.#attemptsDirReady = true
    }
    appendFileSync(this.#attemptsFile, lines.map((line) => JSON.stringify(line) + '\n').join(''))
  }
}
