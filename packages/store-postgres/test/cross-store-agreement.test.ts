// One contract for every path: the same workflows (tools, agents with retries, a caught
// provider-error, a group stopped by a hard stop, a spawned child, a deferred tool) run through the file, memory
// and PostgreSQL stores, each killed (in process) at every call it starts,
// resumed and replayed, must leave the same journals, results and verdicts.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { JournalLine } from '@locus/journal'
import { AgentCallError, createScriptedHost, defineDeferredTool, defineTool, defineWorkflow, keepDeferredAnswer, replayRun, resumeRun, startWorkflowRun } from '@locus/runtime'
import type { RunOptions, WorkflowDefinition } from '@locus/runtime'
import { type RunStore, createFileRunStore, createMemoryRunStore } from '@locus/store'
import { afterAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createPostgresRunStore } from '../src/index.js'
import { admin, databaseUrl } from './pg-test-database.js'
import { testDatabaseUrl } from './pg-test-database.js'

const summarize = defineWorkflow({
  name: 'summarize',
  input: z.object({ topic: z.string() }),
  async run({ agent, input }) {
    return { ok: true, summary: (await agent(`summarize ${input.topic}`)).answer }
  },
})

/** A tool, an agent that needs a retry, an agent whose provider-error the script catches, and a spawned child. */
const mixed = defineWorkflow({
  name: 'mixed',
  input: z.object({ topic: z.string() }),
  tools: { lookup: defineTool({ input: z.object({ q: z.string() }), run: async ({ q }) => ({ found: q.toUpperCase() }) }) },
  async run({ agent, tool, spawn, input }) {
    const looked = await tool('lookup', { q: input.topic })
    const first = await agent(`first step on ${input.topic}`)
    const flaky = await agent('flaky step', { attempts: 3 })
    let caught = 'none'
    try {
      await agent('broken step')
    } catch (error) {
      caught = AgentCallError.isInstance(error) ? error.failureCause : 'other'
    }
    const child = await spawn(summarize, { topic: input.topic })
    return { ok: true, looked, answers: [first.answer, flaky.answer], caught, child }
  },
})

/** A parallel() group whose third agent call hits the run's invocation cap: a hard stop that fails the group. */
const capped = defineWorkflow({
  name: 'capped',
  async run({ agent, parallel }) {
    return parallel([() => agent('one'), () => agent('two'), () => agent('three')])
  },
})

/** A tool, then a deferred tool a person answers from outside the run (through the store), then an agent. */
const approval = defineWorkflow({
  name: 'approval',
  tools: {
    prepare: defineTool({ input: z.object({ amount: z.number() }), run: ({ amount }) => ({ prepared: amount }) }),
    approve: defineDeferredTool({ input: z.object({ amount: z.number() }), output: z.object({ approved: z.boolean(), by: z.string() }) }),
  },
  async run({ agent, tool }) {
    const prepared = await tool('prepare', { amount: 42 })
    const approval = await tool('approve', { amount: 42 })
    const note = await agent(`write up approval by ${approval.by}`)
    return { ok: approval.approved, prepared, approval, note: note.answer }
  },
})

const host = () =>
  createScriptedHost({
    rules: [
      { match: { prompt: 'flaky' }, steps: [{ fail: 'host-turn-timeout', reason: 'slow model' }, { text: 'flaky answer' }] },
      { match: { prompt: 'broken' }, steps: [{ throw: 'provider-error', message: 'the provider refused' }] },
      { match: { prompt: /^summarize/ }, steps: [{ text: 'child summary' }] },
      { steps: [{ text: 'an answer' }] },
    ],
  })

const clock = { now: () => 1_700_000_000_000, sleep: async () => undefined }

interface Case {
  readonly workflow: WorkflowDefinition<never>
  readonly options: RunOptions
  /** How many call starts (tool_start, agent_start, child_start) the whole run journals. */
  readonly starts: number
}

const CASES: Record<string, Case> = {
  mixed: { workflow: mixed as unknown as WorkflowDefinition<never>, options: { input: { topic: 'tides' } }, starts: 6 },
  capped: { workflow: capped as unknown as WorkflowDefinition<never>, options: { budgets: { maxTotalAgentInvocations: 2 } }, starts: 2 },
  approval: { workflow: approval as unknown as WorkflowDefinition<never>, options: {}, starts: 3 },
}

/** Answers a deferral the moment it is journaled, from outside the run: the answer is kept by the store, wherever the run is. */
function answerDeferrals(store: RunStore, runId: string): (line: JournalLine) => void {
  return (line) => {
    if (line.type === 'deferred_open') void keepDeferredAnswer(store, runId, line.deferredId, { kind: 'resolved', result: { approved: true, by: 'ana' } })
  }
}

const CALL_START = new Set(['tool_start', 'agent_start', 'child_start'])

/** Without the stack traces of errors: where in this process's code an error passed is not a fact of the run. */
function withoutStacks(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutStacks)
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(Object.entries(value).filter(([key]) => key !== 'stack').map(([key, field]) => [key, withoutStacks(field)]))
}

/** A line as every store must agree on it: all of it but when it was written, how long it took, and the store's names for it. */
function comparable(line: JournalLine): unknown {
  const { ts: _ts, durationMs: _durationMs, ...rest } = line as unknown as Record<string, unknown>
  return withoutStacks(rest)
}

async function journals(store: RunStore, runId: string): Promise<Record<string, unknown[]>> {
  const byExecution: Record<string, unknown[]> = {}
  for (const info of await store.listExecutions(runId)) {
    const lines: unknown[] = []
    for await (const line of store.readLines(info)) lines.push(comparable(line))
    byExecution[info.executionId] = lines
  }
  return byExecution
}

/**
 * Runs a case in a store and stops its process (in process: the execution is
 * suspended, which drops everything written after, as SIGKILL would) when it
 * starts its `killAt`th call; then resumes it with a host and replays it.
 */
async function killResumeReplay(store: RunStore, name: string, killAt: number | undefined) {
  const { workflow, options } = CASES[name] as Case
  const runId = `${name}-${killAt ?? 'whole'}`
  let started = 0
  const answer = answerDeferrals(store, runId)
  // The kill reaches the execution through its suspend signal: the call it stops at can start before the handle is handed out.
  const kill = new AbortController()
  const handle = await startWorkflowRun(workflow, {
    ...options,
    store,
    runId,
    host: host(),
    clock,
    suspendSignal: kill.signal,
    onEvent: (line) => {
      answer(line)
      if (!CALL_START.has(line.type) || line.executionId !== runId) return
      started += 1
      if (started === killAt) kill.abort('killed')
    },
  })
  const first = await handle.done
  const resumed = killAt === undefined ? undefined : await resumeRun(runId, workflow, { ...options, store, host: host(), clock, onEvent: answer })
  const replayed = await replayRun(runId, workflow, { ...options, store, clock })
  return {
    first: { disposition: first.disposition, result: withoutStacks(first.result), suspended: first.suspended === true },
    resumed: resumed === undefined ? undefined : { disposition: resumed.disposition, result: withoutStacks(resumed.result), replayed: resumed.replayed, live: resumed.live },
    replay: { ok: replayed.ok, counts: replayed.report.counts, divergence: replayed.divergence },
    journals: await journals(store, runId),
  }
}

const scratch: string[] = []
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true })
})

function fileStore(): RunStore {
  const dir = mkdtempSync(join(tmpdir(), 'locus-agreement-'))
  scratch.push(dir)
  return createFileRunStore(dir)
}

const pgUrl = testDatabaseUrl
const dbName = `locus_agree_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
let postgres: (RunStore & { close(): Promise<void> }) | undefined
async function postgresStore(): Promise<RunStore | undefined> {
  if (pgUrl === undefined) return undefined
  if (postgres === undefined) {
    await admin(pgUrl, `create database ${dbName}`)
    postgres = createPostgresRunStore({ connectionString: databaseUrl(pgUrl, dbName), maxConnections: 4 })
  }
  return postgres
}
afterAll(async () => {
  await postgres?.close()
  if (pgUrl !== undefined && postgres !== undefined) await admin(pgUrl, `drop database if exists ${dbName} with (force)`)
})

describe('the file, memory and PostgreSQL stores agree on every path', () => {
  if (pgUrl === undefined && process.env.CI !== undefined && process.env.CI !== '') {
    it('has a PostgreSQL database in CI (LOCUS_TEST_PG_URL)', () => {
      throw new Error('LOCUS_TEST_PG_URL is not set, but CI is: start PostgreSQL (scripts/ci-services.sh start) and export the URL.')
    })
  }
  for (const [name, spec] of Object.entries(CASES)) {
    const kills: (number | undefined)[] = [undefined, ...Array.from({ length: spec.starts }, (_, index) => index + 1)]
    for (const killAt of kills) {
      it(`${name}, ${killAt === undefined ? 'never killed' : `killed at call start ${killAt}`}: same journals, results and replay verdicts${pgUrl === undefined ? ' (file and memory; PostgreSQL when LOCUS_TEST_PG_URL is set)' : ''}`, async () => {
        const onFile = await killResumeReplay(fileStore(), name, killAt)
        const inMemory = await killResumeReplay(createMemoryRunStore(), name, killAt)
        expect(inMemory).toEqual(onFile)
        const pgStore = await postgresStore()
        if (pgStore !== undefined) expect(await killResumeReplay(pgStore, name, killAt)).toEqual(onFile)
        // The kill happened, and the mixed run (every call recorded) replays identical on every store, its caught provider-error included.
        if (killAt !== undefined) expect(onFile.first.suspended).toBe(true)
        if (name !== 'capped') {
          expect(onFile.replay).toMatchObject({ ok: true, divergence: null })
          expect((onFile.resumed ?? onFile.first).disposition).toBe('completed')
        }
      }, 60_000)
    }
  }
})
