import { RunNotFoundError } from '@locus/store'
import { mkdirSync, writeFileSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { RUN_ID_RULE, RunIdError } from '@locus/journal'
import { type ToolResult, answerPartial, assessPartial, toolFailed, toolFound } from '@locus/partial'
import { createScriptedHost, defineTool, defineWorkflow, runWorkflowScript } from '@locus/runtime'
import { z } from 'zod'
import { describe, expect, it } from 'vitest'
import { CliError } from './cli-error.js'
import { listRunIds, readRunRecord } from './run-record.js'
import { summarizeRun } from './summarize-run.js'

const plan = { steps: [{ n: 1, tool: 'lookup', criticality: 'required' as const }, { n: 2, tool: 'history', criticality: 'enriching' as const }] }

const workflow = defineWorkflow({
  name: 'summarised',
  tools: {
    lookup: defineTool({
      input: z.object({}),
      retry: { timeout_secs: null, max_retries: 2, backoff_base_secs: 0, backoff_max_secs: 0 },
      run: (_args, { attempt }) => {
        if (attempt === 1) throw Object.assign(new Error('503'), { retryable: true, code: 'provider_error' })
        return { terms: 'Net 45' }
      },
    }),
  },
  async run({ agent, tool }) {
    const found = await tool('lookup', {})
    await agent('summarise', { attempts: 2 })
    const results = new Map<number, ToolResult>([[1, toolFound(found)], [2, toolFailed('unavailable', 'finance down')]])
    return answerPartial({ question: 'q', plan, results }, assessPartial(plan, results), () => Promise.resolve({ text: 'Net 45.' }))
  },
})

describe('summarizeRun', () => {
  it('counts logical calls and attempts, retries, gaps and caveats, and names the outputs README', async () => {
    const runsDir = await mkdtemp(join(tmpdir(), 'locus-summary-'))
    const host = createScriptedHost({ rules: [{ steps: [{ throw: 'call-timeout' }, { text: 'done' }] }] })
    await runWorkflowScript(workflow, { host, runsDir, runId: 'r1', source: '/somewhere/summarised.ts' })
    const summary = summarizeRun(readRunRecord(runsDir, 'r1'))
    expect(summary).toMatchObject({
      runId: 'r1',
      workflow: 'summarised',
      standing: 'failed',
      answerOutcome: 'partial',
      source: '/somewhere/summarised.ts',
      host: 'scripted',
      agentCalls: 1,
      agentAttempts: 2,
      toolCalls: 1,
      toolAttempts: 2,
      retries: 2,
      gaps: [{ tool: 'history', criticality: 'enriching', reason: 'finance down' }],
      caveats: ['Could not check history (finance down).'],
      outputsReadme: join(runsDir, 'r1', 'outputs', 'README.md'),
    })
    expect(summary.retriedCalls.map((call) => [call.kind, call.attempts.map((attempt) => attempt.outcome)])).toEqual([
      ['agent', ['threw (call-timeout)', 'completed']],
      ['tool', ['failed (provider_error)', 'completed']],
    ])
    expect(listRunIds(runsDir)).toEqual(['r1'])
  })

  it('an unknown run id is the store’s RUN_NOT_FOUND', async () => {
    const runsDir = await mkdtemp(join(tmpdir(), 'locus-summary-'))
    let thrown: unknown
    try {
      readRunRecord(runsDir, 'nope')
    } catch (error) {
      thrown = error
    }
    expect(RunNotFoundError.isInstance(thrown)).toBe(true)
    expect(CliError.isInstance(thrown)).toBe(false)
  })

  it('an unsafe run id is refused with the id rule `run --run-id` states, never looked up outside the runs directory', async () => {
    const runsDir = await mkdtemp(join(tmpdir(), 'locus-summary-'))
    for (const id of ['../etc', '/etc', '..', '']) {
      let thrown: unknown
      try {
        readRunRecord(runsDir, id)
      } catch (error) {
        thrown = error
      }
      expect(RunIdError.isInstance(thrown), id).toBe(true)
      expect((thrown as Error).message).toContain(RUN_ID_RULE)
      expect((thrown as Error).message).toMatch(/^Invalid run id /)
    }
  })

  it('a run whose journal is empty recorded nothing, and the summary says so', async () => {
    const runsDir = await mkdtemp(join(tmpdir(), 'locus-summary-'))
    mkdirSync(join(runsDir, 'empty'))
    writeFileSync(join(runsDir, 'empty', 'journal.jsonl'), '')
    const summary = summarizeRun(readRunRecord(runsDir, 'empty'))
    expect(summary).toMatchObject({ runId: 'empty', standing: 'unfinished', nothingRecorded: true, resultFile: join(runsDir, 'empty', 'result.json') })
    expect(summary.journalProblems).toEqual(['empty: no run_start line, so nothing was recorded'])
  })
})
