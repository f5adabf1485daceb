import { relative } from 'node:path'
import type { JsonValue } from '@locus/outcome'
import { type Answer, caveatsOf, findAnswer, renderAnswer } from '@locus/partial'
import { Usd, displayUsd } from '@locus/cost'
import type { ExecutionStanding, RunStanding, RunSummary } from '@locus/runtime'
import type { CallCostEntry } from '@locus/journal'
import { formatDuration } from './format-duration.js'
import { formatJson } from './format-json.js'
import { inCliWords } from './cli-words.js'
import type { Style } from './style.js'

/** How many lines of a long result the summary prints before it says where the rest is. */
const RESULT_LINE_LIMIT = 40
/**
 * How many bytes of a result the summary prints, whatever its line count: a
 * 50 MB value on one line is cut here too, not printed whole.
 */
export const RESULT_BYTE_LIMIT = 8 * 1024

export function plural(count: number, noun: string, many = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : many}`
}

/** Colours a standing: green completed, red failed, yellow cancelled or unfinished. */
export function styleStanding(standing: RunStanding | ExecutionStanding, style: Style): string {
  if (standing === 'completed') return style.green(standing)
  if (standing === 'failed') return style.red(standing)
  return style.yellow(standing)
}

/** An Answer in the result (the one detector, @locus/partial's `findAnswer`) rendered with its caveats outside the text; `undefined` when there is none to render. */
function renderedAnswer(result: JsonValue): string | undefined {
  const answer = findAnswer(result)
  if (answer === undefined || typeof answer.text !== 'string') return undefined
  const gathered = Array.isArray(answer.gathered) ? (answer.gathered as unknown as Answer['gathered']) : []
  return renderAnswer({ ...(answer as unknown as Answer), caveats: caveatsOf(result), gathered })
}

/** The first `maxBytes` bytes of `text` as UTF-8, never splitting a character. */
function headBytes(text: string, maxBytes: number): string {
  if (maxBytes <= 0) return ''
  const bytes = Buffer.from(text, 'utf8')
  if (bytes.length <= maxBytes) return text
  let end = maxBytes
  // Back off to the start of the character the cut would split (UTF-8 continuation bytes are 10xxxxxx).
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end -= 1
  return bytes.subarray(0, end).toString('utf8')
}

/**
 * Cuts text for a terminal: at most `maxLines` lines and `maxBytes` bytes (a
 * single long line is cut within itself). Returns the text whole when it fits,
 * else the head and a last line saying how much is left out and where it is.
 *
 * @example
 * ```ts
 * cutForTerminal('x'.repeat(50_000_000), { maxLines: 40, maxBytes: 8192, where: 'runs/r1/result.json' })
 * // 'xxxx...x\n… 49991808 more bytes; full result in runs/r1/result.json'
 * ```
 */
export function cutForTerminal(text: string, limits: { readonly maxLines: number; readonly maxBytes: number; readonly where: string }): string {
  const lines = text.split('\n')
  const shown: string[] = []
  let used = 0
  for (const line of lines) {
    if (shown.length === limits.maxLines) break
    const separator = shown.length === 0 ? 0 : 1
    const size = Buffer.byteLength(line, 'utf8')
    if (used + separator + size <= limits.maxBytes) {
      shown.push(line)
      used += separator + size
      continue
    }
    const head = headBytes(line, limits.maxBytes - used - separator)
    if (head !== '') shown.push(head)
    break
  }
  const head = shown.join('\n')
  const moreBytes = Buffer.byteLength(text, 'utf8') - Buffer.byteLength(head, 'utf8')
  if (moreBytes <= 0) return text
  const moreLines = lines.length - shown.length
  const lineNote = moreLines > 0 ? ` (${moreLines} more line${moreLines === 1 ? '' : 's'})` : ''
  return `${head}\n… ${moreBytes} more bytes${lineNote}; full result in ${limits.where}`
}

/**
 * The result as a reader should see it: an `Answer` of @locus/partial is
 * rendered with its caveats outside the text; anything else as JSON. Long
 * results are cut by lines and by bytes ({@link RESULT_BYTE_LIMIT}), with a
 * note pointing at `result.json`, which holds the whole result.
 */
export function formatResult(result: JsonValue, standing?: RunStanding, context: { readonly resultFile?: string | undefined; readonly cwd?: string } = {}): string {
  if (standing === 'unfinished') return '(none yet: the run has not ended)'
  const text = renderedAnswer(result) ?? formatJson(result, 96)
  const where = context.resultFile === undefined ? 'result.json' : context.cwd === undefined ? context.resultFile : displayPath(context.resultFile, context.cwd)
  return cutForTerminal(text, { maxLines: RESULT_LINE_LIMIT, maxBytes: RESULT_BYTE_LIMIT, where })
}

/** A path relative to `cwd` when it is inside it, else absolute. */
export function displayPath(path: string, cwd: string): string {
  const fromCwd = relative(cwd, path)
  return fromCwd === '' || fromCwd.startsWith('..') ? path : fromCwd
}

/**
 * The end-of-run summary: standing, run id, outputs path, counts of calls,
 * retries and gaps, caveats, and the result.
 */
export function formatSummary(summary: RunSummary, context: { readonly cwd: string; readonly style: Style; readonly includeResult?: boolean }): string {
  const { style } = context
  const out: string[] = []
  const execution = summary.executionId === summary.runId ? '' : style.dim(` (execution ${summary.executionId})`)
  out.push(`${style.bold(styleStanding(summary.standing, style))}  ${style.bold(summary.workflow)}  run ${summary.runId}${execution}`)
  const field = (name: string, value: string): void => {
    out.push(`  ${style.dim(`${name}:`.padEnd(10))}${value}`)
  }
  if (summary.answerOutcome !== undefined) {
    const note =
      summary.standing === 'failed' && summary.answerOutcome === 'partial'
        ? style.dim(' (a partial answer is not a success: the run is failed, exit 1)')
        : ''
    field('answer', `${summary.answerOutcome}${note}`)
  }
  const replayed = summary.replayedCalls > 0 ? `, ${summary.replayedCalls} replayed from the recording` : ''
  field(
    'calls',
    `${plural(summary.agentCalls, 'agent call')} (${plural(summary.agentAttempts, 'attempt')}${replayed}), ` +
      `${plural(summary.toolCalls, 'tool call')} (${plural(summary.toolAttempts, 'attempt')})`,
  )
  field('retries', summary.retries === 0 ? '0' : `${summary.retries} (${summary.retriedCalls.map((call) => `${call.kind} ${call.name}`).join(', ')})`)
  // The host's own LLM retries are counted apart from the calls' retries, so neither hides the other.
  if (summary.cost !== undefined) field('cost', describeCost(summary.cost))
  if (summary.cancelRequested !== undefined) field('cancel', `requested by ${summary.cancelRequested.by} at ${summary.cancelRequested.at}: ${summary.cancelRequested.reason}`)
  if (summary.costBudget !== undefined) field('budget', `${displayUsd(new Usd(summary.costBudget.leftUsd))} left of ${displayUsd(new Usd(summary.costBudget.limitUsd))} (--max-cost)`)
  if (summary.llmAttempts > 0) field('llm', `${plural(summary.llmAttempts, 'LLM request attempt')}, ${plural(summary.llmRetries, 'retry', 'retries')} by the model host's policy`)
  if (summary.childCalls > 0) {
    const listed = summary.children.map((child) => `${child.workflow} ${child.childExecutionId} ${child.disposition}${child.replayed ? ' (replayed)' : ''}`).join('; ')
    field('children', `${summary.childCalls} (${summary.childCompleted} completed, ${summary.childFailed} failed): ${listed}`)
  }
  if (summary.repairedChoices.length > 0) {
    const listed = summary.repairedChoices.map((repair) => `${repair.agent} said ${JSON.stringify(repair.from)}, took ${repair.to} ${repair.via === 'fallback' ? 'as its fallback' : 'when asked again'}`)
    field('repaired', `${plural(summary.repairedChoices.length, 'choice answer')}: ${listed.join('; ')}`)
  }
  if (summary.retriesRefused > 0) field('refused', `${plural(summary.retriesRefused, 'retry', 'retries')} refused by the run (budget, cap, deadline or cancellation)`)
  field(
    'gaps',
    summary.gaps.length === 0
      ? '0'
      : `${summary.gaps.length}: ${summary.gaps.map((gap) => `${gap.tool} (${gap.criticality}${gap.reason === undefined ? '' : `: ${gap.reason}`})`).join('; ')}`,
  )
  if (summary.durationMs !== undefined) field('duration', formatDuration(summary.durationMs))
  field('outputs', displayPath(summary.outputsReadme, context.cwd))
  if (summary.error !== undefined) field('error', style.red(inCliWords(summary.error)))
  for (const problem of summary.journalProblems) field('journal', style.yellow(problem))
  if (summary.caveats.length > 0 && context.includeResult === false) {
    out.push(`  ${style.dim('caveats:')}`)
    for (const caveat of summary.caveats) out.push(`    - ${caveat}`)
  }
  if (summary.nothingRecorded) {
    field(
      'next',
      `nothing to resume from; start it again with \`locus run <workflow file> --input '<json>'\`, ` +
        `or run it from the start as an execution of this run with \`locus resume ${summary.runId} --workflow <workflow file>\``,
    )
  } else if (summary.standing === 'cancelled' || summary.standing === 'unfinished') {
    const why = summary.standing === 'unfinished' ? 'it has no run_end yet: still running, or its process stopped' : 'it was cancelled'
    field('next', `${why}; \`locus resume ${summary.runId}\` continues it (finished calls replay from the journal)`)
  }
  if (context.includeResult !== false) {
    out.push('', style.bold('Result:'), ...indentLines(formatResult(summary.result, summary.standing, { resultFile: summary.resultPath, cwd: context.cwd })))
  }
  return out.join('\n')
}

/** The summary as one JSON object, the last line of `--json` output. */
export function summaryJson(summary: RunSummary, exitCode: number): Record<string, unknown> {
  return { type: 'summary', ...summary, exitCode }
}

/** Indents every non-empty line by two spaces. */
export function indentLines(text: string): string[] {
  return text.split('\n').map((line) => (line === '' ? '' : `  ${line}`))
}

/** A run's cost for a person: dollars, what retries threw away, and what could not be priced. */
function describeCost(cost: NonNullable<RunSummary['cost']>): string {
  const parts = [`${displayUsd(new Usd(cost.usd))} for LLM requests`]
  if (!new Usd(cost.retryOverheadUsd).isZero()) parts.push(`${displayUsd(new Usd(cost.retryOverheadUsd))} of it on attempts that were retried or failed`)
  if (cost.unpricedRequests > 0) parts.push(`${plural(cost.unpricedRequests, 'request')} not priced (a model with no price; pass --prices)`)
  return parts.join('; ')
}

/**
 * `locus show`'s cost per call: each priced agent call and spawn with its
 * dollars, and each attempt's when it was retried.
 */
export function formatCallCosts(costs: readonly CallCostEntry[], style: Style): string[] {
  const out: string[] = []
  for (const call of costs) {
    const overhead = new Usd(call.retryOverheadUsd).isZero() ? '' : style.dim(` (${displayUsd(new Usd(call.retryOverheadUsd))} of it on retries)`)
    const unpriced = call.unpricedRequests === 0 ? '' : style.dim(` + ${plural(call.unpricedRequests, 'request')} not priced`)
    out.push(`  ${call.kind} ${call.name} (${call.id}): ${displayUsd(new Usd(call.usd))}${overhead}${unpriced}`)
    if (call.attempts.length < 2) continue
    for (const attempt of call.attempts) {
      const usd = attempt.replayed ? 'replayed, $0 now' : attempt.usd === undefined ? 'not priced' : displayUsd(new Usd(attempt.usd))
      out.push(`    attempt ${attempt.attempt} ${style.dim(attempt.id)} ${attempt.status}: ${usd}`)
    }
  }
  return out
}
