import type { FailureCause } from '@locus/outcome'
import { type RetryClock, systemClock } from '@locus/retry'
import {
  type AgentHost,
  type AgentSession,
  HostError,
  type SessionRequest,
  type TranscriptEntry,
  type TurnResult,
  type Usage,
} from './host.js'

/**
 * One scripted turn. Each turn a child session takes (the first prompt, or a
 * clarification) consumes the next step of the matching rule; the last step
 * repeats once the list is used up.
 */
export type ScriptedStep =
  /** Answer with text, optionally after calling tools and after a delay on the host's clock. */
  | { readonly text: string; readonly delayMs?: number; readonly usage?: Usage; readonly toolCalls?: ReadonlyArray<{ readonly tool: string; readonly args?: unknown }> }
  /** Never answer: wait until the turn is aborted (a call timeout, a cancellation), after streaming `partial` when given. */
  | { readonly hang: true; readonly partial?: string }
  /** Throw a host error with this cause instead of answering (`sdk-unavailable`, `host-turn-timeout`, ...), after streaming `partial` when given. */
  | { readonly throw: FailureCause; readonly message?: string; readonly delayMs?: number; readonly partial?: string }
  /** Stop at the provider's output-token limit with truncated text. */
  | { readonly stop: 'length'; readonly text: string }
  /** Answer with a failure the host classified itself (`provider-error`, `unparseable-answer`, ...). */
  | { readonly fail: FailureCause; readonly reason?: string; readonly usage?: Usage }
  /** Answer with nothing. */
  | { readonly empty: true }

/** Which calls a rule answers; every field given must match. */
export interface ScriptedMatch {
  readonly agent?: string
  readonly label?: string
  readonly phase?: string
  /** A substring of the prompt, or a regular expression tested against it. */
  readonly prompt?: string | RegExp
}

export interface ScriptedRule {
  readonly match?: ScriptedMatch
  readonly steps: readonly ScriptedStep[]
}

export interface ScriptedHostOptions {
  /** Rules tried in order; the first whose match fits answers. */
  readonly rules: readonly ScriptedRule[]
  /** The clock that delays and hangs wait on. @default systemClock */
  readonly clock?: RetryClock
}

/** What the scripted host saw, for assertions. */
export interface ScriptedHostCall {
  readonly callId: string
  readonly logicalCallId: string
  readonly attempt: number
  readonly agent: string
  readonly label: string | undefined
  readonly prompt: string
  readonly turn: number
}

export interface ScriptedHost extends AgentHost {
  /** Every prompt turn the host answered or failed, in order. */
  readonly calls: readonly ScriptedHostCall[]
  /** Child sessions opened (one per physical attempt). */
  readonly sessionCount: number
}

function matches(rule: ScriptedRule, request: SessionRequest, prompt: string): boolean {
  const match = rule.match
  if (match === undefined) return true
  if (match.agent !== undefined && match.agent !== request.agent) return false
  if (match.label !== undefined && match.label !== request.label) return false
  if (match.phase !== undefined && match.phase !== request.phase) return false
  if (match.prompt !== undefined) {
    if (typeof match.prompt === 'string' ? !prompt.includes(match.prompt) : !match.prompt.test(prompt)) return false
  }
  return true
}

function waitForAbort(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve()
  return new Promise((resolve) => {
    signal.addEventListener('abort', () => { resolve() }, { once: true })
  })
}

async function sleepOrAbort(clock: RetryClock, ms: number, signal: AbortSignal): Promise<boolean> {
  if (ms <= 0) return !signal.aborted
  try {
    await clock.sleep(ms, signal)
  } catch {
    // a sleep cancelled by the abort
  }
  return !signal.aborted
}

/**
 * A deterministic host for tests and demos. It matches each turn to a rule by
 * agent, label, phase or prompt and plays the rule's steps: answers, delays,
 * hangs, thrown host errors (an SDK outage, a turn timeout), length stops,
 * provider errors, empty answers. It counts what it was asked.
 *
 * @example
 * ```ts
 * const host = createScriptedHost({ rules: [
 *   { match: { agent: 'analyst' }, steps: [{ hang: true }, { text: 'recovered' }] },
 *   { steps: [{ text: 'ok' }] },
 * ] })
 * ```
 */
export function createScriptedHost(options: ScriptedHostOptions): ScriptedHost {
  const clock = options.clock ?? systemClock
  const cursors = new Map<ScriptedRule, number>()
  const calls: ScriptedHostCall[] = []
  let sessionCount = 0

  function nextStep(request: SessionRequest, prompt: string): ScriptedStep {
    const rule = options.rules.find((candidate) => matches(candidate, request, prompt))
    if (rule === undefined || rule.steps.length === 0) {
      throw new HostError(
        'unclassified',
        `The scripted host has no rule for agent "${request.agent}"${request.label === undefined ? '' : ` (label "${request.label}")`} ` +
          `and prompt ${JSON.stringify(prompt.slice(0, 80))}. Add a rule whose match fits, or a rule with no match as the default.`,
      )
    }
    const cursor = cursors.get(rule) ?? 0
    cursors.set(rule, cursor + 1)
    return rule.steps[Math.min(cursor, rule.steps.length - 1)] ?? { empty: true }
  }

  const host: ScriptedHost = {
    name: 'scripted',
    specificationVersion: 'v1',
    get calls() {
      return calls
    },
    get sessionCount() {
      return sessionCount
    },
    openSession(request: SessionRequest): AgentSession {
      sessionCount += 1
      const transcript: TranscriptEntry[] = []
      if (request.agentConfig?.system !== undefined) transcript.push({ role: 'system', content: request.agentConfig.system })
      let turn = 0
      return {
        transcript: () => transcript,
        async prompt(text, { signal, onText }): Promise<TurnResult> {
          turn += 1
          // One request a turn: its text streams word by word to onText.
          const llmAttempt = turn
          const stream = (answer: string): void => {
            if (onText === undefined) return
            for (const piece of answer.match(/\S*\s*/gu) ?? []) if (piece !== '') onText({ kind: 'delta', llmAttempt, text: piece })
          }
          transcript.push({ role: 'user', content: text })
          calls.push({
            callId: request.callId,
            logicalCallId: request.logicalCallId,
            attempt: request.attempt,
            agent: request.agent,
            label: request.label,
            prompt: text,
            turn,
          })
          const step = nextStep(request, text)
          if (('hang' in step || 'throw' in step) && step.partial !== undefined) stream(step.partial)
          const result = await play(step, request, signal)
          if ('text' in step && result.stopReason === 'end') {
            stream(result.text)
            onText?.({ kind: 'end', llmAttempt })
          }
          transcript.push({ role: 'assistant', content: result.text, stopReason: result.stopReason })
          return result
        },
      }
    },
  }

  async function play(step: ScriptedStep, request: SessionRequest, signal: AbortSignal): Promise<TurnResult> {
    const aborted: TurnResult = { text: '', stopReason: 'aborted' }
    if ('hang' in step) {
      await waitForAbort(signal)
      return aborted
    }
    if ('throw' in step) {
      if (!(await sleepOrAbort(clock, step.delayMs ?? 0, signal))) return aborted
      throw new HostError(step.throw, step.message ?? `scripted host error: ${step.throw}`)
    }
    if ('stop' in step) return { text: step.text, stopReason: 'length' }
    if ('fail' in step) return { text: '', stopReason: 'error', failureCause: step.fail, reason: step.reason ?? `scripted ${step.fail}`, ...(step.usage === undefined ? {} : { usage: step.usage }) }
    if ('empty' in step) return { text: '', stopReason: 'end' }
    if (!(await sleepOrAbort(clock, step.delayMs ?? 0, signal))) return aborted
    let toolCalls = 0
    for (const call of step.toolCalls ?? []) {
      toolCalls += 1
      const limit = request.budgets.maxToolCalls
      if (limit !== undefined && toolCalls > limit) {
        return {
          text: '',
          stopReason: 'tool-call-budget',
          failureCause: 'tool-call-budget',
          reason: `the child tried tool call ${toolCalls} with a budget of ${limit}`,
        }
      }
      const tool = request.tools.find((candidate) => candidate.name === call.tool)
      if (tool === undefined) throw new HostError('unclassified', `scripted step calls unknown tool "${call.tool}"`)
      await tool.invoke(call.args ?? {}, signal)
    }
    return { text: step.text, stopReason: 'end', ...(step.usage === undefined ? {} : { usage: step.usage }) }
  }

  return host
}
