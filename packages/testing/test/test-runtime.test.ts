import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { type JournalLine, readJournal } from '@locus/journal'
import { createFileRunStore } from '@locus/store'
import { CallError, type RunHandle, createScriptedHost, RuntimeInputError, defineDeferredTool, defineTool, defineWorkflow } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { TEST_CLOCK_START, type TestRuntime, crashAt, createTestRuntime } from '../src/index.js'

const DAY = 86_400_000

/** Thirty days in three sleeps, two approvals from outside, and a tool on each side; every tool counts its own runs. */
function monthLongWorkflow() {
  const ran = { open: 0, close: 0 }
  const workflow = defineWorkflow({
    name: 'month-long',
    input: z.object({ invoice: z.string() }),
    tools: {
      open: defineTool({ input: z.object({ invoice: z.string() }), run: ({ invoice }) => ({ opened: invoice, n: ++ran.open }) }),
      approve: defineDeferredTool({ input: z.object({ step: z.number() }), output: z.object({ by: z.string() }) }),
      close: defineTool({ input: z.object({ approvers: z.array(z.string()) }), run: ({ approvers }) => ({ closed: approvers.join('+'), n: ++ran.close }) }),
    },
    async run({ input, tool, sleep }) {
      const opened = await tool('open', { invoice: input.invoice })
      await sleep('10d')
      const first = await tool('approve', { step: 1 })
      await sleep('10d')
      const second = await tool('approve', { step: 2 })
      await sleep('10d')
      const closed = await tool('close', { approvers: [first.by, second.by] })
      return { ok: true, opened: opened.opened, closed: closed.closed }
    },
  })
  return { workflow, ran }
}

const APPROVERS: Readonly<Record<string, string>> = { '1': 'ana', '2': 'bo' }

/** Drives a run to its end as a test would: runs until idle, answers each approval it waits on, again and again. */
async function driveToEnd(runtime: TestRuntime, handle: RunHandle): Promise<void> {
  for (let round = 0; round < 10; round += 1) {
    const idle = await runtime.runUntilIdle()
    const waiting = idle.waiting.find((run) => run.runId === handle.runId)
    if (waiting === undefined) return
    for (const deferral of waiting.deferrals) {
      const step = String((deferral.args as { step: number }).step)
      const outcome = await runtime.answerDeferred(handle.runId, deferral.deferredId, { kind: 'resolved', result: { by: APPROVERS[step] ?? 'nobody' } })
      expect(outcome.ok).toBe(true)
    }
  }
  throw new Error('the run did not end after 10 rounds')
}

async function linesOf(runtime: TestRuntime, runId: string): Promise<JournalLine[][]> {
  const executions: JournalLine[][] = []
  for (const info of await runtime.store.listExecutions(runId)) {
    const lines: JournalLine[] = []
    for await (const line of runtime.store.readLines(info)) lines.push(line)
    executions.push(lines)
  }
  return executions
}

const ordinalsOf = (lines: readonly JournalLine[]): string[] =>
  lines.flatMap((line) => (line.type === 'tool_start' || line.type === 'timer_start' ? [line.ordinal ?? ''] : [])).filter((ordinal, index, all) => all.indexOf(ordinal) === index)

describe('createTestRuntime', () => {
  it('runs thirty days of sleeps and two approvals to the end in well under a second, reporting each approval it waits on', async () => {
    const wall = performance.now()
    const { workflow, ran } = monthLongWorkflow()
    const runtime = createTestRuntime({ workflows: [workflow] })
    const handle = await runtime.start('month-long', { input: { invoice: 'INV-7' } })

    const first = await runtime.runUntilIdle()
    expect(first.advancedMs).toBe(10 * DAY)
    expect(first.now).toEqual(new Date(TEST_CLOCK_START + 10 * DAY))
    expect(first.waiting).toEqual([
      { runId: handle.runId, executionId: handle.executionId, deferrals: [expect.objectContaining({ tool: 'approve', args: { step: 1 }, expiresAt: null })] },
    ])
    // Idle means idle: nothing moves until the approval comes.
    expect(runtime.clock.pendingTimers()).toEqual([])
    expect((await runtime.runUntilIdle()).advancedMs).toBe(0)

    await driveToEnd(runtime, handle)
    const result = await handle.done
    expect(result).toMatchObject({ disposition: 'completed', result: { ok: true, opened: 'INV-7', closed: 'ana+bo' } })
    expect(runtime.clock.now()).toBe(TEST_CLOCK_START + 30 * DAY)
    expect(ran).toEqual({ open: 1, close: 1 })
    const [lines = []] = await linesOf(runtime, handle.runId)
    const fired = lines.filter((line) => line.type === 'timer_fired')
    expect(fired.map((line) => line.firedAt)).toEqual([10, 20, 30].map((days) => new Date(TEST_CLOCK_START + days * DAY).toISOString()))
    // The journal's own stamps are on the virtual clock too.
    expect(lines.at(-1)?.ts).toBe(new Date(TEST_CLOCK_START + 30 * DAY).toISOString())
    expect(performance.now() - wall).toBeLessThan(1_000)
    // A replay serves every timer and answer from the journal: it waits for nothing.
    const replayed = await runtime.replay(handle.runId)
    expect((await replayed.done).result).toEqual(result.result)
    expect(runtime.clock.now()).toBe(TEST_CLOCK_START + 30 * DAY)
  })

  it('clock.advance fires only what is due by then, in order', async () => {
    const order: string[] = []
    const workflow = defineWorkflow({
      name: 'two-sleepers',
      async run({ sleep, parallel }) {
        await parallel([
          async () => {
            await sleep('3h')
            order.push('3h')
          },
          async () => {
            await sleep('1h')
            order.push('1h')
          },
        ])
        return { ok: true }
      },
    })
    const runtime = createTestRuntime({ workflows: [workflow] })
    const handle = await runtime.start('two-sleepers')
    await runtime.clock.advance('59m')
    expect(order).toEqual([])
    await runtime.clock.advance('1m')
    expect(order).toEqual(['1h'])
    await runtime.clock.advance(2 * 3_600_000)
    expect(order).toEqual(['1h', '3h'])
    expect((await handle.done).disposition).toBe('completed')
  })

  it('drives retry backoff and deferral expiry on the same clock', async () => {
    let attempts = 0
    const workflow = defineWorkflow({
      name: 'backoff-and-expiry',
      tools: {
        flaky: defineTool({
          input: z.object({}),
          retry: { timeout_secs: null, max_retries: 3, backoff_base_secs: 60, backoff_max_secs: 60 },
          run: () => {
            attempts += 1
            if (attempts < 3) throw new CallError('busy', { retryable: true })
            return { attempts }
          },
        }),
        approve: defineDeferredTool({ input: z.object({}), output: z.object({ ok: z.boolean() }), retry: { timeout_secs: 3_600, max_retries: 1, backoff_base_secs: 0, backoff_max_secs: 0 } }),
      },
      async run({ tool }) {
        const flaky = await tool('flaky', {})
        try {
          await tool('approve', {})
        } catch {
          return { ok: true, attempts: flaky.attempts, approval: 'expired' }
        }
        return { ok: true, attempts: flaky.attempts, approval: 'given' }
      },
    })
    const runtime = createTestRuntime({ workflows: [workflow] })
    const handle = await runtime.start('backoff-and-expiry')
    const idle = await runtime.runUntilIdle()
    expect(idle.waiting).toEqual([])
    expect(await handle.done).toMatchObject({ disposition: 'completed', result: { attempts: 3, approval: 'expired' } })
    // Two backoffs of a minute, then the deferral's hour.
    expect(idle.advancedMs).toBe(2 * 60_000 + 3_600_000)
  })

  it("gives a host the same clock: an agent call's timeout and the host's delay take virtual time only", async () => {
    const workflow = defineWorkflow({
      name: 'slow-model',
      async run({ agent }) {
        const first = await agent('summarise', { timeoutMs: 60_000, attempts: 2 })
        return { ok: true, answer: first.answer }
      },
    })
    const runtime = createTestRuntime({
      workflows: [workflow],
      host: (clock) => createScriptedHost({ clock, rules: [{ steps: [{ hang: true }, { text: 'summary', delayMs: 30_000 }] }] }),
    })
    const wall = performance.now()
    const handle = await runtime.start('slow-model')
    const idle = await runtime.runUntilIdle()
    expect(await handle.done).toMatchObject({ disposition: 'completed', result: { answer: 'summary' } })
    // The first child hung until its 60 s fuse; the second answered after 30 s.
    expect(idle.advancedMs).toBe(90_000)
    expect(performance.now() - wall).toBeLessThan(1_000)
  })

  it("reads the run deadline on the same clock: a sleep past it is refused at the virtual time it would start", async () => {
    const workflow = defineWorkflow({
      name: 'past-deadline',
      async run({ sleep }) {
        await sleep('20h')
        await sleep('5h')
        return { ok: true }
      },
    })
    const runtime = createTestRuntime({ workflows: [workflow] })
    const handle = await runtime.start('past-deadline', { budgets: { deadlineMs: DAY } })
    const idle = await runtime.runUntilIdle()
    const result = await handle.done
    expect(result.disposition).toBe('failed')
    expect(result.error?.code).toBe('WORKFLOW_RUN_DEADLINE')
    expect(idle.advancedMs).toBe(20 * 3_600_000)
  })

  it("reports a child run's deferral as what its root waits on, and drives the child's sleep", async () => {
    const child = defineWorkflow({
      name: 'child-approval',
      tools: { approve: defineDeferredTool({ input: z.object({}), output: z.object({ by: z.string() }) }) },
      async run({ tool, sleep }) {
        await sleep('2d')
        return { ok: true, by: (await tool('approve', {})).by }
      },
    })
    const parent = defineWorkflow({
      name: 'parent',
      async run({ spawn }) {
        const spawned = await spawn(child, {})
        return { ok: true, child: spawned }
      },
    })
    const runtime = createTestRuntime({ workflows: [parent, child] })
    const handle = await runtime.start('parent')
    const idle = await runtime.runUntilIdle()
    expect(idle.advancedMs).toBe(2 * DAY)
    expect(idle.waiting).toEqual([{ runId: handle.runId, executionId: handle.executionId, deferrals: [expect.objectContaining({ tool: 'approve' })] }])
    const [deferral] = idle.waiting[0]?.deferrals ?? []
    expect((await runtime.answerDeferred(handle.runId, deferral?.deferredId ?? '', { kind: 'resolved', result: { by: 'cy' } })).ok).toBe(true)
    await runtime.runUntilIdle()
    expect(await handle.done).toMatchObject({ disposition: 'completed', result: { child: expect.objectContaining({ by: 'cy' }) } })
  })

  it('refuses a duration it cannot read, naming it and the forms it takes', async () => {
    const runtime = createTestRuntime({ workflows: [] })
    await expect(runtime.clock.advance('a week')).rejects.toThrow(RuntimeInputError)
    await expect(runtime.clock.advance('a week')).rejects.toThrow(/"a week".*500ms, 30s/)
    await expect(runtime.clock.advance(-1)).rejects.toThrow(/0 or more/)
    expect(() => crashAt({ ordinal: 0 })).toThrow(/whole number from 1/)
  })
})

describe('crashAt', () => {
  it('at every call of the month-long workflow, the run resumes to the same result, and no finished tool runs again', async () => {
    const baseline = monthLongWorkflow()
    const clean = createTestRuntime({ workflows: [baseline.workflow] })
    const cleanHandle = await clean.start('month-long', { input: { invoice: 'INV-7' } })
    await driveToEnd(clean, cleanHandle)
    const expected = await cleanHandle.done
    const [cleanLines = []] = await linesOf(clean, cleanHandle.runId)
    const ordinals = ordinalsOf(cleanLines)
    // open, sleep, approve, sleep, approve, sleep, close
    expect(ordinals).toEqual(['1', '2', '3', '4', '5', '6', '7'])

    for (const ordinal of ordinals) {
      const { workflow, ran } = monthLongWorkflow()
      const runtime = createTestRuntime({ workflows: [workflow] })
      const killed = await runtime.start('month-long', { input: { invoice: 'INV-7' }, crashAt: crashAt({ ordinal }) })
      await driveToEnd(runtime, killed)
      const stopped = await killed.done
      expect(stopped.suspended, `ordinal ${ordinal}`).toBe(true)
      const [killedLines = []] = await linesOf(runtime, killed.runId)
      // As a SIGKILL leaves it: the journal ends on the call's start line, with no run_end and no word of a suspend.
      expect(killedLines.at(-1), `ordinal ${ordinal}`).toMatchObject({ ordinal })
      expect(killedLines.some((line) => line.type === 'run_end' || line.type === 'log')).toBe(false)
      expect(await runtime.store.readArtifact({ runId: killed.runId, executionId: killed.executionId }, 'result.json')).toBeUndefined()

      const resumed = await runtime.resume(killed.runId)
      await driveToEnd(runtime, resumed)
      const result = await resumed.done
      expect(result.result, `ordinal ${ordinal}`).toEqual(expected.result)
      expect(ran, `ordinal ${ordinal}`).toEqual({ open: 1, close: 1 })
      expect(runtime.clock.now(), `ordinal ${ordinal}`).toBe(TEST_CLOCK_START + 30 * DAY)
    }
  })

  it('on the real file store, leaves the journal file ending on the crash line, with no result, and resumes from it', async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'locus-testing-'))
    try {
      const { workflow, ran } = monthLongWorkflow()
      const runtime = createTestRuntime({ workflows: [workflow], store: createFileRunStore(runsDir) })
      const killed = await runtime.start('month-long', { input: { invoice: 'INV-9' }, runId: 'inv-9', crashAt: crashAt({ ordinal: 7 }) })
      await driveToEnd(runtime, killed)
      expect((await killed.done).suspended).toBe(true)
      const journal = readJournal(join(runsDir, 'inv-9', 'journal.jsonl'))
      expect(journal.tornTail).toBeNull()
      expect(journal.lines.at(-1)).toMatchObject({ type: 'tool_start', tool: 'close', ordinal: '7' })
      expect(existsSync(join(runsDir, 'inv-9', 'result.json'))).toBe(false)
      expect(ran).toEqual({ open: 1, close: 0 })

      const resumed = await runtime.resume('inv-9')
      await runtime.runUntilIdle()
      const result = await resumed.done
      expect(result).toMatchObject({ disposition: 'completed', result: { closed: 'ana+bo' } })
      expect(ran).toEqual({ open: 1, close: 1 })
      // The resume writes its own result, in its own execution.
      expect(existsSync(join(result.executionDir, 'result.json'))).toBe(true)
    } finally {
      rmSync(runsDir, { recursive: true, force: true })
    }
  })

  it('kills a resume too, and the run goes on from the next one', async () => {
    const { workflow, ran } = monthLongWorkflow()
    const runtime = createTestRuntime({ workflows: [workflow] })
    const first = await runtime.start('month-long', { input: { invoice: 'INV-8' }, runId: 'inv-8', crashAt: crashAt({ ordinal: 2 }) })
    expect((await first.done).suspended).toBe(true)
    const second = await runtime.resume('inv-8', { crashAt: crashAt({ ordinal: 4 }) })
    await driveToEnd(runtime, second)
    expect((await second.done).suspended).toBe(true)
    const third = await runtime.resume('inv-8')
    await driveToEnd(runtime, third)
    expect(await third.done).toMatchObject({ disposition: 'completed', result: { closed: 'ana+bo' } })
    expect(ran).toEqual({ open: 1, close: 1 })
  })
})
