// `--server <url>`: the built binary against a real server started in this process, on loopback.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createLocusClient } from '@locus/client'
import { createRuntime, createScriptedHost, defineDeferredTool, defineWorkflow } from '@locus/runtime'
import { type RunningServer, startServer } from '@locus/server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { jsonLines, onJsonLine, runLocus, settle, startLocus } from './helpers.js'

const KEY = 'cli-server-mode-key-0001'

const echo = defineWorkflow({
  name: 'echo',
  input: z.object({ ticket: z.string().regex(/^T-\d+$/) }),
  run: async ({ input, agent }) => ({ ok: true, answer: (await agent(`echo ${input.ticket}`)).answer }),
})
const waits = defineWorkflow({ name: 'waits', run: async ({ agent }) => ({ ok: true, answer: (await agent('hang')).answer }) })
const approval = defineWorkflow({
  name: 'approval',
  tools: { approve: defineDeferredTool({ input: z.object({ topic: z.string() }), output: z.object({ approved: z.boolean() }) }) },
  run: async ({ tool }) => ({ ok: true, approved: z.object({ approved: z.boolean() }).parse(await tool('approve', { topic: 'q3' })).approved }),
})

let server: RunningServer
let runsDir: string
const locus = () => createLocusClient({ baseUrl: server.url, apiKey: KEY })
const remote = (...args: string[]) => runLocus([...args, '--server', server.url], { env: { LOCUS_API_KEY: KEY } })

beforeAll(async () => {
  runsDir = mkdtempSync(join(tmpdir(), 'locus-cli-server-'))
  const host = createScriptedHost({ rules: [{ match: { prompt: 'hang' }, steps: [{ hang: true }] }, { steps: [{ text: 'P2' }] }] })
  const runtime = createRuntime({ workflows: [echo, waits, approval], host, runsDir })
  server = await startServer({ runtime, port: 0, env: {}, apiKeys: KEY, shutdownGraceMs: 100, onError: () => undefined })
})

afterAll(async () => {
  await server.close()
  rmSync(runsDir, { recursive: true, force: true })
})

describe('locus run --server', () => {
  it('starts the named workflow on the server, follows it, and ends with the local summary and exit code', async () => {
    const result = await remote('run', 'echo', '--input', '{"ticket":"T-1"}')
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    const runId = /run (\S+) of echo on /.exec(result.stdout)?.[1] ?? ''
    expect(result.stdout).toContain(`completed  echo  run ${runId}`)
    expect(result.stdout).toMatch(/calls: +1 agent call \(1 attempt\)/)
    expect(result.stdout).toContain('P2')

    const json = await runLocus(['run', 'echo', '--input', '{"ticket":"T-2"}', '--json', '--server', server.url, '--api-key', KEY])
    expect(json.code).toBe(0)
    const lines = jsonLines(json.stdout)
    const summary = lines.at(-1)
    expect(summary).toMatchObject({ type: 'summary', standing: 'completed', exitCode: 0, workflow: 'echo', result: { ok: true, answer: 'P2' } })
    expect(lines.slice(0, -1)).toEqual(await locus().journal(String(summary?.runId)))
  })

  it('cancels the run on the server at Ctrl-C, follows it to its end and exits 130', async () => {
    const child = startLocus(['run', 'waits', '--json', '--server', server.url], { env: { LOCUS_API_KEY: KEY } })
    const settled = settle(child)
    let runId = ''
    onJsonLine(child, (line) => {
      if (line.type === 'agent_start') {
        runId = String(line.runId)
        child.kill('SIGINT')
      }
    })
    const result = await settled
    expect(result.code).toBe(130)
    expect(result.stderr).toContain(`cancelling run ${runId} on the server`)
    expect(jsonLines(result.stdout).at(-1)).toMatchObject({ type: 'summary', runId, standing: 'cancelled', exitCode: 130 })
    expect(await locus().getRun(runId)).toMatchObject({ status: 'cancelled', live: false })
  })

  it('exits 2 with the server’s words for a bad input, a missing key, an unknown workflow, an unreachable server and local-only flags', async () => {
    const invalid = await remote('run', 'echo', '--input', '{"ticket":"urgent"}')
    expect(invalid.code).toBe(2)
    expect(invalid.stderr).toContain('invalid_request')
    expect(invalid.stderr).toContain('input.ticket: ')

    const unknown = await remote('run', 'nope')
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain('No workflow "nope" on this server')

    const keyless = await runLocus(['ls', '--server', server.url])
    expect(keyless.code).toBe(2)
    expect(keyless.stderr).toContain('unauthorized')
    expect(keyless.stderr).toContain('--api-key or $LOCUS_API_KEY')

    const gone = await runLocus(['ls', '--server', 'http://127.0.0.1:9'])
    expect(gone.code).toBe(2)
    expect(gone.stderr).toContain('Could not reach the Locus server at http://127.0.0.1:9')

    const mixed = await remote('run', 'echo', '--host', 'scripted', '--runs-dir', runsDir)
    expect(mixed.code).toBe(2)
    expect(mixed.stderr).toContain('--runs-dir, --host configure a local run')
  })
})

describe('locus show, ls, journal, resolve and cancel --server', () => {
  it('shows a run, lists the runs and prints the journal from the server', async () => {
    const started = await locus().startRun('echo', { input: { ticket: 'T-7' } })
    await locus().waitForResult(started.runId)
    const show = await remote('show', started.runId)
    expect(show.code).toBe(0)
    expect(show.stdout).toContain(`completed  echo  run ${started.runId}`)
    expect(show.stdout).toMatch(/status: +completed/)
    const shown = await remote('show', started.runId, '--json')
    expect(jsonLines(shown.stdout)).toEqual([expect.objectContaining({ type: 'run', runId: started.runId, status: 'completed' })])

    const ls = await remote('ls', '--limit', '100')
    expect(ls.code).toBe(0)
    expect(ls.stdout).toMatch(new RegExp(`${started.runId} +echo +completed`))
    const listed = jsonLines((await remote('ls', '--json')).stdout)
    expect(listed.map((run) => run.runId)).toContain(started.runId)

    const journal = await remote('journal', started.runId, '--json')
    expect(jsonLines(journal.stdout)).toEqual(await locus().journal(started.runId))
    const missing = await remote('show', 'no-such-run')
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain('not_found')
  })

  it('follows a waiting run with journal --follow until a resolve from another shell ends it', async () => {
    const started = await locus().startRun('approval')
    const follow = startLocus(['journal', started.runId, '--follow', '--json', '--server', server.url], { env: { LOCUS_API_KEY: KEY } })
    const followed = settle(follow)
    let deferredId = ''
    for (let tries = 0; deferredId === '' && tries < 250; tries += 1) {
      deferredId = (await locus().listDeferred(started.runId))[0]?.deferredId ?? ''
      if (deferredId === '') await new Promise((resolve) => setTimeout(resolve, 20))
    }
    const bad = await remote('resolve', started.runId, deferredId, '--result', '{"approved":"yes"}')
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('invalid_request')
    const resolved = await remote('resolve', started.runId, deferredId, '--result', '{"approved":true}')
    expect(resolved.code).toBe(0)
    expect(resolved.stdout).toContain(`${deferredId} `)
    const result = await followed
    expect(result.code).toBe(0)
    const lines = jsonLines(result.stdout)
    expect(lines).toEqual(await locus().journal(started.runId))
    expect(lines.at(-1)).toMatchObject({ type: 'run_end', disposition: 'completed', result: { ok: true, approved: true } })
  })

  it('cancels a run the server executes, and says why it cannot cancel one that ended', async () => {
    const started = await locus().startRun('waits')
    const cancelled = await remote('cancel', started.runId, '--reason', 'not needed')
    expect(cancelled.code).toBe(0)
    expect(cancelled.stdout).toContain(`${started.runId} cancelling`)
    expect(await locus().waitForResult(started.runId)).toMatchObject({ disposition: 'cancelled' })
    const again = await remote('cancel', started.runId)
    expect(again.code).toBe(2)
    expect(again.stderr).toContain('run_terminal')
    const local = await runLocus(['cancel', started.runId])
    expect(local.code).toBe(2)
    expect(local.stderr).toContain('locus cancel needs --server <url>')
  })
})
