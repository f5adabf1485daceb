import { type JsonValue, classifyOutcome } from '@locus/outcome'
import type { JournalLine, RetryLine, RetryRefused, RetryRefuser, RunEndLine } from './journal-line-schema.js'
import { type AgentAttemptView, type AgentCallView, type CallOutcome, type CallView, type ChildCallView, type RunView, callOutcome, createRunView } from './run-view.js'
import { addUsd } from './usd-sum.js'

/** Options of {@link renderOutputsReadme}. */
export interface RenderOutputsReadmeOptions {
  /** The document title. @default `Run <runId>` */
  readonly title?: string | undefined
  /** Longest JSON shown for the result before it is cut (the full value is in `result.json`). @default 4000 */
  readonly maxResultChars?: number | undefined
}

/**
 * Renders a run's `outputs/README.md` from its {@link RunView} (or from its
 * journal lines, which it folds into one): the run's
 * disposition and what it returned (or how it failed), counts of agent calls,
 * attempts and retries, the groups and their outcomes, and a
 * `## Retried agent calls` section.
 *
 * Every count is the view's, so the README, `locus show` and the live tree
 * agree; a runtime that keeps a view as lines are written renders without
 * holding the lines.
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
export function renderOutputsReadme(source: readonly JournalLine[] | RunView, options: RenderOutputsReadmeOptions = {}): string {
  const facts = isRunView(source) ? source : foldLines(source)
  const runId = facts.runId ?? (isRunView(source) ? undefined : source[0]?.runId) ?? 'unknown'
  const out: string[] = []
  out.push(`# ${escapeText(options.title ?? `Run ${runId}`)}`, '')
  out.push(...renderSummary(facts, runId))
  out.push(...renderCost(facts))
  out.push(...renderResult(facts, options.maxResultChars ?? 4000))
  out.push(...renderRetried(facts))
  out.push(...renderFailedCalls(facts))
  out.push(...renderChildren(facts))
  out.push(...renderRefusedRetries(facts))
  out.push(...renderGroups(facts))
  out.push(...renderOther(facts))
  while (out.at(-1) === '') out.pop()
  return out.join('\n') + '\n'
}

function isRunView(source: readonly JournalLine[] | RunView): source is RunView {
  return !Array.isArray(source)
}

function foldLines(lines: readonly JournalLine[]): RunView {
  const view = createRunView()
  for (const line of lines) view.apply(line)
  return view
}

type AttemptOutcome = 'completed' | 'failed' | 'threw' | 'unfinished'

function outcomeOf(record: AgentAttemptView): AttemptOutcome {
  if (record.status === 'running') return 'unfinished'
  if (record.status === 'timed-out') return 'failed'
  return record.status
}

function finalOutcome(call: CallView): AttemptOutcome {
  const outcome: CallOutcome = callOutcome(call)
  return outcome === 'timed-out' ? 'failed' : outcome
}

function agentCalls(calls: readonly CallView[]): AgentCallView[] {
  return calls.filter((call): call is AgentCallView => call.kind === 'agent')
}

/** What the run's LLM requests cost, when the run was priced: exact dollars, what retries threw away, what had no price. */
/** A field of a JSON object, or undefined when the value is not an object. */
function jsonField(value: JsonValue | undefined, key: string): JsonValue | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? value[key] : undefined
}

function renderCost(facts: RunView): string[] {
  const cost = facts.cost
  if (cost === undefined) return []
  const out = ['## Cost', '', `- LLM requests: $${cost.usd} (price table ${code(cost.table)})`]
  const spawns = facts.children().filter((call) => call.cost !== undefined)
  if (spawns.length > 0) {
    const childUsd = spawns.reduce((sum, call) => addUsd(sum, call.cost?.usd ?? '0.000000'), '0.000000')
    out.push(`- Child runs: $${childUsd} of it (${spawns.map((call) => `${code(call.id)} ${call.workflow} $${call.cost?.usd ?? ''}`).join(', ')})`)
  }
  if (/[1-9]/.test(cost.retryOverheadUsd)) out.push(`- Retry overhead: $${cost.retryOverheadUsd}, spent on requests that failed and on agent attempts and child runs that were retried`)
  if (cost.unpricedRequests > 0) out.push(`- Not priced: ${plural(cost.unpricedRequests, 'request', 'requests')} to a model with no price (give its price with \`--prices\`)`)
  const limit = jsonField(jsonField(facts.runStart?.options, 'budgets'), 'maxCostUsd')
  if (typeof limit === 'string') {
    const refused = facts.looseErrors.filter((line) => line.failureCause === 'cost-budget').length
    out.push(`- Budget: $${limit} for the run (\`maxCostUsd\`)${refused === 0 ? '' : `; ${plural(refused, 'call', 'calls')} not run because it could not be afforded`}`)
  }
  out.push('')
  return out
}

function renderSummary(facts: RunView, runId: string): string[] {
  const out = ['## Summary', '']
  const { runEnd, runStart } = facts
  if (runStart !== undefined) out.push(`- Workflow: ${code(runStart.workflow)}`)
  out.push(`- Run: ${code(runId)}${runStart !== undefined && runStart.executionId !== runId ? `, execution ${code(runStart.executionId)}` : ''}`)
  if (runStart?.resumeOf !== undefined) out.push(`- Resumes: ${code(runStart.resumeOf)}`)
  if (runStart?.parentRunId !== undefined) {
    const spawnedBy = [
      runStart.parentExecutionId === undefined || runStart.parentExecutionId === runStart.parentRunId ? undefined : `execution ${code(runStart.parentExecutionId)}`,
      runStart.parentCallId === undefined ? undefined : `spawn ${code(runStart.parentCallId)}`,
    ].filter((part) => part !== undefined)
    out.push(`- Parent run: ${code(runStart.parentRunId)}${spawnedBy.length === 0 ? '' : ` (${spawnedBy.join(', ')})`}`)
  }
  out.push(`- Disposition: ${describeDisposition(runEnd)}`)
  if (runEnd !== undefined) out.push(`- Duration: ${formatDuration(runEnd.durationMs)}`)

  const counts = facts.counts
  out.push(
    `- Agent calls: ${counts.agentCalls} (${plural(counts.agentAttempts, 'attempt', 'attempts')}, ${plural(counts.agentRetries, 'retry', 'retries')} across ${plural(counts.retriedAgentCalls, 'call', 'calls')}); ` +
      `${counts.agentCompleted} completed, ${counts.agentFailed} failed, ${counts.agentThrew} threw, ${counts.agentCalls - counts.agentCompleted - counts.agentFailed - counts.agentThrew} unfinished`,
  )
  if (counts.llmAttempts > 0) {
    out.push(`- LLM requests: ${plural(counts.llmAttempts, 'attempt', 'attempts')}, ${plural(counts.llmRetries, 'retry', 'retries')} by the host's own policy (apart from agent call retries)`)
  }
  if (counts.toolAttempts > 0) {
    out.push(`- Tool calls: ${counts.toolCalls} (${plural(counts.toolAttempts, 'attempt', 'attempts')}, ${plural(counts.toolRetries, 'retry', 'retries')})`)
  }
  if (counts.childCalls > 0) {
    out.push(
      `- Child workflows: ${counts.childCalls} (${plural(counts.childAttempts, 'attempt', 'attempts')}, ${plural(counts.childRetries, 'retry', 'retries')}); ` +
        `${counts.childCompleted} completed, ${counts.childFailed} failed, ${counts.childCalls - counts.childCompleted - counts.childFailed} unfinished`,
    )
  }
  if (counts.retriesRefused > 0) {
    const by = new Map<RetryRefuser, number>()
    for (const line of facts.refusedRetries) by.set(line.retryRefused.by, (by.get(line.retryRefused.by) ?? 0) + 1)
    const parts = [...by].map(([refuser, count]) => `${count} by ${REFUSER_NAMES[refuser]}`)
    out.push(`- Retries refused: ${counts.retriesRefused} (${parts.join(', ')}); a refused retry never ran and is not counted as a retry`)
  }
  if (counts.choiceRepairs > 0) {
    const repairs = facts.repairedChoices.map(
      (line) => `${code(line.agent)} ${code(line.callId)} said ${code(JSON.stringify(line.repaired.from))}, took ${code(line.repaired.to)} ${line.repaired.via === 'fallback' ? 'as its choiceFallback' : 'when asked again'}`,
    )
    out.push(`- Choice answers repaired: ${counts.choiceRepairs} (${repairs.join('; ')}); the first answer was none of the choices`)
  }
  if (counts.groups > 0) out.push(`- Groups: ${counts.groups}, ${counts.groupsNotCompleted} did not complete`)
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

function renderResult(facts: RunView, maxChars: number): string[] {
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

function renderRetried(facts: RunView): string[] {
  const retried = agentCalls(facts.retriedCalls())
  if (retried.length === 0) return []
  const out = ['## Retried agent calls', '']
  for (const call of retried) {
    const attempts = call.attempts
    const first = attempts[0]
    const describing = first?.start ?? first?.end
    const place = [
      describing?.agent === undefined ? undefined : `agent ${code(describing.agent)}`,
      describing?.label === undefined ? undefined : `label ${code(describing.label)}`,
      describing?.phase === undefined ? undefined : `phase ${code(describing.phase)}`,
      describing?.groupId === undefined ? undefined : `group ${code(describing.groupId)}`,
      describing?.ordinal === undefined ? undefined : `ordinal ${code(describing.ordinal)}`,
    ].filter((part) => part !== undefined)
    out.push(`### ${code(call.id)}`, '')
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

function describeAttempt(record: AgentAttemptView, discarded: boolean, retries: readonly RetryLine[]): string {
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

function renderFailedCalls(facts: RunView): string[] {
  const failed = agentCalls(facts.failedCalls())
  if (failed.length === 0) return []
  const out = ['## Failed agent calls (not retried)', '']
  for (const call of failed) {
    const record = call.attempts[0]
    if (record === undefined) continue
    const agent = record.start?.agent ?? record.end?.agent
    const label = record.start?.label ?? record.end?.label
    const who = [agent === undefined ? undefined : code(agent), label === undefined ? undefined : `label ${code(label)}`]
      .filter((part) => part !== undefined)
      .join(', ')
    out.push(`- ${code(call.id)} (call ${code(record.callId)}${who === '' ? '' : `, ${who}`}): ${describeAttempt(record, false, call.retries)}`)
  }
  out.push('')
  return out
}

/** What a child attempt's disposition column says: the child run's own disposition, or why there is none. */
function childDisposition(call: ChildCallView, index: number): string {
  const attempt = call.attempts[index]
  const end = attempt?.end
  if (end === undefined) return '**did not finish**'
  if (end.disposition === undefined) return end.status === 'timed-out' ? '**timed out**' : '**failed to start**'
  const reasons: readonly string[] = classifyOutcome(end.result ?? null).reasons
  const partial = end.disposition !== 'completed' && reasons.includes('partial')
  const shown = end.disposition === 'completed' ? 'completed' : `**${end.disposition}**${partial ? ' (partial result)' : ''}`
  return end.replayed === true ? `${shown} (replayed)` : shown
}

function renderChildren(facts: RunView): string[] {
  const children = facts.children()
  if (children.length === 0) return []
  const out = [
    '## Child workflows',
    '',
    'Each attempt is a child run in its own execution of this run; its journal, `result.json` and `outputs/README.md` are there.',
    '',
    '| call | workflow | attempt | disposition | execution | label |',
    '| --- | --- | --- | --- | --- | --- |',
  ]
  for (const call of children) {
    call.attempts.forEach((attempt, index) => {
      const label = call.label === undefined ? '' : cell(call.label)
      out.push(`| ${code(call.id)} | ${code(call.workflow)} | ${attempt.attempt}/${call.maxAttempts} | ${childDisposition(call, index)} | ${code(attempt.childExecutionId)} | ${label} |`)
    })
  }
  out.push('')
  return out
}

const REFUSER_NAMES: Readonly<Record<RetryRefuser, string>> = {
  'retry-budget': "the run's retry budget",
  'invocation-cap': 'the invocation cap',
  'run-deadline': 'the run deadline',
  cancelled: 'the cancellation',
  'cost-budget': 'the cost budget',
}

function describeRefusal(refused: RetryRefused): string {
  const waited = refused.delayMs === undefined ? '' : ` (it would have waited ${formatDuration(refused.delayMs)} first)`
  const budget = refused.costBudget === undefined ? '' : ` (${refused.costBudget.scope === 'run' ? "the run's" : "the call's"} $${refused.costBudget.limitUsd}: $${refused.costBudget.remainingUsd} left, the retry could cost $${refused.costBudget.neededUsd})`
  return `its retry was refused by ${REFUSER_NAMES[refused.by]}${budget}${waited}`
}

function renderRefusedRetries(facts: RunView): string[] {
  if (facts.refusedRetries.length === 0) return []
  const out = ['## Refused retries', '']
  for (const line of facts.refusedRetries) {
    if (line.type === 'child_end') {
      const ended = line.disposition === undefined ? line.status : `with the child ${line.disposition}`
      out.push(`- child workflow ${code(line.workflow)} ${code(line.childCallId)} attempt ${line.attempt}/${line.maxAttempts} ended ${ended}; ${describeRefusal(line.retryRefused)}`)
      continue
    }
    if (line.type === 'tool_end') {
      const failure = line.failure === undefined ? line.status : `${line.failure.code === undefined ? '' : `${code(line.failure.code)}: `}${escapeText(line.failure.error)}`
      out.push(`- tool ${code(line.tool)} ${code(line.toolCallId)} attempt ${line.attempt}/${line.maxAttempts} ended ${failure}; ${describeRefusal(line.retryRefused)}`)
      continue
    }
    const trio = line.attempt === undefined || line.attempts === undefined ? '' : ` attempt ${line.attempt}/${line.attempts}`
    const cause = line.failureCause === undefined ? '' : ` ${code(line.failureCause)}`
    const call = line.logicalCallId === undefined ? '' : ` ${code(line.logicalCallId)}`
    const attempt = line.callId === undefined ? '' : ` (${code(line.callId)})`
    out.push(`- agent call${call}${trio}${attempt} ${line.type === 'error' ? 'threw' : 'ended'}${cause}; ${describeRefusal(line.retryRefused)}`)
  }
  out.push('')
  return out
}

function renderGroups(facts: RunView): string[] {
  const groups = facts.groups()
  if (groups.length === 0) return []
  const out = ['## Groups', '', '| group | kind | outcome | total | completed | failed | not dispatched | label |', '| --- | --- | --- | --- | --- | --- | --- | --- |']
  for (const { groupId: id, start, end } of groups) {
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

function renderOther(facts: RunView): string[] {
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
