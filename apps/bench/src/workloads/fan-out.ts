/**
 * Workload 1, fan-out: instant asynchronous tool calls at concurrency 16,
 * each returning a small object; one in `failEvery` fails retryably once and
 * succeeds on the immediate retry. Every system collects every result (or
 * every failure, per slot) before it returns.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Annotation, END, Send, START, StateGraph } from '@langchain/langgraph'
import { WorkflowGroupFailureError, parallel } from '@locus/groups'
import { runWithRetry } from '@locus/retry'
import { defineTool, defineWorkflow, runWorkflowScript } from '@locus/runtime'
import { Effect, Either } from 'effect'
import { Effect as Effect4, Result as Result4 } from 'effect4'
import pLimit from 'p-limit'
import pRetry from 'p-retry'
import { z } from 'zod'
import { type FlakyTool, type ToolValue, createFlakyTool, failsOnce, isRetryable, toolValueOf } from '../flaky-tool.js'
import { CONCURRENCY, MAX_ATTEMPTS, RETRY_ONCE_AT_ONCE } from '../locus-policy.js'
import { appendInPlace } from '../langgraph-reducers.js'
import { mastraNotMeasured } from '../mastra.js'
import { retryByHand } from '../retry-by-hand.js'
import { type ItemFailure, type Tally, sortFailures } from '../tally.js'
import type { Workload } from '../workload.js'

/** Sizes of the fan-out workload. */
export interface FanOutSize {
  readonly tasks: number
  /** One item in this many fails once. @default 100 */
  readonly failEvery?: number
}

export const FAN_OUT_LOCUS = 'Locus parallel() + runWithRetry'
export const FAN_OUT_RUNTIME = 'Locus tool() in a journaled run'
export const FAN_OUT_FLOOR = 'raw: p-limit + allSettled + retry loop'
export const FAN_OUT_WORKERS = 'raw: 16 workers + retry loop'
export const FAN_OUT_EFFECT4 = 'Effect 4 forEach + retry'

/** What every implementation must report. */
export function expectedFanOut(tasks: number, failEvery: number): Tally {
  let retries = 0
  let checksum = 0
  for (let index = 0; index < tasks; index += 1) {
    if (failsOnce(index, failEvery)) retries += 1
    checksum += toolValueOf(index)
  }
  return { succeeded: tasks, failed: 0, retries, checksum, failures: [] }
}

function tallyValues(values: readonly (ToolValue | undefined)[], failures: readonly ItemFailure[], retries: number): Tally {
  let succeeded = 0
  let checksum = 0
  for (const value of values) {
    if (value === undefined) continue
    succeeded += 1
    checksum += value.value
  }
  return { succeeded, failed: failures.length, retries, checksum, failures: sortFailures(failures) }
}

function tallySettled(settled: readonly PromiseSettledResult<ToolValue>[], retries: number): Tally {
  const failures: ItemFailure[] = []
  const values = settled.map((result, index) => {
    if (result.status === 'fulfilled') return result.value
    failures.push({ index, stage: 0 })
    return undefined
  })
  return tallyValues(values, failures, retries)
}

/** Builds the fan-out workload for every system. */
export function createFanOutWorkload(size: FanOutSize): Workload {
  const { tasks } = size
  const failEvery = size.failEvery ?? 100
  const indices = Array.from({ length: tasks }, (_, index) => index)
  let runsDir = ''

  // The runtime's tool reads the tool of the current run, so each run starts fresh.
  let runtimeTool: FlakyTool = createFlakyTool(tasks, failEvery)
  const runtimeWorkflow = defineWorkflow({
    name: 'bench-fan-out',
    tools: {
      work: defineTool({ input: z.object({ index: z.number().int() }), retry: RETRY_ONCE_AT_ONCE, run: ({ index }) => runtimeTool.call(index) }),
    },
    run: async ({ tool, parallel: group }) => {
      try {
        const values: ToolValue[] = await group(indices.map((index) => () => tool('work', { index })), { concurrency: CONCURRENCY })
        return { ok: true, values: tallyValues(values, [], 0) }
      } catch (error) {
        if (!WorkflowGroupFailureError.isInstance(error)) throw error
        const values = error.slots.map((slot) => (slot.status === 'completed' ? (slot.value as ToolValue) : undefined))
        const failures = error.failures.map((failure) => ({ index: failure.index, stage: failure.stageIndex ?? 0 }))
        return { ok: false, partial: true, values: tallyValues(values, failures, 0) }
      }
    },
  })

  // LangGraph: one Send per task into a worker node with a retry policy; a
  // node error handler records a task that still failed, so the graph keeps
  // every slot's evidence instead of aborting the step.
  const FanOutState = Annotation.Root({
    tasks: Annotation<number>,
    results: Annotation<ToolValue[]>({ reducer: appendInPlace, default: () => [] }),
    failures: Annotation<ItemFailure[]>({ reducer: appendInPlace, default: () => [] }),
  })
  const TaskInput = Annotation.Root({ index: Annotation<number> })
  let graphTool: FlakyTool = createFlakyTool(tasks, failEvery)
  const graph = new StateGraph(FanOutState)
    .addNode('work', async ({ index }: typeof TaskInput.State) => ({ results: [await graphTool.call(index)] }), {
      input: TaskInput,
      retryPolicy: { maxAttempts: MAX_ATTEMPTS, initialInterval: 0, jitter: false, logWarning: false, retryOn: isRetryable },
      errorHandler: (state: typeof TaskInput.State) => ({ failures: [{ index: state.index, stage: 0 }] }),
    })
    .addConditionalEdges(START, (state: typeof FanOutState.State) => Array.from({ length: state.tasks }, (_, index) => new Send('work', { index })))
    .addEdge('work', END)
    .compile()

  return {
    id: 'fan-out',
    title: `Fan-out: ${tasks.toLocaleString('en-US')} tool calls at concurrency ${CONCURRENCY}`,
    description:
      `${tasks.toLocaleString('en-US')} instant asynchronous tool calls, at most ${CONCURRENCY} in flight, each returning a small object. ` +
      `One call in ${failEvery} fails with an error marked retryable and succeeds on an immediate retry (two attempts at most, zero backoff). ` +
      'Every system waits for every call and keeps per-slot results; figures are per task.',
    items: tasks,
    unit: 'task',
    expected: expectedFanOut(tasks, failEvery),
    locusName: FAN_OUT_LOCUS,
    setup: () => {
      runsDir = mkdtempSync(join(tmpdir(), 'locus-compare-fan-out-'))
      return Promise.resolve()
    },
    teardown: () => {
      if (runsDir !== '') rmSync(runsDir, { recursive: true, force: true })
    },
    implementations: [
      {
        system: 'Locus',
        name: FAN_OUT_LOCUS,
        note: '`parallel(thunks, { concurrency: 16 })` from @locus/groups; each thunk awaits `runWithRetry` (seed-001 policy, two attempts, zero backoff) around the tool. Retries are counted from the attempt records.',
        run: async () => {
          const tool = createFlakyTool(tasks, failEvery)
          let retries = 0
          const thunks = indices.map((index) => async () => {
            const outcome = await runWithRetry(() => tool.call(index), RETRY_ONCE_AT_ONCE)
            retries += outcome.attempts.length - 1
            if (!outcome.ok) throw new Error(outcome.failure.error, { cause: outcome.failure })
            return outcome.value
          })
          try {
            return tallyValues(await parallel(thunks, { concurrency: CONCURRENCY }), [], retries)
          } catch (error) {
            if (!WorkflowGroupFailureError.isInstance(error)) throw error
            const values = error.slots.map((slot) => (slot.status === 'completed' ? (slot.value as ToolValue) : undefined))
            return tallyValues(values, error.failures.map((failure) => ({ index: failure.index, stage: 0 })), retries)
          }
        },
      },
      {
        system: 'Locus',
        name: FAN_OUT_RUNTIME,
        note: 'What a Locus user gets: `runWorkflowScript` with a declared tool (zod-validated arguments), `tool()` inside `parallel()`, every attempt journaled as `tool_start`/`tool_end` (plus a `retry` line) with durability `batch`, `result.json` and `outputs/README.md` written. Retries are counted from the `retry` journal lines.',
        run: async () => {
          runtimeTool = createFlakyTool(tasks, failEvery)
          let retries = 0
          const run = await runWorkflowScript(runtimeWorkflow, {
            runsDir,
            durability: 'batch',
            onEvent: (line) => {
              if (line.type === 'retry') retries += 1
            },
          })
          const { values } = run.result as unknown as { values: Tally }
          return { ...values, retries }
        },
      },
      {
        system: 'raw floor',
        name: FAN_OUT_FLOOR,
        note: 'Written by hand: `p-limit(16)` around a hand-written retry loop, collected with `Promise.allSettled`.',
        run: async () => {
          const tool = createFlakyTool(tasks, failEvery)
          const limit = pLimit(CONCURRENCY)
          let retries = 0
          const onRetry = (): void => {
            retries += 1
          }
          const settled = await Promise.allSettled(indices.map((index) => limit(() => retryByHand(() => tool.call(index), MAX_ATTEMPTS, onRetry))))
          return tallySettled(settled, retries)
        },
      },
      {
        system: 'raw floor',
        name: FAN_OUT_WORKERS,
        note: 'The leanest hand-written version: 16 async workers take the next index from a shared counter, retry by hand, and store a value or a failure per slot. No library.',
        run: async () => {
          const tool = createFlakyTool(tasks, failEvery)
          const values: (ToolValue | undefined)[] = Array.from({ length: tasks }, () => undefined)
          const failures: ItemFailure[] = []
          let retries = 0
          let next = 0
          const onRetry = (): void => {
            retries += 1
          }
          const worker = async (): Promise<void> => {
            while (next < tasks) {
              const index = next
              next += 1
              try {
                values[index] = await retryByHand(() => tool.call(index), MAX_ATTEMPTS, onRetry)
              } catch {
                failures.push({ index, stage: 0 })
              }
            }
          }
          await Promise.all(Array.from({ length: CONCURRENCY }, worker))
          return tallyValues(values, failures, retries)
        },
      },
      {
        system: 'raw floor',
        name: 'raw: p-limit + allSettled + p-retry',
        note: 'The same with `p-retry` (`retries: 1`, `minTimeout: 0`, `shouldRetry` on the error\'s `retryable`).',
        run: async () => {
          const tool = createFlakyTool(tasks, failEvery)
          const limit = pLimit(CONCURRENCY)
          let retries = 0
          const settled = await Promise.allSettled(
            indices.map((index) =>
              limit(() =>
                pRetry(() => tool.call(index), {
                  retries: MAX_ATTEMPTS - 1,
                  minTimeout: 0,
                  maxTimeout: 0,
                  shouldRetry: ({ error }) => isRetryable(error),
                  onFailedAttempt: ({ error, retriesLeft }) => {
                    if (retriesLeft > 0 && isRetryable(error)) retries += 1
                  },
                }),
              ),
            ),
          )
          return tallySettled(settled, retries)
        },
      },
      {
        system: 'Effect',
        name: 'Effect 3 forEach + retry',
        note: '`Effect.forEach(items, f, { concurrency: 16 })`; each call is `Effect.tryPromise` with `Effect.retry({ times: 1, while: retryable })` and `Effect.either` for per-slot results. Retries are failed attempts observed with `Effect.tapError`, minus final failures.',
        run: async () => {
          const tool = createFlakyTool(tasks, failEvery)
          let failedAttempts = 0
          const program = Effect.forEach(
            indices,
            (index) =>
              Effect.tryPromise({ try: () => tool.call(index), catch: (error) => error }).pipe(
                Effect.tapError(() =>
                  Effect.sync(() => {
                    failedAttempts += 1
                  }),
                ),
                Effect.retry({ times: MAX_ATTEMPTS - 1, while: isRetryable }),
                Effect.either,
              ),
            { concurrency: CONCURRENCY },
          )
          const outcomes = await Effect.runPromise(program)
          const failures: ItemFailure[] = []
          const values = outcomes.map((outcome, index) => {
            if (Either.isRight(outcome)) return outcome.right
            failures.push({ index, stage: 0 })
            return undefined
          })
          return tallyValues(values, failures, failedAttempts - failures.length)
        },
      },
      {
        system: 'Effect',
        name: FAN_OUT_EFFECT4,
        note: 'The same program on Effect 4.1 (the `effect@4` line, installed as `effect4`): `Effect.forEach(items, f, { concurrency: 16 })`, `Effect.tryPromise` with `Effect.retry({ times: 1, while: retryable })`, and `Effect.result` (Effect 4\'s name for `Effect.either`) for per-slot results.',
        run: async () => {
          const tool = createFlakyTool(tasks, failEvery)
          let failedAttempts = 0
          const program = Effect4.forEach(
            indices,
            (index) =>
              Effect4.tryPromise({ try: () => tool.call(index), catch: (error) => error }).pipe(
                Effect4.tapError(() =>
                  Effect4.sync(() => {
                    failedAttempts += 1
                  }),
                ),
                Effect4.retry({ times: MAX_ATTEMPTS - 1, while: isRetryable }),
                Effect4.result,
              ),
            { concurrency: CONCURRENCY },
          )
          const outcomes = await Effect4.runPromise(program)
          const failures: ItemFailure[] = []
          const values = outcomes.map((outcome, index) => {
            if (Result4.isSuccess(outcome)) return outcome.success
            failures.push({ index, stage: 0 })
            return undefined
          })
          return tallyValues(values, failures, failedAttempts - failures.length)
        },
      },
      {
        system: 'LangGraph.js',
        name: 'LangGraph Send fan-out',
        note: 'A `StateGraph` whose start edge returns one `Send` per task to a worker node with `retryPolicy` (`maxAttempts: 2`, `initialInterval: 0`, no jitter) and an `errorHandler` that records a task still failing; `maxConcurrency: 16` in the invoke config; results gathered by a reducer that appends in place (the cheapest correct reducer). No checkpointer. Retries are tool calls minus tasks.',
        run: async () => {
          graphTool = createFlakyTool(tasks, failEvery)
          const state = await graph.invoke({ tasks }, { maxConcurrency: CONCURRENCY, recursionLimit: 10 })
          const values: (ToolValue | undefined)[] = Array.from({ length: tasks }, () => undefined)
          for (const result of state.results) values[result.index] = result
          return tallyValues(values, state.failures, graphTool.calls() - tasks)
        },
      },
      mastraNotMeasured(),
    ],
  }
}
