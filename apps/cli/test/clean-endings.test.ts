// How `locus serve`, `locus mcp` and `locus run` end: every run they hold ends with run_end or is left
// suspended for the next process, and nothing they started keeps them alive (issue #30, items 7 to 9).
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { cleanEnv, cliPath, repoRoot, runLocus, settle, startLocus, tempDir, waitForOutput } from './helpers.js'

const runtimeEntry = join(repoRoot, 'packages', 'runtime', 'dist', 'index.js')
const mcpEntry = join(repoRoot, 'packages', 'mcp', 'dist', 'index.js')
const zodEntry = join(repoRoot, 'packages', 'runtime', 'node_modules', 'zod', 'index.js')
const toolServer = join(repoRoot, 'packages', 'mcp', 'test', 'fixtures', 'tool-server.ts')

/** A directory with a workflow that waits on a deferred tool, one whose agent never answers, and their fixtures. */
async function workflowsDir(): Promise<string> {
  const dir = await tempDir()
  await writeFile(
    join(dir, 'approve.mts'),
    [
      `import { defineDeferredTool, defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
      `import { z } from ${JSON.stringify(zodEntry)}`,
      'export default defineWorkflow({',
      "  name: 'approve',",
      "  tools: { sign_off: defineDeferredTool({ input: z.object({ amount: z.number() }), output: z.object({ approved: z.boolean() }) }) },",
      "  run: async ({ tool }) => ({ ok: true, decision: await tool('sign_off', { amount: 40 }) }),",
      '})',
    ].join('\n'),
  )
  await writeFile(
    join(dir, 'hangs.mts'),
    [`import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`, "export default defineWorkflow({ name: 'hangs', run: async ({ agent }) => ({ ok: true, answer: (await agent('hang')).answer }) })"].join('\n'),
  )
  await writeFile(join(dir, 'answers.json'), JSON.stringify({ rules: [{ match: { prompt: 'hang' }, steps: [{ hang: true }] }] }))
  return dir
}

/** The journal lines of a run's root execution in a runs directory. */
function journalOf(runsDir: string, runId: string): { type: string; disposition?: string; message?: string }[] {
  return readFileSync(join(runsDir, runId, 'journal.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as { type: string })
}

/** `locus mcp` spoken to as a client does: JSON-RPC lines on its stdin, answers and notifications on its stdout. */
function startMcp(dir: string, runsDir: string, extra: readonly string[] = []) {
  const child = spawn(process.execPath, [cliPath, 'mcp', '--workflows', dir, '--host', 'scripted', '--fixtures', join(dir, 'answers.json'), '--runs-dir', runsDir, ...extra], {
    cwd: dir,
    env: cleanEnv(),
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  const ended = settle(child)
  const messages: Record<string, unknown>[] = []
  const listeners = new Set<() => void>()
  let buffered = ''
  child.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString()
    let newline = buffered.indexOf('\n')
    while (newline >= 0) {
      const line = buffered.slice(0, newline).trim()
      buffered = buffered.slice(newline + 1)
      if (line !== '') messages.push(JSON.parse(line) as Record<string, unknown>)
      for (const listener of listeners) listener()
      newline = buffered.indexOf('\n')
    }
  })
  const send = (message: Record<string, unknown>): void => {
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`)
  }
  const next = (matches: (message: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> =>
    new Promise((resolve) => {
      const look = (): void => {
        const found = messages.find(matches)
        if (found === undefined) return
        listeners.delete(look)
        resolve(found)
      }
      listeners.add(look)
      look()
    })
  return {
    child,
    ended,
    send,
    next,
    async initialize() {
      send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'clean-endings', version: '1.0.0' } } })
      await next((message) => message.id === 1)
      send({ method: 'notifications/initialized' })
    },
    /** Calls a workflow tool and resolves with the run id (and deferral id) its progress names. */
    async start(id: number, tool: string): Promise<{ runId: string; deferredId?: string }> {
      const known = new Set(existsSync(runsDir) ? readdirSync(runsDir) : [])
      send({ id, method: 'tools/call', params: { name: tool, arguments: {}, _meta: { progressToken: `p${String(id)}` } } })
      const progressOf = (message: Record<string, unknown>): string => {
        const params = message.params as { progressToken?: string; message?: string } | undefined
        return message.method === 'notifications/progress' && params?.progressToken === `p${String(id)}` ? (params.message ?? '') : ''
      }
      if (tool === 'approve') {
        const found = await next((message) => /run (\S+), deferral (\S+);/.test(progressOf(message)))
        const match = /run (\S+), deferral (\S+);/.exec(progressOf(found)) ?? []
        return { runId: match[1] ?? '', deferredId: match[2] ?? '' }
      }
      // A working run's progress names its agent, not its run: the run is the directory that is new.
      await next((message) => / started$/.test(progressOf(message)))
      return { runId: readdirSync(runsDir).find((name) => !known.has(name) && !name.startsWith('.')) ?? '' }
    },
  }
}

describe('locus serve on SIGTERM', () => {
  it('suspends a run waiting on a deferral, and the next locus serve resumes it: the same deferral id answers 200 and the run completes', async () => {
    const dir = await workflowsDir()
    const runsDir = join(dir, 'runs')
    const args = ['serve', '--workflows', dir, '--port', '0', '--model-host', 'scripted', '--fixtures', join(dir, 'answers.json'), '--runs-dir', runsDir]
    const first = startLocus(args, { cwd: dir })
    const firstEnded = settle(first)
    const url = (await waitForOutput(first, /at (http:\/\/\S+)/, 'stdout'))[1] ?? ''
    const started = (await (await fetch(`${url}/v1/workflows/approve/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).json()) as { runId: string }
    let deferredId: string | undefined
    for (let tries = 0; tries < 300 && deferredId === undefined; tries += 1) {
      const listed = (await (await fetch(`${url}/v1/runs/${started.runId}/deferred`)).json()) as { deferred: { deferredId: string }[] }
      deferredId = listed.deferred[0]?.deferredId
      if (deferredId === undefined) await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(deferredId).toBeDefined()
    first.kill('SIGTERM')
    const stopped = await firstEnded
    expect(stopped.code).toBe(0)
    expect(stopped.stdout).toContain(`suspended 1 run waiting on deferrals, which stay open; the next locus serve on this store resumes them: ${started.runId}`)
    // No run_end and no cancelled deferral: the run stands suspended.
    const lines = journalOf(runsDir, started.runId)
    expect(lines.filter((line) => line.type === 'run_end' || line.type === 'deferred_settled')).toEqual([])

    const second = startLocus(args, { cwd: dir })
    const secondEnded = settle(second)
    const nextUrl = (await waitForOutput(second, /at (http:\/\/\S+)/, 'stdout'))[1] ?? ''
    await waitForOutput(second, /resumed 1 run a previous server suspended/, 'stdout')
    const answered = await fetch(`${nextUrl}/v1/runs/${started.runId}/deferred/${deferredId ?? ''}/resolve`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ result: { approved: true } }),
    })
    expect(answered.status).toBe(200)
    const result = (await (await fetch(`${nextUrl}/v1/runs/${started.runId}/result?wait=20`)).json()) as Record<string, unknown>
    expect(result).toMatchObject({ disposition: 'completed', result: { ok: true, decision: { approved: true } } })
    second.kill('SIGTERM')
    expect((await secondEnded).code).toBe(0)
  }, 60_000)
})

describe('locus mcp when its client goes away', () => {
  it('on stdin closing: suspends the run that waits, cancels the working one after the grace period with run_end, and exits 0', async () => {
    const dir = await workflowsDir()
    const runsDir = join(dir, 'runs')
    const mcp = startMcp(dir, runsDir, ['--shutdown-grace', '300ms'])
    await mcp.initialize()
    const waiting = await mcp.start(2, 'approve')
    const working = await mcp.start(3, 'hangs')
    mcp.child.stdin.end()
    const stopped = await mcp.ended
    expect(stopped.code).toBe(0)
    expect(stopped.stderr).toContain('locus: stopping (the MCP client closed stdin)')
    expect(stopped.stderr).toContain(`suspended 1 run waiting on deferrals`)
    expect(stopped.stderr).toContain(`cancelled 1 run still working after the grace period; locus resume continues them: ${working.runId}`)
    expect(journalOf(runsDir, waiting.runId).filter((line) => line.type === 'run_end')).toEqual([])
    expect(journalOf(runsDir, working.runId).filter((line) => line.type === 'run_end')).toEqual([expect.objectContaining({ disposition: 'cancelled' })])

    // The next locus mcp on the runs directory resumes the suspended run; the deferral keeps its id.
    const next = startMcp(dir, runsDir)
    await next.initialize()
    await waitForOutput(next.child, /resumed 1 suspended run/, 'stderr')
    next.send({ id: 9, method: 'tools/call', params: { name: 'locus_resolve_deferred', arguments: { runId: waiting.runId, deferredId: waiting.deferredId, result: { approved: true } } } })
    const answered = (await next.next((message) => message.id === 9)).result as { isError?: boolean; structuredContent: { status: string } }
    // Accepted by the live execution, or kept for it when it has not reopened the deferral yet: either way it is the answer.
    expect(answered.isError).toBeUndefined()
    expect(['accepted', 'stored']).toContain(answered.structuredContent.status)
    let standing = ''
    for (let tries = 0; tries < 200 && standing !== 'completed'; tries += 1) {
      next.send({ id: 100 + tries, method: 'tools/call', params: { name: 'locus_run_status', arguments: { runId: waiting.runId } } })
      const status = await next.next((message) => message.id === 100 + tries)
      standing = ((status.result as { structuredContent?: { disposition?: string } }).structuredContent?.disposition) ?? ''
      if (standing !== 'completed') await new Promise((resolve) => setTimeout(resolve, 25))
    }
    expect(standing).toBe('completed')
    next.child.kill('SIGTERM')
    expect((await next.ended).code).toBe(0)
  }, 60_000)

  it('on SIGTERM: says why it stops and suspends the run that waits, instead of dying with no line', async () => {
    const dir = await workflowsDir()
    const runsDir = join(dir, 'runs')
    const mcp = startMcp(dir, runsDir)
    await mcp.initialize()
    const waiting = await mcp.start(2, 'approve')
    mcp.child.kill('SIGTERM')
    const stopped = await mcp.ended
    expect(stopped.code).toBe(0)
    expect(stopped.stderr).toContain('locus: stopping (SIGTERM)')
    expect(stopped.stderr).toContain(`suspended 1 run waiting on deferrals, which stay open; the next locus mcp or locus serve on this runs directory resumes them: ${waiting.runId}`)
    expect(journalOf(runsDir, waiting.runId).filter((line) => line.type === 'run_end')).toEqual([])
  }, 60_000)
})

describe('locus run with mcpTools over stdio', () => {
  it('exits once the run has ended: the MCP server it started does not keep the process alive', async () => {
    const dir = await tempDir()
    await writeFile(
      join(dir, 'uses-mcp.mts'),
      [
        `import { mcpTools } from ${JSON.stringify(mcpEntry)}`,
        `import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
        `const source = await mcpTools({ command: process.execPath, args: ['--import', 'tsx', ${JSON.stringify(toolServer)}], cwd: ${JSON.stringify(join(repoRoot, 'packages', 'mcp'))} })`,
        "export default defineWorkflow({ name: 'uses-mcp', tools: source.tools, run: async ({ tool }) => ({ ok: true, echoed: await tool('echo', { text: 'hi' }) }) })",
      ].join('\n'),
    )
    const run = await Promise.race([
      runLocus(['run', 'uses-mcp.mts', '--host', 'none', '--runs-dir', 'runs', '--json'], { cwd: dir }),
      new Promise<'still running'>((resolve) => {
        setTimeout(() => {
          resolve('still running')
        }, 20_000).unref()
      }),
    ])
    expect(run).not.toBe('still running')
    if (run === 'still running') return
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('"echoed"')
  }, 60_000)
})
