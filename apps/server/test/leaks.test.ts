// Every route's answers about a run that threw, a run that hit its invocation
// cap and an unknown run: no stack frame, no absolute path (the runs
// directory, /tmp, this checkout), no command-line advice. The stacks stay
// in the run's files.
import { readFileSync, readdirSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { createRuntime, createScriptedHost, defineWorkflow } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { clientMessage, hasCliAdvice, scrubPaths } from '../src/redact.js'
import { onCleanup, tempRunsDir, testServer } from './helpers.js'

const STACK_FRAME = /\n\s+at |\\n\s+at /
const CLI_ADVICE = /`locus |\blocus (?:ls|run|resume|replay|show|journal)\b|npm run|npx /

function leaksIn(body: string, runsDir: string): string[] {
  const problems: string[] = []
  if (STACK_FRAME.test(body)) problems.push('a stack frame')
  for (const root of [runsDir, tmpdir(), process.cwd(), homedir(), '/tmp/', '/work/', '/home/', 'file://']) {
    if (root.length > 1 && body.includes(root)) problems.push(`the path ${root}`)
  }
  if (CLI_ADVICE.test(body)) problems.push(`command-line advice (${CLI_ADVICE.exec(body)?.[0] ?? ''})`)
  return problems
}

describe('what leaves the server about its insides', () => {
  it('no route answers a stack, an absolute path or CLI advice about a failed run, a capped run or an unknown run', async () => {
    const runsDir = tempRunsDir()
    // The message of the cause names a file under the runs directory, as an ENOENT would.
    const threw = defineWorkflow({
      name: 'threw',
      run: () => {
        throw new Error('the ticket system is down', { cause: new Error(`ENOENT: no such file or directory, open '${join(runsDir, 'secrets.json')}'`) })
      },
    })
    const twice = defineWorkflow({ name: 'twice', run: async ({ agent }) => ({ ok: true, first: (await agent('one')).answer, second: (await agent('two')).answer }) })
    const runtime = createRuntime({ workflows: [threw, twice], host: createScriptedHost({ rules: [{ steps: [{ text: 'fine' }] }] }), runsDir })
    const server = await testServer({ runtime })
    const failed = (await server.json<{ runId: string }>('/v1/workflows/threw/runs', { method: 'POST', body: '{}' })).body.runId
    const capped = (await server.json<{ runId: string }>('/v1/workflows/twice/runs', { method: 'POST', body: JSON.stringify({ budgets: { maxTotalAgentInvocations: 1 } }) })).body.runId
    for (const runId of [failed, capped]) expect((await server.json(`/v1/runs/${runId}/result?wait=30`)).status).toBe(200)

    // The stacks are in the run's files, for the operator.
    const stored = readFileSync(join(runsDir, failed, 'journal.jsonl'), 'utf8')
    expect(stored).toMatch(STACK_FRAME)
    expect(stored).toContain(runsDir)

    const bodies: { what: string; body: string }[] = []
    const get = async (path: string, init?: RequestInit) => {
      const response = await server.request(path, init)
      bodies.push({ what: `${init?.method ?? 'GET'} ${path} (${response.status})`, body: await response.text() })
    }
    const callIds = (await server.runtime.store.listExecutions(capped)).length > 0 ? ['call-1-a1'] : []
    for (const runId of [failed, capped, 'no-such-run']) {
      const run = encodeURIComponent(runId)
      for (const path of ['', '/result', '/result?wait=1', '/journal', '/events', '/deferred', '/journal?execution=resume-009']) await get(`/v1/runs/${run}${path}`)
      await get(`/v1/runs/${run}/events-token`, { method: 'POST' })
      await get(`/v1/runs/${run}/cancel`, { method: 'POST' })
      await get(`/v1/runs/${run}/deferred/tool-1-a1/resolve`, { method: 'POST', body: '{"result":{}}' })
      await get(`/v1/runs/${run}/deferred/tool-1-a1/reject`, { method: 'POST', body: '{"error":"no"}' })
      await get(`/runs/${run}`)
      for (const callId of callIds) {
        await get(`/runs/${run}/executions/${run}/calls/${callId}/transcript`)
        await get(`/runs/${run}/executions/${run}/calls/${callId}/envelope`)
      }
    }
    await get('/v1/runs')
    await get('/')
    await get('/v1/workflows/threw/runs', { method: 'POST', body: '{"input":' })
    await get(`/v1/runs/${failed}/resume`, { method: 'POST', body: '{"budgets":{"maxTotalAgentInvocations":-1}}' })

    // And over MCP: the run tools about each run, and a workflow tool that fails.
    const client = new Client({ name: 'leaks', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)))
    onCleanup(() => client.close())
    for (const runId of [failed, capped, 'no-such-run']) {
      for (const name of ['locus_run_status', 'locus_run_result']) bodies.push({ what: `mcp ${name} ${runId}`, body: JSON.stringify(await client.callTool({ name, arguments: { runId } })) })
    }
    bodies.push({ what: 'mcp threw', body: JSON.stringify(await client.callTool({ name: 'threw', arguments: {} })) })

    const problems = bodies.flatMap(({ what, body }) => {
      // The inspector's own stylesheet and script are not messages (CSS custom properties look like flags).
      const text = body.replace(/<style>[\s\S]*?<\/style>|<script[\s\S]*?<\/script>/g, '')
      return leaksIn(text, runsDir).map((problem) => `${what}: ${problem}`)
    })
    expect(problems).toEqual([])
    // What the errors keep: name, message and code.
    const journal = bodies.find(({ what }) => what.startsWith(`GET /v1/runs/${failed}/journal (`))?.body ?? ''
    const end = JSON.parse(journal.trim().split('\n').at(-1) ?? '{}') as { error?: { name?: string; message?: string; code?: string; cause?: { message?: string } } }
    expect(end.error).toMatchObject({ name: 'Error', message: 'the ticket system is down', code: 'UNKNOWN_ERROR' })
    expect(end.error?.cause?.message).toBe("ENOENT: no such file or directory, open '<path>'")
    expect(bodies.find(({ what }) => what.startsWith('GET /v1/runs/no-such-run ('))?.body).toContain('"message":"No run \\"no-such-run\\"."')
    expect(readdirSync(runsDir).length).toBeGreaterThanOrEqual(2)
  })

  it('scrubs file paths of every form from messages and leaves the API’s own routes', () => {
    expect(scrubPaths("open '/var/lib/locus/runs/x.json' failed")).toBe("open '<path>' failed")
    expect(scrubPaths('see file:///home/me/flow.ts:3:1 and C:\\Users\\me\\flow.ts and ~/flows/a.ts.')).toBe('see <path> and <path> and <path>.')
    expect(scrubPaths('POST /v1/runs/r1/resume continues it; GET /openapi.json lists the routes; /mcp too')).toBe('POST /v1/runs/r1/resume continues it; GET /openapi.json lists the routes; /mcp too')
    expect(scrubPaths('http://127.0.0.1:4477/v1/runs and 3/4 and and/or')).toBe('http://127.0.0.1:4477/v1/runs and 3/4 and and/or')
    // A regular expression in a validation message is not a path.
    expect(scrubPaths('input.ticket: Invalid string: must match pattern /^T-\\d+$/')).toBe('input.ticket: Invalid string: must match pattern /^T-\\d+$/')
    expect(clientMessage('No run "x" in /tmp/runs; list the runs there with `locus ls`.')).toBe('No run "x" in <path>.')
    expect(hasCliAdvice(clientMessage('Run "x" exists already (/tmp/r/x); continue it with `locus resume x`, or start a new run without --run-id.'))).toBe(false)
  })
})
