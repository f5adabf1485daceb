import type { AgentAttemptView, AgentCallView, CallView, ChildCallView, JournalLine, LlmAttemptLine, ReplayDivergedLine, RetryLine, RunCost, ToolCallView } from '@locus/journal'
import { JOURNAL_LINE_TYPES, addUsd } from '@locus/journal'
import type { JsonValue } from '@locus/outcome'
import type { PendingDeferral, RunDescription } from '@locus/runtime'
import { type SafeHtml, html } from './html.js'
import { type ExecutionModel, type SlotModel, type TimelineNode, buildTimeline, countCalls } from './run-model.js'
import { type Tone, answerWords, badge, dispositionWords, duration, when } from './words.js'

/** Calls shown in full on one page of the timeline; the others are on the other pages. */
export const CALLS_PER_PAGE = 200
/** Journal lines on one page of the raw journal. */
export const LINES_PER_PAGE = 500

/** The sentence every surface that shows `workspaceMode` says with it. */
export const WORKSPACE_MODE_NOTE = 'The filesystem isolation this workflow declares, for review. It is not authorization, not a sandbox and not a tool allowlist: nothing enforces it.'

/** A deferral's result form as it was sent and why it was refused. */
export interface AnswerForm {
  readonly deferredId: string
  readonly text: string
  readonly problem: string
}

export interface RunPageInput {
  readonly runId: string
  readonly model: ExecutionModel
  /** The whole run's figures (every execution added up), when it has more than one execution. */
  readonly run?: RunDescription | undefined
  /** The JSON Schema (as text) of each pending deferral's tool output, by tool name, shown beside its form. */
  readonly outputSchemas?: ReadonlyMap<string, string> | undefined
  /** A deferral's form as the viewer sent it, refused: shown again with the typed text and what is wrong. */
  readonly answer?: AnswerForm | undefined
  /** True when the page follows the run's token stream: it gets a section the live script fills with the model's text. */
  readonly tokens?: boolean | undefined
  /** Every execution of the run: id, kind and status, for the execution switcher. */
  readonly executions: readonly { readonly executionId: string; readonly kind: string; readonly status: string | undefined }[]
  readonly status: string
  readonly pending: readonly PendingDeferral[]
  /** Replays of the run with their divergences (shown on the root's page). */
  readonly replays: readonly { readonly executionId: string; readonly divergences: readonly ReplayDivergedLine[]; readonly model?: ExecutionModel }[]
  readonly csrf: string
  /** `/v1/runs/{id}/events?...` for the live script, while the execution may still grow. */
  readonly eventsUrl: string | undefined
  readonly page: number
  readonly journalType: string | undefined
  readonly journalPage: number
  /** The execution shown, when not the latest. */
  readonly execution: string | undefined
}

const enc = encodeURIComponent

function runHref(runId: string, params: Record<string, string | number | undefined> = {}): string {
  const query = Object.entries(params)
    .filter((entry): entry is [string, string | number] => entry[1] !== undefined)
    .map(([key, value]) => `${key}=${enc(String(value))}`)
    .join('&')
  return `/runs/${enc(runId)}${query === '' ? '' : `?${query}`}`
}

function json(value: unknown, limit = 2000): string {
  const text = value === undefined ? 'undefined' : JSON.stringify(value, null, 2)
  return text.length > limit ? `${text.slice(0, limit)}… (${text.length - limit} more characters)` : text
}

function record(value: JsonValue | undefined): Readonly<Record<string, JsonValue>> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : undefined
}

function section(id: string, title: string, body: SafeHtml | SafeHtml[], live = true): SafeHtml {
  return html`<section id="${id}" aria-labelledby="${id}-h"${live ? html` data-live` : ''}><h2 id="${id}-h">${title}</h2>${body}</section>`
}

/** A run's cost as the view sums it: the exact total, the retry overhead, and requests with no price. */
function costFacts(cost: RunCost | undefined, testId: string): SafeHtml | string {
  if (cost === undefined) return ''
  const unpriced = cost.unpricedRequests === 0 ? '' : html`; ${cost.unpricedRequests} request${cost.unpricedRequests === 1 ? '' : 's'} to a model with no price, not in it`
  return html`<div><dt>Cost</dt><dd data-testid="${testId}">$<span data-usd>${cost.usd}</span> for LLM requests, $<span data-overhead>${cost.retryOverheadUsd}</span> of it retry overhead${unpriced}</dd></div>`
}

/** What an LLM request cost, as its line says: dollars, unpriced with its model, or nothing when the run was not priced. */
function requestCost(line: LlmAttemptLine): SafeHtml | string {
  if (line.cost === undefined) return '—'
  return 'usd' in line.cost ? `$${line.cost.usd}` : html`<em>unpriced</em> (${line.cost.model})`
}

/** A logical agent call's cost: its attempts' `agent_end.cost` added up, when any was priced. */
function callCost(call: AgentCallView): string | undefined {
  let total: string | undefined
  for (const attempt of call.attempts) {
    const cost = attempt.end?.cost
    if (cost !== undefined && attempt.end?.replayed !== true) total = addUsd(total ?? '0', cost.usd)
  }
  return total
}

function summary(input: RunPageInput): SafeHtml {
  const { model } = input
  const view = model.view
  const disposition = view.runEnd?.disposition ?? model.resultFile?.disposition
  const d = dispositionWords(disposition, input.status, view.sleepingUntil)
  const outcome = view.runEnd?.answerOutcome ?? model.resultFile?.answerOutcome
  const a = answerWords(outcome)
  const start = view.runStart
  const durationMs = view.runEnd?.durationMs
  const counts = view.counts
  const workspaceMode = start?.workspaceMode
  return html`<section id="summary" aria-labelledby="summary-h" data-live>
<h2 id="summary-h" class="visually-hidden">Summary</h2>
<dl class="facts">
<div><dt>Disposition</dt><dd data-testid="disposition">${badge(d.tone, d.words)}</dd></div>
<div><dt>Answer outcome</dt><dd data-testid="answer-outcome">${badge(a.tone, a.words)}</dd></div>
<div><dt>Workflow</dt><dd>${view.workflow ?? 'unknown'}</dd></div>
<div><dt>Execution</dt><dd><code>${model.info.executionId}</code> (${model.info.kind})</dd></div>
<div><dt>Started</dt><dd>${when(start?.ts)}</dd></div>
<div><dt>Duration</dt><dd>${duration(durationMs)}</dd></div>
<div><dt>Calls</dt><dd>${counts.agentCalls} agent (${counts.agentAttempts} attempts), ${counts.toolCalls} tool (${counts.toolAttempts} attempts)</dd></div>
<div><dt>Retries</dt><dd>${counts.agentRetries + counts.toolRetries} retried attempts, ${counts.retriesRefused} refused</dd></div>
<div><dt>Last line</dt><dd data-testid="last-seq">${view.lastSeq}</dd></div>
${costFacts(view.cost, 'cost')}
</dl>
${input.run === undefined ? '' : runTotals(input.run, input.executions.filter((execution) => execution.kind === 'root' || execution.kind === 'resume').length)}
<div class="workspace" data-testid="workspace-mode"><strong>Workspace mode:</strong> ${workspaceMode === undefined ? html`<em>not declared</em>` : html`<code>${workspaceMode}</code>`}<p class="note">${WORKSPACE_MODE_NOTE}</p></div>
${view.runEnd?.error === undefined ? '' : html`<p class="error" role="note"><strong>Error:</strong> <code>${view.runEnd.error.code}</code> ${view.runEnd.error.message}</p>`}
</section>`
}

/** The run's own figures, every execution added up, shown beside one execution's. */
function runTotals(run: RunDescription, executions: number): SafeHtml {
  const counts = run.counts
  return html`<dl class="facts run-totals" data-testid="run-totals" aria-label="The whole run">
<div><dt>Whole run</dt><dd>${executions} executions</dd></div>
<div><dt>Started</dt><dd>${when(run.startedAt)}</dd></div>
<div><dt>Duration</dt><dd data-testid="run-duration">${duration(run.durationMs)}</dd></div>
<div><dt>Calls</dt><dd>${counts.agentCalls} agent (${counts.agentAttempts} attempts), ${counts.toolCalls} tool (${counts.toolAttempts} attempts)</dd></div>
<div><dt>Retries</dt><dd data-testid="run-retries">${counts.agentRetries + counts.toolRetries} retried attempts, ${counts.retriesRefused} refused</dd></div>
<div><dt>LLM requests</dt><dd data-testid="run-llm">${counts.llmAttempts}</dd></div>
${costFacts(run.cost, 'run-cost')}
</dl>`
}

/** A result up to this many characters of JSON is shown open; a larger one is collapsed. */
export const RESULT_OPEN_CHARS = 1200
/** The most of a result the page holds; the whole is at `/v1/runs/{id}/result`. */
const RESULT_MAX_CHARS = 100_000

/** The run's result, whatever its shape: open when small, collapsed when large. */
function resultHtml(input: RunPageInput): SafeHtml | string {
  const { view, resultFile } = input.model
  if (view.runEnd === undefined && resultFile === undefined) return ''
  const value = view.runEnd?.result ?? resultFile?.result ?? null
  const text = JSON.stringify(value, null, 2)
  const large = text.length > RESULT_OPEN_CHARS
  const shown = text.length > RESULT_MAX_CHARS ? `${text.slice(0, RESULT_MAX_CHARS)}… (${text.length - RESULT_MAX_CHARS} more characters)` : text
  return html`<details class="result" data-testid="result"${large ? '' : ' open'}><summary>Result${large ? ` (${text.length} characters)` : ''}</summary><pre>${shown}</pre>${text.length > RESULT_MAX_CHARS ? html`<p>The whole result: <a href="/v1/runs/${enc(input.runId)}/result">/v1/runs/${input.runId}/result</a></p>` : ''}</details>`
}

function answer(input: RunPageInput): SafeHtml {
  const view = input.model.view
  const result = record(view.runEnd?.result ?? input.model.resultFile?.result)
  const text = typeof result?.text === 'string' ? result.text : typeof result?.answer === 'string' ? result.answer : undefined
  const caveats = view.caveats
  const gaps = view.gaps
  const gathered = Array.isArray(result?.gathered) ? result.gathered.map(record).filter((item) => item !== undefined) : []
  const sources: SafeHtml[] = []
  for (const item of gathered) {
    const tool = typeof item.tool === 'string' ? item.tool : 'a source'
    if (item.state === 'empty') sources.push(html`<li class="source checked-empty">${badge('muted', 'Checked, none found', 'checked-none')} <strong>${tool}</strong></li>`)
    else sources.push(html`<li class="source checked-found">${badge('ok', 'Checked, found', 'checked-found')} <strong>${tool}</strong></li>`)
  }
  for (const gap of gaps) {
    sources.push(
      html`<li class="source could-not-check">${badge('bad', 'Could not check', 'not-checked')} <strong>${gap.tool}</strong> <span class="criticality">criticality: ${gap.criticality}</span>${gap.reason === undefined ? '' : html` <span class="reason">reason: ${gap.reason}</span>`}</li>`,
    )
  }
  const body = html`${view.runEnd === undefined ? html`<p>The run has not ended; its answer is not known yet.</p>` : ''}
${text === undefined ? (view.runEnd === undefined ? '' : html`<p><em>The result has no answer text.</em></p>`) : html`<blockquote class="answer-text" data-testid="answer-text">${text}</blockquote>`}
${caveats.length === 0 ? '' : html`<aside class="caveats" aria-label="Caveats" data-testid="caveats"><h3>Caveats</h3><ul>${caveats.map((caveat) => html`<li>${caveat}</li>`)}</ul></aside>`}
${gaps.length === 0 ? '' : html`<h3>Gaps</h3><table class="gaps" data-testid="gaps"><thead><tr><th scope="col">Tool</th><th scope="col">Criticality</th><th scope="col">Reason</th></tr></thead><tbody>${gaps.map((gap) => html`<tr><td>${gap.tool}</td><td>${gap.criticality}</td><td>${gap.reason ?? '—'}</td></tr>`)}</tbody></table>`}
${sources.length === 0 ? '' : html`<h3>Sources</h3><ul class="sources" data-testid="sources">${sources}</ul>`}
${resultHtml(input)}`
  return section('answer', 'Answer', body)
}

function attemptTone(status: string): Tone {
  if (status === 'completed') return 'ok'
  if (status === 'running') return 'live'
  return 'bad'
}

function retryAfter(retries: readonly RetryLine[], attempt: number): RetryLine | undefined {
  return retries.find((retry) => retry.fromAttempt === attempt)
}

function artifactLinks(input: RunPageInput, callId: string): SafeHtml {
  const base = `/runs/${enc(input.runId)}/executions/${enc(input.model.info.executionId)}/calls/${enc(callId)}`
  return html`<a href="${base}/transcript">transcript</a> · <a href="${base}/envelope">envelope</a>`
}

function agentAttempt(input: RunPageInput, call: AgentCallView, attempt: AgentAttemptView): SafeHtml {
  const model = input.model
  const last = call.attempts.at(-1) === attempt
  const retry = retryAfter(call.retries, attempt.attempt)
  const start = attempt.start
  const endTs = attempt.end?.ts ?? attempt.error?.ts
  const durationMs = attempt.end?.durationMs ?? (start !== undefined && endTs !== undefined ? Date.parse(endTs) - Date.parse(start.ts) : undefined)
  const cause = attempt.end?.failureCause ?? attempt.error?.failureCause
  const statusWords = attempt.status === 'threw' ? 'threw' : attempt.status === 'failed' ? `failed: ${cause ?? 'unknown cause'}` : attempt.status
  const llm = model.llm.get(attempt.callId) ?? []
  const tools = model.toolsOfAttempt.get(attempt.callId) ?? []
  const refused = attempt.end?.retryRefused ?? attempt.error?.retryRefused
  const cost = attempt.end?.cost
  // A Cost column only where the run prices requests.
  const priced = llm.some((line) => line.cost !== undefined)
  return html`<li class="attempt${last ? '' : ' discarded'}" data-call-id="${attempt.callId}">
<div class="attempt-head">${badge(attemptTone(attempt.status), statusWords, `attempt-${attempt.status}`)} attempt ${attempt.attempt} of ${attempt.attempts} · <code>${attempt.callId}</code> · ${duration(durationMs)}${cost === undefined || attempt.end?.replayed === true ? '' : html` · <span class="cost" data-testid="attempt-cost">$${cost.usd}</span>${cost.unpriced === undefined ? '' : html` (+${cost.unpriced} unpriced)`}`}${last ? '' : html` · <strong>discarded</strong>`}${attempt.status === 'threw' ? html` · <span class="threw">threw: ${attempt.error?.message ?? ''}${cause === undefined ? '' : html` (cause ${cause})`}</span>` : ''}</div>
${retry === undefined ? '' : html`<div class="retry">Discarded because <strong>${retry.cause}</strong>; waited ${duration(retry.delayMs ?? 0)} before attempt ${retry.toAttempt}.</div>`}
${refused === undefined ? '' : html`<div class="refused">Retry refused by <strong>${refused.by}</strong>.</div>`}
${attempt.end?.repaired === undefined ? '' : html`<div class="repaired" data-testid="choice-repaired">Choice repaired: the child first answered <code>${JSON.stringify(attempt.end.repaired.from)}</code>, none of the choices; ${attempt.end.repaired.via === 'fallback' ? html`it took the fallback <code>${attempt.end.repaired.to}</code>` : html`asked again, it answered <code>${attempt.end.repaired.to}</code>`}.</div>`}
<div class="links">${artifactLinks(input, attempt.callId)}</div>
${llm.length === 0 ? '' : html`<table class="llm"><caption>LLM attempts inside this agent attempt</caption><thead><tr><th scope="col">Turn.step</th><th scope="col">Try</th><th scope="col">Model</th><th scope="col">Outcome</th><th scope="col">Duration</th><th scope="col">Delay before next</th>${priced ? html`<th scope="col">Cost</th>` : ''}</tr></thead><tbody>${llm.map((line) => html`<tr><td>${line.turn}.${line.step}</td><td>${line.llmAttempt} of ${line.llmMaxAttempts}</td><td>${line.model}</td><td>${badge(line.outcome === 'succeeded' ? 'ok' : 'bad', line.outcome)}${line.error === undefined ? '' : html` ${line.error}`}</td><td>${duration(line.durationMs)}</td><td>${line.delayBeforeNextMs === undefined ? '—' : duration(line.delayBeforeNextMs)}</td>${priced ? html`<td data-testid="request-cost">${requestCost(line)}</td>` : ''}</tr>`)}</tbody></table>`}
${tools.length === 0 ? '' : html`<div class="child-tools"><h5>Tool calls of this attempt</h5><ul class="calls">${tools.map((tool) => callHtml(input, tool))}</ul></div>`}
</li>`
}

function toolAttempts(input: RunPageInput, call: ToolCallView): SafeHtml[] {
  const deferrals = input.model.deferralsOfTool.get(call.id) ?? []
  return call.attempts.map((attempt) => {
    const last = call.attempts.at(-1) === attempt
    const retry = retryAfter(call.retries, attempt.attempt)
    const end = attempt.end
    const deferral = deferrals.find((candidate) => candidate.open.attempt === attempt.attempt)
    const timeoutMs = attempt.start?.timeoutMs
    const deadline =
      timeoutMs !== undefined && attempt.start !== undefined
        ? html`${duration(timeoutMs)} after its start (${when(new Date(Date.parse(attempt.start.ts) + timeoutMs).toISOString())})`
        : deferral?.open.expiresAt != null
          ? when(deferral.open.expiresAt)
          : html`none (it may take as long as it needs)`
    const words = end === undefined ? 'running' : end.status === 'completed' ? 'completed' : `${end.status}${end.failure === undefined ? '' : `: ${end.failure.code ?? end.failure.error}`}`
    return html`<li class="attempt${last ? '' : ' discarded'}">
<div class="attempt-head">${badge(attemptTone(attempt.status), words, `attempt-${attempt.status}`)} attempt ${attempt.attempt} of ${call.maxAttempts} · ${duration(end?.durationMs)} · deadline: ${deadline}${last ? '' : html` · <strong>discarded</strong>`}</div>
${end?.failure === undefined ? '' : html`<div class="failure">${end.failure.error} (retryable: ${end.failure.retryable ? 'yes' : 'no'})</div>`}
${deferral === undefined ? '' : html`<div class="deferral">Deferred <code>${deferral.open.deferredId}</code>: ${deferral.settled === undefined ? html`<strong>pending</strong>` : deferral.settled.outcome}</div>`}
${retry === undefined ? '' : html`<div class="retry">Discarded because <strong>${retry.cause}</strong>; waited ${duration(retry.delayMs ?? 0)} before attempt ${retry.toAttempt}.</div>`}
${end?.retryRefused === undefined ? '' : html`<div class="refused">Retry refused by <strong>${end.retryRefused.by}</strong>.</div>`}
</li>`
  })
}

function callHtml(input: RunPageInput, call: CallView): SafeHtml {
  const outcome = input.model.view.outcomeOf(call)
  const tone: Tone = outcome === 'completed' ? 'ok' : outcome === 'unfinished' ? 'live' : 'bad'
  const attempts = call.kind === 'agent' ? call.attempts.map((attempt) => agentAttempt(input, call, attempt)) : toolAttempts(input, call)
  const ordinal = call.ordinal === undefined ? '' : html` <span class="ordinal">#${call.ordinal}</span>`
  const prompt = call.kind === 'agent' ? call.attempts[0]?.start?.prompt : undefined
  const cost = call.kind === 'agent' ? callCost(call) : undefined
  return html`<li class="call call-${call.kind}" id="call-${call.id}" data-outcome="${outcome}"><details${outcome === 'completed' && call.attempts.length === 1 ? '' : ' open'}>
<summary>${badge(tone, outcome)} <span class="kind">${call.kind}</span> <strong>${call.name}</strong>${ordinal} <code>${call.id}</code> · ${call.attempts.length} attempt${call.attempts.length === 1 ? '' : 's'}${cost === undefined ? '' : html` · <span class="cost" data-testid="call-cost">$${cost}</span>`}${call.label === undefined ? '' : html` · ${call.label}`}</summary>
${prompt === undefined ? '' : html`<p class="prompt"><span class="visually-hidden">Prompt: </span>${prompt.length > 300 ? `${prompt.slice(0, 300)}…` : prompt}</p>`}
<ol class="attempts">${attempts}</ol>
</details></li>`
}

function childHtml(input: RunPageInput, child: ChildCallView): SafeHtml {
  const last = child.attempts.at(-1)
  const tone: Tone = last === undefined || last.status === 'running' ? 'live' : last.status === 'completed' ? 'ok' : 'bad'
  const cost = child.cost === undefined ? '' : html` <span class="cost" data-testid="child-cost">$${child.cost.usd}</span>`
  return html`<li class="call call-child" data-testid="child"><div>${badge(tone, last?.status ?? 'running')} <span class="kind">child workflow</span> <strong>${child.workflow}</strong> <code>${child.id}</code>${cost}</div>
<ol class="attempts">${child.attempts.map((attempt) => html`<li class="attempt">attempt ${attempt.attempt} of ${child.maxAttempts}: <a href="${runHref(input.runId, { execution: attempt.childExecutionId })}">${attempt.childExecutionId}</a> · ${attempt.end?.disposition ?? attempt.status} · ${duration(attempt.end?.durationMs)}${attempt.end?.cost === undefined || attempt.end.replayed === true ? '' : ` · $${attempt.end.cost.usd}`}</li>`)}</ol></li>`
}

const SLOT_LOOK: Readonly<Record<SlotModel['state'], { tone: Tone; words: string }>> = {
  completed: { tone: 'ok', words: 'completed' },
  failed: { tone: 'bad', words: 'failed' },
  'not-dispatched': { tone: 'muted', words: 'not dispatched' },
  running: { tone: 'live', words: 'running' },
  waiting: { tone: 'muted', words: 'waiting' },
}

/** Renders timeline nodes, in full only for calls inside the page's window; counts calls as it goes. */
class TimelineWriter {
  private index = 0
  constructor(
    private readonly input: RunPageInput,
    private readonly from: number,
    private readonly to: number,
  ) {}

  nodes(nodes: readonly TimelineNode[]): SafeHtml[] {
    const out: SafeHtml[] = []
    let skipped = 0
    const flush = (): void => {
      if (skipped > 0) out.push(html`<li class="elsewhere">${skipped} call${skipped === 1 ? '' : 's'} on other pages</li>`)
      skipped = 0
    }
    for (const node of nodes) {
      const calls = countCalls(node)
      if (calls > 0 && (this.index + calls <= this.from || this.index >= this.to) && node.kind !== 'group') {
        this.index += calls
        skipped += calls
        continue
      }
      if (node.kind === 'group' && (this.index + calls <= this.from || this.index >= this.to) && calls > 0) {
        this.index += calls
        skipped += calls
        continue
      }
      flush()
      out.push(this.node(node))
    }
    flush()
    return out
  }

  private node(node: TimelineNode): SafeHtml {
    if (node.kind === 'call') {
      this.index += 1
      return callHtml(this.input, node.call)
    }
    if (node.kind === 'child') {
      this.index += 1
      return childHtml(this.input, node.child)
    }
    const { group, slots } = node
    const start = group.start
    const end = group.end
    const kind = start?.groupKind ?? end?.groupKind ?? 'parallel'
    const outcome = end?.outcome
    const tone: Tone = outcome === undefined ? 'live' : outcome === 'completed' ? 'ok' : 'bad'
    const stage = kind === 'pipeline' && end?.stageIndex !== undefined ? html` · <strong class="stage">failed at stage ${end.stageIndex + 1}</strong>` : ''
    return html`<li class="group group-${kind}" id="group-${group.groupId}" data-outcome="${outcome ?? 'running'}">
<div class="group-head">${badge(tone, outcome ?? 'running')} <strong>${kind}()</strong> <code>${group.groupId}</code>${start?.label === undefined ? '' : html` · ${start.label}`} · ${slots.length} slots${end === undefined ? '' : html` · ${end.completed} completed, ${end.failed} failed, ${end.notDispatched} not dispatched`}${start?.concurrency === undefined ? '' : html` · concurrency ${start.concurrency}`}${stage}</div>
<ol class="slots">${this.slots(slots, end?.stageIndex)}</ol>
</li>`
  }

  private slots(slots: readonly SlotModel[], stageIndex: number | undefined): SafeHtml[] {
    const out: SafeHtml[] = []
    let skipped = 0
    const flush = (): void => {
      if (skipped > 0) out.push(html`<li class="elsewhere">${skipped} slot${skipped === 1 ? '' : 's'} with calls on other pages</li>`)
      skipped = 0
    }
    for (const slot of slots) {
      const calls = slot.nodes.reduce((sum, node) => sum + countCalls(node), 0)
      if (calls > 0 && (this.index + calls <= this.from || this.index >= this.to)) {
        this.index += calls
        skipped += 1
        continue
      }
      flush()
      const look = SLOT_LOOK[slot.state]
      out.push(
        html`<li class="slot slot-${slot.state}" data-slot="${slot.index}" data-state="${slot.state}"><div class="slot-head">${badge(look.tone, look.words, `slot-badge-${slot.state}`)} slot ${slot.index}${slot.state === 'failed' && stageIndex !== undefined ? html` (stage ${stageIndex + 1})` : ''}${slot.state === 'failed' && slot.nodes.length === 0 ? ' · failed before any call was recorded' : ''}${slot.state === 'not-dispatched' ? ' · never started: the group stopped first' : ''}${slot.state === 'completed' && slot.nodes.some((node) => node.kind === 'call' && this.input.model.view.outcomeOf(node.call) !== 'completed') ? ' · a call inside failed and the slot handled it' : ''}</div>${slot.nodes.length === 0 ? '' : html`<ul class="calls">${this.nodes(slot.nodes)}</ul>`}</li>`,
      )
    }
    flush()
    return out
  }
}

function pager(input: RunPageInput, pages: number, current: number, key: 'page' | 'journalPage', label: string): SafeHtml {
  if (pages <= 1) return html``
  const link = (page: number, words: string): SafeHtml =>
    html`<a href="${runHref(input.runId, { execution: input.execution, page: key === 'page' ? page : input.page || undefined, journalPage: key === 'journalPage' ? page : input.journalPage || undefined, type: input.journalType })}">${words}</a>`
  return html`<nav class="pager" aria-label="${label}">${current > 0 ? link(current - 1, 'Previous') : ''} Page ${current + 1} of ${pages} ${current + 1 < pages ? link(current + 1, 'Next') : ''}</nav>`
}

function timeline(input: RunPageInput): SafeHtml {
  const nodes = buildTimeline(input.model)
  const total = nodes.reduce((sum, node) => sum + countCalls(node), 0)
  const pages = Math.max(1, Math.ceil(total / CALLS_PER_PAGE))
  const page = Math.min(input.page, pages - 1)
  const writer = new TimelineWriter(input, page * CALLS_PER_PAGE, (page + 1) * CALLS_PER_PAGE)
  const body = nodes.length === 0 ? html`<p>No calls yet.</p>` : html`${pager(input, pages, page, 'page', 'Timeline pages')}<ol class="timeline">${writer.nodes(nodes)}</ol>${pager(input, pages, page, 'page', 'Timeline pages')}`
  return section('timeline', 'Timeline', html`<p class="legend">Slots: ${badge('ok', 'completed')} ${badge('bad', 'failed')} ${badge('muted', 'not dispatched')}. A discarded attempt is one a retry replaced.</p>${body}`)
}

function budgets(input: RunPageInput): SafeHtml {
  const view = input.model.view
  const options = record(view.runStart?.options)
  const set = record(options?.budgets)
  const perCall = record(set?.perCall)
  const error = view.runEnd?.error
  const hits: SafeHtml[] = []
  if (error?.code === 'WORKFLOW_INVOCATION_CAP') hits.push(html`<li>${badge('bad', 'Invocation cap hit')} ${error.message}</li>`)
  if (error?.code === 'WORKFLOW_RUN_DEADLINE') hits.push(html`<li>${badge('bad', 'Deadline hit')} ${error.message}</li>`)
  for (const line of view.refusedRetries) hits.push(html`<li>${badge('bad', `Retry refused by ${line.retryRefused.by}`)} line ${line.seq} (${line.type})</li>`)
  for (const group of view.groups()) if (group.end?.outcome === 'hard-stopped') hits.push(html`<li>${badge('bad', 'Group hard-stopped')} <a href="#group-${group.groupId}">${group.end.groupKind}() ${group.groupId}</a>: ${group.end.notDispatched} slot(s) not dispatched</li>`)
  const body = html`<dl class="facts">
<div><dt>Invocation cap</dt><dd>${typeof set?.maxTotalAgentInvocations === 'number' ? `${set.maxTotalAgentInvocations} agent attempts` : 'none'}</dd></div>
<div><dt>Deadline</dt><dd>${typeof set?.deadlineMs === 'number' ? duration(set.deadlineMs) : 'none'}</dd></div>
<div><dt>Launch mode</dt><dd>${typeof options?.launchMode === 'string' ? options.launchMode : '—'}</dd></div>
<div><dt>Per call</dt><dd>${perCall === undefined ? '—' : Object.entries(perCall).map(([key, value]) => `${key} ${JSON.stringify(value)}`).join(', ')}</dd></div>
</dl>
${view.budgetChanges.length === 0 ? html`<p>No budget increases.</p>` : html`<table data-testid="budget-changes"><caption>Budget increases</caption><thead><tr><th scope="col">Budget</th><th scope="col">Scope</th><th scope="col">From</th><th scope="col">To</th><th scope="col">Call</th><th scope="col">Why</th></tr></thead><tbody>${view.budgetChanges.map((line) => html`<tr><td>${line.budget}</td><td>${line.scope}</td><td>${line.from ?? '—'}</td><td>${line.to ?? '—'}</td><td>${line.callId ?? '—'}</td><td>${line.reason ?? '—'}</td></tr>`)}</tbody></table>`}
${hits.length === 0 ? html`<p>No cap, deadline or refusal was hit.</p>` : html`<ul class="hits" data-testid="budget-hits">${hits}</ul>`}`
  return section('budgets', 'Budgets and limits', body)
}

function deferred(input: RunPageInput): SafeHtml {
  if (input.pending.length === 0) {
    const settled = input.model.deferrals.filter((deferral) => deferral.settled !== undefined)
    if (settled.length === 0) return html``
    return section('deferred', 'Deferred tools', html`<ul>${settled.map((deferral) => html`<li><code>${deferral.open.deferredId}</code> (${deferral.open.tool}): ${deferral.settled?.outcome ?? ''}</li>`)}</ul>`)
  }
  const forms = input.pending.map((deferral) => {
    const base = `/runs/${enc(input.runId)}/deferred/${enc(deferral.deferredId)}`
    const id = `d-${deferral.deferredId}`
    const schema = input.outputSchemas?.get(deferral.tool)
    const refused = input.answer?.deferredId === deferral.deferredId ? input.answer : undefined
    return html`<article class="deferral" data-deferred-id="${deferral.deferredId}" aria-labelledby="${id}-h">
<h3 id="${id}-h">${badge('live', 'pending')} <code>${deferral.tool}</code> · <code>${deferral.deferredId}</code></h3>
<p>Arguments:</p><pre>${json(deferral.args ?? null)}</pre>
<p>Deadline: ${deferral.expiresAt === null ? 'none (waits as long as it takes)' : when(deferral.expiresAt)}</p>
<form method="post" action="${base}/resolve" class="resolve">
<input type="hidden" name="_csrf" value="${input.csrf}">
<label for="${id}-result">Result (JSON, checked against the tool's output schema): approve as it is, or edit it first</label>
${schema === undefined ? '' : html`<details class="schema" data-testid="output-schema"><summary>The tool's output schema</summary><pre id="${id}-schema">${schema}</pre></details>`}
${refused === undefined ? '' : html`<p class="form-error" role="alert" id="${id}-problem" data-testid="answer-problem">${refused.problem}</p>`}
<textarea id="${id}-result" name="result" rows="4" required${refused === undefined ? '' : html` aria-invalid="true" aria-describedby="${id}-problem"`}>${refused?.text ?? '{}'}</textarea>
<button type="submit">Resolve</button>
</form>
<form method="post" action="${base}/reject" class="reject">
<input type="hidden" name="_csrf" value="${input.csrf}">
<label for="${id}-error">Reason for rejecting</label>
<input id="${id}-error" name="error" type="text" required>
<label><input type="checkbox" name="retryable" value="true"> the call may be retried</label>
<button type="submit">Reject</button>
</form>
</article>`
  })
  return section('deferred', 'Deferred tools waiting for an answer', forms)
}

function children(input: RunPageInput): SafeHtml {
  const list = input.model.view.children()
  if (list.length === 0) return html``
  return section('children', 'Child runs', html`<ul>${list.map((child) => html`<li>${child.workflow} <code>${child.id}</code>: ${child.attempts.map((attempt) => html`<a href="${runHref(input.runId, { execution: attempt.childExecutionId })}">${attempt.childExecutionId}</a> (${attempt.end?.disposition ?? attempt.status}) `)}</li>`)}</ul>`)
}

function divergenceList(input: RunPageInput, divergences: readonly ReplayDivergedLine[], model: ExecutionModel | undefined): SafeHtml {
  return html`<ul class="divergences" data-testid="divergences">${divergences.map((line) => {
    const call = model?.view.calls().find((candidate) => candidate.ordinal === line.ordinal)
    return html`<li>At call <strong>#${line.ordinal}</strong>${call === undefined ? '' : html` (${call.kind} <strong>${call.name}</strong> <code>${call.id}</code>)`}: changed <strong>${line.fields.join(', ') || 'the request'}</strong>; every later call ran live. <details><summary>Request keys</summary><p>recorded <code>${line.expectedKey}</code></p><p>replayed <code>${line.actualKey}</code></p></details></li>`
  })}</ul>`
}

function replays(input: RunPageInput): SafeHtml {
  const own = input.model.view.divergences
  const parts: SafeHtml[] = []
  if (own.length > 0) parts.push(html`<p>This replay diverged from its recording:</p>${divergenceList(input, own, input.model)}`)
  for (const replay of input.replays) {
    parts.push(html`<h3>Replay <a href="${runHref(input.runId, { execution: replay.executionId })}">${replay.executionId}</a></h3>${replay.divergences.length === 0 ? html`<p>${badge('ok', 'Matched the recording')}</p>` : divergenceList(input, replay.divergences, replay.model)}`)
  }
  if (parts.length === 0) return html``
  return section('replays', 'Replay divergence', parts)
}

function journal(input: RunPageInput): SafeHtml {
  const type = input.journalType
  const lines: JournalLine[] = type === undefined ? [...input.model.lines] : input.model.lines.filter((line) => line.type === type)
  const pages = Math.max(1, Math.ceil(lines.length / LINES_PER_PAGE))
  const page = Math.min(input.journalPage, pages - 1)
  const shown = lines.slice(page * LINES_PER_PAGE, (page + 1) * LINES_PER_PAGE)
  const form = html`<form method="get" action="/runs/${enc(input.runId)}#journal" class="filter">
${input.execution === undefined ? '' : html`<input type="hidden" name="execution" value="${input.execution}">`}
<label for="journal-type">Line type</label>
<select id="journal-type" name="type"><option value="">all types</option>${JOURNAL_LINE_TYPES.map((candidate) => html`<option value="${candidate}"${candidate === type ? ' selected' : ''}>${candidate}</option>`)}</select>
<button type="submit">Filter</button>
</form>`
  const body = html`${form}<p>${lines.length} line${lines.length === 1 ? '' : 's'}${type === undefined ? '' : html` of type <code>${type}</code>`}.</p>${pager(input, pages, page, 'journalPage', 'Journal pages')}
<div class="scroll"><table class="journal" data-testid="journal"><thead><tr><th scope="col">seq</th><th scope="col">type</th><th scope="col">time</th><th scope="col">line</th></tr></thead><tbody id="journal-lines">${shown.map((line) => journalRow(line))}</tbody></table></div>`
  return section('journal', 'Raw journal', body)
}

/** One journal line as a table row; the live script builds the same row from an event. */
export function journalRow(line: JournalLine): SafeHtml {
  const { v: _v, seq, ts, runId: _runId, executionId: _executionId, type, ...rest } = line
  const text = JSON.stringify(rest)
  return html`<tr id="line-${seq}" data-type="${type}"><td>${seq}</td><td><code>${type}</code></td><td>${ts.slice(11, 23)}</td><td><code class="line">${text.length > 400 ? `${text.slice(0, 400)}…` : text}</code></td></tr>`
}

function executions(input: RunPageInput): SafeHtml {
  if (input.executions.length <= 1) return html``
  return html`<nav aria-label="Executions" class="executions"><h2 class="visually-hidden">Executions</h2><ul>${input.executions.map((execution) => html`<li>${execution.executionId === input.model.info.executionId ? html`<strong aria-current="page">${execution.executionId}</strong>` : html`<a href="${runHref(input.runId, { execution: execution.executionId })}">${execution.executionId}</a>`} (${execution.kind}${execution.status === undefined ? '' : `, ${execution.status}`})</li>`)}</ul></nav>`
}

/** The body of `GET /runs/{id}`: everything the inspector shows about one execution. */
/** Where the live script shows the model's text as it streams, one block per LLM request; not refreshed with the live sections, so the text stays. */
function tokensSection(): SafeHtml {
  // Hidden until the first token arrives: a run that makes no LLM request shows nothing here.
  return html`<section id="tokens" aria-labelledby="tokens-h" hidden><h2 id="tokens-h">Tokens as they stream</h2><p>The model's text of each LLM request as it arrives; a request that was thrown away (timed out, retried) is struck through. The answers that count are in the timeline.</p><div id="token-calls" aria-live="off"></div></section>`
}

export function renderRunBody(input: RunPageInput): SafeHtml {
  return html`<h1>Run <code>${input.runId}</code></h1>
${executions(input)}
<nav aria-label="On this page" class="toc"><a href="#answer">Answer</a> <a href="#timeline">Timeline</a> <a href="#budgets">Budgets</a> <a href="#journal">Journal</a> <a href="/">All runs</a></nav>
${summary(input)}
${input.tokens === true ? tokensSection() : ''}
${deferred(input)}
${answer(input)}
${replays(input)}
${children(input)}
${timeline(input)}
${budgets(input)}
${journal(input)}`
}
