import type { FinishReason, LanguageModelUsage, ModelMessage, ToolSet, TypedToolCall } from 'ai'
import type { AiSdkLanguageModel } from './ai-sdk-host-options.js'
import type { AiModule } from './load-sdk.js'

/** One request to the model: what both `generateText` and `streamText` are given. */
export interface LlmStepRequest {
  readonly model: AiSdkLanguageModel
  readonly system?: string
  readonly messages: ModelMessage[]
  readonly tools?: ToolSet
  readonly maxOutputTokens?: number
}

/** What one LLM step produced, the same whether it was streamed or not. */
export interface LlmStep {
  readonly text: string
  readonly finishReason: FinishReason
  readonly inputTokens: number | undefined
  readonly outputTokens: number | undefined
  /** How many of the input tokens were read from or written to the provider's cache, and of the output tokens were reasoning, when it said. */
  readonly usageDetails: UsageDetails
  readonly toolCalls: ReadonlyArray<TypedToolCall<ToolSet>>
  readonly responseMessages: readonly ModelMessage[]
  /** Streamed chunks of text, reasoning or tool input received; 0 when not streamed. */
  readonly chunks: number
}

/** The parts of a request's usage that price differently: cache reads and writes (of the input), reasoning (of the output). */
export interface UsageDetails {
  readonly cacheReadTokens?: number
  readonly cacheWriteTokens?: number
  readonly reasoningTokens?: number
}

/** The detail counts the provider reported, each only when it reported it. */
export function usageDetailsOf(usage: LanguageModelUsage): UsageDetails {
  const details: { cacheReadTokens?: number; cacheWriteTokens?: number; reasoningTokens?: number } = {}
  const cacheRead = usage.inputTokenDetails.cacheReadTokens
  const cacheWrite = usage.inputTokenDetails.cacheWriteTokens
  const reasoning = usage.outputTokenDetails.reasoningTokens
  if (cacheRead !== undefined && cacheRead > 0) details.cacheReadTokens = cacheRead
  if (cacheWrite !== undefined && cacheWrite > 0) details.cacheWriteTokens = cacheWrite
  if (reasoning !== undefined && reasoning > 0) details.reasoningTokens = reasoning
  return details
}

/** What a streamed step reports while it runs. */
export interface StepObserver {
  /** Any part arrived from the server: the idle clock starts again. */
  activity(): void
  /** A chunk of output arrived; `textChars` counts the answer text in it (0 for reasoning or tool input), `text` is that text. */
  chunk(textChars: number, text?: string): void
}

/** Sends the step without streaming: `generateText`, one response at the end. */
export async function generateStep(ai: AiModule, request: LlmStepRequest, abortSignal: AbortSignal): Promise<LlmStep> {
  const result = await ai.generateText({ ...request, maxRetries: 0, abortSignal })
  return {
    text: result.text,
    finishReason: result.finishReason,
    inputTokens: result.usage.inputTokens,
    outputTokens: result.usage.outputTokens,
    usageDetails: usageDetailsOf(result.usage),
    toolCalls: result.toolCalls,
    responseMessages: result.response.messages,
    chunks: 0,
  }
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new Error('the request was aborted')
}

/**
 * Sends the step as a stream (`streamText`): every part the server sends is
 * reported to `observer` as it arrives, and the first error part the stream
 * carries (an HTTP failure, or an error object a server sent inside a 200
 * stream) is thrown for the retry loop to classify.
 */
export async function streamStep(ai: AiModule, request: LlmStepRequest, abortSignal: AbortSignal, observer: StepObserver): Promise<LlmStep> {
  // The SDK's default onError prints every error to the console; the retry loop reports them instead.
  const result = ai.streamText({ ...request, maxRetries: 0, abortSignal, onError: () => undefined })
  let failure: { readonly error: unknown } | undefined
  let chunks = 0
  // Read from the parts as they pass rather than from the result's promises: one promise to await, not five.
  let text = ''
  let finish: { readonly finishReason: FinishReason; readonly inputTokens: number | undefined; readonly outputTokens: number | undefined; readonly usageDetails: UsageDetails } | undefined
  const toolCalls: Array<TypedToolCall<ToolSet>> = []
  try {
    for await (const part of result.fullStream) {
      observer.activity()
      switch (part.type) {
        case 'text-delta':
          chunks += 1
          text += part.text
          observer.chunk(part.text.length, part.text)
          break
        case 'reasoning-delta':
        case 'tool-input-delta':
          chunks += 1
          observer.chunk(0)
          break
        case 'tool-call':
          toolCalls.push(part)
          break
        case 'finish':
          finish = { finishReason: part.finishReason, inputTokens: part.totalUsage.inputTokens, outputTokens: part.totalUsage.outputTokens, usageDetails: usageDetailsOf(part.totalUsage) }
          break
        case 'error':
          failure ??= { error: part.error }
          break
        default:
          break
      }
    }
  } catch (error) {
    if (abortSignal.aborted) throw abortReason(abortSignal)
    throw error
  }
  if (abortSignal.aborted) throw abortReason(abortSignal)
  if (failure !== undefined) throw failure.error
  // The history needs the SDK's own response messages (tool errors for invalid calls included).
  const response = await result.response
  return {
    text,
    finishReason: finish?.finishReason ?? 'other',
    inputTokens: finish?.inputTokens,
    outputTokens: finish?.outputTokens,
    usageDetails: finish?.usageDetails ?? {},
    toolCalls,
    responseMessages: response.messages,
    chunks,
  }
}
