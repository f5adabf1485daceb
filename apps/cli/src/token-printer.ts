import type { RunStreams } from '@locus/store'
import type { OutputStream } from './cli-io.js'
import type { Style } from './style.js'

/** One record of a run's token stream, as the store keeps it and `GET /v1/runs/{id}/stream?format=raw` sends it. */
export interface TokenRecord {
  readonly offset: number
  readonly executionId: string
  readonly callId: string
  readonly attempt: number
  readonly llmAttempt: number
  readonly kind: 'delta' | 'discarded' | 'end'
  readonly text?: string | undefined
  readonly cause?: string | undefined
}

/** Prints a run's token stream as it comes, between whole lines of other output. */
export interface TokenPrinter {
  record(record: TokenRecord): void
  /** Before another line is printed on the same stream: ends a token line left open. */
  beforeLine(): void
  /** Ends a token line left open. */
  finish(): void
}

const keyOf = (record: TokenRecord): string => `${record.executionId}\u0000${record.callId}\u0000${String(record.attempt)}\u0000${String(record.llmAttempt)}`

/**
 * The human form: each LLM request's text on its own line(s), after a dim
 * `┊ <callId> attempt N:` prefix (with the request when the host retried it,
 * and the execution when it is not the run's first), continued under the same
 * prefix when other output came between. `end` closes the line. A `discarded`
 * request gets its own yellow line saying its text above was thrown away and
 * why, so text that does not count is never run together with the answer
 * that does. `json`: each record one JSON line, as the raw stream sends it.
 */
export function createTokenPrinter(out: OutputStream, style: Style, options: { readonly runId: string; readonly json?: boolean | undefined }): TokenPrinter {
  /** The request whose text the open line holds, if a line is open. */
  let open: string | undefined
  /** Characters each request streamed, for the discard line. */
  const streamed = new Map<string, number>()
  const label = (record: TokenRecord): string => {
    const request = record.llmAttempt > 1 ? ` request ${record.llmAttempt}` : ''
    const execution = record.executionId === options.runId ? '' : ` (${record.executionId})`
    return `${record.callId} attempt ${record.attempt}${request}${execution}`
  }
  const close = (): void => {
    if (open === undefined) return
    out.write('\n')
    open = undefined
  }
  return {
    record(record) {
      if (options.json === true) {
        out.write(`${JSON.stringify(record)}\n`)
        return
      }
      const key = keyOf(record)
      if (record.kind === 'delta') {
        const text = record.text ?? ''
        if (open !== key) {
          close()
          const continued = streamed.has(key) ? ' …' : ''
          out.write(style.dim(`┊ ${label(record)}:${continued} `))
          open = key
        }
        streamed.set(key, (streamed.get(key) ?? 0) + text.length)
        // Text with line breaks stays under its prefix.
        out.write(text.replace(/\n/g, '\n┊   '))
        return
      }
      if (record.kind === 'end') {
        if (open === key) close()
        return
      }
      close()
      const chars = streamed.get(key) ?? 0
      out.write(style.yellow(`┊ ${label(record)}: discarded (${record.cause ?? 'unknown'}): the ${String(chars)} characters it streamed above are not the answer\n`))
    },
    beforeLine: close,
    finish: close,
  }
}

/** How long after the run's end its last stream batch may still land (the writer flushes it then). */
const STREAM_SETTLE_MS = 2_000

/**
 * Follows a run's token stream in a store from `after`, handing each record
 * to `onRecord` in offset order, until `stop` aborts; then it reads what is
 * left, waiting up to {@link STREAM_SETTLE_MS} for the stream's end mark (the
 * run's last batch, no older than `endedAt()` when given: the time of the
 * `run_end` the caller saw), and returns the last offset it handed over.
 */
export async function followStoreTokens(
  streams: Pick<RunStreams, 'read' | 'wait'>,
  runId: string,
  options: { readonly stop: AbortSignal; readonly onRecord: (record: TokenRecord) => void; readonly after?: number; readonly endedAt?: () => number | undefined },
): Promise<number> {
  let after = options.after ?? -1
  const readAll = async (): Promise<{ endedAt: number | undefined }> => {
    for (;;) {
      const read = await streams.read(runId, { after, limit: 256 })
      // Pruned under the reader: go on from what is kept.
      if (read.firstKept > after + 1) after = read.firstKept - 1
      for (const record of read.records) {
        options.onRecord(record)
        after = record.offset
      }
      if (read.records.length === 0) return { endedAt: read.endedAt }
    }
  }
  while (!options.stop.aborted) {
    await readAll()
    await streams.wait(runId, after, { signal: options.stop, timeoutMs: 250 })
  }
  const settleBy = Date.now() + STREAM_SETTLE_MS
  for (;;) {
    const { endedAt } = await readAll()
    const wanted = options.endedAt?.()
    if ((endedAt !== undefined && (wanted === undefined || endedAt >= wanted)) || Date.now() >= settleBy) return after
    await streams.wait(runId, after, { timeoutMs: 50 })
  }
}
