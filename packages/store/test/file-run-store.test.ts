import { createJournalWriter, readJournal } from '@locus/journal'
import { runPaths } from '../src/file-layout.js'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { IDEMPOTENCY_INDEX, createFileRunStore } from '../src/index.js'
import { runStoreContract } from '../src/testing.js'

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'locus-file-store-'))
}

runStoreContract('file', async () => {
  const dir = await tempDir()
  return { store: createFileRunStore(join(dir, 'runs'), { tailPollMs: 5 }), cleanup: () => rm(dir, { recursive: true, force: true }) }
})

describe('createFileRunStore', () => {
  it('keeps run.json beside the journal, rebuilds it from the journals when missing or damaged, and heals a stale one at the next execution', async () => {
    const dir = await tempDir()
    try {
      const runsDir = join(dir, 'runs')
      const store = createFileRunStore(runsDir)
      const writer = await store.createExecution({ runId: 'row-1', kind: 'root' })
      writer.append({ type: 'run_start', workflow: 'wf', input: {}, options: {} })
      writer.append({ type: 'deferred_open', deferredId: 'd-1', toolCallId: 't-1', tool: 'ask', attempt: 1, expiresAt: null })
      await writer.close()
      const rowPath = join(runsDir, 'row-1', 'run.json')
      const written = JSON.parse(await readFile(rowPath, 'utf8')) as { status: string; workflow: string }
      expect(written).toMatchObject({ status: 'waiting', workflow: 'wf' })
      // Another process reads the file; a missing one (a run from before rows) is rebuilt and written back.
      await rm(rowPath)
      expect(await createFileRunStore(runsDir).readRunRow('row-1')).toMatchObject({ status: 'waiting', waitingOn: ['d-1'] })
      expect(existsSync(rowPath)).toBe(true)
      await writeFile(rowPath, '{"runId": "row-1", "status": "comp')
      expect(await createFileRunStore(runsDir).readRunRow('row-1')).toMatchObject({ status: 'waiting', workflow: 'wf' })
      // A row left stale by a crash between a line and its row is rebuilt by the next execution of the run.
      await writeFile(rowPath, `${JSON.stringify({ ...written, status: 'running', waitingOn: [] })}\n`)
      const resume = await createFileRunStore(runsDir).createExecution({ runId: 'row-1', kind: 'resume' })
      await resume.flush()
      expect(JSON.parse(await readFile(rowPath, 'utf8'))).toMatchObject({ status: 'waiting', waitingOn: ['d-1'] })
      await resume.close()
      // A directory without a journal is not a run and is not listed.
      await mkdir(join(runsDir, 'stray'))
      expect((await store.listRunRows()).rows.map((row) => row.runId)).toEqual(['row-1'])
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('keeps idempotency keys in one index file that another store on the directory reads, and run listings pass by', async () => {
    const dir = await tempDir()
    try {
      const runsDir = join(dir, 'runs')
      const record = { fingerprint: 'f', runId: 'run-k', expiresAt: 5_000 }
      await createFileRunStore(runsDir).putIdempotencyKey('principal\nkey', record, 1_000)
      // A restart: a new store on the same directory.
      const again = createFileRunStore(runsDir)
      expect(await again.readIdempotencyKey('principal\nkey', 4_999)).toEqual(record)
      expect(await again.putIdempotencyKey('principal\nkey', { ...record, runId: 'run-other' }, 2_000)).toEqual({ stored: false, record })
      expect(await again.listRuns()).toEqual([])
      expect((await readdir(runsDir)).sort()).toEqual([IDEMPOTENCY_INDEX])
      // An expired key is dropped from the index at the next write.
      await again.putIdempotencyKey('other', { ...record, expiresAt: 9_000 }, 6_000)
      expect(Object.keys((JSON.parse(await readFile(join(runsDir, IDEMPOTENCY_INDEX), 'utf8')) as { keys: object }).keys)).toEqual(['other'])
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('keeps exactly one of one key put at once by two stores on one directory, as two processes would be', async () => {
    const dir = await tempDir()
    try {
      const runsDir = join(dir, 'runs')
      const first = createFileRunStore(runsDir)
      const second = createFileRunStore(runsDir)
      const puts = await Promise.all(
        Array.from({ length: 12 }, (_, index) => (index % 2 === 0 ? first : second).putIdempotencyKey(`key-${index % 3}`, { fingerprint: 'f', runId: `run-${index}`, expiresAt: 60_000 }, 0)),
      )
      expect(puts.filter((put) => put.stored)).toHaveLength(3)
      for (const key of ['key-0', 'key-1', 'key-2']) expect(await first.readIdempotencyKey(key, 1)).toBeDefined()
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('moves a damaged idempotency index aside rather than writing over it', async () => {
    const dir = await tempDir()
    try {
      const runsDir = join(dir, 'runs')
      const store = createFileRunStore(runsDir)
      await (await store.createExecution({ runId: 'run-1', kind: 'root' })).close()
      await writeFile(join(runsDir, IDEMPOTENCY_INDEX), '{"version":1,"keys":{"a":')
      expect(await store.readIdempotencyKey('a', 0)).toBeUndefined()
      expect((await store.putIdempotencyKey('b', { fingerprint: 'f', runId: 'run-b', expiresAt: 10 }, 0)).stored).toBe(true)
      const names = await readdir(runsDir)
      const aside = names.find((name) => name.startsWith(`${IDEMPOTENCY_INDEX}.damaged-`))
      expect(aside).toBeDefined()
      expect(await readFile(join(runsDir, aside ?? ''), 'utf8')).toBe('{"version":1,"keys":{"a":')
      expect(await store.readIdempotencyKey('b', 1)).toEqual({ fingerprint: 'f', runId: 'run-b', expiresAt: 10 })
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('keeps the run layout locus has always written', async () => {
    const dir = await tempDir()
    try {
      const runsDir = join(dir, 'runs')
      const store = createFileRunStore(runsDir)
      const root = await store.createExecution({ runId: 'run-1', kind: 'root', durability: 'line' })
      root.append({ type: 'log', level: 'info', message: 'root' })
      await root.artifacts.write('outputs/README.md', '# run')
      await root.artifacts.write('calls/call-1-a1/result/result.json', '{}')
      await root.close()
      const resume = await store.createExecution({ runId: 'run-1', kind: 'resume' })
      resume.append({ type: 'log', level: 'info', message: 'resumed' })
      await resume.close()
      const rootPaths = runPaths(runsDir, 'run-1')
      const resumePaths = runPaths(runsDir, 'run-1', 'resume-001')
      expect(readJournal(rootPaths.journalPath).lines.map((line) => line.seq)).toEqual([1])
      expect(readJournal(resumePaths.journalPath).lines[0]?.executionId).toBe('resume-001')
      expect(await readFile(rootPaths.outputsReadmePath, 'utf8')).toBe('# run')
      expect(existsSync(join(rootPaths.callDir('call-1-a1').resultDir, 'result.json'))).toBe(true)
      expect(resume.location).toBe(resumePaths.executionDir)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('reads runs written before the store existed, and skips a torn last line', async () => {
    const dir = await tempDir()
    try {
      const runsDir = join(dir, 'runs')
      const paths = runPaths(runsDir, 'old-run')
      const writer = createJournalWriter(paths.journalPath, { runId: 'old-run', executionId: 'old-run' })
      writer.append({ type: 'log', level: 'info', message: 'written by hand' })
      writer.close()
      await writeFile(paths.journalPath, '{"v":1,"seq":2,"ty', { flag: 'a' })
      const store = createFileRunStore(runsDir)
      const lines = []
      const problems: string[] = []
      for await (const line of store.readLines({ runId: 'old-run', executionId: 'old-run' }, { onProblem: (problem) => problems.push(problem) })) lines.push(line)
      expect(lines.map((line) => line.seq)).toEqual([1])
      expect(problems).toEqual([expect.stringMatching(/^torn last line at byte \d+/)])
      expect(await store.hasRun('old-run')).toBe(true)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('tells readLines where the journal is damaged: an unreadable line, a lost line (a seq gap), a line twice', async () => {
    const dir = await tempDir()
    try {
      const runsDir = join(dir, 'runs')
      const paths = runPaths(runsDir, 'damaged')
      const writer = createJournalWriter(paths.journalPath, { runId: 'damaged', executionId: 'damaged' })
      for (let n = 1; n <= 6; n += 1) writer.append({ type: 'log', level: 'info', message: `line ${n}` })
      writer.close()
      const text = (await readFile(paths.journalPath, 'utf8')).split('\n')
      // Line 2 garbled, line 4 (seq 4) lost, line 5 (seq 5) there twice.
      await writeFile(paths.journalPath, [text[0], '{garbled', text[2], text[4], text[4], text[5], ''].join('\n'))
      const problems: string[] = []
      const damage: { lineNumber: number; kind: string }[] = []
      const seqs: number[] = []
      const reading = createFileRunStore(runsDir).readLines(
        { runId: 'damaged', executionId: 'damaged' },
        { onProblem: (problem) => problems.push(problem), onDamage: ({ lineNumber, kind }) => damage.push({ lineNumber, kind }) },
      )
      for await (const line of reading) seqs.push(line.seq)
      expect(seqs).toEqual([1, 3, 5, 5, 6])
      expect(damage).toEqual([
        { lineNumber: 2, kind: 'unreadable' },
        { lineNumber: 4, kind: 'seq-gap' },
        { lineNumber: 5, kind: 'seq-repeat' },
      ])
      expect(problems).toEqual([expect.stringMatching(/^line 2: line 2 is not JSON/), 'line 4: seq gap, expected 4, found 5: the line before it is missing', expect.stringMatching(/^line 5: seq 5 repeats/)])
      // A tail tells the same, in the same words, as it meets each place.
      const tailed: string[] = []
      const tailedDamage: { lineNumber: number; kind: string }[] = []
      const tail = createFileRunStore(runsDir, { tailPollMs: 5 }).tail(
        { runId: 'damaged', executionId: 'damaged' },
        { limit: 4, onProblem: (problem) => tailed.push(problem), onDamage: ({ lineNumber, kind }) => tailedDamage.push({ lineNumber, kind }) },
      )
      for await (const line of tail) expect(line.seq).toBeGreaterThan(0)
      expect(tailed).toEqual(problems)
      expect(tailedDamage).toEqual(damage)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('tells a tail why it skipped a line that is not a journal line, and goes on to run_end', async () => {
    const dir = await tempDir()
    try {
      const runsDir = join(dir, 'runs')
      const paths = runPaths(runsDir, 'tailed')
      const writer = createJournalWriter(paths.journalPath, { runId: 'tailed', executionId: 'tailed' })
      writer.append({ type: 'log', level: 'info', message: 'before' })
      writer.flush()
      await writeFile(paths.journalPath, '{"not":"a journal line"}\n', { flag: 'a' })
      writer.append({ type: 'run_end', disposition: 'completed', ok: true, result: null, durationMs: 1 })
      writer.close()
      const problems: string[] = []
      const seqs: number[] = []
      for await (const line of createFileRunStore(runsDir, { tailPollMs: 5 }).tail({ runId: 'tailed', executionId: 'tailed' }, { onProblem: (problem) => problems.push(problem) })) seqs.push(line.seq)
      expect(seqs).toEqual([1, 2])
      expect(problems).toEqual([expect.stringMatching(/^line 2: /)])
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('never gives two processes the same resume id', async () => {
    const dir = await tempDir()
    try {
      const runsDir = join(dir, 'runs')
      await (await createFileRunStore(runsDir).createExecution({ runId: 'contended', kind: 'root' })).close()
      const entry = fileURLToPath(new URL('../src/index.ts', import.meta.url))
      const script = [
        `const { createFileRunStore } = await import(${JSON.stringify(entry)})`,
        `const store = createFileRunStore(${JSON.stringify(runsDir)})`,
        'const ids = []',
        "for (let i = 0; i < 5; i += 1) { const w = await store.createExecution({ runId: 'contended', kind: 'resume' }); ids.push(w.executionId); await w.close() }",
        'console.log(JSON.stringify(ids))',
      ].join('\n')
      const run = promisify(execFile)
      const outputs = await Promise.all(
        Array.from({ length: 4 }, () => run(process.execPath, ['--conditions=@locus/source', '--import', 'tsx', '--input-type=module', '-e', script], { cwd: fileURLToPath(new URL('..', import.meta.url)) })),
      )
      const ids = outputs.flatMap(({ stdout }) => JSON.parse(stdout) as string[])
      expect(ids).toHaveLength(20)
      expect(new Set(ids).size).toBe(20)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }, 30_000)

  it('writes a burst of artifacts larger than the open-file limit without EMFILE: a fast run issues every call’s records at once', async () => {
    const dir = await tempDir()
    try {
      const runsDir = join(dir, 'runs')
      const entry = fileURLToPath(new URL('../src/index.ts', import.meta.url))
      // 3,000 writes issued together under a limit of 256 open files: unbounded, they would open 3,000 at once.
      const script = [
        `const { createFileRunStore } = await import(${JSON.stringify(entry)})`,
        `const store = createFileRunStore(${JSON.stringify(runsDir)})`,
        "const writer = await store.createExecution({ runId: 'burst', kind: 'root' })",
        "await Promise.all(Array.from({ length: 3000 }, (_, i) => writer.artifacts.write(`calls/call-${i}-a1/result.json`, JSON.stringify({ i }))))",
        'await writer.close()',
        "console.log(JSON.stringify(await store.readArtifact({ runId: 'burst', executionId: 'burst' }, 'calls/call-2999-a1/result.json')))",
      ].join('\n')
      const run = promisify(execFile)
      const command = `ulimit -n 256 && exec "$0" --conditions=@locus/source --import tsx --input-type=module -e "$1"`
      const { stdout } = await run('bash', ['-c', command, process.execPath, script], { cwd: fileURLToPath(new URL('..', import.meta.url)) })
      expect(JSON.parse(stdout)).toBe('{"i":2999}')
      expect(await readdir(join(runsDir, 'burst', 'calls'))).toHaveLength(3000)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }, 60_000)

  it('names the run directory as the location and refuses options that make no sense', async () => {
    expect(() => createFileRunStore('')).toThrow(/runsDir/)
    expect(() => createFileRunStore('runs', { tailPollMs: 0 })).toThrow(/tailPollMs/)
  })
})
