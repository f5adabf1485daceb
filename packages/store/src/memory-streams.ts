import { settle } from './poll.js'
import { RunNotFoundError } from './store-errors.js'
import {
  type RunStreams,
  type StreamRead,
  type StreamRecord,
  StreamWaiters,
  readBounds,
  validateStreamRecordInput,
  waitForRecords,
} from './stream-store.js'

interface MemoryStream {
  records: StreamRecord[]
  firstKept: number
  next: number
  endedAt: number | undefined
}

/** The memory store's {@link RunStreams}: arrays in this process. */
export function createMemoryStreams(hasRun: (runId: string) => boolean, retentionMs: number): RunStreams {
  const streams = new Map<string, MemoryStream>()
  const waiters = new StreamWaiters()
  const streamOf = (runId: string): MemoryStream => {
    let stream = streams.get(runId)
    if (stream === undefined) streams.set(runId, (stream = { records: [], firstKept: 0, next: 0, endedAt: undefined }))
    return stream
  }
  const read = (runId: string, after: number, limit: number): StreamRead => {
    const stream = streams.get(runId)
    if (stream === undefined) return { records: [], firstKept: 0, next: 0 }
    const start = Math.max(0, after + 1 - stream.firstKept)
    return {
      records: stream.records.slice(start, start + limit),
      firstKept: stream.firstKept,
      next: stream.next,
      ...(stream.endedAt === undefined ? {} : { endedAt: stream.endedAt }),
    }
  }
  return {
    append: (runId, inputs) =>
      settle(() => {
        const checked = inputs.map(validateStreamRecordInput)
        if (!hasRun(runId)) throw new RunNotFoundError(runId, 'the memory store')
        const stream = streamOf(runId)
        const kept = checked.map((input): StreamRecord => ({ offset: stream.next++, ...input }))
        stream.records.push(...kept)
        waiters.wake(runId)
        return kept
      }),
    read: (runId, options) =>
      settle(() => {
        const { after, limit } = readBounds(options)
        return read(runId, after, limit)
      }),
    wait: (runId, after, options) =>
      waitForRecords(() => Promise.resolve(read(runId, after, 1)), after, (ms) => waiters.next(runId, ms, options?.signal), options, undefined),
    end(runId, endedAt) {
      const stream = streamOf(runId)
      stream.endedAt ??= endedAt
      waiters.wake(runId)
      return Promise.resolve()
    },
    prune(now) {
      let runs = 0
      let records = 0
      for (const stream of streams.values()) {
        if (stream.endedAt === undefined || stream.endedAt + retentionMs > now || stream.records.length === 0) continue
        runs += 1
        records += stream.records.length
        stream.records = []
        stream.firstKept = stream.next
      }
      return Promise.resolve({ runs, records })
    },
  }
}
