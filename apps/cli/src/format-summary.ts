import { relative } from 'node:path'
import type { JsonValue } from '@locus/outcome'
import { type Answer, renderAnswer } from '@locus/partial'
import { formatDuration } from './format-duration.js'
import { formatJson } from './format-json.js'
import type { Style } from './style.js'
import type { RunStanding, RunSummary } from './summarize-run.js'

/** How much of a long result the summary prints before it says where the rest is. */
const RESULT_LINE_LIMIT = 40

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`
}

/** Colours a standing: green completed, red failed, yellow cancelled or unfinished. */
export function styleStanding(standing: RunStanding, style: Style): string {
  if (standing === 'completed') return style.green(standing)
  if (standing === 'failed') return style.red(standing)
  return style.yellow(standing)
}

function isAnswer(value: JsonValue): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  return typeof value.text === 'string' && Array.isArray(value.caveats) && typeof value.partial === 'boolean' && Array.isArray(value.gathered)
}

/**
 * The result as a reader should see it: an `Answer` of @locus/partial is
 * rendered with its caveats outside the text; anything else as JSON. Long
 * results are cut, pointing at `result.json`.
 */
export function formatResult(result: JsonValue, standing?: RunStanding): string {
  if (standing === 'unfinished') return '(none yet: the run has not ended)'
  const answer = isAnswer(result) ? result : typeof result === 'object' && result !== null && !Array.isArray(result) && isAnswer(result.answer ?? null) ? result.answer : undefined
  const text = answer === undefined || answer === null ? formatJson(result, 96) : renderAnswer(answer as unknown as Answer)
  const lines = text.split('\n')
  if (lines.length <= RESULT_LINE_LIMIT) return text
  return [...lines.slice(0, RESULT_LINE_LIMIT), `... ${lines.length - RESULT_LINE_LIMIT} more lines in result.json`].join('\n')
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
  field(
    'gaps',
    summary.gaps.length === 0
      ? '0'
      : `${summary.gaps.length}: ${summary.gaps.map((gap) => `${gap.tool} (${gap.criticality}${gap.reason === undefined ? '' : `: ${gap.reason}`})`).join('; ')}`,
  )
  if (summary.durationMs !== undefined) field('duration', formatDuration(summary.durationMs))
  field('outputs', displayPath(summary.outputsReadme, context.cwd))
  if (summary.error !== undefined) field('error', style.red(summary.error))
  for (const problem of summary.journalProblems) field('journal', style.yellow(problem))
  if (summary.caveats.length > 0 && context.includeResult === false) {
    out.push(`  ${style.dim('caveats:')}`)
    for (const caveat of summary.caveats) out.push(`    - ${caveat}`)
  }
  if (summary.standing === 'cancelled' || summary.standing === 'unfinished') {
    const why = summary.standing === 'unfinished' ? 'it has no run_end yet: still running, or its process stopped' : 'it was cancelled'
    field('next', `${why}; \`locus resume ${summary.runId}\` continues it (finished calls replay from the journal)`)
  }
  if (context.includeResult !== false) {
    out.push('', style.bold('Result:'), ...indentLines(formatResult(summary.result, summary.standing)))
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
