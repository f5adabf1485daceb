import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { readJournal } from '@locus/journal'
import { beforeAll, describe, expect, it } from 'vitest'
import { examplesDir, jsonLines, runLocus, tempDir } from './helpers.js'

let runsDir: string

beforeAll(async () => {
  runsDir = await tempDir()
})

interface Summary {
  type: string
  runId: string
  standing: string
  answerOutcome?: string
  retries: number
  gaps: { tool: string }[]
  caveats: string[]
  outputsReadme: string
  exitCode: number
}

async function runExample(file: string): Promise<{ code: number | null; lines: Record<string, unknown>[]; summary: Summary }> {
  const result = await runLocus(['run', join(examplesDir, file), '--host', 'scripted', '--runs-dir', runsDir, '--json'])
  expect(result.stderr).toBe('')
  const lines = jsonLines(result.stdout)
  return { code: result.code, lines, summary: lines.at(-1) as unknown as Summary }
}

function expectRunFiles(summary: Summary): void {
  const runDir = join(runsDir, summary.runId)
  expect(existsSync(join(runDir, 'journal.jsonl'))).toBe(true)
  expect(JSON.parse(readFileSync(join(runDir, 'result.json'), 'utf8'))).toMatchObject({ runId: summary.runId, disposition: summary.standing })
  expect(readFileSync(summary.outputsReadme, 'utf8').length).toBeGreaterThan(0)
  const journal = readJournal(join(runDir, 'journal.jsonl'))
  expect(journal.invalid).toEqual([])
  expect(journal.tornTail).toBeNull()
}

describe('the examples through the built binary', () => {
  it('--json prints every journal line as one JSON object a line, then a summary line', async () => {
    const { lines, summary } = await runExample('classify/classify-choice.ts')
    expect(lines[0]).toMatchObject({ type: 'run_start', workflow: 'classify-choice' })
    expect(lines.at(-2)).toMatchObject({ type: 'run_end', disposition: 'completed' })
    expect(summary).toMatchObject({ type: 'summary', standing: 'completed', exitCode: 0 })
    const journal = readJournal(join(runsDir, summary.runId, 'journal.jsonl')).lines
    expect(lines.slice(0, -1)).toEqual(JSON.parse(JSON.stringify(journal)))
  })

  it('research fan-out: a partial answer ends the run failed (exit 1) with its gap and caveat', async () => {
    const { code, summary } = await runExample('research/research-fan-out.ts')
    expect(code).toBe(1)
    expect(summary).toMatchObject({ standing: 'failed', answerOutcome: 'partial', exitCode: 1, gaps: [{ tool: 'payment_history' }] })
    expect(summary.caveats).toEqual(['Could not check the payment history (finance system did not respond in time).'])
    expectRunFiles(summary)
  })

  it('triage pipeline: completes (exit 0) after one tool retry with backoff and one agent retry', async () => {
    const { code, lines, summary } = await runExample('triage/triage-pipeline.ts')
    expect(code).toBe(0)
    expect(summary).toMatchObject({ standing: 'completed', answerOutcome: 'complete', retries: 2 })
    expect(lines.filter((line) => line.type === 'retry').map((line) => line.kind).sort()).toEqual(['agent', 'tool'])
    expect(readFileSync(summary.outputsReadme, 'utf8')).toContain('## Retried agent calls')
    expectRunFiles(summary)
  })

  it('classify choice: completes (exit 0), the clarification and fallback in its result', async () => {
    const { code, summary } = await runExample('classify/classify-choice.ts')
    expect(code).toBe(0)
    expect((summary as unknown as { result: unknown }).result).toMatchObject({ needsHuman: ['M-4'] })
    expectRunFiles(summary)
  })

  it('long fan-out: completes (exit 0) with twelve agent calls', async () => {
    const { code, summary } = await runExample('long-fan-out/long-fan-out.ts')
    expect(code).toBe(0)
    expect(summary).toMatchObject({ standing: 'completed', agentCalls: 12 })
    expectRunFiles(summary)
  })

  it('a run on a pipe prints plain progress lines and the summary', async () => {
    const result = await runLocus(['run', join(examplesDir, 'classify/classify-choice.ts'), '--runs-dir', runsDir])
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/run classify-choice started/)
    expect(result.stdout).toMatch(/agent classifier .* completed/)
    expect(result.stdout).toMatch(/^completed {2}classify-choice {2}run /m)
    expect(result.stdout).not.toContain('\u001b[')
  })
})
