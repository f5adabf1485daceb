// @locus/store/testing: the contract every RunStore adapter passes, as a vitest
// suite an adapter in another package runs by name. Needs vitest and
// fast-check, optional peer dependencies used only by this entry.
import type { JournalLine, JournalLineInput } from '@locus/journal'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  ArtifactExistsError,
  ArtifactKeyError,
  ExecutionExistsError,
  RunExistsError,
  RunNotFoundError,
  DEFAULT_STREAM_RETENTION_MS,
  type RunStore,
  type RunStreams,
  StoreOptionsError,
  type StreamKey,
  type StreamRecordInput,
  createStreamWriter,
} from './index.js'

/** Makes a fresh, empty store for one test; `cleanup` runs after it. */
export type StoreFactory = () => Promise<{ store: RunStore; cleanup?: () => Promise<void> }>

const log = (message: string): JournalLineInput => ({ type: 'log', level: 'info', message })
const runEnd: JournalLineInput = { type: 'run_end', disposition: 'completed', ok: true, result: { ok: true }, durationMs: 1 }

async function collect(lines: AsyncIterable<JournalLine>): Promise<JournalLine[]> {
  const out: JournalLine[] = []
  for await (const line of lines) out.push(line)
  return out
}

async function withStore(factory: StoreFactory, body: (store: RunStore) => Promise<void>): Promise<void> {
  const { store, cleanup } = await factory()
  try {
    await body(store)
  } finally {
    await cleanup?.()
  }
}

/**
 * The behaviour every RunStore adapter promises. Each adapter's test file
 * calls this with a factory; a new adapter is done when it passes unchanged.
 */
export function runStoreContract(name: string, factory: StoreFactory): void {
  describe(`RunStore contract: ${name}`, () => {
    it('stamps each appended line with the next seq, the ids and the schema version, and reads them back in order', async () => {
      await withStore(factory, async (store) => {
        const writer = await store.createExecution({ runId: 'run-a', kind: 'root', now: () => 1_700_000_000_000 })
        expect(writer.executionId).toBe('run-a')
        expect(writer.lastSeq).toBe(0)
        const first = writer.append(log('one'))
        const second = writer.append({ ...log('two'), seq: 99, runId: 'forged' } as unknown as JournalLineInput)
        await writer.flush()
        expect([first.seq, second.seq]).toEqual([1, 2])
        expect(second.runId).toBe('run-a')
        expect(second.executionId).toBe('run-a')
        expect(second.ts).toBe(new Date(1_700_000_000_000).toISOString())
        const read = await collect(store.readLines({ runId: 'run-a', executionId: 'run-a' }))
        expect(read).toEqual([first, second])
        expect(await collect(store.readLines({ runId: 'run-a', executionId: 'run-a' }, { afterSeq: 1 }))).toEqual([second])
        expect(await collect(store.readLines({ runId: 'run-a', executionId: 'run-a' }, { limit: 1 }))).toEqual([first])
        await writer.close()
      })
    })

    it('round-trips any sequence of lines, with no hole left by a refused one', async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.oneof(fc.string({ maxLength: 40 }), fc.constant(null)), { maxLength: 25 }), async (messages) => {
          await withStore(factory, async (store) => {
            const writer = await store.createExecution({ runId: 'run-p', kind: 'root' })
            const written: JournalLine[] = []
            for (const message of messages) {
              if (message === null) {
                expect(() => writer.append({ type: 'log', level: 'loud' } as unknown as JournalLineInput)).toThrow()
              } else {
                written.push(writer.append(log(message)))
              }
            }
            await writer.close()
            const read = await collect(store.readLines({ runId: 'run-p', executionId: 'run-p' }))
            expect(read).toEqual(written)
            expect(read.map((line) => line.seq)).toEqual(written.map((_, index) => index + 1))
          })
        }),
        { numRuns: 25 },
      )
    })

    it('refuses a second root execution of a run and leaves the first untouched', async () => {
      await withStore(factory, async (store) => {
        const writer = await store.createExecution({ runId: 'run-b', kind: 'root' })
        writer.append(log('kept'))
        writer.append(runEnd)
        await writer.artifacts.write('result.json', '{"ok":true}')
        await writer.close()
        let refused: unknown
        try {
          await store.createExecution({ runId: 'run-b', kind: 'root' })
        } catch (error) {
          refused = error
        }
        expect(RunExistsError.isInstance(refused)).toBe(true)
        expect((refused as Error).message).toMatch(/locus resume run-b/)
        const lines = await collect(store.readLines({ runId: 'run-b', executionId: 'run-b' }))
        expect(lines.map((line) => line.type)).toEqual(['log', 'run_end'])
        expect(await store.readArtifact({ runId: 'run-b', executionId: 'run-b' }, 'result.json')).toBe('{"ok":true}')
      })
    })

    it('allocates resume and replay ids one by one, never the same twice, and lists executions root first', async () => {
      await withStore(factory, async (store) => {
        await (await store.createExecution({ runId: 'run-c', kind: 'root' })).close()
        const ids: string[] = []
        for (const kind of ['resume', 'resume', 'replay', 'resume'] as const) {
          const writer = await store.createExecution({ runId: 'run-c', kind })
          writer.append(log(kind))
          ids.push(writer.executionId)
          await writer.close()
        }
        expect(ids).toEqual(['resume-001', 'resume-002', 'replay-001', 'resume-003'])
        const listed = await store.listExecutions('run-c')
        expect(listed.map((info) => info.executionId)).toEqual(['run-c', ...ids])
        expect(listed.map((info) => info.kind)).toEqual(['root', 'resume', 'resume', 'replay', 'resume'])
        const resumed = await collect(store.readLines({ runId: 'run-c', executionId: 'resume-002' }))
        expect(resumed).toHaveLength(1)
        expect(resumed[0]?.executionId).toBe('resume-002')
      })
    })

    it('refuses an execution of an unknown run, a taken child id, and reads of unknown runs', async () => {
      await withStore(factory, async (store) => {
        await expect(store.createExecution({ runId: 'nope', kind: 'resume' })).rejects.toSatisfy(RunNotFoundError.isInstance)
        await (await store.createExecution({ runId: 'run-d', kind: 'root' })).close()
        await (await store.createExecution({ runId: 'run-d', kind: 'child', executionId: 'child-1' })).close()
        let refused: unknown
        try {
          await store.createExecution({ runId: 'run-d', kind: 'child', executionId: 'child-1' })
        } catch (error) {
          refused = error
        }
        expect(ExecutionExistsError.isInstance(refused)).toBe(true)
        await expect(collect(store.readLines({ runId: 'nope', executionId: 'nope' }))).rejects.toSatisfy(RunNotFoundError.isInstance)
        await expect(store.listExecutions('nope')).rejects.toSatisfy(RunNotFoundError.isInstance)
        await expect(store.createExecution({ runId: '../escape', kind: 'root' })).rejects.toThrow(/Invalid runId/)
      })
    })

    it('writes artifacts whole, keeps an exclusive one, and refuses keys that leave the execution', async () => {
      await withStore(factory, async (store) => {
        const writer = await store.createExecution({ runId: 'run-e', kind: 'root' })
        const ref = { runId: 'run-e', executionId: 'run-e' }
        await writer.artifacts.write('calls/call-1-a1/result/result.json', 'first')
        await writer.artifacts.write('calls/call-1-a1/result/result.json', 'second')
        expect(await store.readArtifact(ref, 'calls/call-1-a1/result/result.json')).toBe('second')
        await writer.artifacts.write('outputs/README.md', 'readme', { exclusive: true })
        await expect(writer.artifacts.write('outputs/README.md', 'other', { exclusive: true })).rejects.toSatisfy(ArtifactExistsError.isInstance)
        expect(await writer.artifacts.read('outputs/README.md')).toBe('readme')
        expect(await store.readArtifact(ref, 'never/written.json')).toBeUndefined()
        for (const key of ['', '../x', '/etc/passwd', 'a//b', 'a/../b', './a', 'a/.', 'a\\b']) {
          await expect(writer.artifacts.write(key, 'x')).rejects.toSatisfy(ArtifactKeyError.isInstance)
        }
        await writer.close()
      })
    })

    it('keeps the last of many writes of one key issued without waiting, as a host rewriting its log does', async () => {
      await withStore(factory, async (store) => {
        const writer = await store.createExecution({ runId: 'run-o', kind: 'root' })
        const key = 'calls/call-1-a1/transcript/llm-attempts.jsonl'
        // The first writes are the largest, so without ordering they tend to land last.
        const contents = Array.from({ length: 12 }, (_, index) => 'x'.repeat(64 * 1024 * (12 - index)) + String(index))
        await Promise.all(contents.map((content) => writer.artifacts.write(key, content)))
        const kept = await store.readArtifact({ runId: 'run-o', executionId: 'run-o' }, key)
        expect(kept === undefined ? 'nothing' : `write ${contents.indexOf(kept) + 1} of ${contents.length}`).toBe(`write ${contents.length} of ${contents.length}`)
        await writer.close()
      })
    })

    it('refuses any artifact key with a ".." segment', async () => {
      await withStore(factory, async (store) => {
        const writer = await store.createExecution({ runId: 'run-k', kind: 'root' })
        await fc.assert(
          fc.asyncProperty(fc.array(fc.constantFrom('a', 'b.json', '..', 'calls'), { minLength: 1, maxLength: 5 }), async (segments) => {
            const key = segments.join('/')
            const write = writer.artifacts.write(key, 'x')
            if (segments.includes('..')) await expect(write).rejects.toSatisfy(ArtifactKeyError.isInstance)
            else await write.catch(() => undefined) // a file where a directory is wanted may fail; it must not escape
          }),
          { numRuns: 60 },
        )
        await writer.close()
      })
    })

    it('knows which runs exist and lists them newest first, with since and limit', async () => {
      await withStore(factory, async (store) => {
        expect(await store.listRuns()).toEqual([])
        for (const runId of ['run-1', 'run-2', 'run-3']) {
          await (await store.createExecution({ runId, kind: 'root' })).close()
          await new Promise((resolve) => setTimeout(resolve, 5))
        }
        expect(await store.hasRun('run-2')).toBe(true)
        expect(await store.hasRun('run-9')).toBe(false)
        const listed = await store.listRuns()
        expect(listed.map((run) => run.runId)).toEqual(['run-3', 'run-2', 'run-1'])
        expect((await store.listRuns({ limit: 2 })).map((run) => run.runId)).toEqual(['run-3', 'run-2'])
        const newest = listed[0]?.createdAt ?? 0
        expect((await store.listRuns({ since: newest })).map((run) => run.runId)).toEqual(['run-3'])
      })
    })

    it('keeps a summary row that follows the run: started, waiting on a deferral or timer, suspended, resumed, ended', async () => {
      await withStore(factory, async (store) => {
        const runId = 'row-run'
        const root = await store.createExecution({ runId, kind: 'root' })
        await root.flush()
        expect(await store.readRunRow(runId)).toMatchObject({ runId, status: 'queued', workflow: undefined })
        root.append({ type: 'run_start', workflow: 'triage', input: {}, options: {} })
        await root.flush()
        expect(await store.readRunRow(runId)).toMatchObject({ runId, workflow: 'triage', status: 'running', executionId: runId, waitingOn: [] })
        root.append({ type: 'deferred_open', deferredId: 'd-1', toolCallId: 'tool-1', tool: 'approve', attempt: 1, expiresAt: null })
        root.append({ type: 'timer_start', timerId: 'timer-2', logicalCallId: 'sleep-2', ordinal: '2', dueAt: new Date(0).toISOString() })
        await root.flush()
        expect(await store.readRunRow(runId)).toMatchObject({ status: 'waiting', waitingOn: ['d-1', 'timer-2'], timers: { 'timer-2': new Date(0).toISOString() } })
        root.append({ type: 'timer_fired', timerId: 'timer-2', firedAt: new Date(0).toISOString(), lateMs: 0 })
        root.append({ type: 'log', level: 'info', message: 'suspended', data: { suspended: true } })
        await root.close()
        expect(await store.readRunRow(runId)).toMatchObject({ status: 'suspended', waitingOn: ['d-1'], timers: {} })
        // A replay never moves the row; a resume does, and a child's deferral makes the run wait.
        const replay = await store.createExecution({ runId, kind: 'replay' })
        replay.append({ type: 'run_start', workflow: 'triage', input: {}, options: {} })
        replay.append(runEnd)
        await replay.close()
        expect(await store.readRunRow(runId)).toMatchObject({ status: 'suspended', executionId: runId })
        const resume = await store.createExecution({ runId, kind: 'resume' })
        resume.append({ type: 'run_start', workflow: 'triage', input: {}, options: {}, resumeOf: runId })
        resume.append({ type: 'deferred_settled', deferredId: 'd-1', outcome: 'resolved', result: true })
        await resume.flush()
        expect(await store.readRunRow(runId)).toMatchObject({ status: 'running', executionId: resume.executionId, waitingOn: [] })
        const child = await store.createExecution({ runId, kind: 'child', executionId: 'child-1' })
        child.append({ type: 'run_start', workflow: 'sub', input: {}, options: {} })
        child.append({ type: 'deferred_open', deferredId: 'child-1-d-2', toolCallId: 'tool-2', tool: 'approve', attempt: 1, expiresAt: null })
        child.append(runEnd)
        await child.close()
        expect(await store.readRunRow(runId)).toMatchObject({ status: 'waiting', workflow: 'triage', executionId: resume.executionId })
        resume.append({ type: 'deferred_settled', deferredId: 'child-1-d-2', outcome: 'rejected', error: { error: 'no', retryable: false } })
        resume.append({ type: 'run_end', disposition: 'failed', ok: false, result: null, durationMs: 1 })
        await resume.close()
        const ended = await store.readRunRow(runId)
        expect(ended).toMatchObject({ status: 'failed', executionId: resume.executionId, waitingOn: [] })
        expect(ended?.endedAt).toBeDefined()
        expect(await store.readRunRow('no-such-run')).toBeUndefined()
      })
    })

    it('lists summary rows newest first by workflow and status, page by page with a cursor', async () => {
      await withStore(factory, async (store) => {
        const made: { runId: string; workflow: string; status: string }[] = []
        for (let index = 0; index < 7; index += 1) {
          const runId = `list-${String(index)}`
          const workflow = index % 2 === 0 ? 'even' : 'odd'
          const writer = await store.createExecution({ runId, kind: 'root' })
          writer.append({ type: 'run_start', workflow, input: {}, options: {} })
          if (index % 3 === 0) writer.append(runEnd)
          await writer.close()
          made.push({ runId, workflow, status: index % 3 === 0 ? 'completed' : 'running' })
          await new Promise((resolve) => setTimeout(resolve, 3))
        }
        const newestFirst = made.slice().reverse()
        const all = await store.listRunRows()
        expect(all.rows.map((row) => row.runId)).toEqual(newestFirst.map((run) => run.runId))
        expect(all.nextCursor).toBeUndefined()
        const even = await store.listRunRows({ workflow: 'even' })
        expect(even.rows.map((row) => row.runId)).toEqual(newestFirst.filter((run) => run.workflow === 'even').map((run) => run.runId))
        const done = await store.listRunRows({ status: 'completed' })
        expect(done.rows.map((row) => row.runId)).toEqual(newestFirst.filter((run) => run.status === 'completed').map((run) => run.runId))
        const paged: string[] = []
        let cursor: string | undefined
        do {
          const page = await store.listRunRows({ limit: 3, ...(cursor === undefined ? {} : { cursor }) })
          expect(page.rows.length).toBeLessThanOrEqual(3)
          paged.push(...page.rows.map((row) => row.runId))
          cursor = page.nextCursor
        } while (cursor !== undefined)
        expect(paged).toEqual(newestFirst.map((run) => run.runId))
        await expect(store.listRunRows({ cursor: 'not a cursor' })).rejects.toThrow(/cursor "not a cursor" does not decode/)
        await expect(store.listRunRows({ status: 'sleeping' as never })).rejects.toThrow(StoreOptionsError)
        await expect(store.listRunRows({ limit: 0 })).rejects.toThrow(/limit must be an integer/)
      })
    })

    it('gives a late tail every line after its cursor, then the live ones, with no gap or duplicate, ending at run_end', async () => {
      await withStore(factory, async (store) => {
        const writer = await store.createExecution({ runId: 'run-t', kind: 'root' })
        for (let index = 0; index < 5; index += 1) writer.append(log(`early ${index}`))
        await writer.flush()
        const ref = { runId: 'run-t', executionId: 'run-t' }
        const tailed = collect(store.tail(ref, { afterSeq: 2 }))
        const whole = collect(store.tail(ref))
        for (let index = 0; index < 5; index += 1) {
          await new Promise((resolve) => setTimeout(resolve, 3))
          writer.append(log(`late ${index}`))
          await writer.flush()
        }
        writer.append(runEnd)
        await writer.close()
        const seqs = (await tailed).map((line) => line.seq)
        expect(seqs).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11])
        expect((await whole).map((line) => line.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
      })
    })

    it('ends a tail when its signal aborts', async () => {
      await withStore(factory, async (store) => {
        const writer = await store.createExecution({ runId: 'run-s', kind: 'root' })
        writer.append(log('only'))
        await writer.flush()
        const controller = new AbortController()
        const seen: number[] = []
        // Abort once the tail has delivered what is stored and is waiting for more: the loop must end.
        for await (const line of store.tail({ runId: 'run-s', executionId: 'run-s' }, { signal: controller.signal })) {
          seen.push(line.seq)
          setTimeout(() => {
            controller.abort()
          }, 20)
        }
        expect(seen).toEqual([1])
        await writer.close()
      })
    })

    it('refuses appends after close, and close twice is harmless', async () => {
      await withStore(factory, async (store) => {
        const writer = await store.createExecution({ runId: 'run-z', kind: 'root' })
        writer.append(log('before'))
        await writer.close()
        await writer.close()
        expect(() => writer.append(log('after'))).toThrow(/closed/)
        expect(await collect(store.readLines({ runId: 'run-z', executionId: 'run-z' }))).toHaveLength(1)
      })
    })

    it('keeps the first answer to a deferral, byte for byte, and returns it to every later put', async () => {
      await withStore(factory, async (store) => {
        const writer = await store.createExecution({ runId: 'run-d', kind: 'root' })
        writer.append(log('waiting'))
        await writer.flush()
        expect(await store.readDeferredAnswers('run-d')).toEqual(new Map())
        // Key order and spacing survive: a repeat of the same text is recognisably the same.
        const first = '{"kind":"resolved","result":{"b":1,"a":[2, 3]}}'
        expect(await store.putDeferredAnswer('run-d', 'tool-1-a1', first)).toEqual({ stored: true, answer: first })
        expect(await store.putDeferredAnswer('run-d', 'tool-1-a1', first)).toEqual({ stored: false, answer: first })
        expect(await store.putDeferredAnswer('run-d', 'tool-1-a1', '{"kind":"rejected"}')).toEqual({ stored: false, answer: first })
        await store.putDeferredAnswer('run-d', 'child-1-a1.tool-2-a1', '"second"')
        expect(await store.readDeferredAnswers('run-d')).toEqual(new Map([['tool-1-a1', first], ['child-1-a1.tool-2-a1', '"second"']]))
        expect(await store.readDeferredAnswers('run-d', ['child-1-a1.tool-2-a1', 'tool-9-a1'])).toEqual(new Map([['child-1-a1.tool-2-a1', '"second"']]))
        expect(await store.readDeferredAnswers('run-d', [])).toEqual(new Map())
        // An answer is the run's, not an execution's: a resume reads what was kept before it existed.
        await writer.close()
        await store.createExecution({ runId: 'run-d', kind: 'resume' })
        expect((await store.readDeferredAnswers('run-d')).get('tool-1-a1')).toBe(first)
        // Nothing else of the run changed.
        expect(await collect(store.readLines({ runId: 'run-d', executionId: 'run-d' }))).toHaveLength(1)
      })
    })

    it('withdraws a kept answer only while it is exactly the one refused, so the deferral can be answered again', async () => {
      await withStore(factory, async (store) => {
        await (await store.createExecution({ runId: 'run-w', kind: 'root' })).close()
        const refused = '{"kind":"resolved","result":{"approved":"yes"}}'
        await store.putDeferredAnswer('run-w', 'tool-1-a1', refused)
        expect(await store.withdrawDeferredAnswer('run-w', 'tool-1-a1', '{"kind":"resolved","result":{"approved":true}}')).toBe(false)
        expect((await store.readDeferredAnswers('run-w')).get('tool-1-a1')).toBe(refused)
        expect(await store.withdrawDeferredAnswer('run-w', 'tool-1-a1', refused)).toBe(true)
        expect(await store.withdrawDeferredAnswer('run-w', 'tool-1-a1', refused)).toBe(false)
        expect(await store.readDeferredAnswers('run-w')).toEqual(new Map())
        const good = '{"kind":"resolved","result":{"approved":true}}'
        expect(await store.putDeferredAnswer('run-w', 'tool-1-a1', good)).toEqual({ stored: true, answer: good })
        expect(await store.withdrawDeferredAnswer('run-nobody', 'tool-1-a1', good)).toBe(false)
      })
    })

    it('keeps exactly one of many different answers given at once', async () => {
      await withStore(factory, async (store) => {
        await (await store.createExecution({ runId: 'run-race', kind: 'root' })).close()
        const answers = Array.from({ length: 8 }, (_, index) => `{"answer":${index}}`)
        const kept = await Promise.all(answers.map((answer) => store.putDeferredAnswer('run-race', 'tool-1-a1', answer)))
        expect(kept.filter((put) => put.stored)).toHaveLength(1)
        const winner = kept.find((put) => put.stored)?.answer
        expect(kept.every((put) => put.answer === winner)).toBe(true)
        expect((await store.readDeferredAnswers('run-race')).get('tool-1-a1')).toBe(winner)
      })
    })

    it('refuses an answer for an unknown run or under an id that is not a deferral id', async () => {
      await withStore(factory, async (store) => {
        await expect(store.putDeferredAnswer('run-nobody', 'tool-1-a1', '{}')).rejects.toBeInstanceOf(RunNotFoundError)
        await (await store.createExecution({ runId: 'run-ids', kind: 'root' })).close()
        for (const id of ['', '../escape', '.hidden', 'a/b', 'x'.repeat(300)]) {
          await expect(store.putDeferredAnswer('run-ids', id, '{}')).rejects.toBeInstanceOf(StoreOptionsError)
        }
        expect(await store.readDeferredAnswers('run-ids')).toEqual(new Map())
        expect(await store.readDeferredAnswers('run-nobody')).toEqual(new Map())
      })
    })

    it('keeps an idempotency key for its window: the first put wins, a repeat gets it back, an expired key is forgotten and replaced', async () => {
      await withStore(factory, async (store) => {
        const first = { fingerprint: '{"input":1}', runId: 'run-key-1', expiresAt: 2_000 }
        expect(await store.readIdempotencyKey('key-1', 1_000)).toBeUndefined()
        expect(await store.putIdempotencyKey('key-1', first, 1_000)).toEqual({ stored: true, record: first })
        expect(await store.readIdempotencyKey('key-1', 1_999)).toEqual(first)
        const other = { fingerprint: '{"input":2}', runId: 'run-key-2', expiresAt: 2_500 }
        expect(await store.putIdempotencyKey('key-1', other, 1_500)).toEqual({ stored: false, record: first })
        // Keys are exact strings: a principal's key is not another's.
        expect(await store.readIdempotencyKey('key-1 ', 1_500)).toBeUndefined()
        expect(await store.readIdempotencyKey('key-1', 2_000)).toBeUndefined()
        expect(await store.putIdempotencyKey('key-1', other, 2_000)).toEqual({ stored: true, record: other })
        expect(await store.readIdempotencyKey('key-1', 2_100)).toEqual(other)
      })
    })

    it('releases a key only while it names the run given, so a failed start can be tried again', async () => {
      await withStore(factory, async (store) => {
        const record = { fingerprint: 'f', runId: 'run-released', expiresAt: 10_000 }
        await store.putIdempotencyKey('key-r', record, 0)
        expect(await store.releaseIdempotencyKey('key-r', 'run-other')).toBe(false)
        expect(await store.readIdempotencyKey('key-r', 1)).toEqual(record)
        expect(await store.releaseIdempotencyKey('key-r', 'run-released')).toBe(true)
        expect(await store.readIdempotencyKey('key-r', 1)).toBeUndefined()
        expect(await store.releaseIdempotencyKey('key-r', 'run-released')).toBe(false)
        expect((await store.putIdempotencyKey('key-r', { ...record, runId: 'run-again' }, 2)).stored).toBe(true)
      })
    })

    it('keeps exactly one of many puts of one key given at once', async () => {
      await withStore(factory, async (store) => {
        const puts = await Promise.all(
          Array.from({ length: 8 }, (_, index) => store.putIdempotencyKey('key-race', { fingerprint: `f${index}`, runId: `run-race-${index}`, expiresAt: 60_000 }, 0)),
        )
        expect(puts.filter((put) => put.stored)).toHaveLength(1)
        const winner = puts.find((put) => put.stored)?.record
        expect(puts.every((put) => put.record.runId === winner?.runId)).toBe(true)
        expect(await store.readIdempotencyKey('key-race', 1)).toEqual(winner)
      })
    })

    it('refuses an empty or overlong idempotency key and a record that is not one', async () => {
      await withStore(factory, async (store) => {
        const record = { fingerprint: 'f', runId: 'run-ok', expiresAt: 1 }
        for (const key of ['', 'k'.repeat(1025)]) {
          await expect(store.putIdempotencyKey(key, record, 0)).rejects.toBeInstanceOf(StoreOptionsError)
          await expect(store.readIdempotencyKey(key, 0)).rejects.toBeInstanceOf(StoreOptionsError)
        }
        await expect(store.putIdempotencyKey('k', { ...record, expiresAt: Number.NaN }, 0)).rejects.toBeInstanceOf(StoreOptionsError)
        await expect(store.putIdempotencyKey('k', { ...record, runId: '../escape' }, 0)).rejects.toThrow(/runId/)
        expect(await store.readIdempotencyKey('k', 0)).toBeUndefined()
      })
    })

    it('answers any sequence of puts, reads, releases and clock steps as a table with a window would', async () => {
      await withStore(factory, async (store) => {
        type Step = { op: 'put'; key: number; run: number; ttl: number } | { op: 'read'; key: number } | { op: 'release'; key: number; run: number } | { op: 'tick'; ms: number }
        const step: fc.Arbitrary<Step> = fc.oneof(
          fc.record({ op: fc.constant('put' as const), key: fc.nat(2), run: fc.nat(3), ttl: fc.integer({ min: 1, max: 50 }) }),
          fc.record({ op: fc.constant('read' as const), key: fc.nat(2) }),
          fc.record({ op: fc.constant('release' as const), key: fc.nat(2), run: fc.nat(3) }),
          fc.record({ op: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 40 }) }),
        )
        let trial = 0
        await fc.assert(
          fc.asyncProperty(fc.array(step, { maxLength: 14 }), async (steps) => {
            trial += 1
            const model = new Map<string, { fingerprint: string; runId: string; expiresAt: number }>()
            let now = 1_000
            for (const next of steps) {
              if (next.op === 'tick') {
                now += next.ms
                continue
              }
              const key = `trial-${trial}-key-${next.key}`
              const live = model.get(key)
              const kept = live !== undefined && live.expiresAt > now ? live : undefined
              if (next.op === 'put') {
                const record = { fingerprint: `f${next.run}`, runId: `run-${next.run}`, expiresAt: now + next.ttl }
                const put = await store.putIdempotencyKey(key, record, now)
                expect(put).toEqual(kept === undefined ? { stored: true, record } : { stored: false, record: kept })
                if (kept === undefined) model.set(key, record)
              } else if (next.op === 'read') {
                expect(await store.readIdempotencyKey(key, now)).toEqual(kept)
              } else {
                const released = kept !== undefined && kept.runId === `run-${next.run}`
                // A release of an expired key may find it or not; either way it is gone after.
                const answer = await store.releaseIdempotencyKey(key, `run-${next.run}`)
                if (kept !== undefined) expect(answer).toBe(released)
                if (released || kept === undefined) model.delete(key)
              }
            }
          }),
          { numRuns: 25 },
        )
      })
    })
    describe('token streams', () => {
      const key = (callId: string, attempt = 1, llmAttempt = 1, executionId = 'run-s'): StreamKey => ({ executionId, callId, attempt, llmAttempt })
      const delta = (text: string, at: StreamKey = key('c1')): StreamRecordInput => ({ ...at, kind: 'delta', text })
      const streamsOf = (store: RunStore): RunStreams => {
        expect(store.streams).toBeDefined()
        return store.streams as RunStreams
      }

      it('appends batches with a gap-free offset per run, across executions, and reads after an offset', async () => {
        await withStore(factory, async (store) => {
          const streams = streamsOf(store)
          expect(await streams.read('run-s')).toEqual({ records: [], firstKept: 0, next: 0 })
          await (await store.createExecution({ runId: 'run-s', kind: 'root' })).close()
          const first = await streams.append('run-s', [delta('Hel'), delta('lo'), { ...key('c1'), kind: 'end' }])
          expect(first.map((record) => record.offset)).toEqual([0, 1, 2])
          const resumed = await store.createExecution({ runId: 'run-s', kind: 'resume' })
          const later = key('c2', 2, 3, resumed.executionId)
          const second = await streams.append('run-s', [delta(' world', later), { ...later, kind: 'discarded', cause: 'call-timeout', text: 'ignored' }])
          expect(second).toEqual([
            { offset: 3, ...later, kind: 'delta', text: ' world' },
            { offset: 4, ...later, kind: 'discarded', cause: 'call-timeout' },
          ])
          const all = await streams.read('run-s')
          expect(all.records).toEqual([...first, ...second])
          expect(all.next).toBe(5)
          expect(all.firstKept).toBe(0)
          expect((await streams.read('run-s', { after: 2 })).records).toEqual(second)
          expect((await streams.read('run-s', { after: 0, limit: 2 })).records.map((record) => record.offset)).toEqual([1, 2])
          expect((await streams.read('run-s', { after: 9 })).records).toEqual([])
          await resumed.close()
        })
      })

      it('refuses records that are not ones and appends to unknown runs, and writes nothing then', async () => {
        await withStore(factory, async (store) => {
          const streams = streamsOf(store)
          await expect(streams.append('nope', [delta('x')])).rejects.toSatisfy(RunNotFoundError.isInstance)
          await (await store.createExecution({ runId: 'run-s', kind: 'root' })).close()
          const bad: unknown[] = [
            { ...key('c1'), kind: 'delta' },
            { ...key('c1'), kind: 'discarded' },
            { ...key('c1'), kind: 'shout', text: 'x' },
            { ...key('c1'), attempt: 0, kind: 'end' },
            { ...key(''), kind: 'end' },
          ]
          for (const record of bad) {
            await expect(streams.append('run-s', [delta('ok'), record as StreamRecordInput])).rejects.toSatisfy(StoreOptionsError.isInstance)
          }
          expect((await streams.read('run-s')).next).toBe(0)
        })
      })

      it('keeps any sequence of batches in order with offsets 0, 1, 2, ... and no gap', async () => {
        await fc.assert(
          fc.asyncProperty(fc.array(fc.array(fc.string({ maxLength: 12 }), { minLength: 1, maxLength: 6 }), { maxLength: 8 }), async (batches) => {
            await withStore(factory, async (store) => {
              await (await store.createExecution({ runId: 'run-s', kind: 'root' })).close()
              const streams = streamsOf(store)
              const texts: string[] = []
              for (const batch of batches) {
                await streams.append('run-s', batch.map((text) => delta(text)))
                texts.push(...batch)
              }
              const read = await streams.read('run-s', { limit: 1000 })
              expect(read.records.map((record) => record.text)).toEqual(texts)
              expect(read.records.map((record) => record.offset)).toEqual(texts.map((_, index) => index))
              expect(read.next).toBe(texts.length)
            })
          }),
          { numRuns: 15 },
        )
      })

      it('wakes a waiter when a record lands after its offset, and an offset beyond the end waits', async () => {
        await withStore(factory, async (store) => {
          await (await store.createExecution({ runId: 'run-s', kind: 'root' })).close()
          const streams = streamsOf(store)
          expect(await streams.wait('run-s', -1, { timeoutMs: 30 })).toBe(false)
          const waiting = streams.wait('run-s', 1, { timeoutMs: 5000 })
          let settled = false
          void waiting.then(() => (settled = true))
          await streams.append('run-s', [delta('a'), delta('b')])
          await new Promise((resolve) => setTimeout(resolve, 20))
          expect(settled).toBe(false)
          const startedAt = Date.now()
          await streams.append('run-s', [delta('c')])
          expect(await waiting).toBe(true)
          expect(Date.now() - startedAt).toBeLessThan(2000)
          expect(await streams.wait('run-s', 0, { timeoutMs: 10 })).toBe(true)
          const controller = new AbortController()
          const aborted = streams.wait('run-s', 2, { signal: controller.signal })
          controller.abort()
          expect(await aborted).toBe(false)
        })
      })

      it('prunes a stream only once the run ended streamRetention ago, keeps its offsets going, and never touches the journal', async () => {
        await withStore(factory, async (store) => {
          const writer = await store.createExecution({ runId: 'run-s', kind: 'root' })
          writer.append(log('kept'))
          await writer.close()
          await (await store.createExecution({ runId: 'run-t', kind: 'root' })).close()
          const streams = streamsOf(store)
          await streams.append('run-s', [delta('a'), delta('b'), delta('c')])
          await streams.append('run-t', [delta('x', key('c9', 1, 1, 'run-t'))])
          const endedAt = 1_700_000_000_000
          expect((await streams.prune(endedAt + DEFAULT_STREAM_RETENTION_MS * 2)).records).toBe(0)
          await streams.end('run-s', endedAt)
          await streams.end('run-s', endedAt + 5)
          expect((await streams.read('run-s')).endedAt).toBe(endedAt)
          expect(await streams.prune(endedAt + DEFAULT_STREAM_RETENTION_MS - 1)).toEqual({ runs: 0, records: 0 })
          expect((await streams.read('run-s')).records).toHaveLength(3)
          expect(await streams.prune(endedAt + DEFAULT_STREAM_RETENTION_MS)).toEqual({ runs: 1, records: 3 })
          const pruned = await streams.read('run-s', { after: 0 })
          expect(pruned).toMatchObject({ records: [], firstKept: 3, next: 3 })
          // run-t never ended: kept.
          expect((await streams.read('run-t')).records).toHaveLength(1)
          const more = await streams.append('run-s', [delta('d')])
          expect(more[0]?.offset).toBe(3)
          expect((await streams.read('run-s')).records.map((record) => record.text)).toEqual(['d'])
          const lines = await collect(store.readLines({ runId: 'run-s', executionId: 'run-s' }))
          expect(lines.map((line) => line.type)).toEqual(['log'])
        })
      })

      it('a stream writer writes at most once per 50 ms by the clock it is given, the first at once and the end at once', async () => {
        await withStore(factory, async (store) => {
          await (await store.createExecution({ runId: 'run-s', kind: 'root' })).close()
          const streams = streamsOf(store)
          let now = 0
          const timers: Array<{ at: number; fire: () => void }> = []
          const writer = createStreamWriter(streams, 'run-s', {
            now: () => now,
            schedule: (fire, ms) => {
              const timer = { at: now + ms, fire }
              timers.push(timer)
              return () => timers.splice(timers.indexOf(timer), 1)
            },
          })
          const at = key('c1')
          writer.delta(at, 'a')
          expect(writer.writes).toBe(1)
          for (let ms = 1; ms <= 120; ms += 1) {
            now = ms
            for (const timer of timers.filter((candidate) => candidate.at <= now)) {
              timers.splice(timers.indexOf(timer), 1)
              timer.fire()
            }
            writer.delta(at, String(ms % 10))
          }
          expect(writer.writes).toBe(3)
          writer.end(at)
          writer.delta(at, 'late')
          await writer.flush()
          expect(writer.writes).toBe(4)
          const read = await streams.read('run-s')
          expect(read.records).toHaveLength(122)
          expect(read.records.at(-1)).toMatchObject({ kind: 'end' })
          writer.discard(at, 'call-timeout')
          await writer.flush()
          expect((await streams.read('run-s', { after: 121 })).records).toEqual([{ offset: 122, ...at, kind: 'discarded', cause: 'call-timeout' }])
          expect(writer.openKeys(() => true)).toEqual([])
        })
      })
    })
  })
}

export { scheduleStoreContract } from './schedule-testing.js'
export type { ScheduleStoreFactory } from './schedule-testing.js'
