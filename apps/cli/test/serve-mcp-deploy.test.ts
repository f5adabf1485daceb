import { existsSync } from 'node:fs'
import { readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { defineDeferredTool, defineWorkflow, startWorkflowRun } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { cleanEnv, cliPath, repoRoot, runLocus, settle, startLocus, tempDir } from './helpers.js'

const runtimeEntry = join(repoRoot, 'packages', 'runtime', 'dist', 'index.js')
const zodEntry = join(repoRoot, 'packages', 'runtime', 'node_modules', 'zod', 'index.js')

/** A directory with two workflow files and their scripted answers. */
async function workflowsDir(prompt = 'summarise'): Promise<string> {
  const dir = await tempDir()
  await writeFile(
    join(dir, 'summarise.mts'),
    [
      `import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
      `import { z } from ${JSON.stringify(zodEntry)}`,
      'export default defineWorkflow({',
      "  name: 'summarise',",
      '  input: z.object({ ticket: z.string() }),',
      `  run: async ({ input, agent }) => ({ ok: true, summary: (await agent(\`${prompt} \${input.ticket}\`)).answer }),`,
      '})',
    ].join('\n'),
  )
  await writeFile(
    join(dir, 'research.mts'),
    [
      `import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
      'export default defineWorkflow({',
      "  name: 'research',",
      "  run: async ({ agent }) => { await agent('look'); return { ok: true, answer: { text: 'half', found: true, partial: true, gaps: [{ tool: 'payments', criticality: 'enriching', reason: 'timeout' }], caveats: ['Payments were not checked.'] } } },",
      '})',
    ].join('\n'),
  )
  await writeFile(join(dir, 'answers.json'), JSON.stringify({ rules: [{ steps: [{ text: 'the summary' }] }] }))
  return dir
}

describe('locus mcp, driven by the MCP SDK’s own Client over stdio', () => {
  it('lists the workflows as tools and answers a completed run as a success and a partial one as an error with its caveats', async () => {
    const dir = await workflowsDir()
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [cliPath, 'mcp', '--workflows', dir, '--host', 'scripted', '--fixtures', join(dir, 'answers.json'), '--runs-dir', join(dir, 'runs')],
      cwd: dir,
      env: cleanEnv() as Record<string, string>,
      stderr: 'ignore',
    })
    const client = new Client({ name: 'test', version: '1.0.0' })
    await client.connect(transport)
    try {
      const { tools } = await client.listTools()
      expect(tools.map((tool) => tool.name).sort()).toEqual(['locus_resolve_deferred', 'locus_run_result', 'locus_run_status', 'research', 'summarise'])
      const done = await client.callTool({ name: 'summarise', arguments: { ticket: 'T-1' } })
      expect(done.isError).toBe(false)
      expect(done.structuredContent).toMatchObject({ disposition: 'completed', result: { summary: 'the summary' } })
      const partial = await client.callTool({ name: 'research', arguments: {} })
      expect(partial.isError).toBe(true)
      expect(partial.structuredContent).toMatchObject({ answerOutcome: 'partial', caveats: ['Payments were not checked.'] })
    } finally {
      await client.close()
    }
  })
})

describe('locus mcp over stdio: deferrals and cancellation', () => {
  it('resolves a deferral through locus_resolve_deferred, and cancels a run when the client cancels its call', async () => {
    const dir = await tempDir()
    await writeFile(
      join(dir, 'refund.mts'),
      [
        `import { defineDeferredTool, defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
        `import { z } from ${JSON.stringify(zodEntry)}`,
        'export default defineWorkflow({',
        "  name: 'refund',",
        "  tools: { sign_off: defineDeferredTool({ input: z.object({ amount: z.number() }), output: z.object({ approved: z.boolean() }) }) },",
        "  run: async ({ tool }) => ({ ok: true, decision: await tool('sign_off', { amount: 40 }) }),",
        '})',
      ].join('\n'),
    )
    await writeFile(
      join(dir, 'waits.mts'),
      [`import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`, "export default defineWorkflow({ name: 'waits', run: async ({ agent }) => ({ ok: true, answer: (await agent('hang')).answer }) })"].join('\n'),
    )
    await writeFile(join(dir, 'answers.json'), JSON.stringify({ rules: [{ match: { prompt: 'hang' }, steps: [{ hang: true }] }] }))
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [cliPath, 'mcp', '--workflows', dir, '--host', 'scripted', '--fixtures', join(dir, 'answers.json'), '--runs-dir', join(dir, 'runs')],
      cwd: dir,
      env: cleanEnv() as Record<string, string>,
      stderr: 'ignore',
    })
    const client = new Client({ name: 'test', version: '1.0.0' })
    await client.connect(transport)
    try {
      let opened: (found: { runId: string; deferredId: string }) => void = () => undefined
      const waiting = new Promise<{ runId: string; deferredId: string }>((resolve) => {
        opened = resolve
      })
      const call = client.callTool({ name: 'refund', arguments: {} }, undefined, {
        onprogress: (event) => {
          const match = /run (\S+), deferral (\S+);/.exec(event.message ?? '')
          if (match !== null) opened({ runId: match[1] ?? '', deferredId: match[2] ?? '' })
        },
      })
      const { runId, deferredId } = await waiting
      const answered = await client.callTool({ name: 'locus_resolve_deferred', arguments: { runId, deferredId, result: { approved: true } } })
      expect(answered.structuredContent).toMatchObject({ status: 'accepted' })
      expect(await call).toMatchObject({ isError: false, structuredContent: { runId, disposition: 'completed', result: { decision: { approved: true } } } })

      const controller = new AbortController()
      let started: () => void = () => undefined
      const running = new Promise<void>((resolve) => {
        started = resolve
      })
      const hanging = client.callTool({ name: 'waits', arguments: {} }, undefined, { signal: controller.signal, onprogress: () => { started() } })
      await running
      controller.abort('changed my mind')
      await expect(hanging).rejects.toThrow()
      const other = (await readdir(join(dir, 'runs'))).find((name) => name !== runId && !name.startsWith('.'))
      expect(other).toBeDefined()
      let standing = 'unfinished'
      for (let tries = 0; tries < 100 && standing === 'unfinished'; tries += 1) {
        const status = await client.callTool({ name: 'locus_run_status', arguments: { runId: other } })
        standing = (status.structuredContent as { disposition: string }).disposition
        if (standing === 'unfinished') await new Promise((resolve) => setTimeout(resolve, 50))
      }
      expect(standing).toBe('cancelled')
    } finally {
      await client.close()
    }
  })
})

describe('locus serve', () => {
  it('prints its URL, answers over HTTP, and shuts down on SIGTERM with exit 0', async () => {
    const dir = await workflowsDir()
    const child = startLocus(['serve', '--workflows', dir, '--port', '0', '--model-host', 'scripted', '--fixtures', join(dir, 'answers.json'), '--runs-dir', join(dir, 'runs')], { cwd: dir })
    const url = await new Promise<string>((resolve, reject) => {
      let out = ''
      child.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString()
        const match = /at (http:\/\/[^ ]+)/.exec(out)
        if (match !== null) resolve(match[1] ?? '')
      })
      child.on('exit', () => { reject(new Error(`locus serve exited early: ${out}`)); })
    })
    const ended = settle(child)
    const started = await fetch(`${url}/v1/workflows/summarise/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input: { ticket: 'T-9' } }) })
    expect(started.status).toBe(202)
    const { runId } = (await started.json()) as { runId: string }
    const result = await fetch(`${url}/v1/runs/${runId}/result?wait=10`)
    expect(await result.json()).toMatchObject({ disposition: 'completed', result: { summary: 'the summary' } })
    child.kill('SIGTERM')
    expect((await ended).code).toBe(0)
  })
})

describe('locus check-deploy and locus resolve', () => {
  it('exits 0 with nothing to check and 2 without --workflows, and names the changed fields of a diverging run', async () => {
    const dir = await workflowsDir()
    expect((await runLocus(['check-deploy', '--workflows', dir, '--runs-dir', join(dir, 'runs')], { cwd: dir })).code).toBe(0)
    expect((await runLocus(['check-deploy', '--runs-dir', join(dir, 'runs')], { cwd: dir })).code).toBe(2)
    // A failed run cannot continue, so only --all checks it; it still names what changed.
    const run = await runLocus(['run', join(dir, 'summarise.mts'), '--input', '{"ticket":"T-2"}', '--host', 'none', '--runs-dir', join(dir, 'runs'), '--json'], { cwd: dir })
    expect(run.code).toBe(1)
    const changed = await workflowsDir('condense')
    const check = await runLocus(['check-deploy', '--workflows', changed, '--runs-dir', join(dir, 'runs'), '--all', '--json'], { cwd: dir })
    const report = JSON.parse(check.stdout) as { ok: boolean; runs: { verdict: string; divergence?: { fields: string[] } }[] }
    expect(report.runs[0]).toMatchObject({ verdict: 'diverged', divergence: { fields: ['prompt'] } })
  })

  it('answers a deferral of a waiting run from another shell, then recognises a repeat and refuses a different answer', async () => {
    const dir = await tempDir()
    const runsDir = join(dir, 'runs')
    const approval = defineWorkflow({
      name: 'approval',
      tools: { approve: defineDeferredTool({ input: z.object({ amount: z.number() }), output: z.object({ approved: z.boolean() }) }) },
      run: async ({ tool }) => ({ ok: true, approval: await tool('approve', { amount: 7 }) }),
    })
    let deferredId: string | undefined
    // This process holds the run; `locus resolve` is the other shell.
    const handle = await startWorkflowRun(approval, { runsDir, runId: 'run-1', durability: 'line', onEvent: (line) => (deferredId ??= line.type === 'deferred_open' ? line.deferredId : undefined) })
    while (deferredId === undefined) await new Promise((resolve) => setTimeout(resolve, 5))
    const id = deferredId
    // Without the workflow at hand the shell cannot check the result: the run does when it reads it, refuses
    // it (a warning in its journal) and withdraws it, so the deferral can be answered again.
    const invalid = await runLocus(['resolve', 'run-1', id, '--result', '{"approved":"yes"}', '--runs-dir', runsDir], { cwd: dir })
    expect(invalid.code).toBe(0)
    const kept = join(runsDir, 'run-1', 'deferred', `${id}.json`)
    const deadline = Date.now() + 10_000
    while (existsSync(kept) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(existsSync(kept)).toBe(false)
    const first = await runLocus(['resolve', 'run-1', id, '--result', '{"approved":true}', '--runs-dir', runsDir], { cwd: dir })
    expect(first.code).toBe(0)
    expect((await handle.done).result).toEqual({ ok: true, approval: { approved: true } })
    expect((await runLocus(['resolve', 'run-1', id, '--result', '{"approved":true}', '--runs-dir', runsDir], { cwd: dir })).stdout).toMatch(/already had this answer/)
    const conflict = await runLocus(['resolve', 'run-1', id, '--result', '{"approved":false}', '--runs-dir', runsDir], { cwd: dir })
    expect(conflict.code).toBe(2)
    expect(conflict.stderr).toMatch(/an answer is final/)
    const unknown = await runLocus(['resolve', 'run-1', 'tool-9-a1', '--result', '{}', '--runs-dir', runsDir], { cwd: dir })
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toMatch(/no deferral tool-9-a1/)
    expect((await runLocus(['resolve', '../x', 'tool-1-a1', '--result', '{}', '--runs-dir', runsDir], { cwd: dir })).code).toBe(2)
    expect((await runLocus(['resolve', 'run-2', 'tool-1-a1', '--result', '{}', '--runs-dir', runsDir], { cwd: dir })).code).not.toBe(0)
  })
})

describe('locus run --worker', () => {
  it.skipIf(process.env.LOCUS_NO_PYTHON === '1')('serves remote tools from the Python worker example', async () => {
    const example = join(repoRoot, 'docs', 'examples', 'python-worker')
    const dir = await tempDir()
    const run = await runLocus(
      ['run', join(example, 'count.ts'), '--input', '{"text":"one two three"}', '--worker', `python3 ${join(example, 'tools.py')}`, '--host', 'none', '--runs-dir', join(dir, 'runs'), '--json'],
      { cwd: repoRoot },
    )
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('"words":3')
  })
})
