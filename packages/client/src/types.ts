import type { JournalLine } from '@locus/journal'

// The client declares the shapes the Locus HTTP API answers with, instead of
// importing the private server app; test/api-shapes.test.ts holds them to the
// server's own schemas.

/** Where a run is: `waiting` has not ended and waits on an open deferred tool or a `sleep()` timer. */
export const RUN_STATUSES = ['queued', 'running', 'waiting', 'cancelling', 'completed', 'failed', 'cancelled', 'unfinished', 'taken-over', 'suspended'] as const
export type RunStatus = (typeof RUN_STATUSES)[number]

/** How an ended execution ended. */
export type RunDisposition = 'completed' | 'failed' | 'cancelled'

/** Which per-call budget defaults a run starts with. */
export type LaunchMode = 'interactive' | 'background'

/** Run-level budgets, as `RunBudgets` of @locus/runtime. */
export interface RunBudgets {
  readonly maxTotalAgentInvocations?: number
  readonly deadlineMs?: number
  readonly perCall?: { readonly maxToolCalls?: number; readonly maxOutputTokens?: number; readonly maxAnswerChars?: number }
  /**
   * Dollars the whole run tree may spend on LLM requests, a positive decimal
   * (`"2.50"`, or a number); the server prices runs with `locus serve
   * --prices`. A call it cannot afford is not run and becomes a gap.
   */
  readonly maxCostUsd?: string | number
}

export interface RunLinks {
  readonly self: string
  readonly result: string
  readonly journal: string
  readonly events: string
  readonly cancel: string
  readonly resume: string
}

/** What starting, resuming and cancelling a run answer, and `result` while the run has not ended. */
export interface RunAccepted {
  readonly runId: string
  readonly executionId: string
  readonly status: RunStatus
  readonly links: RunLinks
}

export interface WorkflowInfo {
  readonly name: string
  readonly description?: string
  /** JSON Schema (draft 2020-12) of the workflow's input. */
  readonly inputSchema: Record<string, unknown>
}

export interface PendingDeferral {
  readonly deferredId: string
  readonly tool: string
  readonly args?: unknown
  /** When the deferral lapses; null waits indefinitely. */
  readonly expiresAt: string | null
  /** What its deadline does (the tool's `onTimeout`); absent when it fails the attempt as a timeout. */
  readonly onTimeout?: 'reject' | { readonly default: unknown } | { readonly escalate: { readonly to: string; readonly after?: string | number } }
  /** The party an escalation is for. */
  readonly to?: string
  /** The deferral whose deadline opened this one. */
  readonly escalatedFrom?: string
  readonly executionId: string
  /** When it opened, ISO 8601. */
  readonly openedAt?: string
  /**
   * With a server callback secret: a pre-signed URL that settles this
   * deferral without an API key (POST `{ result }` or `{ error }` to it,
   * journaled `via: 'callback'`); good until the deferral's deadline, or 7
   * days (the server's `callbackTtlSeconds`) after it opened.
   */
  readonly callbackUrl?: string
}

export interface RunGap {
  readonly tool: string
  readonly criticality: string
  readonly reason?: string
}

/** `GET /v1/runs/{id}`. */
export interface RunInfo {
  readonly runId: string
  readonly workflow: string
  readonly status: RunStatus
  /** True while the server executes the run. */
  readonly live: boolean
  readonly executionId: string
  /** Each execution with its own start, duration and counts; the run's `startedAt`, `durationMs` and `counts` add them all up. */
  readonly executions: readonly {
    readonly executionId: string
    readonly kind: 'root' | 'resume' | 'replay' | 'child'
    readonly status: RunStatus
    readonly startedAt?: string | null
    readonly durationMs?: number | null
    readonly counts?: Readonly<Record<string, number>>
  }[]
  readonly disposition: RunDisposition | null
  readonly answerOutcome: string | null
  readonly startedAt: string | null
  readonly durationMs: number | null
  readonly error: string | null
  readonly gaps: readonly RunGap[]
  readonly caveats: readonly string[]
  readonly counts: Readonly<Record<string, number>>
  /** What the run's LLM requests cost, over every execution, when the run was priced; null when it was not (absent from older servers). */
  readonly cost?: { readonly usd: string; readonly retryOverheadUsd: string; readonly unpricedRequests: number; readonly table: string } | null
  /** `seq` of the last journal line of the latest execution; -1 before any. */
  readonly lastSeq: number
  readonly deferred: readonly PendingDeferral[]
  /** While the run sleeps (`sleep()`, status `waiting`): the earliest due time of its open timers, ISO 8601; null otherwise (absent from older servers). */
  readonly sleepingUntil?: string | null
  /** What the run waited for: its start (`queued`, null when it started at once) and its LLM requests' rate-limit waits (absent from older servers). */
  readonly waits?: RunWaits
  readonly links: RunLinks
}

/** A run's waits, which spent no attempt, retry or invocation. */
export interface RunWaits {
  readonly queued: { readonly keys: readonly string[]; readonly reason: 'concurrency' | 'rate' | 'priority'; readonly waitedMs: number } | null
  readonly rate: { readonly count: number; readonly waitedMs: number }
}

/** One key of `GET /v1/queues`: a concurrency key, or `rate:<provider>/<model>` for a shared rate limit. */
export interface QueueInfo {
  readonly key: string
  /** Runs holding a slot of the key (for a rate limit: requests started in the last minute). */
  readonly running: number
  /** Runs waiting to start (for a rate limit: calls waiting for room). */
  readonly waiting: number
  /** How long the oldest of them has waited; 0 when none waits. */
  readonly oldestWaitMs: number
}

export interface RunListItem {
  readonly runId: string
  readonly workflow: string
  readonly status: RunStatus
  readonly createdAt: string | null
  readonly startedAt: string | null
  readonly links: { readonly self: string }
}

export interface RunList {
  readonly runs: readonly RunListItem[]
  /** Pass as `cursor` for the next page; null on the last one. */
  readonly nextCursor: string | null
}

/** The `result.json` of an ended execution; `ok` is true only for a completed run with a complete answer. */
export interface RunResult {
  readonly schema: string
  readonly runId: string
  readonly executionId: string
  readonly workflow: string
  readonly disposition: RunDisposition
  readonly ok: boolean
  readonly result: unknown
  readonly error?: { readonly name?: string; readonly code?: string; readonly message: string }
  readonly startedAt: string
  readonly endedAt: string
  readonly answerOutcome?: string
  readonly gaps?: readonly RunGap[]
  readonly caveats?: readonly string[]
}

/** `GET /v1/runs/{id}/result`: the result once the run ended, else where it is. */
export type ResultAnswer = { readonly ended: true; readonly result: RunResult } | { readonly ended: false; readonly pending: RunAccepted }

/** What sending a signal answers: its place in the run's mailbox. */
export interface SignalAccepted {
  readonly runId: string
  readonly name: string
  readonly signalSeq: number
  readonly status: 'stored'
}

/** What an update answers once its handler returned (200). */
export interface UpdateResult {
  readonly runId: string
  readonly name: string
  readonly updateId: string
  readonly result: unknown
}

/** What an update answers when the wait ran out first (202): accepted and journaled; its handler runs, and the journal's `update_completed` carries the result. */
export interface UpdateAccepted {
  readonly runId: string
  readonly name: string
  readonly updateId: string
  readonly status: 'accepted'
}

/** What a query answers. */
export interface QueryResult {
  readonly runId: string
  readonly name: string
  readonly result: unknown
}

export interface DeferredAnswerAccepted {
  readonly runId: string
  readonly deferredId: string
  readonly status: string
}

export interface EventsToken {
  readonly runId: string
  readonly token: string
  readonly expiresAt: string
  /** The event stream path with the token. */
  readonly events: string
}

/** A `tool.execute` or `llm.execute` trigger a worker claimed (the seed's wire format). */
export interface WorkerTrigger {
  readonly type: string
  readonly id: string
  readonly [field: string]: unknown
}

export interface WorkerTriggers {
  readonly triggers: readonly WorkerTrigger[]
  readonly claimTimeoutMs: number
}

/** A worker's answer to a trigger: a `tool.result` or `tool.error` naming the trigger's `id`. */
export interface WorkerAction {
  readonly type: string
  readonly id: string
  readonly [field: string]: unknown
}

export interface WorkerActionsReport {
  readonly accepted: readonly string[]
  readonly ignored: readonly { readonly id: string | null; readonly reason: string }[]
}

export interface Readiness {
  readonly ready: true
  readonly activeRuns: number
  readonly openStreams: number
}

export type { JournalLine }

/** How a schedule's slot ended. */
export type SlotOutcome = 'started' | 'skipped-overlap' | 'missed' | 'paused' | 'failed-to-start'

/** One slot's record (`GET /v1/schedules/{id}`): when it was due and how it ended. */
export interface SlotRecord {
  /** The slot time, ISO 8601 UTC. */
  readonly slot: string
  readonly outcome: SlotOutcome
  readonly runId?: string
  readonly error?: string
  /** Who asked for the slot: the schedule itself, a trigger or a backfill. */
  readonly source?: 'schedule' | 'trigger' | 'backfill'
  readonly recordedAt: string
}

/** A registered schedule and its live state. */
export interface ScheduleInfo {
  readonly schedule: {
    readonly id: string
    readonly workflow: string
    readonly cron?: string
    readonly every?: string
    readonly timezone?: string
    readonly input: unknown
    readonly overlap: string
    readonly catchUpWindow: string
    readonly jitter?: string
    readonly paused?: boolean
  }
  readonly paused: boolean
  readonly registeredAt: string
}

/** One schedule of `GET /v1/schedules`, with its latest slot record. */
export interface ScheduleListItem extends ScheduleInfo {
  readonly lastSlot: SlotRecord | null
}

/** `GET /v1/schedules/{id}`: the schedule and its slot records, newest first (at most 100). */
export interface ScheduleDetail extends ScheduleInfo {
  readonly slots: readonly SlotRecord[]
}

/** What `POST /v1/schedules/{id}/trigger` and `/backfill` answer: the slots asked of the process that holds the schedule. */
export interface SlotsRequested {
  readonly scheduleId: string
  readonly requested: readonly string[]
}
