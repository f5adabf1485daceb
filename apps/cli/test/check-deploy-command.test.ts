// `locus check-deploy` (issue #21): exit 0 when no run that may continue
// would diverge, 1 when one would, 2 for a usage error; `--json` for CI;
// `--since` read as a duration; `--database-url` checks a PostgreSQL store.
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { createScriptedHost, startWorkflowRun } from '@locus/runtime'
import { createPostgresRunStore } from '@locus/store-postgres'
import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import type { CliIo } from '../src/cli-io.js'
import { runCli } from '../src/run-cli.js'
import { adminQuery, onJsonLine, repoRoot, runLocus, settle, startLocus, tempDir } from './helpers.js'

const runtimeEntry = join(repoRoot, 'packages', 'runtime', 'dist', 'index.js')
const zodEntry = join(repoRoot, 'packages', 'runtime', 'node_modules', 'zod', 'index.js')

/** A directory holding the triage workflow, asking `first` in its first call. */
async function triageDir(first: string): Promise<string> {
  const dir = await tempDir('locus-check-deploy-')
  await writeFile(
    join(dir, 'triage.mts'),
    [
      `import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
      `import { z } from ${JSON.stringify(zodEntry)}`,
      'export default defineWorkflow({',
      "  name: 'triage',",
      '  input: z.object({ ticket: z.string() }),',
      '  run: async ({ input, agent }) => {',
      `    const first = await agent(\`${first} \${input.ticket}\`, { label: 'first' })`,
      '    const second = await agent(`Answer ${input.ticket}`)',
      '    return { ok: true, answers: [first.answer, second.answer] }',
      '  },',
      '})',
    ].join('\n'),
  )
  return dir
}

interface Report {
  readonly ok: boolean
  readonly runs: readonly { runId: string; standing: string; continuable: boolean; verdict: string; divergence?: { ordinal: string; fields: string[] }; liveAgain: Record<string, number | string | null> }[]
}

let project = ''
let runsDir = ''
let original = ''
let reworded = ''
const KILLED = 'triage-killed'

beforeAll(async () => {
  project = await tempDir('locus-check-deploy-project-')
  runsDir = join(project, 'runs')
  original = await triageDir('Triage')
  reworded = await triageDir('Classify')
  const fixtures = join(project, 'answers.json')
  // The first call answers (with usage), the second hangs: the run is killed with SIGKILL part-way.
  await writeFile(fixtures, JSON.stringify({ rules: [{ match: { prompt: 'Answer' }, steps: [{ hang: true }] }, { steps: [{ text: 'triaged', usage: { inputTokens: 30, outputTokens: 4 } }] }] }))
  // Priced, so the check can say what the calls that would run again cost: $3 and $15 per million tokens.
  await writeFile(join(project, 'prices.json'), JSON.stringify({ models: { scripted: { input: '3', output: '15' } } }))
  const child = startLocus(['run', join(original, 'triage.mts'), '--input', '{"ticket":"T-1"}', '--host', 'scripted', '--fixtures', fixtures, '--prices', 'prices.json', '--runs-dir', runsDir, '--run-id', KILLED, '--json'], { cwd: project })
  onJsonLine(child, (line) => {
    if (line.type === 'agent_start' && (line.prompt as string).startsWith('Answer')) child.kill('SIGKILL')
  })
  expect((await settle(child)).signal).toBe('SIGKILL')
})

describe('locus check-deploy', () => {
  it('exits 0 for the code the run recorded, naming the run as identical', async () => {
    const result = await runLocus(['check-deploy', '--workflows', original, '--runs-dir', runsDir], { cwd: project })
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(new RegExp(`^${KILLED} {2}triage {2}unfinished {2}replays identically$`, 'm'))
    expect(result.stdout).toMatch(/^check-deploy: ok/m)
  })

  it('exits 1 for a reworded prompt, naming the call, the field and what would run again, in tokens and dollars', async () => {
    const text = await runLocus(['check-deploy', '--workflows', reworded, '--runs-dir', runsDir], { cwd: project })
    expect(text.code).toBe(1)
    expect(text.stdout).toContain(
      `${KILLED}  triage  unfinished  diverges at 1 (prompt changed); 1 agent call, 0 tool calls, 0 remote tool calls and 0 child runs would run again (30 input, 4 output tokens recorded, costing $0.00015)`,
    )
    expect(text.stdout).toMatch(/^check-deploy: 1 run that may continue would diverge/m)

    const json = await runLocus(['check-deploy', '--workflows', reworded, '--runs-dir', runsDir, '--json', '--since', '7d'], { cwd: project })
    expect(json.code).toBe(1)
    const report = JSON.parse(json.stdout) as Report
    expect(report).toEqual({
      ok: false,
      runs: [
        {
          runId: KILLED,
          workflow: 'triage',
          standing: 'unfinished',
          continuable: true,
          verdict: 'diverged',
          divergence: { ordinal: '1', fields: ['prompt'] },
          // 30 prompt tokens at $3 per million and 4 written at $15 per million: $0.00015.
          liveAgain: { agent: 1, tool: 0, remoteTool: 0, child: 0, inputTokens: 30, outputTokens: 4, usd: '0.000150', unpricedRequests: 0 },
        },
      ],
    })
  })

  it('--since leaves out runs started before the period', async () => {
    const result = await runLocus(['check-deploy', '--workflows', reworded, '--runs-dir', runsDir, '--since', '1ms', '--json'], { cwd: project })
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toEqual({ ok: true, runs: [] })
  })

  it('exits 2 for a usage error: no --workflows, a bad --since, both stores, a URL that is not PostgreSQL', async () => {
    const cases: [string[], RegExp][] = [
      [['--runs-dir', runsDir], /--workflows/],
      [['--workflows', original, '--since', '7days'], /--since must be a duration such as/],
      [['--workflows', original, '--runs-dir', runsDir, '--database-url', 'postgres://localhost/x'], /not both/],
      [['--workflows', original, '--database-url', 'mysql://localhost/x'], /postgres:\/\//],
    ]
    for (const [args, message] of cases) {
      const result = await runLocus(['check-deploy', ...args], { cwd: project })
      expect({ args, code: result.code }).toEqual({ args, code: 2 })
      expect(result.stderr).toMatch(message)
    }
  })
})

/** An in-process `locus` whose output is kept. */
function captureIo(cwd: string): CliIo & { readonly out: () => string; readonly err: () => string } {
  let out = ''
  let err = ''
  return {
    stdout: { write: (text: string) => (out += text) },
    stderr: { write: (text: string) => (err += text) },
    env: {},
    cwd,
    onInterrupt: () => () => undefined,
    exit: () => undefined,
    out: () => out,
    err: () => err,
  }
}

describe('locus check-deploy --since', () => {
  it('property: anything but an amount and a unit (ms, s, m, h, d) exits 2 naming --since and the accepted form, before any run is read', async () => {
    const valid = /^\s*\d+(\.\d+)?(ms|s|m|h|d)\s*$/
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.string(), fc.integer().map(String), fc.tuple(fc.integer({ min: 1, max: 99 }), fc.constantFrom('w', 'y', 'days', 'hours', 'sec', 'M', 'H', 'D')).map(([amount, unit]) => `${amount}${unit}`)),
        async (since) => {
          fc.pre(!valid.test(since) && !since.startsWith('-'))
          const io = captureIo(project)
          const code = await runCli(['check-deploy', '--workflows', join(project, 'missing'), '--since', since], io)
          expect(code).toBe(2)
          expect(io.err()).toContain('--since must be a duration such as 500ms, 30s, 10m, 1h or 30d')
        },
      ),
      { numRuns: 60 },
    )
  })

  it('property: 30m, 12h, 7d and every other whole amount with a unit is accepted', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 100_000 }), fc.constantFrom('ms', 's', 'm', 'h', 'd'), async (amount, unit) => {
        const io = captureIo(project)
        // The workflows path is missing on purpose: a --since that parsed gets as far as loading them.
        await runCli(['check-deploy', '--workflows', join(project, 'missing'), '--since', `${amount}${unit}`], io)
        expect(io.err()).not.toContain('--since')
      }),
      { numRuns: 40 },
    )
  })
})

const url = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL

function admin(sql: string): Promise<void> {
  return adminQuery(url, sql)
}

describe('locus check-deploy --database-url', () => {
  it.skipIf(url === undefined && (process.env.CI ?? '') === '')('checks the runs of a PostgreSQL store, and says so when the database holds no Locus tables', async () => {
    if (url === undefined) throw new Error('LOCUS_TEST_PG_URL is not set, but CI is: start PostgreSQL (scripts/ci-services.sh start).')
    // A database of its own: the CLI reads the `public` schema, which other tests must not see change.
    const database = `locus_check_deploy_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
    await admin(`create database "${database}"`)
    const databaseUrl = new URL(url)
    databaseUrl.pathname = `/${database}`
    try {
      const empty = await runLocus(['check-deploy', '--workflows', original, '--database-url', databaseUrl.href], { cwd: project })
      expect(empty.code).toBe(2)
      expect(empty.stderr).toMatch(/holds no Locus tables/)

      const store = createPostgresRunStore({ connectionString: databaseUrl.href })
      try {
        await store.migrate()
        const workflow = ((await import(pathToFileURL(join(original, 'triage.mts')).href)) as { default: Parameters<typeof startWorkflowRun>[0] }).default
        const host = createScriptedHost({ rules: [{ match: { prompt: 'Answer' }, steps: [{ hang: true }] }, { steps: [{ text: 'triaged', usage: { inputTokens: 30, outputTokens: 4 } }] }] })
        const seen = { hung: false }
        const handle = await startWorkflowRun(workflow, { store, runId: 'pg-cancelled', input: { ticket: 'T-2' }, host, onEvent: (line) => (seen.hung ||= line.type === 'agent_start' && line.prompt.startsWith('Answer')) })
        while (!seen.hung) await new Promise((resolve) => setTimeout(resolve, 5))
        handle.cancel('deploying')
        expect((await handle.done).disposition).toBe('cancelled')
      } finally {
        await store.close()
      }
      expect((await runLocus(['check-deploy', '--workflows', original, '--database-url', databaseUrl.href], { cwd: project })).code).toBe(0)
      const diverged = await runLocus(['check-deploy', '--workflows', reworded, '--database-url', databaseUrl.href, '--json'], { cwd: project })
      expect(diverged.code).toBe(1)
      expect((JSON.parse(diverged.stdout) as Report).runs).toEqual([
        expect.objectContaining({ runId: 'pg-cancelled', standing: 'cancelled', continuable: true, verdict: 'diverged', divergence: { ordinal: '1', fields: ['prompt'] } }),
      ])
    } finally {
      await admin(`drop database if exists "${database}" with (force)`)
    }
  })
})
