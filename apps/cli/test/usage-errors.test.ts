import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { examplesDir, runLocus, tempDir } from './helpers.js'

let dir: string

beforeAll(async () => {
  dir = await tempDir()
  writeFileSync(join(dir, 'no-export.mjs'), 'export const answer = 42\n')
  writeFileSync(join(dir, 'broken.mts'), "export default {\n  name: 'broken',\n  run() { return 1 +\n}\n")
  writeFileSync(join(dir, 'broken.mjs'), "const ok = 1\nexport default { name: 'broken', run() { return ok + } }\n")
  writeFileSync(join(dir, 'a-file'), '')
  mkdirSync(join(dir, 'a-directory.ts'))
})

/** Every usage error exits 2 with one message and no stack trace. */
async function expectUsageError(args: string[], message: RegExp): Promise<string> {
  const result = await runLocus(args, { cwd: dir })
  expect(result.code).toBe(2)
  expect(result.stderr).toMatch(message)
  expect(result.stderr).not.toMatch(/^\s+at /m)
  expect(result.stdout).toBe('')
  return result.stderr
}

describe.concurrent('usage and input errors exit 2 with one clear message', () => {
  it('an unknown command, with the closest match', async () => {
    const stderr = await expectUsageError(['rnu', 'x.ts'], /unknown command 'rnu'/)
    expect(stderr).toMatch(/Did you mean run\?/)
  })

  it('an unknown flag, with the closest match', async () => {
    const stderr = await expectUsageError(['run', 'x.ts', '--max-agent', '3'], /unknown option '--max-agent'/)
    expect(stderr).toMatch(/Did you mean --max-agents\?/)
  })

  it('a missing workflow file', async () => {
    await expectUsageError(['run', 'nowhere.ts'], /Workflow file not found: nowhere\.ts/)
  })

  it('an unreadable workflow path (a directory)', async () => {
    await expectUsageError(['run', 'a-directory.ts'], /a-directory\.ts is not a file/)
  })

  it('a module without a workflow export', async () => {
    await expectUsageError(['run', 'no-export.mjs'], /no-export\.mjs has no workflow export.*It exports: answer/)
  })

  it('a syntax error in a TypeScript workflow, with file and line', async () => {
    await expectUsageError(['run', 'broken.mts'], /Syntax error in .*broken\.mts:4:\d+/)
  })

  it('a syntax error in a JavaScript workflow, with file and line', async () => {
    await expectUsageError(['run', 'broken.mjs'], /Syntax error in broken\.mjs:2/)
  })

  it('input that fails the workflow schema names the field and why', async () => {
    const stderr = await expectUsageError(
      ['run', join(examplesDir, 'research/research-fan-out.ts'), '--input', '{"customer":"","question":"q"}', '--runs-dir', join(dir, 'runs')],
      /Invalid input for workflow "research-fan-out"/,
    )
    expect(stderr).toMatch(/customer: customer must not be empty/)
  })

  it('input that is not JSON', async () => {
    await expectUsageError(['run', join(examplesDir, 'classify/classify-choice.ts'), '--input', '{nope'], /--input is not valid JSON/)
  })

  it('an unknown run id', async () => {
    await expectUsageError(['show', 'no-such-run', '--runs-dir', join(dir, 'runs')], /No run "no-such-run" in .*locus ls/)
  })

  it('a runs directory that is not writable', async () => {
    await expectUsageError(
      ['run', join(examplesDir, 'classify/classify-choice.ts'), '--runs-dir', join(dir, 'a-file', 'runs')],
      /The runs directory .*a-file\/runs is not writable \(ENOTDIR/,
    )
  })

  it('a duration it cannot read', async () => {
    await expectUsageError(['run', 'x.ts', '--deadline', '10x'], /--deadline must be a duration such as 500ms, 30s, 10m, 1h or 30d; got "10x"/)
  })

  it('an unknown --type for the journal', async () => {
    await expectUsageError(['journal', 'any', '--type', 'agent_ends'], /Unknown journal line type "agent_ends"/)
  })

  it('a model host without its settings', async () => {
    await expectUsageError(['run', join(examplesDir, 'classify/classify-choice.ts'), '--host', 'openai-compatible'], /needs --base-url \(or LOCUS_MODEL_BASE_URL\)/)
  })

  it('a stack trace only with --verbose', async () => {
    const result = await runLocus(['run', 'nowhere.ts', '--verbose'], { cwd: dir })
    expect(result.code).toBe(2)
    expect(result.stderr).toMatch(/^\s+at /m)
  })
})
