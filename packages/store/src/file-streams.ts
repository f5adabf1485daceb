import { mkdir, open, readFile, readdir, rename, stat, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { RunNotFoundError } from './store-errors.js'
import { runPaths } from './file-layout.js'
import {
  type RunStreams,
  type StreamRead,
  type StreamRecord,
  StreamWaiters,
  readBounds,
  validateStreamRecordInput,
  waitForRecords,
} from './stream-store.js'

/** The directory of a run's token stream, beside its journal: `<runId>/stream/`. */
export const STREAM_DIR = 'stream'
const RECORDS = 'records.jsonl'
const STATE = 'state.json'

interface StreamState {
  readonly firstKept: number
  readonly endedAt?: number | undefined
}

function codeOf(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : undefined
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8')
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return undefined
    throw error
  }
}

/** The complete records of a stream file; a torn last line (a crash mid-write) is not a record. */
function parseRecords(text: string | undefined): StreamRecord[] {
  if (text === undefined) return []
  const records: StreamRecord[] = []
  for (const line of text.split('\n')) {
    if (line.length === 0) continue
    try {
      const record = JSON.parse(line) as StreamRecord
      if (typeof record.offset === 'number') records.push(record)
    } catch {
      // torn or damaged: skipped
    }
  }
  return records
}

/**
 * The file store's {@link RunStreams}: `<runId>/stream/records.jsonl`, one
 * record a line, appended by the run's single owner; `state.json` keeps the
 * first offset still kept and when the run ended. Readers in other
 * processes see new records within `pollMs`.
 */
export function createFileStreams(base: string, retentionMs: number, pollMs: number): RunStreams {
  const waiters = new StreamWaiters()
  /** What this process knows of each stream file it appended to: its size then, and the next offset. */
  const heads = new Map<string, { size: number; next: number }>()
  const queues = new Map<string, Promise<unknown>>()
  const dirOf = (runId: string): string => join(runPaths(base, runId).rootDir, STREAM_DIR)

  async function readState(runId: string): Promise<StreamState> {
    const text = await readOptional(join(dirOf(runId), STATE))
    return text === undefined ? { firstKept: 0 } : (JSON.parse(text) as StreamState)
  }

  async function writeState(runId: string, state: StreamState): Promise<void> {
    const path = join(dirOf(runId), STATE)
    const temporary = `${path}.${String(process.pid)}.tmp`
    await writeFile(temporary, JSON.stringify(state))
    await rename(temporary, path)
  }

  async function readAll(runId: string): Promise<{ records: StreamRecord[]; state: StreamState; next: number; text: string | undefined }> {
    const [text, state] = await Promise.all([readOptional(join(dirOf(runId), RECORDS)), readState(runId)])
    const records = parseRecords(text).filter((record) => record.offset >= state.firstKept)
    const last = records.at(-1)
    return { records, state, next: last === undefined ? state.firstKept : last.offset + 1, text }
  }

  function serial<T>(runId: string, body: () => Promise<T>): Promise<T> {
    const previous = queues.get(runId) ?? Promise.resolve()
    const run = previous.then(body, body)
    const settled = run.catch(() => undefined)
    queues.set(runId, settled)
    void settled.then(() => {
      if (queues.get(runId) === settled) queues.delete(runId)
    })
    return run
  }

  async function read(runId: string, after: number, limit: number): Promise<StreamRead> {
    const { records, state, next } = await readAll(runId)
    const picked: StreamRecord[] = []
    for (const record of records) {
      if (record.offset <= after) continue
      picked.push(record)
      if (picked.length >= limit) break
    }
    return { records: picked, firstKept: Math.min(state.firstKept, next), next, ...(state.endedAt === undefined ? {} : { endedAt: state.endedAt }) }
  }

  return {
    append(runId, inputs) {
      return serial(runId, async () => {
        const checked = inputs.map(validateStreamRecordInput)
        const dir = dirOf(runId)
        try {
          await stat(runPaths(base, runId).rootDir)
        } catch {
          throw new RunNotFoundError(runId, base)
        }
        await mkdir(dir, { recursive: true })
        const path = join(dir, RECORDS)
        const size = await stat(path).then(
          (stats) => stats.size,
          () => 0,
        )
        let head = heads.get(runId)
        let torn = false
        if (head?.size !== size) {
          // Another process (a former owner) wrote since: count again from the file.
          const all = await readAll(runId)
          head = { size, next: all.next }
          torn = all.text !== undefined && all.text.length > 0 && !all.text.endsWith('\n')
        }
        const kept = checked.map((input, index): StreamRecord => ({ offset: (head as { next: number }).next + index, ...input }))
        const text = (torn ? '\n' : '') + kept.map((record) => `${JSON.stringify(record)}\n`).join('')
        const handle = await open(path, 'a')
        try {
          await handle.write(text)
        } finally {
          await handle.close()
        }
        heads.set(runId, { size: size + Buffer.byteLength(text), next: head.next + kept.length })
        waiters.wake(runId)
        return kept
      })
    },
    async read(runId, options) {
      const { after, limit } = readBounds(options)
      return read(runId, after, limit)
    },
    wait: (runId, after, options) => waitForRecords(() => read(runId, after, 1), after, (ms) => waiters.next(runId, ms, options?.signal), options, pollMs),
    end(runId, endedAt) {
      return serial(runId, async () => {
        const state = await readState(runId)
        if (state.endedAt !== undefined) return
        await mkdir(dirOf(runId), { recursive: true })
        await writeState(runId, { ...state, endedAt })
        waiters.wake(runId)
      })
    },
    async prune(now) {
      let runs = 0
      let records = 0
      let names: string[]
      try {
        names = await readdir(base)
      } catch (error) {
        if (codeOf(error) === 'ENOENT') return { runs, records }
        throw error
      }
      for (const runId of names) {
        let state: StreamState
        try {
          state = await readState(runId)
        } catch {
          continue
        }
        if (state.endedAt === undefined || state.endedAt + retentionMs > now) continue
        await serial(runId, async () => {
          const all = await readAll(runId)
          if (all.records.length === 0) return
          // The state moves first: a crash between the two leaves records nobody reads, never a gap.
          await writeState(runId, { ...state, firstKept: all.next })
          await unlink(join(dirOf(runId), RECORDS)).catch(() => undefined)
          heads.delete(runId)
          runs += 1
          records += all.records.length
        })
      }
      return { runs, records }
    },
  }
}
