import { type JournalLine, createRunView, progressTree } from '@locus/journal'
import type { OutputStream } from '../cli-io.js'
import { type LineContext, describeJournalLine, formatJournalLine } from '../format-journal-line.js'
import { inCliWords } from '../cli-words.js'
import { type Style, stripAnsi } from '../style.js'
import { renderProgressTree } from './render-progress-tree.js'
import type { RunProgress } from '@locus/runtime'

/** How progress is shown: a live tree on a terminal, plain lines on a pipe, journal lines as JSON, or nothing. */
export type ProgressMode = 'tree' | 'plain' | 'json' | 'quiet'

/** Receives the journal lines of a run as they are written, and shows them. */
export interface ProgressReporter {
  onEvent(line: JournalLine): void
  /** Streamed progress of an agent call (tokens so far), shown by the live tree. */
  onProgress?(progress: RunProgress): void
  /** Draws the final state and stops any timer. */
  finish(): void
}

/** Line types a plain progress log shows; the rest stay in the journal. */
const PLAIN_TYPES = new Set<JournalLine['type']>([
  'run_start',
  'run_end',
  'group_start',
  'group_end',
  'agent_start',
  'agent_end',
  'error',
  'retry',
  'tool_end',
  'replay_diverged',
  'log',
  'deferred_open',
  'deferred_settled',
  'child_start',
  'child_end',
  'timer_start',
  'timer_fired',
])

/** How often the tree is redrawn while calls run (its elapsed times move). */
const REDRAW_MS = 250

/**
 * Picks the progress mode: `json` with `--json`, `quiet` with `--quiet`, the
 * live tree when stdout is a terminal, plain lines otherwise.
 */
export function chooseProgressMode(flags: { readonly json?: boolean | undefined; readonly quiet?: boolean | undefined }, stream: OutputStream): ProgressMode {
  if (flags.json === true) return 'json'
  if (flags.quiet === true) return 'quiet'
  return stream.isTTY === true ? 'tree' : 'plain'
}

function createTreeReporter(stream: OutputStream, style: Style, now: () => number, rows: () => number, context: LineContext): ProgressReporter {
  // The run's one fold, keeping every call for the tree; the reporter only renders it.
  const view = createRunView({ keep: 'all' })
  /** `[workflow:retry]` messages, and what an open deferral waits for, not yet printed above the tree. */
  const boundaries: string[] = []
  let drawnLines = 0
  let timer: ReturnType<typeof setInterval> | undefined
  let dirty = false
  /** Output tokens so far of each streaming agent call, by logical call id. */
  const tokens = new Map<string, number>()

  const clear = (): string => (drawnLines === 0 ? '' : `\u001b[${drawnLines}A\r\u001b[0J`)
  const draw = (): void => {
    dirty = false
    const columns = stream.columns !== undefined && stream.columns > 0 ? stream.columns : 100
    const width = Math.max(20, columns - 1)
    const lines = renderProgressTree(progressTree(view), { now: now(), style, maxLines: Math.max(3, rows() - 2), tokens }).map((line) => fit(line, width))
    // Retry boundaries scroll above the tree and stay, so none is lost when the tree is redrawn.
    const printed = boundaries.splice(0).map((message) => fit(style.yellow(message), width))
    stream.write(`${clear()}${[...printed, ...lines].join('\n')}\n`)
    drawnLines = lines.length
  }
  return {
    onProgress(progress) {
      if (progress.outputTokens === undefined) return
      tokens.set(progress.logicalCallId, progress.outputTokens)
      dirty = true
    },
    onEvent(line) {
      view.apply(line)
      dirty = true
      if (line.type === 'retry') boundaries.push(inCliWords(line.message))
      // A run waiting on a deferral says so, with the command that answers it from another shell; it stays above the tree.
      // So does a run that sleeps: what it waits for, and until when.
      if (line.type === 'deferred_open' || line.type === 'timer_start') boundaries.push(describeJournalLine(line, undefined, context))
      if (line.type === 'retry' || line.type === 'deferred_open' || line.type === 'timer_start' || line.type === 'run_start' || line.type === 'run_end') draw()
      timer ??= setInterval(() => {
        if (dirty || view.runEnd === undefined) draw()
      }, REDRAW_MS)
      timer.unref()
    },
    finish() {
      if (timer !== undefined) clearInterval(timer)
      timer = undefined
      if (view.runStart !== undefined) draw()
    },
  }
}

/** Cuts a styled line to `width` visible characters; a cut line drops its colours. */
function fit(line: string, width: number): string {
  const plain = stripAnsi(line)
  return plain.length <= width ? line : `${plain.slice(0, width - 1)}…`
}

/**
 * A reporter for one run:
 *
 * - `tree`: a live tree of groups and calls (status, attempt n of m, elapsed)
 *   redrawn in place with ANSI; retry boundaries are printed above it as they happen;
 * - `plain`: one line per significant journal line, for pipes and logs;
 * - `json`: every journal line as one JSON object a line;
 * - `quiet`: nothing.
 */
export function createProgressReporter(
  mode: ProgressMode,
  stream: OutputStream,
  style: Style,
  options: { readonly now?: () => number; readonly rows?: () => number; readonly server?: string | undefined } = {},
): ProgressReporter {
  const now = options.now ?? Date.now
  const context: LineContext = { server: options.server }
  switch (mode) {
    case 'tree':
      return createTreeReporter(stream, style, now, options.rows ?? (() => {
        const rows = (stream as { rows?: number }).rows
        return rows !== undefined && rows > 0 ? rows : 40
      }), context)
    case 'json':
      return {
        onEvent(line) {
          stream.write(`${JSON.stringify(line)}\n`)
        },
        finish() {},
      }
    case 'plain': {
      let startedAt: number | undefined
      return {
        onEvent(line) {
          if (line.type === 'run_start') startedAt = Date.parse(line.ts)
          // A failed LLM request the host retries is shown; the journal keeps every one.
          const shown = PLAIN_TYPES.has(line.type) || (line.type === 'llm_attempt' && line.outcome !== 'succeeded')
          if (shown) stream.write(`${formatJournalLine(line, startedAt, style, context)}\n`)
        },
        finish() {},
      }
    }
    case 'quiet':
      return { onEvent() {}, finish() {} }
  }
}
