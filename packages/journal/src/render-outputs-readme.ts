import { classifyOutcome } from '@locus/outcome'
import type {
  AgentEndLine,
  AgentStartLine,
  ErrorLine,
  GroupEndLine,
  GroupStartLine,
  JournalLine,
  RetryLine,
  RunEndLine,
  RunStartLine,
} from './journal-line-schema.js'

/** Options of {@link renderOutputsReadme}. */
export interface RenderOutputsReadmeOptions {
  /** The document title. @default `Run <runId>` */
  readonly title?: string | undefined
  /** Longest JSON shown for the result before it is cut (the full value is in `result.json`). @default 4000 */
  readonly maxResultChars?: number | undefined
}

/** One physical attempt of a logical agent call, as the journal shows it. */
interface AttemptRecord {
  callId: string
  attempt: number
  attempts: number
  firstSeq: number
  start?: AgentStartLine
  end?: AgentEndLine
  error?: ErrorLine
}

interface LogicalCall {
  logicalCallId: string
  firstSeq: number
  attempts: Map<string, AttemptRecord>
  retries: RetryLine[]
}

interface RunFacts {
  runStart: RunStartLine | undefined
  runEnd: RunEndLine | undefined
  calls: Map<string, LogicalCall>
  looseErrors: ErrorLine[]
  groupStarts: Map<string, GroupStartLine>
  groupEnds: Map<string, GroupEndLine>
  toolAttempts: number
  toolRetries: number
  toolCalls: Set<string>
  budgetChanges: Extract<JournalLine, { type: 'budget_change' }>[]
  divergences: Extract<JournalLine, { type: 'replay_diverged' }>[]
}

/**
 * Renders a run's `outputs/README.md` from its journal lines: the run's
 * disposition and what it returned (or how it failed), counts of agent calls,
 * attempts and retries, the groups and their outcomes, and a
 * `## Retried agent calls` section.
 *
 * That section groups attempts by `logicalCallId` alone, never by agent,
 * label, phase or group, which two concurrent calls can share. It lists every
 * attempt by `callId`, gives each discarded attempt's cause, and shows an
 * attempt whose terminal record is an `error` line as `threw`.
 *
 * A run without `run_end`, with a failed, cancelled or partial result, or
 * whose returned value classifies as a failure is never presented as a
 * success.
 *
 * @example
 * ```ts
 * const { lines } = readJournal(paths.journalPath)
 * writeFileSync(paths.outputsReadmePath, renderOutputsReadme(lines))
 * ```
 */
export function renderOutputsReadme(lines: readonly JournalLine[], options: RenderOutputsReadmeOptions = {}): string {
  const facts = collect(lines)
  const runId = facts.runStart?.runId ?? lines[0]?.runId ?? 'unknown'
  const out: string[] = []
  out.push(`# ${escapeText(options.title ?? `Run ${runId}`)}`, '')
  out.push(...renderSummary(facts, runId))
  out.push(...renderResult(facts, options.maxResultChars ?? 4000))
  out.push(...renderRetried(facts))
  out.push(...renderFailedCalls(facts))
  out.push(...renderGroups(facts))
  out.push(...renderOther(facts))
  while (out.at(-1) === '') out.pop()
  return out.join('\n') + '\n'
}

function collect(lines: readonly JournalLine[]): RunFacts {
  const facts: RunFacts = {
    runStart: undefined,
    runEnd: undefined,
    calls: new Map(),
    looseErrors: [],
    groupStarts: new Map(),
    groupEnds: new Map(),
    toolAttempts: 0,
    toolRetries: 0,
    toolCalls: new Set(),
    budgetChanges: [],
    divergences: [],
  }
  const logicalOfCall = new Map<string, string>()
  const pendingErrors: ErrorLine[] = []
  const pendingRetries: RetryLine[] = []

  const attemptOf = (logicalCallId: string, callId: string, attempt: number, attempts: number, seq: number): AttemptRecord => {
    let call = facts.calls.get(logicalCallId)
    if (call === undefined) {
      call = { logicalCallId, firstSeq: seq, attempts: new Map(), retries: [] }
      facts.calls.set(logicalCallId, call)
    }
    let record = call.attempts.get(callId)
    if (record === undefined) {
      record = { callId, attempt, attempts, firstSeq: seq }
      call.attempts.set(callId, record)
    }
    logicalOfCall.set(callId, logicalCallId)
    return record
  }

  for (const line of lines) {
    switch (line.type) {
      case 'run_start':
        facts.runStart ??= line
        break
      case 'run_end':
        facts.runEnd = line
        break
      case 'agent_start':
        attemptOf(line.logicalCallId, line.callId, line.attempt, line.attempts, line.seq).start = line
        break
      case 'agent_end':
        attemptOf(line.logicalCallId, line.callId, line.attempt, line.attempts, line.seq).end = line
        break
      case 'error':
        pendingErrors.push(line)
        break
      case 'retry':
        if (line.kind === 'agent') pendingRetries.push(line)
        else facts.toolRetries += 1
        break
      case 'group_start':
        facts.groupStarts.set(line.groupId, line)
        break
      case 'group_end':
        facts.groupEnds.set(line.groupId, line)
        break
      case 'tool_start':
        facts.toolAttempts += 1
        facts.toolCalls.add(line.toolCallId)
        break
      case 'budget_change':
        facts.budgetChanges.push(line)
        break
      case 'replay_diverged':
        facts.divergences.push(line)
        break
      default:
        break
    }
  }

  // Errors and retries are matched after every start line is known: an error
  // that names only its callId still finds its logical call.
  for (const line of pendingErrors) {
    const logicalCallId = line.logicalCallId ?? (line.callId === undefined ? undefined : logicalOfCall.get(line.callId))
    if (logicalCallId === undefined) {
      facts.looseErrors.push(line)
      continue
    }
    const call = facts.calls.get(logicalCallId)
    const byCallId = line.callId === undefined ? undefined : call?.attempts.get(line.callId)
    const byAttempt =
      byCallId ?? [...(call?.attempts.values() ?? [])].find((record) => line.attempt !== undefined && record.attempt === line.attempt)
    if (byAttempt !== undefined) {
      byAttempt.error ??= line
    } else if (line.callId !== undefined && line.attempt !== undefined && line.attempts !== undefined) {
      attemptOf(logicalCallId, line.callId, line.attempt, line.attempts, line.seq).error = line
    } else {
      facts.looseErrors.push(line)
    }
  }
  for (const line of pendingRetries) {
    const logicalCallId = line.logicalCallId ?? (line.callId === undefined ? undefined : logicalOfCall.get(line.callId))
    const call = logicalCallId === undefined ? undefined : facts.calls.get(logicalCallId)
    call?.retries.push(line)
  }
  return facts
}

type AttemptOutcome = 'completed' | 'failed' | 'threw' | 'unfinished'

function outcomeOf(record: AttemptRecord): AttemptOutcome {
  if (record.end !== undefined) return record.end.status
  if (record.error !== undefined) return 'threw'
  return 'unfinished'
}

function orderedAttempts(call: LogicalCall): AttemptRecord[] {
  return [...call.attempts.values()].sort((left, right) => left.attempt - right.attempt || left.firstSeq - right.firstSeq)
}

function isRetried(call: LogicalCall): boolean {
  return call.attempts.size > 1 || call.retries.length > 0
}

function finalOutcome(call: LogicalCall): AttemptOutcome {
  const attempts = orderedAttempts(call)
  const last = attempts.at(-1)
  return last === undefined ? 'unfinished' : outcomeOf(last)
}

function renderSummary(facts: RunFacts, runId: string): string[] {
  const out = ['## Summary', '']
  const { runEnd, runStart } = facts
  if (runStart !== undefined) out.push(`- Workflow: ${code(runStart.workflow)}`)
  out.push(`- Run: ${code(runId)}${runStart !== undefined && runStart.executionId !== runId ? `, execution ${code(runStart.executionId)}` : ''}`)
  if (runStart?.resumeOf !== undefined) out.push(`- Resumes: ${code(runStart.resumeOf)}`)
  if (runStart?.parentRunId !== undefined) out.push(`- Parent run: ${code(runStart.parentRunId)}`)
  out.push(`- Disposition: ${describeDisposition(runEnd)}`)
  if (runEnd !== undefined) out.push(`- Duration: ${formatDuration(runEnd.durationMs)}`)

  const calls = [...facts.calls.values()]
  const attempts = calls.reduce((total, call) => total + call.attempts.size, 0)
  const retried = calls.filter(isRetried)
  const retries = calls.reduce((total, call) => total + Math.max(call.attempts.size - 1, call.retries.length), 0)
  const finals = calls.map(finalOutcome)
  const count = (outcome: AttemptOutcome): number => finals.filter((value) => value === outcome).length
  out.push(
    `- Agent calls: ${calls.length} (${plural(attempts, 'attempt', 'attempts')}, ${plural(retries, 'retry', 'retries')} across ${plural(retried.length, 'call', 'calls')}); ` +
      `${count('completed')} completed, ${count('failed')} failed, ${count('threw')} threw, ${count('unfinished')} unfinished`,
  )
  if (facts.toolAttempts > 0) {
    out.push(`- Tool calls: ${facts.toolCalls.size} (${plural(facts.toolAttempts, 'attempt', 'attempts')}, ${plural(facts.toolRetries, 'retry', 'retries')})`)
  }
  const groups = [...facts.groupStarts.keys(), ...[...facts.groupEnds.keys()].filter((id) => !facts.groupStarts.has(id))]
  if (groups.length > 0) {
    const notCompleted = groups.filter((id) => facts.groupEnds.get(id)?.outcome !== 'completed')
    out.push(`- Groups: ${groups.length}, ${notCompleted.length} did not complete`)
  }
  if (facts.divergences.length > 0) out.push(`- Replay diverged at ordinal ${code(facts.divergences[0]?.ordinal ?? '')}; every later call ran live`)
  out.push('')
  return out
}

function describeDisposition(runEnd: RunEndLine | undefined): string {
  if (runEnd === undefined) {
    return '**did not finish**: the journal has no `run_end` line (the run crashed, was killed, or is still running). Nothing it produced is a final result.'
  }
  const classification = classifyOutcome(runEnd.result)
  const partial = classification.failed && classification.reasons.includes('partial')
  if (runEnd.disposition === 'completed' && runEnd.ok && !classification.failed) return '**completed**'
  if (runEnd.disposition === 'completed') {
    return `**failed**: the journal records \`completed\`, but the returned value is a failure (${classification.failed ? classification.reasons.join(', ') : 'ok is false'}).`
  }
  if (runEnd.disposition === 'cancelled') return '**cancelled**: the run was stopped before it finished. It is not a success.'
  return partial
    ? '**failed**, with a partial result (`partial: true`). A partial result is not a success.'
    : '**failed**. The run is not a success.'
}

function renderResult(facts: RunFacts, maxChars: number): string[] {
  const { runEnd } = facts
  if (runEnd === undefined) return []
  const out: string[] = []
  const succeeded = runEnd.disposition === 'completed' && runEnd.ok && !classifyOutcome(runEnd.result).failed
  if (runEnd.error !== undefined || !succeeded) {
    out.push('## Failure', '')
    if (runEnd.error !== undefined) {
      out.push(`- ${code(runEnd.error.name)} (${code(runEnd.error.code)}): ${escapeText(runEnd.error.message)}`)
    }
    for (const line of facts.looseErrors) {
      if (runEnd.error !== undefined && line.error.message === runEnd.error.message) continue
      out.push(`- error at seq ${line.seq}${line.failureCause === undefined ? '' : ` (${code(line.failureCause)})`}: ${escapeText(line.message)}`)
    }
    if (out.length === 2) out.push('- The run returned a failure value (see below).')
    out.push('')
  }
  out.push(succeeded ? '## Result' : '## Returned value (not a success)', '')
  let json = JSON.stringify(runEnd.result, null, 2)
  let cut = false
  if (json.length > maxChars) {
    json = json.slice(0, maxChars)
    cut = true
  }
  const fence = json.includes('```') ? '~~~~' : '```'
  out.push(`${fence}json`, json, fence)
  if (cut) out.push('', `The value is cut at ${maxChars} characters; the whole value is in \`result.json\`.`)
  out.push('')
  return out
}

function renderRetried(facts: RunFacts): string[] {
  const retried = [...facts.calls.values()].filter(isRetried).sort((left, right) => left.firstSeq - right.firstSeq)
  if (retried.length === 0) return []
  const out = ['## Retried agent calls', '']
  for (const call of retried) {
    const attempts = orderedAttempts(call)
    const first = attempts[0]
    const describing = first?.start ?? first?.end
    const place = [
      describing?.agent === undefined ? undefined : `agent ${code(describing.agent)}`,
      describing?.label === undefined ? undefined : `label ${code(describing.label)}`,
      describing?.phase === undefined ? undefined : `phase ${code(describing.phase)}`,
      describing?.groupId === undefined ? undefined : `group ${code(describing.groupId)}`,
      describing?.ordinal === undefined ? undefined : `ordinal ${code(describing.ordinal)}`,
    ].filter((part) => part !== undefined)
    out.push(`### ${code(call.logicalCallId)}`, '')
    if (place.length > 0) out.push(place.join(' · '), '')
    const final = finalOutcome(call)
    const declared = first?.attempts ?? 0
    out.push(`${attempts.length} of ${declared} declared attempts ran; the call ${finalPhrase(final)}.`, '')
    attempts.forEach((record, index) => {
      const discarded = index < attempts.length - 1
      out.push(`- attempt ${record.attempt}/${record.attempts} ${code(record.callId)}: ${describeAttempt(record, discarded, call.retries)}`)
    })
    out.push('')
  }
  return out
}

function finalPhrase(outcome: AttemptOutcome): string {
  switch (outcome) {
    case 'completed':
      return 'completed'
    case 'failed':
      return 'failed'
    case 'threw':
      return 'threw (no answer)'
    case 'unfinished':
      return 'has no terminal record'
  }
}

function describeAttempt(record: AttemptRecord, discarded: boolean, retries: readonly RetryLine[]): string {
  const outcome = outcomeOf(record)
  const duration = record.end === undefined ? '' : ` (${formatDuration(record.end.durationMs)})`
  const retry = retries.find((line) => line.callId === record.callId || line.fromAttempt === record.attempt)
  const waited = retry?.delayMs === undefined ? '' : `; retried after ${formatDuration(retry.delayMs)}`
  switch (outcome) {
    case 'completed':
      return `completed${duration}${discarded ? ' (a later attempt also ran)' : ''}`
    case 'failed': {
      const cause = record.end?.failureCause ?? retry?.cause ?? 'unclassified'
      const reason = record.end?.reason === undefined ? '' : `: ${escapeText(record.end.reason)}`
      return `${discarded ? 'discarded' : 'failed'} — ${code(cause)}${reason}${duration}${discarded ? waited : ''}`
    }
    case 'threw': {
      const error = record.error
      const cause = error?.failureCause === undefined ? '' : ` ${code(error.failureCause)}`
      const message = error === undefined ? '' : ` — ${escapeText(error.message)}`
      return `threw${discarded ? ' (discarded)' : ''}${cause}${message}${discarded ? waited : ''}`
    }
    case 'unfinished':
      return discarded
        ? `discarded — no terminal record${retry === undefined ? '' : `; retry cause ${code(retry.cause)}`}`
        : 'no terminal record: the journal ends while this attempt was running'
  }
}

function renderFailedCalls(facts: RunFacts): string[] {
  const failed = [...facts.calls.values()]
    .filter((call) => !isRetried(call) && finalOutcome(call) !== 'completed')
    .sort((left, right) => left.firstSeq - right.firstSeq)
  if (failed.length === 0) return []
  const out = ['## Failed agent calls (not retried)', '']
  for (const call of failed) {
    const record = orderedAttempts(call)[0]
    if (record === undefined) continue
    const agent = record.start?.agent ?? record.end?.agent
    const label = record.start?.label ?? record.end?.label
    const who = [agent === undefined ? undefined : code(agent), label === undefined ? undefined : `label ${code(label)}`]
      .filter((part) => part !== undefined)
      .join(', ')
    out.push(`- ${code(call.logicalCallId)} (call ${code(record.callId)}${who === '' ? '' : `, ${who}`}): ${describeAttempt(record, false, call.retries)}`)
  }
  out.push('')
  return out
}

function renderGroups(facts: RunFacts): string[] {
  const ids = [...facts.groupStarts.keys(), ...[...facts.groupEnds.keys()].filter((id) => !facts.groupStarts.has(id))]
  if (ids.length === 0) return []
  const out = ['## Groups', '', '| group | kind | outcome | total | completed | failed | not dispatched | label |', '| --- | --- | --- | --- | --- | --- | --- | --- |']
  for (const id of ids) {
    const start = facts.groupStarts.get(id)
    const end = facts.groupEnds.get(id)
    const kind = end?.groupKind ?? start?.groupKind ?? ''
    const label = start?.label === undefined ? '' : cell(start.label)
    if (end === undefined) {
      out.push(`| ${code(id)} | ${kind} | **no group_end** | ${start?.total ?? ''} | | | | ${label} |`)
      continue
    }
    const outcome = end.outcome === 'completed' ? 'completed' : `**${end.outcome}**${end.stageIndex === undefined ? '' : ` at stage ${end.stageIndex}`}`
    out.push(`| ${code(id)} | ${kind} | ${outcome} | ${end.total} | ${end.completed} | ${end.failed} | ${end.notDispatched} | ${label} |`)
  }
  out.push('')
  return out
}

function renderOther(facts: RunFacts): string[] {
  const out: string[] = []
  if (facts.budgetChanges.length > 0) {
    out.push('## Budget changes', '')
    for (const line of facts.budgetChanges) {
      const scope = line.scope === 'call' && line.callId !== undefined ? `call ${code(line.callId)}` : line.scope
      out.push(`- ${code(line.budget)} (${scope}): ${String(line.from)} → ${String(line.to)}${line.reason === undefined ? '' : ` — ${escapeText(line.reason)}`}`)
    }
    out.push('')
  }
  if (facts.divergences.length > 0) {
    out.push('## Replay divergence', '')
    for (const line of facts.divergences) {
      out.push(`- ordinal ${code(line.ordinal)}: ${line.fields.map(code).join(', ') || 'request'} differ from the recording`)
    }
    out.push('')
  }
  return out
}

function plural(count: number, one: string, many: string): string {
  return `${count} ${count === 1 ? one : many}`
}

function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`
}

/** Inline code that survives backticks in the text. */
function code(text: string): string {
  const oneLine = text.replace(/\s*\n\s*/g, ' ')
  const longest = Math.max(0, ...(oneLine.match(/`+/g) ?? []).map((run) => run.length))
  const fence = '`'.repeat(longest + 1)
  const padded = oneLine.startsWith('`') || oneLine.endsWith('`') ? ` ${oneLine} ` : oneLine
  return `${fence}${padded}${fence}`
}

/** Prose from the journal (messages, reasons) on one line, with Markdown syntax escaped. */
function escapeText(text: string, max = 500): string {
  const oneLine = text.replace(/\s*\n\s*/g, ' ')
  const cut = oneLine.length > max ? `${oneLine.slice(0, max)}…` : oneLine
  return cut.replace(/[\\`*_[\]<>|#]/g, (character) => `\\${character}`)
}

function cell(text: string): string {
  return escapeText(text, 120)
}
