/**
 * Workload 2, journaled sequential calls: tool calls one after another, each
 * attempt durably recorded (a start line and an end line, fsync every 1000
 * lines); one call in `failEvery` fails retryably once and is retried at once.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Annotation, END, MemorySaver, START, StateGraph } from '@langchain/langgraph'
import { defineTool, defineWorkflow, runWorkflowScript } from '@locus/runtime'
import { type RunStore, createMemoryRunStore } from '@locus/store'
import { Effect, Either } from 'effect'
import { z } from 'zod'
import { type FlakyTool, type ToolValue, createFlakyTool, isRetryable } from '../flaky-tool.js'
import { MAX_ATTEMPTS, RETRY_ONCE_AT_ONCE } from '../locus-policy.js'
import { mastraNotMeasured } from '../mastra.js'
import { RAW_BATCH_LINES, RawJournal, journaledAttempt } from '../raw-journal.js'
import { retryByHand } from '../retry-by-hand.js'
import type { ItemFailure, Tally } from '../tally.js'
import type { Workload } from '../workload.js'
import { expectedFanOut } from './fan-out.js'

export interface JournaledCallsSize {
  readonly calls: number
  /** @default 100 */
  readonly failEvery?: number
}

export const JOURNALED_LOCUS = 'Locus tool() in a run, durability batch'
export const JOURNALED_FLOOR = 'raw: writeSync + fsync every 1000 lines'
export const JOURNALED_MEMORY = 'Locus tool() in a run, memory store'

const TOOL_NAME = 'work'

/** Builds the journaled-calls workload for every system. */
export function createJournaledCallsWorkload(size: JournaledCallsSize): Workload {
  const { calls } = size
  const failEvery = size.failEvery ?? 100
  const indices = Array.from({ length: calls }, (_, index) => index)
  let scratch = ''
  let fileCounter = 0
  const nextJournalPath = (): string => {
    fileCounter += 1
    return join(scratch, `journal-${fileCounter}.jsonl`)
  }

  let runtimeTool: FlakyTool = createFlakyTool(calls, failEvery)
  const workflow = defineWorkflow({
    name: 'bench-journaled-calls',
    tools: {
      [TOOL_NAME]: defineTool({ input: z.object({ index: z.number().int() }), retry: RETRY_ONCE_AT_ONCE, run: ({ index }) => runtimeTool.call(index) }),
    },
    run: async ({ tool }) => {
      let succeeded = 0
      let checksum = 0
      const failures: ItemFailure[] = []
      for (const index of indices) {
        try {
          const value: ToolValue = await tool(TOOL_NAME, { index })
          succeeded += 1
          checksum += value.value
        } catch {
          failures.push({ index, stage: 0 })
        }
      }
      return { ok: true, succeeded, checksum, failures }
    },
  })

  // LangGraph: one node that makes one call per superstep and loops back to
  // itself; MemorySaver checkpoints every step, in memory.
  const CallState = Annotation.Root({
    next: Annotation<number>,
    succeeded: Annotation<number>,
    checksum: Annotation<number>,
  })
  let graphTool: FlakyTool = createFlakyTool(calls, failEvery)
  const builder = new StateGraph(CallState)
    .addNode(
      'call',
      async (state: typeof CallState.State) => {
        const result = await graphTool.call(state.next)
        return { next: state.next + 1, succeeded: state.succeeded + 1, checksum: state.checksum + result.value }
      },
      { retryPolicy: { maxAttempts: MAX_ATTEMPTS, initialInterval: 0, jitter: false, logWarning: false, retryOn: isRetryable } },
    )
    .addEdge(START, 'call')
    .addConditionalEdges('call', (state: typeof CallState.State) => (state.next < calls ? 'call' : END))
  let threadCounter = 0

  /** One journaled run of the workflow, on the runs directory or in a store; the tally both Locus rows report. */
  const runLocus = async (where: { readonly runsDir: string } | { readonly store: RunStore }): Promise<Tally> => {
    runtimeTool = createFlakyTool(calls, failEvery)
    let retries = 0
    const run = await runWorkflowScript(workflow, {
      ...where,
      durability: 'batch',
      onEvent: (line) => {
        if (line.type === 'retry') retries += 1
      },
    })
    const result = run.result as unknown as { succeeded: number; checksum: number; failures: ItemFailure[] }
    return { succeeded: result.succeeded, failed: result.failures.length, retries, checksum: result.checksum, failures: result.failures }
  }
  return {
    id: 'journaled-calls',
    title: `Journaled calls: ${calls.toLocaleString('en-US')} sequential tool calls, each durably recorded`,
    description:
      `${calls.toLocaleString('en-US')} tool calls one after another. Each attempt is recorded before the next starts (a start line and an end line, ` +
      `written to the file at once, fsynced every ${RAW_BATCH_LINES} lines). One call in ${failEvery} fails retryably once and is retried at once. Figures are per call.`,
    items: calls,
    unit: 'call',
    expected: expectedFanOut(calls, failEvery),
    locusName: JOURNALED_LOCUS,
    setup: () => {
      scratch = mkdtempSync(join(tmpdir(), 'locus-compare-journal-'))
      return Promise.resolve()
    },
    teardown: () => {
      if (scratch !== '') rmSync(scratch, { recursive: true, force: true })
    },
    implementations: [
      {
        system: 'Locus',
        name: JOURNALED_LOCUS,
        note: '`runWorkflowScript` with `durability: \'batch\'`: zod-validated tool arguments, every line schema-checked, `tool_start`/`tool_end` per attempt and a `retry` line, written at once and fsynced every 1000 lines or 200 ms; `run_start`, `run_end`, `result.json` and `outputs/README.md` included.',
        run: () => runLocus({ runsDir: scratch }),
      },
      {
        system: 'Locus',
        name: JOURNALED_MEMORY,
        note: 'The same run through `createMemoryRunStore()` (a fresh one per run): the same validation, stamping and lines, kept in memory, and no file written.',
        run: () => runLocus({ store: createMemoryRunStore() }),
      },
      {
        system: 'raw floor',
        name: JOURNALED_FLOOR,
        note: 'Written by hand: `JSON.stringify` + `fs.writeSync` of the same start and end lines (and a retry line), `fs.fsyncSync` every 1000 lines, a hand-written retry loop. No validation.',
        run: async () => {
          const tool = createFlakyTool(calls, failEvery)
          const journal = new RawJournal(nextJournalPath(), 'raw')
          let succeeded = 0
          let checksum = 0
          let retries = 0
          const failures: ItemFailure[] = []
          try {
            for (const index of indices) {
              const where = { toolCallId: `tool-${index}`, tool: TOOL_NAME, maxAttempts: MAX_ATTEMPTS }
              let attempt = 0
              try {
                const value = await retryByHand(
                  () => {
                    attempt += 1
                    return journaledAttempt(journal, where, attempt, () => tool.call(index))
                  },
                  MAX_ATTEMPTS,
                  () => {
                    retries += 1
                    journal.append('retry', { kind: 'tool', callId: where.toolCallId, fromAttempt: attempt, toAttempt: attempt + 1 })
                  },
                )
                succeeded += 1
                checksum += value.value
              } catch {
                failures.push({ index, stage: 0 })
              }
            }
          } finally {
            journal.close()
          }
          return { succeeded, failed: failures.length, retries, checksum, failures }
        },
      },
      {
        system: 'Effect',
        name: 'Effect: same raw lines inside Effect',
        note: 'Effect has no journal of its own, so the same hand-written lines are written from inside the program: `Effect.acquireUseRelease` opens and closes the file, `Effect.forEach` runs the calls in sequence, `Effect.sync` writes each line, `Effect.retry({ times: 1, while: retryable })` retries.',
        run: async () => {
          const tool = createFlakyTool(calls, failEvery)
          let retries = 0
          const callWith = (journal: RawJournal, index: number) => {
            const where = { toolCallId: `tool-${index}`, tool: TOOL_NAME, maxAttempts: MAX_ATTEMPTS }
            let attempt = 0
            return Effect.suspend(() => {
              attempt += 1
              const current = attempt
              let startedAt = 0
              return Effect.sync(() => {
                startedAt = Date.now()
                journal.append('tool_start', { ...where, attempt: current })
              }).pipe(
                Effect.zipRight(Effect.tryPromise({ try: () => tool.call(index), catch: (error) => error })),
                Effect.tap(() =>
                  Effect.sync(() => {
                    journal.append('tool_end', { ...where, attempt: current, status: 'completed', durationMs: Date.now() - startedAt })
                  }),
                ),
                Effect.tapError((error) =>
                  Effect.sync(() => {
                    journal.append('tool_end', { ...where, attempt: current, status: 'failed', failure: { error: error instanceof Error ? error.message : String(error), retryable: isRetryable(error) }, durationMs: Date.now() - startedAt })
                    if (current < MAX_ATTEMPTS && isRetryable(error)) {
                      retries += 1
                      journal.append('retry', { kind: 'tool', callId: where.toolCallId, fromAttempt: current, toAttempt: current + 1 })
                    }
                  }),
                ),
              )
            }).pipe(Effect.retry({ times: MAX_ATTEMPTS - 1, while: isRetryable }), Effect.either)
          }
          const program = Effect.acquireUseRelease(
            Effect.sync(() => new RawJournal(nextJournalPath(), 'effect')),
            (journal) => Effect.forEach(indices, (index) => callWith(journal, index)),
            (journal) =>
              Effect.sync(() => {
                journal.close()
              }),
          )
          const outcomes = await Effect.runPromise(program)
          let succeeded = 0
          let checksum = 0
          const failures: ItemFailure[] = []
          outcomes.forEach((outcome, index) => {
            if (Either.isRight(outcome)) {
              succeeded += 1
              checksum += outcome.right.value
            } else {
              failures.push({ index, stage: 0 })
            }
          })
          return { succeeded, failed: failures.length, retries, checksum, failures } satisfies Tally
        },
      },
      {
        system: 'LangGraph.js',
        name: 'LangGraph step per call + MemorySaver (in memory)',
        note: 'One graph step per call: a node with `retryPolicy` that loops back to itself, compiled with a `MemorySaver` checkpointer that records every step. **In memory**: nothing reaches the disk, so this row is not durable and is cheaper than a durable journal would be. Retries are tool calls minus calls.',
        run: async () => {
          graphTool = createFlakyTool(calls, failEvery)
          threadCounter += 1
          const graph = builder.compile({ checkpointer: new MemorySaver() })
          const state = await graph.invoke(
            { next: 0, succeeded: 0, checksum: 0 },
            { configurable: { thread_id: `journaled-${threadCounter}` }, recursionLimit: calls + 10 },
          )
          return { succeeded: state.succeeded, failed: 0, retries: graphTool.calls() - calls, checksum: state.checksum, failures: [] }
        },
      },
      mastraNotMeasured(),
    ],
  }
}
