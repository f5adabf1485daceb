// `locus run --tokens` and `locus journal --follow --tokens`: the run's token stream, read back from a real store
// (a runs directory, PostgreSQL) or a real server on loopback, with thrown-away text marked as such.
import { mkdtempSync, rmSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createLocusClient } from '@locus/client'
import { createRuntime, createScriptedHost, defineWorkflow, startWorkflowRun } from '@locus/runtime'
import { type RunningServer, startServer } from '@locus/server'
import { createPostgresRunStore } from '@locus/store-postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import type { CliIo } from '../src/cli-io.js'
import { runCli } from '../src/run-cli.js'
import { adminQuery, jsonLines, repoRoot, runLocus, tempDir } from './helpers.js'

const runtimeEntry = join(repoRoot, 'packages', 'runtime', 'dist', 'index.js')
const url = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL
const ci = (process.env.CI ?? '') !== ''

/** The first attempt streams half an answer and times out; the retry answers. */
const steps = (delayMs: number) => [
  { throw: 'host-turn-timeout' as const, partial: 'half an answer ', delayMs },
  { text: 'the whole answer', delayMs },
]

const talker = defineWorkflow({
  name: 'talker',
  input: z.object({ who: z.string() }).default({ who: 'me' }),
  run: async ({ input, agent }) => ({ ok: true, answer: (await agent(`talk to ${input.who}`, { attempts: 2 })).answer }),
})

/** The CLI in this process with its output captured (its commands read the same stores and servers as the binary). */
async function cli(args: readonly string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const io: CliIo = {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env,
    cwd: repoRoot,
    onInterrupt: () => () => undefined,
    exit: () => undefined,
  }
  const code = await runCli(args, io)
  return { code, stdout, stderr }
}

/** The token lines of a human output: each starts with `┊`. */
const tokenLines = (text: string): string[] => text.split('\n').filter((line) => line.startsWith('┊'))

/**
 * What every human token output must show: attempt 1's half answer (on lines of its own, continued under its
 * prefix when journal lines came between), then a line marking it discarded, then attempt 2's answer.
 */
function expectHonestTokens(text: string): void {
  const lines = tokenLines(text)
  const discarded = lines.findIndex((line) => /^┊ \S+-a1 attempt 1: discarded \(host-turn-timeout\): the 15 characters it streamed above are not the answer$/.test(line))
  expect({ discarded, lines }).toMatchObject({ discarded: expect.any(Number) })
  expect(discarded).toBeGreaterThan(0)
  const textOf = (part: readonly string[], attempt: number): string =>
    part
      .map((line) => new RegExp(`^┊ \\S+-a${attempt} attempt ${attempt}: (?:… )?(.*)$`).exec(line)?.[1])
      .filter((piece): piece is string => piece !== undefined && !piece.startsWith('discarded ('))
      .join('')
  expect(textOf(lines.slice(0, discarded), 1)).toBe('half an answer ')
  expect(textOf(lines.slice(discarded + 1), 1)).toBe('')
  expect(textOf(lines.slice(0, discarded), 2)).toBe('')
  expect(textOf(lines.slice(discarded + 1), 2)).toBe('the whole answer')
  // Never run together: no line holds text of both attempts.
  expect(text.split('\n').filter((line) => /half|an |answer /.test(line) && line.includes('whole'))).toEqual([])
}

describe('locus run --tokens', () => {
  let dir = ''
  beforeAll(async () => {
    dir = await tempDir('locus-tokens-')
    await writeFile(
      join(dir, 'talker.mts'),
      [`import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`, "export default defineWorkflow({ name: 'talker', run: async ({ agent }) => ({ ok: true, answer: (await agent('talk to me', { attempts: 2 })).answer }) })"].join('\n'),
    )
    await writeFile(join(dir, 'answers.json'), JSON.stringify({ rules: [{ match: { prompt: 'talk' }, steps: steps(50) }] }))
  })

  it('shows the calls\' text on stderr, the thrown-away attempt marked discarded, and leaves stdout as it was', async () => {
    const args = ['run', 'talker.mts', '--host', 'scripted', '--fixtures', 'answers.json', '--runs-dir', 'runs']
    const withTokens = await runLocus([...args, '--tokens'], { cwd: dir })
    expect(withTokens.code).toBe(0)
    expectHonestTokens(withTokens.stderr)
    expect(withTokens.stdout).not.toContain('┊')
    expect(withTokens.stdout).toContain('the whole answer')

    // --json keeps its contract: every stdout line is JSON, the summary last; the tokens are on stderr.
    // In this process (the binary above showed the human form): the same command, its --json form.
    const json = await cli(['run', join(dir, 'talker.mts'), '--host', 'scripted', '--fixtures', join(dir, 'answers.json'), '--runs-dir', join(dir, 'runs'), '--json', '--tokens'])
    expect(json.code).toBe(0)
    const lines = jsonLines(json.stdout)
    expect(lines.at(-1)).toMatchObject({ type: 'summary', standing: 'completed', result: { answer: 'the whole answer' } })
    expectHonestTokens(json.stderr)
  })
})

describe('locus journal --follow --tokens', () => {
  it('interleaves a live run\'s tokens with its journal lines from the runs directory, and --json gives the raw records', async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'locus-journal-tokens-'))
    try {
      const host = createScriptedHost({ rules: [{ match: { prompt: 'talk' }, steps: steps(600) }] })
      const handle = await startWorkflowRun(talker, { runsDir, runId: 'tok-live', host })
      // Started while the first attempt waits: the follower sees the run live.
      const [humanOut, jsonOut] = await Promise.all([
        cli(['journal', 'tok-live', '--follow', '--tokens', '--runs-dir', runsDir]),
        cli(['journal', 'tok-live', '--follow', '--tokens', '--json', '--runs-dir', runsDir]),
      ])
      expect((await handle.done).disposition).toBe('completed')
      expect(humanOut.code).toBe(0)
      expectHonestTokens(humanOut.stdout)
      // The journal's own lines are there too, each on its own line.
      const journalLines = humanOut.stdout.split('\n').filter((line) => line !== '' && !line.startsWith('┊'))
      expect(journalLines.some((line) => line.includes('run') && line.includes('completed'))).toBe(true)
      expect(journalLines.filter((line) => line.includes('half an answer'))).toEqual([])

      expect(jsonOut.code).toBe(0)
      const all = jsonLines(jsonOut.stdout)
      const records = all.filter((line) => 'kind' in line && 'offset' in line)
      expect(all.filter((line) => 'type' in line).at(-1)).toMatchObject({ type: 'run_end', disposition: 'completed' })
      expect(records.map((record) => record.offset)).toEqual(records.map((_, index) => index))
      expect(records.filter((record) => record.kind === 'discarded')).toEqual([expect.objectContaining({ attempt: 1, cause: 'host-turn-timeout' })])
      expect(records.filter((record) => record.kind === 'delta' && record.attempt === 2).map((record) => record.text).join('')).toBe('the whole answer')
      expect(records.at(-1)).toMatchObject({ kind: 'end', attempt: 2 })
    } finally {
      rmSync(runsDir, { recursive: true, force: true })
    }
  })

  it('refuses --tokens without --follow', async () => {
    const result = await cli(['journal', 'some-run', '--tokens', '--runs-dir', mkdtempSync(join(tmpdir(), 'locus-journal-tokens-'))])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('--tokens shows the token stream while following a run: pass it with --follow')
  })

  it.skipIf(url === undefined && !ci)('reads the tokens of a run kept in PostgreSQL with --database-url', async () => {
    if (url === undefined) throw new Error('LOCUS_TEST_PG_URL is not set, but CI is: start PostgreSQL (scripts/ci-services.sh start).')
    const database = `locus_cli_tokens_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
    await adminQuery(url, `create database "${database}"`)
    const parsed = new URL(url)
    parsed.pathname = `/${database}`
    try {
      const store = createPostgresRunStore({ connectionString: parsed.href })
      try {
        await store.migrate()
        const host = createScriptedHost({ rules: [{ match: { prompt: 'talk' }, steps: steps(300) }] })
        // Followed once it exists: `journal --follow` of a run id no store holds yet is RUN_NOT_FOUND, not a wait.
        let started: () => void = () => undefined
        const exists = new Promise<void>((resolve) => {
          started = resolve
        })
        const handle = await startWorkflowRun(talker, {
          store,
          runId: 'tok-pg',
          host,
          onEvent: (line) => {
            if (line.type === 'run_start') started()
          },
        })
        await exists
        const follow = cli(['journal', 'tok-pg', '--follow', '--tokens', '--database-url', parsed.href])
        expect((await handle.done).disposition).toBe('completed')
        const result = await follow
        expect(result.stderr).toBe('')
        expect(result.code).toBe(0)
        expectHonestTokens(result.stdout)
      } finally {
        await store.close()
      }
    } finally {
      await adminQuery(url, `drop database if exists "${database}" with (force)`)
    }
  })
})

describe('--tokens with --server', () => {
  const KEY = 'cli-tokens-key-000000001'
  let server: RunningServer
  let runsDir = ''
  beforeAll(async () => {
    runsDir = mkdtempSync(join(tmpdir(), 'locus-tokens-server-'))
    // A rule for each run: a rule's steps go on from one session to the next.
    const host = createScriptedHost({ rules: ['talk to me', 'talk to you'].map((prompt) => ({ match: { prompt }, steps: steps(400) })) })
    server = await startServer({ runtime: createRuntime({ workflows: [talker], host, runsDir }), port: 0, env: {}, apiKeys: KEY, shutdownGraceMs: 100, onError: () => undefined })
  })
  afterAll(async () => {
    await server.close()
    rmSync(runsDir, { recursive: true, force: true })
  })

  it('locus journal --follow --tokens --server follows the run\'s token stream beside its events', async () => {
    const started = await createLocusClient({ baseUrl: server.url, apiKey: KEY }).startRun('talker', {})
    const result = await cli(['journal', started.runId, '--follow', '--tokens', '--server', server.url, '--api-key', KEY])
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    expectHonestTokens(result.stdout)
    expect(result.stdout.split('\n').filter((line) => line !== '' && !line.startsWith('┊')).length).toBeGreaterThan(3)
  })

  it('locus run --server --tokens shows them on stderr', async () => {
    const result = await cli(['run', 'talker', '--input', '{"who":"you"}', '--tokens', '--server', server.url], { LOCUS_API_KEY: KEY })
    expect(result.code).toBe(0)
    expectHonestTokens(result.stderr)
    expect(result.stdout).not.toContain('┊')
  })
})
