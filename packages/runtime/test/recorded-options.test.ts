import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createFileRunStore } from '@locus/store'
import {
  NOTHING_RECORDED_PROBLEM,
  RecordedRunOptionsSchema,
  createRuntime,
  createScriptedHost,
  defineWorkflow,
  readStoredRun,
  recordedRunOptions,
  recordedStart,
  runWorkflowScript,
} from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { tempRunsDir } from './helpers.js'

const twoSteps = defineWorkflow({ name: 'two-steps', run: async ({ agent }) => ({ ok: true, a: (await agent('a')).answer, b: (await agent('b')).answer }) })

describe('recordedRunOptions', () => {
  it('reads back every option run_start records, retry budget and jitter included', async () => {
    const runsDir = tempRunsDir()
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'fine' }] }] })
    const run = await runWorkflowScript(twoSteps, {
      host,
      runsDir,
      source: '/flows/two-steps.ts',
      concurrency: 3,
      durability: 'line',
      launchMode: 'background',
      retryBudget: 4,
      jitter: 'full',
      budgets: { maxTotalAgentInvocations: 9, deadlineMs: 60_000, perCall: { maxToolCalls: 7 } },
    })
    const stored = await readStoredRun(createFileRunStore(runsDir), run.runId)
    const recorded = recordedRunOptions(stored.root.view.runStart)
    expect(recorded).toMatchObject({
      source: '/flows/two-steps.ts',
      host: 'scripted',
      options: {
        concurrency: 3,
        durability: 'line',
        launchMode: 'background',
        retryBudget: 4,
        jitter: 'full',
        budgets: { maxTotalAgentInvocations: 9, deadlineMs: 60_000, perCall: { maxToolCalls: 7 } },
      },
    })
    expect(recordedStart(stored)).toMatchObject({ ...recorded, executionId: run.runId, fallbackInput: undefined })
  })

  it('drops a field it cannot read and keeps the rest; a missing record reads as nothing recorded', () => {
    const recorded = recordedRunOptions({ options: { concurrency: -1, durability: 'sometimes', retryBudget: 2, budgets: { deadlineMs: 'soon', perCall: { maxAnswerChars: 10 } }, source: null, host: 7 } })
    expect(recorded).toEqual({ source: undefined, host: undefined, hostSettings: undefined, options: { retryBudget: 2, budgets: { perCall: { maxAnswerChars: 10 } } } })
    expect(recordedRunOptions(undefined)).toEqual({ source: undefined, host: undefined, hostSettings: undefined, options: {} })
    expect(RecordedRunOptionsSchema.parse('not an object')).toEqual({})
  })

  it('createRuntime().resume keeps the recorded retry budget and jitter unless given others', async () => {
    const runsDir = tempRunsDir()
    const failing = createScriptedHost({ rules: [{ match: { prompt: 'b' }, steps: [{ fail: 'provider-error', reason: 'down' }] }, { steps: [{ text: 'A' }] }] })
    const first = await runWorkflowScript(twoSteps, { host: failing, runsDir, retryBudget: 1, jitter: 'equal', concurrency: 2 })
    expect(first.disposition).toBe('failed')
    const runtime = createRuntime({ workflows: [twoSteps], host: createScriptedHost({ rules: [{ steps: [{ text: 'fine' }] }] }), runsDir })
    const resumed = await runtime.resume(first.runId, { concurrency: 5 })
    expect((await resumed.done).disposition).toBe('completed')
    const stored = await readStoredRun(runtime.store, first.runId)
    expect(recordedRunOptions(stored.latest.view.runStart).options).toMatchObject({ retryBudget: 1, jitter: 'equal', concurrency: 5 })
  })
})

describe('a run that recorded nothing', () => {
  it('is marked on the run, its execution and its summary, with the problem the summary lists', async () => {
    const runsDir = tempRunsDir()
    mkdirSync(join(runsDir, 'empty'))
    writeFileSync(join(runsDir, 'empty', 'journal.jsonl'), '')
    const stored = await readStoredRun(createFileRunStore(runsDir), 'empty')
    expect(stored.nothingRecorded).toBe(true)
    expect(stored.root).toMatchObject({ nothingRecorded: true, linesRead: 0, problems: [NOTHING_RECORDED_PROBLEM] })
    expect(stored.latest.summary).toMatchObject({
      standing: 'unfinished',
      nothingRecorded: true,
      journalProblems: [NOTHING_RECORDED_PROBLEM],
      resultPath: join(runsDir, 'empty', 'result.json'),
    })
    expect(recordedStart(stored)).toMatchObject({ executionId: undefined, source: undefined, options: {} })
  })
})

describe('a run whose journal is damaged', () => {
  it('lists each damaged line on its execution, a lost line (seq gap) included, and a torn tail as no damage', async () => {
    const runsDir = tempRunsDir()
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'fine' }] }] })
    const run = await runWorkflowScript(twoSteps, { host, runsDir, durability: 'line' })
    const path = join(runsDir, run.runId, 'journal.jsonl')
    const lines = readFileSync(path, 'utf8').split('\n').slice(0, -1)
    writeFileSync(path, `${[...lines.slice(0, 2), ...lines.slice(3)].join('\n')}\n{"v":1,"seq":`)
    const stored = await readStoredRun(createFileRunStore(runsDir), run.runId)
    expect(stored.root.damage).toEqual([{ lineNumber: 3, kind: 'seq-gap', problem: 'line 3: seq gap, expected 3, found 4: the line before it is missing' }])
    expect(stored.root.problems).toEqual([expect.stringMatching(/^torn last line/), 'line 3: seq gap, expected 3, found 4: the line before it is missing'])
  })
})
