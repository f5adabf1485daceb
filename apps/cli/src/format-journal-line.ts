import type { JournalLine, OnTimeoutPolicyJson } from '@locus/journal'
import { formatDuration } from './format-duration.js'
import type { Style } from './style.js'
import { inCliWords } from './cli-words.js'

/** Where the lines are shown from: a run followed through a server gets advice that names it. */
export interface LineContext {
  /** The server's URL when the run is read through `--server`. */
  readonly server?: string | undefined
}

const PLAIN: Style = {
  enabled: false,
  bold: (text) => text,
  dim: (text) => text,
  green: (text) => text,
  red: (text) => text,
  yellow: (text) => text,
  cyan: (text) => text,
}

function where(line: { readonly label?: string | undefined; readonly groupId?: string | undefined }): string {
  const parts = [line.label === undefined ? '' : `"${line.label}"`, line.groupId === undefined ? '' : `in group ${line.groupId}`].filter((part) => part !== '')
  return parts.length === 0 ? '' : ` ${parts.join(' ')}`
}

/** A tool call's position, as its id carries it: `tool-1.0.1` reads `1.0.1`. */
function toolToken(toolCallId: string): string {
  return toolCallId.replace(/^tool-/, '')
}

function describe(line: JournalLine, style: Style, context: LineContext): string {
  switch (line.type) {
    case 'run_start':
      return `run ${style.bold(line.workflow)} started${line.resumeOf === undefined ? '' : ` (resuming ${line.resumeOf})`}`
    case 'run_end': {
      const disposition = line.disposition === 'completed' ? style.green(line.disposition) : line.disposition === 'failed' ? style.red(line.disposition) : style.yellow(line.disposition)
      return `run ended ${disposition} after ${formatDuration(line.durationMs)}${line.error === undefined ? '' : `: ${line.error.message}`}`
    }
    case 'agent_start':
      return `agent ${line.agent} ${line.ordinal} attempt ${line.attempt}/${line.attempts} started${where(line)}`
    case 'agent_end': {
      const status = line.status === 'completed' ? style.green('completed') : style.red(`failed (${line.failureCause ?? 'unknown'})`)
      const replayed = line.replayed === true ? ' [replayed]' : ''
      return `agent ${line.agent} ${line.ordinal} attempt ${line.attempt}/${line.attempts} ${status} in ${formatDuration(line.durationMs)}${replayed}${line.reason === undefined || line.status === 'completed' ? '' : `: ${line.reason}`}`
    }
    case 'error':
      return `${style.red('error')}${line.agent === undefined ? '' : ` in agent ${line.agent}${line.ordinal === undefined ? '' : ` ${line.ordinal}`}`}${line.failureCause === undefined ? '' : ` (${line.failureCause})`}: ${line.message}`
    case 'retry':
      return style.yellow(line.message)
    case 'group_start':
      return `${line.groupKind} ${line.groupId} started with ${line.total} slot${line.total === 1 ? '' : 's'}${line.label === undefined ? '' : ` "${line.label}"`}`
    case 'group_end': {
      const outcome = line.outcome === 'completed' ? style.green(line.outcome) : style.red(line.outcome)
      return `${line.groupKind} ${line.groupId} ${outcome}: ${line.completed} completed, ${line.failed} failed, ${line.notDispatched} not dispatched`
    }
    case 'tool_start':
      return `tool ${line.tool} ${toolToken(line.toolCallId)} attempt ${line.attempt}/${line.maxAttempts} started${where(line)}`
    case 'tool_end': {
      const status = line.status === 'completed' ? style.green('completed') : style.red(line.status)
      const failure = line.failure === undefined ? '' : `: ${line.failure.error}${line.failure.retryable ? ' (retryable)' : ''}`
      return `tool ${line.tool} ${toolToken(line.toolCallId)} attempt ${line.attempt}/${line.maxAttempts} ${status} in ${formatDuration(line.durationMs)}${failure}`
    }
    case 'budget_change':
      return `budget ${line.budget} ${line.from ?? 'unset'} -> ${line.to ?? 'unset'} (${line.scope})${line.reason === undefined ? '' : `: ${line.reason}`}`
    case 'replay_diverged':
      return style.yellow(`replay diverged at ${line.ordinal}${line.fields.length === 0 ? '' : ` (${line.fields.join(', ')} differ)`}: later calls run live`)
    case 'log':
      return `${line.level === 'info' ? 'log' : line.level === 'warn' ? style.yellow('warn') : style.red('error')}: ${line.message}`
    case 'lease_acquired':
      return `worker ${line.owner} took the lease (epoch ${line.epoch})`
    case 'lease_lost':
      return style.yellow(`worker ${line.owner} lost the lease (epoch ${line.epoch}, ${line.reason})`)
    case 'worker_takeover':
      return style.yellow(`worker ${line.owner} took over from ${line.previousOwner} (epoch ${line.previousEpoch} → ${line.epoch})`)
    case 'run_cancel_requested':
      return style.yellow(`cancel requested by ${line.by}${line.reason === '' ? '' : `: ${line.reason}`}`)
    case 'llm_attempt': {
      const outcome = line.outcome === 'succeeded' ? style.green(line.outcome) : style.red(line.outcome)
      const failure = line.error === undefined ? '' : `: ${line.error}${line.retryable === true ? ' (retryable)' : ''}`
      return `llm ${line.agent} ${line.model} attempt ${line.llmAttempt}/${line.llmMaxAttempts} ${outcome} in ${formatDuration(line.durationMs)}${failure}`
    }
    case 'deferred_open':
      return `waiting on ${line.tool}${line.to === undefined ? '' : ` for ${line.to}`} (deferral ${line.deferredId}${line.expiresAt === null ? ', no deadline' : `, until ${line.expiresAt}`}${onTimeoutWords(line.onTimeout)}); answer it with locus resolve ${line.runId} ${line.deferredId} --result '<json>'${context.server === undefined ? '' : ` --server ${context.server}`}`
    case 'deferred_settled':
      return `deferral ${line.deferredId} ${line.outcome === 'resolved' ? style.green(line.outcome) : style.red(line.outcome)}${line.error === undefined ? '' : `: ${line.error.error}`}${line.decidedBy === undefined ? '' : ` by ${line.decidedBy}`}${line.via === undefined ? '' : ` via ${line.via}`}`
    case 'deferred_expired':
      return style.yellow(
        `deferral ${line.deferredId} of ${line.tool} expired: ${line.applied === 'default' ? `completed with the default ${JSON.stringify(line.result ?? null)}` : line.applied === 'escalated' ? `escalated to ${line.to ?? '?'} as ${line.escalatedTo ?? '?'}` : 'the call is rejected'}`,
      )
    case 'child_start':
      return `child workflow ${style.bold(line.workflow)} ${line.childCallId} attempt ${line.attempt}/${line.maxAttempts} started in execution ${line.childExecutionId}${where(line)}`
    case 'child_end': {
      const ended = line.disposition === undefined ? line.status : line.disposition
      const status = line.status === 'completed' ? style.green(ended) : style.red(ended)
      return `child workflow ${line.workflow} ${line.childCallId} attempt ${line.attempt}/${line.maxAttempts} ${status} in ${formatDuration(line.durationMs)}${line.replayed === true ? ' [replayed]' : ''}`
    }
    case 'timer_start':
      return `waiting on timer ${line.timerId} (sleep${where(line)}) until ${line.dueAt}${line.replayed === true ? ', started by an earlier execution' : ''}`
    case 'timer_fired':
      return `timer ${line.timerId} fired${line.lateMs > 0 ? ` ${formatDuration(line.lateMs)} late` : ''}${line.replayed === true ? ' [replayed]' : ''}`
    case 'signal_received':
      return `signal ${line.name} #${String(line.signalSeq)} received from ${line.from} via ${line.via}`
    case 'signal_wait_start':
      return `waiting for signal ${line.name} (${line.waitId})${line.dueAt === undefined ? '' : ` until ${line.dueAt}`}${line.replayed === true ? ', started by an earlier execution' : ''}`
    case 'signal_wait_end':
      return `${line.waitId} ${line.timedOut === true ? 'timed out' : `took signal ${line.name} #${String(line.signalSeq ?? -1)}`}${line.replayed === true ? ' [replayed]' : ''}`
    case 'update_received':
      return `update ${line.name} ${line.updateId} #${String(line.updateSeq)} received from ${line.from} via ${line.via}`
    case 'update_completed':
      return `update ${line.name} ${line.updateId} completed`
    case 'update_failed':
      return `update ${line.name} ${line.updateId} failed: ${line.error}`
    case 'queued':
      return `waited ${formatDuration(line.waitedMs)} to start (${line.reason}${line.keys.length === 0 ? '' : `; keys ${line.keys.join(', ')}`})`
    case 'rate_wait':
      return `waited ${formatDuration(line.waitedMs)} for rate limit ${line.limit}`
  }
}

/** `, then <policy>` for a deferral's `onTimeout`, or nothing. */
function onTimeoutWords(policy: OnTimeoutPolicyJson | undefined): string {
  if (policy === undefined) return ''
  if (policy === 'reject') return ', then rejected'
  if ('default' in policy) return `, then ${JSON.stringify(policy.default)}`
  return `, then escalated to ${policy.escalate.to}`
}

/** What one journal line says, without its time: the text `formatJournalLine` prints after the offset. */
export function describeJournalLine(line: JournalLine, style: Style = PLAIN, context: LineContext = {}): string {
  return inCliWords(describe(line, style, context))
}

/**
 * One journal line as one line of text: `+1.2s  agent analyst g1[0].1 attempt 1/2 started`.
 * The offset counts from `startedAt` (the run's start) when given.
 *
 * @example
 * ```ts
 * for (const line of readJournal(path).lines) console.log(formatJournalLine(line, Date.parse(first.ts)))
 * ```
 */
export function formatJournalLine(line: JournalLine, startedAt?: number, style: Style = PLAIN, context: LineContext = {}): string {
  const offset = startedAt === undefined ? line.ts : `+${formatDuration(Math.max(0, Date.parse(line.ts) - startedAt))}`.padStart(8)
  return `${style.dim(offset)}  ${describeJournalLine(line, style, context)}`
}
