import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type JournalLine, createRunView, readJournal, renderOutputsReadme } from '@locus/journal'
import { type JsonValue, classifyOutcome } from '@locus/outcome'
import {
  ChildWorkflowError,
  LAUNCH_MODE_BUDGETS,
  type WorkflowDefinition,
  createRuntime,
  createScriptedHost,
  defineDeferredTool,
  defineWorkflow,
  readStoredRun,
  replayRun,
  resumeRun,
  runWorkflowScript,
  startWorkflowRun,
} from '@locus/runtime'
import { createFileRunStore, createMemoryRunStore } from '@locus/store'
import { createManualClock } from '@locus/retry'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { linesOfType, readRun, tempRunsDir } from './helpers.js'

const host = createScriptedHost({ rules: [{ steps: [{ text: 'an answer' }] }] })

function executionLines(executionDir: string): JournalLine[] {
  const journal = readJournal(join(executionDir, 'journal.jsonl'))
  if (journal.invalid.length > 0 || journal.tornTail !== null) throw new Error(`journal not clean in ${executionDir}`)
  return journal.lines
}

function childDir(runDir: string, childExecutionId: string): string {
  return join(runDir, 'executions', childExecutionId)
}

/** A child that doubles its input, counting how often its script really ran. */
function doubler(counter: { runs: number }) {
  return defineWorkflow({
    name: 'doubler',
    input: z.object({ n: z.number() }),
    async run({ input }) {
      counter.runs += 1
      return { ok: true, doubled: input.n * 2 }
    },
  })
}

describe('spawn(): a saved workflow as a child run', () => {
  it("returns the child's result and keeps the child's outputs in a nested execution linked to the parent", async () => {
    const runsDir = tempRunsDir()
    const counter = { runs: 0 }
    const child = doubler(counter)
    const parent = defineWorkflow({
      name: 'parent',
      async run({ spawn }) {
        const value = await spawn(child, { n: 21 }, { label: 'double it' })
        return { ok: true, value }
      },
    })
    const run = await runWorkflowScript(parent, { runsDir, runId: 'p1' })
    expect(run).toMatchObject({ disposition: 'completed', result: { ok: true, value: { ok: true, doubled: 42 } } })
    const { lines, readme } = readRun(run)
    const [start] = linesOfType(lines, 'child_start')
    const [end] = linesOfType(lines, 'child_end')
    expect(start).toMatchObject({ childCallId: 'child-1', workflow: 'doubler', attempt: 1, maxAttempts: 1, ordinal: '1', childExecutionId: 'child-1-a1', label: 'double it', input: { n: 21 } })
    expect(end).toMatchObject({ childCallId: 'child-1', status: 'completed', disposition: 'completed', result: { ok: true, doubled: 42 } })

    const nested = childDir(run.runDir, 'child-1-a1')
    const childLines = executionLines(nested)
    expect(childLines[0]).toMatchObject({ type: 'run_start', workflow: 'doubler', runId: 'p1', executionId: 'child-1-a1', parentRunId: 'p1', parentExecutionId: 'p1', parentCallId: 'child-1' })
    expect(childLines.at(-1)).toMatchObject({ type: 'run_end', disposition: 'completed' })
    expect(JSON.parse(readFileSync(join(nested, 'result.json'), 'utf8'))).toMatchObject({ executionId: 'child-1-a1', disposition: 'completed' })
    expect(readFileSync(join(nested, 'outputs', 'README.md'), 'utf8')).toContain('- Parent run: `p1`')
    expect(readme).toContain('| `child-1` | `doubler` | 1/1 | completed | `child-1-a1` | double it |')
    // The root listing of the store shows the child as an execution of the run, of kind child.
    const executions = await createFileRunStore(runsDir).listExecutions('p1')
    expect(executions.map((execution) => [execution.executionId, execution.kind])).toEqual([
      ['p1', 'root'],
      ['child-1-a1', 'child'],
    ])
  })

  it('fails the spawn with ChildWorkflowError when the child returns partial: true, and a parallel() barrier sees it like any failed call', async () => {
    const partialChild = defineWorkflow({ name: 'half-done', run: async () => ({ ok: true, partial: true, found: ['a'] }) })
    const fine = defineWorkflow({ name: 'fine', run: async () => ({ ok: true }) })
    let caught: unknown
    const parent = defineWorkflow({
      name: 'parent',
      async run({ spawn, parallel }) {
        try {
          await spawn(partialChild, null)
        } catch (error) {
          caught = error
        }
        return parallel([() => spawn(fine, null), () => spawn(partialChild, null)])
      },
    })
    const run = await runWorkflowScript(parent, { runsDir: tempRunsDir(), runId: 'p2' })
    expect(ChildWorkflowError.isInstance(caught)).toBe(true)
    expect(caught).toMatchObject({ code: 'CHILD_WORKFLOW_FAILED', workflow: 'half-done', disposition: 'failed', result: { ok: true, partial: true, found: ['a'] }, stopReason: 'exhausted' })
    expect(run.disposition).toBe('failed')
    expect(run.error?.code).toBe('WORKFLOW_GROUP_FAILURE')
    expect(run.result).toMatchObject({ ok: false, total: 2, completed: 1, failed: 1 })
    const { lines, readme } = readRun(run)
    const ends = linesOfType(lines, 'child_end').map((line) => [line.workflow, line.status, line.disposition])
    expect(ends[0]).toEqual(['half-done', 'failed', 'failed'])
    // The two children of the parallel() group run at once: which ends first is up to the store's writes.
    expect(ends.slice(1)).toEqual(expect.arrayContaining([
      ['fine', 'completed', 'completed'],
      ['half-done', 'failed', 'failed'],
    ]))
    expect(ends).toHaveLength(3)
    expect(readme).toContain('**failed** (partial result)')
    // The child judged itself the same way: its own run is failed.
    const nested = executionLines(childDir(run.runDir, 'child-1-a1'))
    expect(nested.at(-1)).toMatchObject({ type: 'run_end', disposition: 'failed', ok: false })
  })

  it('spawns a workflow registered with the runtime by name, and names the known ones for an unknown name', async () => {
    const counter = { runs: 0 }
    const parent = defineWorkflow({
      name: 'by-name',
      async run({ spawn, input }) {
        return { ok: true, value: await spawn(String(input), { n: 2 }) }
      },
    })
    const runtime = createRuntime({ runsDir: tempRunsDir(), workflows: [parent, doubler(counter)] })
    const found = await (await runtime.start('by-name', { input: 'doubler' })).done
    expect(found).toMatchObject({ disposition: 'completed', result: { ok: true, value: { ok: true, doubled: 4 } } })
    const missing = await (await runtime.start('by-name', { input: 'tripler' })).done
    expect(missing.error).toMatchObject({ code: 'UNKNOWN_WORKFLOW' })
    expect(missing.error?.message).toContain('no workflow named "tripler"')
    expect(missing.error?.message).toContain('Registered: by-name, doubler.')
  })

  it("refuses a child's invalid input before anything is spawned, naming the field", async () => {
    const parent = defineWorkflow({ name: 'bad-input', run: async ({ spawn }) => spawn(doubler({ runs: 0 }), { n: 'two' } as never) })
    const run = await runWorkflowScript(parent, { runsDir: tempRunsDir() })
    expect(run.error).toMatchObject({ code: 'WORKFLOW_INPUT_INVALID' })
    expect(run.error?.message).toContain('child workflow "doubler"')
    expect(run.error?.message).toContain('n')
    expect(linesOfType(readRun(run).lines, 'child_start')).toEqual([])
  })

  it('refuses spawn() options it does not know, and a bad retry policy, naming the field', async () => {
    const child = doubler({ runs: 0 })
    const typo = await runWorkflowScript(defineWorkflow({ name: 'typo', run: async ({ spawn }) => spawn(child, { n: 1 }, { retries: 3 } as never) }), { runsDir: tempRunsDir() })
    expect(typo.error).toMatchObject({ code: 'RUN_OPTIONS_INVALID' })
    expect(typo.error?.message).toContain('retries: not a spawn() option')
    const badPolicy = { timeout_secs: null, max_retries: 0, backoff_base_secs: 1, backoff_max_secs: 1 }
    const policy = await runWorkflowScript(defineWorkflow({ name: 'bad-policy', run: async ({ spawn }) => spawn(child, { n: 1 }, { retry: badPolicy }) }), { runsDir: tempRunsDir() })
    expect(policy.error).toMatchObject({ code: 'RETRY_POLICY_INVALID' })
    expect(policy.error?.message).toContain('max_retries')
  })

  it('retries a failed child only under a policy, each attempt a new child execution, with a child retry line', async () => {
    const flaky = { runs: 0 }
    const child = defineWorkflow({
      name: 'flaky',
      async run() {
        flaky.runs += 1
        return flaky.runs < 2 ? { ok: false, reason: 'not yet' } : { ok: true }
      },
    })
    const once = await runWorkflowScript(defineWorkflow({ name: 'once', run: async ({ spawn }) => spawn(child, null) }), { runsDir: tempRunsDir() })
    expect(once.disposition).toBe('failed')
    expect(flaky.runs).toBe(1)

    flaky.runs = 0
    const retry = { timeout_secs: null, max_retries: 2, backoff_base_secs: 0, backoff_max_secs: 0 }
    const run = await runWorkflowScript(defineWorkflow({ name: 'twice', run: async ({ spawn }) => spawn(child, null, { retry }) }), { runsDir: tempRunsDir() })
    expect(run).toMatchObject({ disposition: 'completed', result: { ok: true } })
    const { lines, readme } = readRun(run)
    expect(linesOfType(lines, 'child_end').map((line) => [line.childExecutionId, line.disposition])).toEqual([
      ['child-1-a1', 'failed'],
      ['child-1-a2', 'completed'],
    ])
    expect(linesOfType(lines, 'retry')).toMatchObject([{ kind: 'child', callId: 'child-1', fromAttempt: 1, toAttempt: 2, attempts: 2 }])
    expect(existsSync(join(childDir(run.runDir, 'child-1-a1'), 'result.json'))).toBe(true)
    expect(readme).toContain('- Child workflows: 1 (2 attempts, 1 retry); 1 completed, 0 failed, 0 unfinished')
  })

  it("inherits the root's launch mode for its per-call budget defaults", async () => {
    const child = defineWorkflow({ name: 'leaf', run: async () => ({ ok: true }) })
    const run = await runWorkflowScript(defineWorkflow({ name: 'root', run: async ({ spawn }) => spawn(child, null) }), { runsDir: tempRunsDir(), launchMode: 'background' })
    const [start] = executionLines(childDir(run.runDir, 'child-1-a1'))
    expect(start).toMatchObject({ type: 'run_start', options: { launchMode: 'background', budgets: { perCall: { ...LAUNCH_MODE_BUDGETS.background } } } })
  })

  it("charges a child's agent attempts to the root's invocation cap: the child exhausts it and the root stops, unwrapped", async () => {
    const child = defineWorkflow({
      name: 'chatty',
      async run({ agent }) {
        await agent('one')
        await agent('two')
        return { ok: true }
      },
    })
    const afterSpawn = { reached: false }
    const parent = defineWorkflow({
      name: 'capped',
      async run({ agent, spawn }) {
        await agent('parent asks first')
        await spawn(child, null)
        afterSpawn.reached = true
        return { ok: true }
      },
    })
    const run = await runWorkflowScript(parent, { runsDir: tempRunsDir(), host, budgets: { maxTotalAgentInvocations: 2 } })
    expect(run.disposition).toBe('failed')
    expect(run.error).toMatchObject({ code: 'WORKFLOW_INVOCATION_CAP' })
    expect(afterSpawn.reached).toBe(false)
    const childLines = executionLines(childDir(run.runDir, 'child-2-a1'))
    // One attempt in the parent and one in the child: the child's second call is the third of the root.
    expect(linesOfType(readRun(run).lines, 'agent_start')).toHaveLength(1)
    expect(linesOfType(childLines, 'agent_start')).toHaveLength(1)
    expect(childLines.at(-1)).toMatchObject({ type: 'run_end', disposition: 'failed', error: { code: 'WORKFLOW_INVOCATION_CAP' } })
    // The child's run_start says what bounded it: the root's host and cap.
    expect(childLines[0]).toMatchObject({ type: 'run_start', options: { host: 'scripted', budgets: { maxTotalAgentInvocations: 2 } } })
  })

  it("bounds a child by the root's deadline, measured from the root's start: the child's late call stops the whole run", async () => {
    const clock = createManualClock()
    const child = defineWorkflow({
      name: 'slow',
      async run({ agent }) {
        await clock.advance(1_500)
        await agent('too late')
        return { ok: true }
      },
    })
    const run = await runWorkflowScript(defineWorkflow({ name: 'hurried', run: async ({ spawn }) => spawn(child, null) }), {
      runsDir: tempRunsDir(),
      host,
      clock,
      budgets: { deadlineMs: 1_000 },
    })
    expect(run.error).toMatchObject({ code: 'WORKFLOW_RUN_DEADLINE' })
    expect(host.calls.some((call) => call.prompt === 'too late')).toBe(false)
  })

  it('times a spawn attempt out under its policy: the child is cancelled, and a timeout is retried as a new attempt', async () => {
    const clock = createManualClock()
    const seen: string[] = []
    const child = defineWorkflow({
      name: 'hangs-once',
      async run({ signal, runId }) {
        seen.push(runId)
        if (seen.length > 1) return { ok: true, attempt: seen.length }
        await new Promise((resolve) => { signal.addEventListener('abort', resolve, { once: true }); })
        return { ok: true, attempt: 1 }
      },
    })
    const retry = { timeout_secs: 5, max_retries: 2, backoff_base_secs: 0, backoff_max_secs: 0 }
    const handle = await startWorkflowRun(defineWorkflow({ name: 'patient', run: async ({ spawn }) => spawn(child, null, { retry }) }), { runsDir: tempRunsDir(), clock })
    while (seen.length === 0) await new Promise((resolve) => setImmediate(resolve))
    await clock.advance(5_000)
    const run = await handle.done
    expect(run.result).toEqual({ ok: true, attempt: 2 })
    const lines = readRun(run).lines
    expect(linesOfType(lines, 'child_end').map((line) => [line.attempt, line.status, line.failure?.code])).toEqual([
      [1, 'timed-out', 'deadline_exceeded'],
      [2, 'completed', undefined],
    ])
    // The abandoned child still ends on its own, cancelled, in its own journal.
    const abandoned = executionLines(childDir(run.runDir, 'child-1-a1'))
    expect(abandoned.at(-1)).toMatchObject({ type: 'run_end', disposition: 'cancelled' })
  })

  it("opens a child's deferrals under ids of its own, answered through the root's handle", async () => {
    const approve = defineDeferredTool({ input: z.object({ amount: z.number() }), output: z.object({ approved: z.boolean() }) })
    const child = defineWorkflow({ name: 'asks', tools: { approve }, run: async ({ tool }) => ({ ok: true, answer: await tool('approve', { amount: 5 }) }) })
    const handle = await startWorkflowRun(defineWorkflow({ name: 'waits', run: async ({ spawn }) => spawn(child, null) }), { runsDir: tempRunsDir() })
    while (handle.pendingDeferrals().length === 0) await new Promise((resolve) => setImmediate(resolve))
    expect(handle.pendingDeferrals()).toEqual(['child-1-a1.tool-1-a1'])
    expect(handle.resolveDeferred('child-1-a1.tool-1-a1', { approved: true })).toMatchObject({ ok: true })
    expect((await handle.done).result).toEqual({ ok: true, answer: { approved: true } })
  })

  it('runs in a memory store too: the child is an execution of kind child of the same run', async () => {
    const store = createMemoryRunStore()
    const counter = { runs: 0 }
    const run = await runWorkflowScript(defineWorkflow({ name: 'in-memory', run: async ({ spawn }) => ({ ok: true, value: await spawn(doubler(counter), { n: 1 }) }) }), { store, runId: 'm1' })
    expect(run.result).toEqual({ ok: true, value: { ok: true, doubled: 2 } })
    const executions = await store.listExecutions('m1')
    expect(executions.map((execution) => [execution.executionId, execution.kind])).toEqual([
      ['m1', 'root'],
      ['child-1-a1', 'child'],
    ])
  })
})

describe('spawn() on resume', () => {
  it("serves a spawn whose child_end was written from the journal: the child's script does not run again", async () => {
    const runsDir = tempRunsDir()
    const counter = { runs: 0 }
    const child = doubler(counter)
    const parent = defineWorkflow({
      name: 'then-ask',
      async run({ spawn, agent }) {
        const value = await spawn(child, { n: 5 })
        const { answer } = await agent('summarise')
        return { ok: true, value, answer }
      },
    })
    const first = await runWorkflowScript(parent, { runsDir, runId: 'r1' })
    expect(first.disposition).toBe('failed')
    expect(counter.runs).toBe(1)
    const resumed = await resumeRun('r1', parent, { runsDir, host })
    expect(resumed).toMatchObject({ disposition: 'completed', result: { ok: true, value: { ok: true, doubled: 10 }, answer: 'an answer' } })
    expect(counter.runs).toBe(1)
    const lines = executionLines(resumed.executionDir)
    expect(linesOfType(lines, 'child_end')).toMatchObject([{ replayed: true, childExecutionId: 'child-1-a1', result: { ok: true, doubled: 10 } }])
    expect(readFileSync(join(resumed.executionDir, 'outputs', 'README.md'), 'utf8')).toContain('| `child-1` | `doubler` | 1/1 | completed (replayed) | `child-1-a1` |')
  })

  it('resumes a run kept in a memory store the same way: the completed spawn replays, the child does not run again', async () => {
    const store = createMemoryRunStore()
    const counter = { runs: 0 }
    const child = doubler(counter)
    const parent = defineWorkflow({
      name: 'then-ask-in-memory',
      async run({ spawn, agent }) {
        const value = await spawn(child, { n: 6 })
        return { ok: true, value, answer: (await agent('summarise')).answer }
      },
    })
    expect((await runWorkflowScript(parent, { store, runId: 'm2' })).disposition).toBe('failed')
    const resumed = await resumeRun('m2', parent, { store, host })
    expect(resumed.result).toEqual({ ok: true, value: { ok: true, doubled: 12 }, answer: 'an answer' })
    expect(counter.runs).toBe(1)
    expect((await store.listExecutions('m2')).filter((execution) => execution.kind === 'child').map((execution) => execution.executionId)).toEqual(['child-1-a1'])
  })

  it('replays a finished run with children identically, without running a child, and names the input that changed', async () => {
    const runsDir = tempRunsDir()
    const counter = { runs: 0 }
    const child = doubler(counter)
    const parent = defineWorkflow({ name: 'fan', input: z.number(), run: async ({ spawn, input }) => ({ ok: true, value: await spawn(child, { n: input }) }) })
    await runWorkflowScript(parent, { runsDir, runId: 'r3', input: 4 })
    const same = await replayRun('r3', parent, { runsDir })
    expect(same.ok).toBe(true)
    expect(counter.runs).toBe(1)
    const changed = await replayRun('r3', parent, { runsDir, input: 5 })
    expect(changed.divergence).toMatchObject({ ordinal: '1', fields: ['input'] })
  })

  it('spawns a child that was still running when the parent stopped again, as its next attempt in a new execution', async () => {
    const runsDir = tempRunsDir()
    const counter = { runs: 0 }
    const parent = defineWorkflow({ name: 'crashy', run: async ({ spawn }) => ({ ok: true, value: await spawn(doubler(counter), { n: 3 }) }) })
    const first = await runWorkflowScript(parent, { runsDir, runId: 'r2' })
    // The journal is append-only, so a crash leaves a prefix: keep it up to the spawn's start, as if the process died there.
    const journalPath = join(first.runDir, 'journal.jsonl')
    const kept = readFileSync(journalPath, 'utf8').split('\n').filter((line) => line !== '')
    const upTo = kept.findIndex((line) => line.includes('"type":"child_start"'))
    writeFileSync(journalPath, kept.slice(0, upTo + 1).join('\n') + '\n')
    rmSync(join(first.runDir, 'result.json'))
    const resumed = await resumeRun('r2', parent, { runsDir })
    expect(resumed.result).toEqual({ ok: true, value: { ok: true, doubled: 6 } })
    expect(counter.runs).toBe(2)
    expect(linesOfType(executionLines(resumed.executionDir), 'child_start')).toMatchObject([{ attempt: 2, childExecutionId: 'child-1-a2' }])
    expect(existsSync(join(childDir(first.runDir, 'child-1-a2'), 'result.json'))).toBe(true)
  })
})

/** Every surface of one execution: what it returned, its result.json, its run_end, its README and its view. */
function surfaces(executionDir: string) {
  const lines = executionLines(executionDir)
  const view = createRunView()
  for (const line of lines) view.apply(line)
  return {
    lines,
    view,
    resultFile: JSON.parse(readFileSync(join(executionDir, 'result.json'), 'utf8')) as { disposition: string; ok: boolean; result: JsonValue },
    readme: readFileSync(join(executionDir, 'outputs', 'README.md'), 'utf8'),
  }
}

describe('a child workflow whose own child fails', () => {
  it('agrees on dispositions and counts on every surface, at every level', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('throws', 'ok-false', 'partial'), fc.boolean(), async (how, middleCatches) => {
        const grandchild: WorkflowDefinition = defineWorkflow({
          name: 'grandchild',
          async run() {
            if (how === 'throws') throw new Error('the lookup broke')
            return how === 'ok-false' ? { ok: false } : { ok: true, partial: true }
          },
        })
        const middle = defineWorkflow({
          name: 'middle',
          async run({ spawn }) {
            if (!middleCatches) return spawn(grandchild, null)
            try {
              return await spawn(grandchild, null)
            } catch (error) {
              return { ok: true, partial: true, gap: ChildWorkflowError.isInstance(error) ? error.workflow : 'unknown' }
            }
          },
        })
        const root = defineWorkflow({ name: 'root', run: async ({ spawn }) => ({ ok: true, value: await spawn(middle, null) }) })
        const runsDir = tempRunsDir()
        const run = await runWorkflowScript(root, { runsDir, runId: 'nested' })

        const top = surfaces(run.executionDir)
        const mid = surfaces(childDir(run.runDir, 'child-1-a1'))
        const leaf = surfaces(childDir(run.runDir, 'child-1-a1.1-a1'))
        expect(leaf.lines[0]).toMatchObject({ type: 'run_start', parentExecutionId: 'child-1-a1', parentCallId: 'child-1' })
        for (const [level, surface, disposition] of [
          ['root', top, run.disposition],
          ['middle', mid, undefined],
          ['grandchild', leaf, undefined],
        ] as const) {
          const runEnd = linesOfType(surface.lines, 'run_end')[0]
          expect(runEnd?.disposition, level).toBe('failed')
          expect(surface.resultFile.disposition, level).toBe('failed')
          expect(surface.resultFile.ok, level).toBe(false)
          expect(surface.view.disposition, level).toBe('failed')
          expect(surface.readme, level).toContain('- Disposition: **failed**')
          if (disposition !== undefined) expect(disposition).toBe('failed')
        }
        // Each parent lists its one child, failed, with the disposition the child's own run_end records.
        for (const [parentSurface, childSurface, name] of [
          [top, mid, 'middle'],
          [mid, leaf, 'grandchild'],
        ] as const) {
          expect(parentSurface.view.counts).toMatchObject({ childCalls: 1, childAttempts: 1, childCompleted: 0, childFailed: 1 })
          const [end] = linesOfType(parentSurface.lines, 'child_end')
          expect(end?.disposition).toBe(linesOfType(childSurface.lines, 'run_end')[0]?.disposition)
          expect(end?.result).toEqual(childSurface.resultFile.result)
          expect(parentSurface.readme).toContain(`| \`child-1\` | \`${name}\` | 1/1 | **failed**`)
          expect(parentSurface.readme).toContain('- Child workflows: 1 (1 attempt, 0 retries); 0 completed, 1 failed, 0 unfinished')
          expect(renderOutputsReadme(parentSurface.view)).toBe(parentSurface.readme)
        }
        // A middle that caught its child's failure still answers partially, which is no success either.
        if (middleCatches) expect(classifyOutcome(mid.resultFile.result).reasons).toContain('partial')
        // The stored run lists the same children with the same dispositions.
        const stored = await readStoredRun(createFileRunStore(runsDir), 'nested')
        expect(stored.children.map((execution) => [execution.info.executionId, execution.view.disposition])).toEqual([
          ['child-1-a1', 'failed'],
          ['child-1-a1.1-a1', 'failed'],
        ])
        expect(stored.latest.summary.childCalls).toBe(1)
        expect(stored.latest.summary.childFailed).toBe(1)
      }),
      { numRuns: 6 },
    )
  })
})
