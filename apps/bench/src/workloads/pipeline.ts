/**
 * Workload 3, pipeline: items through three asynchronous stages at
 * concurrency 16; one item in `failEvery` fails (not retryably) at the second
 * stage. Every system must say which items failed at which stage.
 */
import { Annotation, Command, END, Send, START, StateGraph } from '@langchain/langgraph'
import { WorkflowGroupFailureError, pipeline } from '@locus/groups'
import { Data, Effect, Either } from 'effect'
import pLimit from 'p-limit'
import { heapTick } from '../heap-probe.js'
import { CONCURRENCY } from '../locus-policy.js'
import { appendInPlace } from '../langgraph-reducers.js'
import { mastraNotMeasured } from '../mastra.js'
import { type ItemFailure, type Tally, sortFailures } from '../tally.js'
import type { Workload } from '../workload.js'

export interface PipelineSize {
  readonly items: number
  /** One item in this many fails at the second stage. @default 50 */
  readonly failEvery?: number
}

export const PIPELINE_LOCUS = 'Locus pipeline()'
export const PIPELINE_FLOOR = 'raw: p-limit + allSettled + stage tracking'

/** The failing stage, counted from 0. */
const FAILING_STAGE = 1

/** A stage failure the item cannot recover from. */
export class StageError extends Error {
  readonly retryable = false

  constructor(index: number, stage: number) {
    super(`item ${index} failed at stage ${stage} on purpose`)
    this.name = 'StageError'
  }
}

interface Parsed {
  readonly index: number
  readonly parsed: number
}
interface Enriched {
  readonly index: number
  readonly enriched: number
}
interface Finished {
  readonly index: number
  readonly value: number
}

function createStages(failEvery: number) {
  return {
    parse: (index: number): Promise<Parsed> => {
      heapTick()
      return Promise.resolve({ index, parsed: index + 1 })
    },
    enrich: (input: Parsed): Promise<Enriched> => {
      heapTick()
      if (input.index % failEvery === 0) return Promise.reject(new StageError(input.index, FAILING_STAGE))
      return Promise.resolve({ index: input.index, enriched: input.parsed * 2 })
    },
    finish: (input: Enriched): Promise<Finished> => {
      heapTick()
      return Promise.resolve({ index: input.index, value: input.enriched + 1 })
    },
  }
}

/** What every implementation must report. */
export function expectedPipeline(items: number, failEvery: number): Tally {
  let checksum = 0
  const failures: ItemFailure[] = []
  for (let index = 0; index < items; index += 1) {
    if (index % failEvery === 0) failures.push({ index, stage: FAILING_STAGE })
    else checksum += (index + 1) * 2 + 1
  }
  return { succeeded: items - failures.length, failed: failures.length, retries: 0, checksum, failures }
}

function tallyOf(values: readonly (Finished | undefined)[], failures: readonly ItemFailure[]): Tally {
  let succeeded = 0
  let checksum = 0
  for (const value of values) {
    if (value === undefined) continue
    succeeded += 1
    checksum += value.value
  }
  return { succeeded, failed: failures.length, retries: 0, checksum, failures: sortFailures(failures) }
}

class StageFailure extends Data.TaggedError('StageFailure')<{ readonly stage: number; readonly error: unknown }> {}

/** Builds the pipeline workload for every system. */
export function createPipelineWorkload(size: PipelineSize): Workload {
  const { items } = size
  const failEvery = size.failEvery ?? 50
  const indices = Array.from({ length: items }, (_, index) => index)
  const stages = createStages(failEvery)

  // LangGraph: each item is sent to the first stage; each stage sends the
  // item on to the next with a Command; a node error handler records the
  // item and stage that failed. Stages run as supersteps: every item
  // finishes stage 1 before any starts stage 2.
  const PipelineState = Annotation.Root({
    items: Annotation<number>,
    results: Annotation<Finished[]>({ reducer: appendInPlace, default: () => [] }),
    failures: Annotation<ItemFailure[]>({ reducer: appendInPlace, default: () => [] }),
  })
  const recordFailure = (stage: number) => (state: { readonly index: number }) => ({ failures: [{ index: state.index, stage }] })
  const graph = new StateGraph(PipelineState)
    .addNode('parse', async (input: { index: number }) => new Command({ goto: new Send('enrich', await stages.parse(input.index)) }), {
      ends: ['enrich'],
      errorHandler: recordFailure(0),
    })
    .addNode('enrich', async (input: Parsed) => new Command({ goto: new Send('finish', await stages.enrich(input)) }), {
      ends: ['finish'],
      errorHandler: recordFailure(1),
    })
    .addNode('finish', async (input: Enriched) => ({ results: [await stages.finish(input)] }), { errorHandler: recordFailure(2) })
    .addConditionalEdges(START, (state: typeof PipelineState.State) => Array.from({ length: state.items }, (_, index) => new Send('parse', { index })))
    .addEdge('finish', END)
    .compile()

  return {
    id: 'pipeline',
    title: `Pipeline: ${items.toLocaleString('en-US')} items through 3 stages at concurrency ${CONCURRENCY}`,
    description:
      `${items.toLocaleString('en-US')} items, each through three instant asynchronous stages in order, at most ${CONCURRENCY} items in flight. ` +
      `One item in ${failEvery} fails at the second stage (index 1), not retryably. Every system must report every failed item with the stage where it stopped, ` +
      'and the values of the rest. Figures are per item.',
    items,
    unit: 'item',
    expected: expectedPipeline(items, failEvery),
    locusName: PIPELINE_LOCUS,
    implementations: [
      {
        system: 'Locus',
        name: PIPELINE_LOCUS,
        note: '`pipeline(items, [parse, enrich, finish], { concurrency: 16 })` from @locus/groups: a full barrier; the `WorkflowGroupFailureError` lists each failure with its `index` and `stageIndex`, and `slots` keeps the values of the others.',
        run: async () => {
          try {
            return tallyOf(await pipeline(indices, [stages.parse, stages.enrich, stages.finish], { concurrency: CONCURRENCY }), [])
          } catch (error) {
            if (!WorkflowGroupFailureError.isInstance(error)) throw error
            const values = error.slots.map((slot) => (slot.status === 'completed' ? (slot.value as Finished) : undefined))
            return tallyOf(values, error.failures.map((failure) => ({ index: failure.index, stage: failure.stageIndex ?? -1 })))
          }
        },
      },
      {
        system: 'raw floor',
        name: PIPELINE_FLOOR,
        note: 'Written by hand: `p-limit(16)` per item, the stages awaited in order with the current stage remembered, `Promise.allSettled` over the items.',
        run: async () => {
          const limit = pLimit(CONCURRENCY)
          const failures: ItemFailure[] = []
          const settled = await Promise.allSettled(
            indices.map((index) =>
              limit(async () => {
                let stage = 0
                try {
                  const parsed = await stages.parse(index)
                  stage = 1
                  const enriched = await stages.enrich(parsed)
                  stage = 2
                  return await stages.finish(enriched)
                } catch (error) {
                  failures.push({ index, stage })
                  throw error
                }
              }),
            ),
          )
          return tallyOf(settled.map((result) => (result.status === 'fulfilled' ? result.value : undefined)), failures)
        },
      },
      {
        system: 'Effect',
        name: 'Effect.forEach + tagged stage errors',
        note: '`Effect.forEach(items, f, { concurrency: 16 })`; each stage is `Effect.tryPromise` whose error is a `Data.TaggedError` carrying the stage; `Effect.either` keeps every item\'s result.',
        run: async () => {
          const stage = <TIn, TOut>(index: number, run: (input: TIn) => Promise<TOut>) => (input: TIn) =>
            Effect.tryPromise({ try: () => run(input), catch: (error) => new StageFailure({ stage: index, error }) })
          const program = Effect.forEach(
            indices,
            (index) =>
              Effect.succeed(index).pipe(
                Effect.flatMap(stage(0, stages.parse)),
                Effect.flatMap(stage(1, stages.enrich)),
                Effect.flatMap(stage(2, stages.finish)),
                Effect.either,
              ),
            { concurrency: CONCURRENCY },
          )
          const outcomes = await Effect.runPromise(program)
          const failures: ItemFailure[] = []
          const values = outcomes.map((outcome, index) => {
            if (Either.isRight(outcome)) return outcome.right
            failures.push({ index, stage: outcome.left.stage })
            return undefined
          })
          return tallyOf(values, failures)
        },
      },
      {
        system: 'LangGraph.js',
        name: 'LangGraph Send chain + errorHandler',
        note: 'A `StateGraph`: one `Send` per item to the first stage node; each stage returns a `Command` whose `goto` is a `Send` to the next stage; each node has an `errorHandler` that records the item and its stage; `maxConcurrency: 16`. Stages run as supersteps, so every item finishes a stage before any starts the next: a barrier per stage rather than items flowing through.',
        run: async () => {
          const state = await graph.invoke({ items }, { maxConcurrency: CONCURRENCY, recursionLimit: 10 })
          const values: (Finished | undefined)[] = Array.from({ length: items }, () => undefined)
          for (const result of state.results) values[result.index] = result
          return tallyOf(values, state.failures)
        },
      },
      mastraNotMeasured(),
    ],
  }
}
