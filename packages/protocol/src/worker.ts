import type { Action, LlmExecuteTrigger, LlmMessage, Trigger, WireJson, WorkerResponse } from './wire-schemas.js'
import { ProtocolError, parseTrigger, parseWorkerResponse } from './parse-wire.js'

/** What a tool handler of a worker receives besides its arguments. */
export interface WorkerToolContext {
  readonly trigger: Extract<Trigger, { type: 'tool.execute' }>
}

/**
 * A worker's tool: returns the result, or the seed's own shape
 * `{ actions: [...] }` as written, or throws. A thrown value carrying
 * `retryable: true` (and optionally a seed `code`) answers a retryable
 * `tool.error`; anything else thrown is terminal.
 */
export type WorkerTool = {
  // A method signature, so a tool may declare the argument shape it expects: `({ topic }: { topic: string }) => ...`.
  tool(args: WireJson, context: WorkerToolContext): WireJson | WorkerResponse | Promise<WireJson | WorkerResponse>
}['tool']

/** What a worker's `llm` handler is asked: the conversation so far, and the model and agent when the engine names them. */
export interface WorkerLlmRequest {
  readonly messages: readonly LlmMessage[]
  readonly model: string | undefined
  readonly agent: string | undefined
}

/** An `llm.result` as a handler may return it: the text, and optionally why the model stopped and what it used. */
export interface WorkerLlmAnswer {
  readonly text: string
  readonly stop_reason?: 'end' | 'length' | 'content-filter'
  readonly usage?: { readonly input_tokens: number; readonly output_tokens: number }
}

/**
 * A worker's model: answers an `llm.execute` trigger with the reply text, a
 * {@link WorkerLlmAnswer}, or the seed's `{ actions: [...] }` as written. A
 * thrown value carrying `retryable: true` (and optionally a seed `code`)
 * answers a retryable `llm.error`; anything else thrown is terminal.
 */
export type WorkerLlm = (
  request: WorkerLlmRequest,
  context: { readonly trigger: LlmExecuteTrigger },
) => string | WorkerLlmAnswer | WorkerResponse | Promise<string | WorkerLlmAnswer | WorkerResponse>

/** Options of {@link createWorker}. */
export interface WorkerOptions {
  readonly tools: Readonly<Record<string, WorkerTool>>
  /** Answers `llm.execute` triggers; without it, they get a terminal `llm.error`. */
  readonly llm?: WorkerLlm | undefined
}

/** Answers triggers with actions. */
export interface Worker {
  /** The actions answering one trigger (a refused trigger throws {@link ProtocolError}). */
  handle(trigger: unknown): Promise<WorkerResponse>
}

function isWorkerResponse(value: unknown): value is WorkerResponse {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Array.isArray((value as { actions?: unknown }).actions)
}

function errorAction(id: string, thrown: unknown, type: 'tool.error' | 'llm.error' = 'tool.error'): Action {
  const fields = typeof thrown === 'object' && thrown !== null ? (thrown as { retryable?: unknown; code?: unknown; errorCode?: unknown; message?: unknown }) : {}
  const message = thrown instanceof Error ? thrown.message : typeof fields.message === 'string' ? fields.message : String(thrown)
  const code = typeof fields.errorCode === 'string' ? fields.errorCode : typeof fields.code === 'string' && /^[a-z_]+$/.test(fields.code) ? fields.code : undefined
  const action = { type, id, error: message, ...(fields.retryable === true ? { retryable: true } : {}), ...(code === undefined ? {} : { code }) }
  // Validated like any worker answer: an unknown code is dropped rather than sent.
  try {
    return parseWorkerResponse({ actions: [action] }).actions[0] as Action
  } catch {
    return { type, id, error: message, ...(fields.retryable === true ? { retryable: true } : {}) }
  }
}

async function answerLlm(llm: WorkerLlm | undefined, trigger: LlmExecuteTrigger): Promise<WorkerResponse> {
  if (llm === undefined) return { actions: [{ type: 'llm.error', id: trigger.id, error: 'this worker serves no LLM calls' }] }
  try {
    const value = await llm({ messages: trigger.messages, model: trigger.model, agent: trigger.agent }, { trigger })
    if (isWorkerResponse(value)) return parseWorkerResponse(value)
    const answer = typeof value === 'string' ? { text: value } : value
    return parseWorkerResponse({ actions: [{ type: 'llm.result', id: trigger.id, ...answer }] })
  } catch (thrown) {
    if (ProtocolError.isInstance(thrown)) throw thrown
    return { actions: [errorAction(trigger.id, thrown, 'llm.error')] }
  }
}

/**
 * A worker in this process: it answers `tool.execute` triggers by calling
 * the named tool, and `llm.execute` triggers with its `llm` handler. The
 * seed's `return { actions: [...] }` works as written.
 *
 * @example
 * ```ts
 * const worker = createWorker({ tools: { render_report: async ({ topic }) => ({ pages: 3, topic }) } })
 * const { actions } = await worker.handle({ type: 'tool.execute', id: 't-1', attempt: 1, deadline: null, name: 'render_report', arguments: { topic: 'q3' } })
 * ```
 */
export function createWorker(options: WorkerOptions): Worker {
  return {
    async handle(raw) {
      const trigger = parseTrigger(raw)
      if (trigger.type === 'llm.execute') return answerLlm(options.llm, trigger)
      const tool = Object.hasOwn(options.tools, trigger.name) ? options.tools[trigger.name] : undefined
      if (tool === undefined) {
        return { actions: [{ type: 'tool.error', id: trigger.id, error: `this worker has no tool "${trigger.name}" (it has ${Object.keys(options.tools).join(', ') || 'none'})` }] }
      }
      try {
        const value = await tool(trigger.arguments, { trigger })
        if (isWorkerResponse(value)) return parseWorkerResponse(value)
        return parseWorkerResponse({ actions: [{ type: 'tool.result', id: trigger.id, result: value }] })
      } catch (thrown) {
        if (ProtocolError.isInstance(thrown)) throw thrown
        return { actions: [errorAction(trigger.id, thrown)] }
      }
    },
  }
}

/**
 * Serves a worker over newline-delimited JSON: one trigger per input line,
 * one `{ actions }` per output line. Triggers run concurrently; each answer
 * names its trigger by `id`. A line that is not a trigger is answered on
 * stderr and skipped. Resolves when the input ends.
 */
export async function serveNdjson(worker: Worker, input: NodeJS.ReadableStream, output: NodeJS.WritableStream, errors: NodeJS.WritableStream = process.stderr): Promise<void> {
  const { createInterface } = await import('node:readline')
  const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })
  const pending: Promise<void>[] = []
  for await (const line of lines) {
    if (line.trim() === '') continue
    pending.push(
      (async () => {
        try {
          const response = await worker.handle(JSON.parse(line) as unknown)
          output.write(JSON.stringify(response) + '\n')
        } catch (error) {
          errors.write(`locus worker: refused a line: ${error instanceof Error ? error.message : String(error)}\n`)
        }
      })(),
    )
  }
  await Promise.all(pending)
}

