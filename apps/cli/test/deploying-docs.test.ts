// docs/deploying.md's shell commands, run as a CI job would run them: a run of
// the guide's refund workflow is left waiting on its approval (cancelled by
// Ctrl-C there, as a deploy's graceful shutdown leaves it), the prompt is
// reworded, and each ```bash block runs in bash with `locus` on the PATH (the
// curl one against a `locus serve` canary of the new code). The
// ```json block after them is the report each must write: every documented field
// with its value (run ids may differ; fields the guide leaves out may exist).
// Its TypeScript snippet runs in packages/runtime/test/docs-snippets.test.ts.
import { execFile } from 'node:child_process'
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { cleanEnv, cliPath, onJsonLine, repoRoot, settle, startLocus, tempDir } from './helpers.js'

const document = 'docs/deploying.md'
const text = readFileSync(join(repoRoot, document), 'utf8')
const blocks = [...text.matchAll(/^```(\w*)[^\n]*\n([\s\S]*?)^```\s*$/gm)].map((match) => ({
  language: match[1] ?? '',
  code: match[2] ?? '',
  line: text.slice(0, match.index).split('\n').length,
}))
const commands = blocks.flatMap((block, index) => {
  if (block.language !== 'bash') return []
  const report = blocks.slice(index + 1).find((next) => next.language !== 'text' && next.language !== 'bash')
  return [{ ...block, report: report?.language === 'json' ? (JSON.parse(report.code) as unknown) : undefined }]
})

const runtimeEntry = join(repoRoot, 'packages', 'runtime', 'dist', 'index.js')
const zodEntry = join(repoRoot, 'packages', 'runtime', 'node_modules', 'zod', 'index.js')

/** The guide's refund workflow as a file, asking `question`. */
function refundSource(question: string): string {
  return [
    `import { defineDeferredTool, defineTool, defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
    `import { z } from ${JSON.stringify(zodEntry)}`,
    'export default defineWorkflow({',
    "  name: 'refund',",
    '  input: z.object({ order: z.string() }),',
    '  tools: {',
    '    lookup: defineTool({ input: z.object({ order: z.string() }), run: ({ order }) => ({ order, amount: 42 }) }),',
    '    approve: defineDeferredTool({ input: z.object({ order: z.string() }), output: z.object({ approved: z.boolean() }) }),',
    '  },',
    '  run: async ({ input, tool, agent }) => {',
    "    await tool('lookup', { order: input.order })",
    `    const advice = await agent(\`${question} Order \${input.order}.\`, { label: 'advice' })`,
    "    const approval = await tool('approve', { order: input.order })",
    '    return { ok: true, advice: advice.answer, approval }',
    '  },',
    '})',
  ].join('\n')
}

const RUN_ID = /^\d{8}-\d{6}-[a-z0-9]{12}$/

/** Every field the guide shows, with its value; a documented run id stands for any run id. */
function differences(expected: unknown, actual: unknown, path: string): string[] {
  if (typeof expected === 'string' && RUN_ID.test(expected)) return typeof actual === 'string' && RUN_ID.test(actual) ? [] : [`${path}: expected a run id, got ${JSON.stringify(actual)}`]
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return [`${path}: expected ${expected.length} items, got ${JSON.stringify(actual)}`]
    return expected.flatMap((item, index) => differences(item, actual[index], `${path}[${index}]`))
  }
  if (typeof expected === 'object' && expected !== null) {
    if (typeof actual !== 'object' || actual === null) return [`${path}: expected an object, got ${JSON.stringify(actual)}`]
    return Object.entries(expected).flatMap(([key, value]) => differences(value, (actual as Record<string, unknown>)[key], `${path}.${key}`))
  }
  return expected === actual ? [] : [`${path}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`]
}

/** A project with the refund workflow and one run of it left waiting on its approval, then cancelled. */
async function projectWithWaitingRun(): Promise<string> {
  const project = await tempDir('locus-deploy-docs-')
  const workflows = join(project, 'src', 'workflows')
  mkdirSync(workflows, { recursive: true })
  writeFileSync(join(workflows, 'refund.mts'), refundSource('Should we refund this order?'))
  writeFileSync(join(workflows, 'refund.fixtures.json'), JSON.stringify({ rules: [{ steps: [{ text: 'Refund it.', usage: { inputTokens: 420, outputTokens: 12 } }] }] }))
  // Priced as the guide says: $3 and $15 per million tokens for the scripted host's model.
  writeFileSync(join(project, 'prices.json'), JSON.stringify({ models: { scripted: { input: '3', output: '15' } } }))
  const child = startLocus(['run', join(workflows, 'refund.mts'), '--host', 'scripted', '--input', '{"order":"A-1"}', '--prices', 'prices.json', '--json'], { cwd: project })
  onJsonLine(child, (line) => {
    if (line.type === 'deferred_open') child.kill('SIGINT')
  })
  expect((await settle(child)).code).toBe(130)
  return project
}

const CANARY_KEY = 'canary-ci-4f9a0c1d2e3b'

/** `locus serve` of the project's workflows over its runs, accepting only a `runs:read` key; resolves to its URL. */
async function serveCanary(project: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const child = startLocus(['serve', '--workflows', join(project, 'src', 'workflows'), '--runs-dir', join(project, '.locus-pi', 'runs'), '--port', '0', '--model-host', 'none'], {
    cwd: project,
    env: { LOCUS_API_KEYS: `${CANARY_KEY}:runs:read` },
  })
  const ended = settle(child)
  const url = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const match = /at (http:\/\/[^ \n]+)/.exec(out)
      if (match !== null) resolve(match[1] ?? '')
    })
    child.on('exit', () => {
      reject(new Error(`locus serve exited early: ${out}`))
    })
  })
  return {
    url,
    stop: async () => {
      child.kill('SIGTERM')
      expect((await ended).code).toBe(0)
    },
  }
}

describe(document, () => {
  it('has a CI command followed by the report it writes', () => {
    expect(commands.length).toBeGreaterThan(0)
    for (const command of commands) expect(command.report, `${document}:${command.line}`).toBeDefined()
  })

  it.each(commands.map((command) => [`${document}:${command.line}`, command] as const))('%s fails the job and writes the documented report', async (_name, command) => {
    const project = await projectWithWaitingRun()
    // The deploy rewords the prompt.
    writeFileSync(join(project, 'src', 'workflows', 'refund.mts'), refundSource('Is this refund within policy?'))
    const bin = join(project, 'bin')
    mkdirSync(bin)
    writeFileSync(join(bin, 'locus'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(cliPath)} "$@"\n`)
    chmodSync(join(bin, 'locus'), 0o755)
    // Runs are recorded here by `locus run` into the project's runs directory; the database form
    // checks the same runs once they are in PostgreSQL, which `locus run` does not write to.
    const script = command.code.replaceAll('--database-url "$DATABASE_URL"', '--runs-dir .locus-pi/runs')
    // The server form asks a canary of the new build (the reworded code) over the same runs, with a read-only key.
    const canary = command.code.includes('$CANARY_URL') ? await serveCanary(project) : undefined
    const env = cleanEnv({ PATH: `${bin}${delimiter}${process.env.PATH ?? ''}`, ...(canary === undefined ? {} : { CANARY_URL: canary.url, LOCUS_KEY: CANARY_KEY }) })
    const failed = await promisify(execFile)('bash', ['-c', script], { cwd: project, env, timeout: 60_000 })
      .then(
        () => undefined,
        (error: unknown) => error as { code?: number; stderr?: string },
      )
      .finally(() => canary?.stop())
    expect(failed?.stderr).toBe('')
    expect(failed?.code).toBe(1)
    const report = JSON.parse(readFileSync(join(project, 'deploy-check.json'), 'utf8')) as unknown
    expect(differences(command.report, report, 'report')).toEqual([])
  })
})
