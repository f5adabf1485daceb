import { CallError } from '@locus/retry'
import type { TriggerTransport } from './transport.js'
import type { LlmExecuteTrigger, LlmResultAction } from './wire-schemas.js'

/**
 * One LLM attempt's round trip: sends an `llm.execute` trigger and settles on
 * the worker's answer. `llm.result` gives the reply; `llm.error` throws the
 * seed's failure (retryable only when it says `retryable: true`, whatever its
 * `code`); a transport failure keeps the transport's verdict (a dead worker
 * is a retryable `provider_error`); an answer with neither is terminal.
 */
export async function sendLlmTrigger(transport: TriggerTransport, trigger: LlmExecuteTrigger, signal?: AbortSignal): Promise<LlmResultAction> {
  let actions
  try {
    actions = await transport.send(trigger, { signal })
  } catch (error) {
    const retryable = typeof error === 'object' && error !== null && (error as { retryable?: unknown }).retryable === true
    throw new CallError(error instanceof Error ? error.message : String(error), { retryable, ...(retryable ? { code: 'provider_error' as const } : {}), cause: error })
  }
  const answer = actions.find((action) => action.type === 'llm.result' || action.type === 'llm.error')
  if (answer?.type === 'llm.result') return answer
  if (answer?.type === 'llm.error') throw new CallError(answer.error, { retryable: answer.retryable === true, ...(answer.code === undefined ? {} : { code: answer.code }) })
  throw new CallError(`the worker answered the llm.execute trigger ${trigger.id} with no llm.result or llm.error`, { retryable: false })
}
