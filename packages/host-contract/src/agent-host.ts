import type { ErrorCode, FailureCause } from '@locus/outcome'
import type { RetryPolicy } from '@locus/retry'
import type { z } from 'zod'

/** The version of the host contract this package describes. */
export const HOST_SPECIFICATION_VERSION = 'v1'

/** A version of the host contract; only {@link HOST_SPECIFICATION_VERSION} exists so far. */
export type HostSpecificationVersion = typeof HOST_SPECIFICATION_VERSION

/** How a run was launched; a host picks its own defaults (such as its turn budget) from it. */
export const LAUNCH_MODES = ['interactive', 'background'] as const

/** One of {@link LAUNCH_MODES}. */
export type LaunchMode = (typeof LAUNCH_MODES)[number]

/** Identity of a catalog role: which prompt and model, never which capabilities. */
export interface AgentConfig {
  /** System prompt of the child session. */
  readonly system?: string
  /** Model identifier the host should use. */
  readonly model?: string
  /** Seed 001 retry policy applied by hosts to each LLM call of this agent. */
  readonly retry?: RetryPolicy
  readonly description?: string
}

/** Per-call spend controls. An explicit per-call value overrides the run-level one. */
export interface CallBudgets {
  /** Tool calls one child may make before it fails as `tool-call-budget`. */
  readonly maxToolCalls?: number
  /** Output tokens one child may produce. */
  readonly maxOutputTokens?: number
  /** Characters of answer accepted; a longer answer fails as `answer-too-long`. */
  readonly maxAnswerChars?: number
  /**
   * The host's turn budget for this call: the longest a turn may take in
   * total, and the longest it may go without a byte from the model; `null`
   * turns a bound off. Unset, the host's own defaults for the launch mode
   * apply. A turn that exceeds it fails as `host-turn-timeout`.
   */
  readonly turnTimeoutMs?: number | null
  readonly turnIdleMs?: number | null
}

/** The budgets every call has a value for: the launch mode's defaults with overrides laid over them. */
export type CountedBudgets = Required<Pick<CallBudgets, 'maxToolCalls' | 'maxOutputTokens' | 'maxAnswerChars'>>

/** A tool as a host sees it: the full surface of the workflow, called through the runtime so it is journaled. */
export interface HostTool {
  readonly name: string
  readonly description?: string | undefined
  readonly input: z.ZodType
  invoke(args: unknown, signal: AbortSignal): Promise<unknown>
}

/** Where a host writes artifacts of one call attempt, by name. */
export interface ArtifactSink {
  /** Stores `text` whole under `name` (letters, digits, ".", "_", "-", and "/" between names); never throws for a failed write, which the run reports. */
  write(name: string, text: string): void
}

/** What a host needs to open one child session: one physical attempt of an `agent()` call. */
export interface SessionRequest {
  readonly runId: string
  readonly callId: string
  readonly logicalCallId: string
  readonly attempt: number
  readonly agent: string
  readonly agentConfig: AgentConfig | undefined
  readonly label: string | undefined
  readonly phase: string | undefined
  readonly budgets: CallBudgets
  readonly tools: readonly HostTool[]
  /**
   * Where the host keeps files of its own for this attempt (logs of LLM
   * attempts), whatever store the run is in: `write(name, text)` stores the
   * whole text under the attempt's transcript key (the file store puts it in
   * `calls/<callId>/transcript/<name>`); a later write of a name replaces it.
   * Absent when nothing is kept.
   */
  readonly artifacts?: ArtifactSink
  /** How the run was launched; a host picks its own defaults (such as its turn budget) from it. */
  readonly launchMode?: LaunchMode
}

/** Why a turn stopped, as the host observed it. */
export type StopReason = 'end' | 'length' | 'aborted' | 'tool-call-budget' | 'content-filter' | 'error'

/** Token usage of a turn or a call. */
export interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
}

/**
 * One physical attempt of one LLM request a host made during a turn, as the
 * runtime journals it (`llm_attempt`). Hosts that retry requests under a
 * role's policy report every attempt, so those retries are visible apart
 * from the agent call's own.
 */
export interface LlmAttemptRecord {
  readonly model: string
  readonly turn: number
  readonly step: number
  readonly attempt: number
  readonly maxAttempts: number
  readonly outcome: 'succeeded' | 'failed' | 'timed-out' | 'cancelled'
  readonly durationMs: number
  readonly streamed: boolean
  readonly code?: ErrorCode
  readonly status?: number
  readonly error?: string
  readonly retryable?: boolean
  readonly retryAfterMs?: number
  readonly delayBeforeNextMs?: number
  readonly timeToFirstTokenMs?: number
  readonly turnBudget?: 'idle' | 'total'
  /**
   * Tokens the provider reported for this one request, when it reported them:
   * all input and output tokens, and (when the provider said) how many input
   * tokens were cache reads or writes and how many output tokens were reasoning.
   */
  readonly usage?: LlmUsageRecord
}

/** One request's tokens: totals, and the parts that are priced differently. */
export interface LlmUsageRecord {
  readonly inputTokens: number
  readonly outputTokens: number
  /** Of `inputTokens`, read from the provider's prompt cache. */
  readonly cacheReadTokens?: number
  /** Of `inputTokens`, written to the provider's prompt cache. */
  readonly cacheWriteTokens?: number
  /** Of `outputTokens`, reasoning. */
  readonly reasoningTokens?: number
}

/** Progress of a turn while the model streams: never journaled token by token. */
export interface TurnProgress {
  /** `first-token` once per LLM attempt, `tokens` while it streams, `step-end` with exact usage. */
  readonly kind: string
  readonly outputTokens?: number
  readonly elapsedMs?: number
  readonly timeToFirstTokenMs?: number
}

/**
 * The answer text of a turn as it streams, per LLM request the host sends
 * (`llmAttempt` 1, 2, ... within the session, a host retry included): each
 * `delta` of text, then `end` when the request answered, or `discarded` with
 * a cause when the host threw the request's text away (it failed, timed out,
 * and the host retries or gives up). The runtime keeps these in the run's
 * token stream, never in the journal.
 */
export type TurnTextEvent =
  | { readonly kind: 'delta'; readonly llmAttempt: number; readonly text: string }
  | { readonly kind: 'end'; readonly llmAttempt: number }
  | { readonly kind: 'discarded'; readonly llmAttempt: number; readonly cause: string }

/** What `prompt` is given besides its text. */
export interface PromptOptions {
  readonly signal: AbortSignal
  readonly onProgress?: (progress: TurnProgress) => void
  /** The answer's text as it streams; a host that cannot stream may call it once with the whole text, or never. */
  readonly onText?: (event: TurnTextEvent) => void
  /**
   * The run's shared rate limits, for the requests a turn sends after its
   * first (a retry, a later step): present when the run has limits. The turn's
   * first request already had room when `prompt` was called.
   */
  readonly rateGate?: RateGate
}

/**
 * What a host that sends several LLM requests in one turn tells the run's
 * shared rate limits, so every request, not only a turn's first, counts
 * against them and a provider's `Retry-After` holds every worker at once.
 */
export interface RateGate {
  /**
   * Waits for room before a request after the turn's first; the wait is
   * journaled as `rate_wait` and spends no attempt. Resolves early when
   * `signal` aborts.
   */
  beforeRequest(signal: AbortSignal): Promise<void>
  /**
   * A provider answered 429 with `Retry-After`: closes the shared limit for
   * `model` for `ms` for every caller at once. A host that calls it leaves the
   * wait to `beforeRequest` instead of sleeping the `Retry-After` itself.
   */
  retryAfter(model: string, ms: number): void
}

/** The result of one prompt in a child session. */
export interface TurnResult {
  readonly text: string
  readonly stopReason: StopReason
  readonly usage?: Usage
  /** Set when the host itself classified the turn as a failure (for example `provider-error`). */
  readonly failureCause?: FailureCause
  readonly reason?: string
  /** Every LLM request attempt the host made for this turn, when it reports them. */
  readonly llmAttempts?: readonly LlmAttemptRecord[]
}

/** One message of a child session's transcript. */
export interface TranscriptEntry {
  readonly role: 'system' | 'user' | 'assistant' | 'tool'
  readonly content: string
  readonly stopReason?: StopReason
  readonly tool?: string
}

/** A child session: a message history that clarification turns continue. */
export interface AgentSession {
  prompt(text: string, options: PromptOptions): Promise<TurnResult>
  transcript(): readonly TranscriptEntry[]
  close?(): void | Promise<void>
}

/**
 * A shared limit on a host's LLM requests, kept by the runtime that calls the
 * host: at most `requestsPerMinute` requests and `tokensPerMinute` tokens in
 * any 60 s, for requests whose provider and model the `match` names (every
 * field given must be equal). At least one of the two numbers, each a
 * positive whole number.
 */
export interface HostRateLimit {
  readonly match: { readonly provider?: string; readonly model?: string }
  readonly requestsPerMinute?: number
  readonly tokensPerMinute?: number
}

/**
 * Where agent() calls run: a scripted host in tests and demos, a model
 * provider in production, a worker in another process.
 */
export interface AgentHost {
  readonly name: string
  /**
   * The version of this contract the host implements. A runtime refuses a
   * host that declares a version it does not implement, rather than calling
   * it with sessions it would misread. Omitted, the host is read as `v1`.
   */
  readonly specificationVersion?: HostSpecificationVersion
  /**
   * What a run records of the host in `run_start` so a resume can build it
   * again: plain JSON, never a secret.
   */
  readonly settings?: unknown
  /**
   * Rate limits every runtime calling this host keeps on its requests, shared
   * by every run that uses this host object (unless the runtime was given
   * limits of its own); each wait is journaled as `rate_wait`.
   */
  readonly rateLimits?: readonly HostRateLimit[]
  openSession(request: SessionRequest): AgentSession | Promise<AgentSession>
}
