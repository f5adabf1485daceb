/**
 * Workload 4, resume: a recorded run of sequential agent() calls is resumed
 * to its end without calling any model. Locus replays the recorded calls
 * through the script; the floor only reads, parses and validates the journal
 * any resume must at least read.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Annotation, END, MemorySaver, START, StateGraph } from '@langchain/langgraph'
import { AgentResultEnvelopeSchema, JournalLineSchema } from '@locus/journal'
import { ARTIFACT_KEYS, artifactLocation, createFileRunStore } from '@locus/store'
import { HostError, createScriptedHost, defineWorkflow, resumeRun, runWorkflowScript } from '@locus/runtime'
import { heapTick } from '../heap-probe.js'
import { mastraNotMeasured } from '../mastra.js'
import type { Tally } from '../tally.js'
import type { Workload } from '../workload.js'

export interface ResumeSize {
  readonly calls: number
  /** Why `calls` is not the specified 100,000, said under the table. */
  readonly reducedBecause?: string
}

export const RESUME_LOCUS = 'Locus resumeRun()'
export const RESUME_FLOOR = 'raw: read + JSON.parse + zod (journal)'
export const RESUME_FLOOR_WITH_ENVELOPES = 'raw: the same + each call\'s result file'

const RUN_ID = 'recorded'
const ANSWER = 'recorded answer'

/** Every call was recorded and comes back; nothing fails, nothing retries, no values are summed. */
export function expectedResume(calls: number): Tally {
  return { succeeded: calls, failed: 0, retries: 0, checksum: 0, failures: [] }
}

/** Builds the resume workload for every system. */
export function createResumeWorkload(size: ResumeSize): Workload {
  const { calls } = size
  let runsDir = ''
  let recordMs = 0
  let graphRecordMs = 0
  let hostCalls = 0

  const workflow = defineWorkflow({
    name: 'bench-resume',
    run: async ({ agent }) => {
      let answered = 0
      for (let index = 0; index < calls; index += 1) {
        heapTick()
        const { answer } = await agent(`Question ${index}: what changed since the last report?`)
        if (answer === ANSWER) answered += 1
      }
      return { ok: true, answered }
    },
  })
  // The host a resume must never reach: every recorded call is answered from the recording.
  const forbiddenHost = {
    name: 'must-not-be-called',
    openSession: () => {
      hostCalls += 1
      throw new HostError('sdk-unavailable', 'resume called the host: a recorded call was not replayed')
    },
  }

  // LangGraph: one step per call with a MemorySaver, interrupted before the
  // final node; resuming continues from the stored checkpoint.
  const StepState = Annotation.Root({ next: Annotation<number>, done: Annotation<boolean> })
  let graphCalls = 0
  const graph = new StateGraph(StepState)
    .addNode('call', (state: typeof StepState.State) => {
      graphCalls += 1
      return { next: state.next + 1 }
    })
    .addNode('finish', () => ({ done: true }))
    .addEdge(START, 'call')
    .addConditionalEdges('call', (state: typeof StepState.State) => (state.next < calls ? 'call' : 'finish'))
    .addEdge('finish', END)
    .compile({ checkpointer: new MemorySaver(), interruptBefore: ['finish'] })
  let interruptedAt: Parameters<typeof graph.invoke>[1]

  let recordedDir = ''
  let recordedJournal = ''
  const journalPath = (): string => recordedJournal
  const readJournalFloor = (): { completed: number; callIds: string[] } => {
    const text = readFileSync(journalPath(), 'utf8')
    let completed = 0
    const callIds: string[] = []
    for (const raw of text.split('\n')) {
      if (raw.length === 0) continue
      heapTick()
      const line = JournalLineSchema.parse(JSON.parse(raw))
      if (line.type === 'agent_end' && line.status === 'completed') {
        completed += 1
        callIds.push(line.callId)
      }
    }
    return { completed, callIds }
  }

  return {
    id: 'resume',
    title: `Resume: a recorded run of ${calls.toLocaleString('en-US')} calls resumed to its end`,
    description:
      `A run of ${calls.toLocaleString('en-US')} sequential agent() calls is recorded once (scripted host), then resumed to its end with a host that must not be called: ` +
      'every call has to come back from the recording. Figures are per recorded call.',
    items: calls,
    unit: 'call',
    expected: expectedResume(calls),
    locusName: RESUME_LOCUS,
    get footnote() {
      const sizeNote = size.reducedBecause === undefined ? '' : `Measured at ${calls.toLocaleString('en-US')} calls instead of 100,000: ${size.reducedBecause} `
      return `${sizeNote}Recording took ${(recordMs / 1000).toFixed(1)} s for Locus (${(recordMs / calls).toFixed(2)} ms per call: a call directory with two files each) and ${(graphRecordMs / 1000).toFixed(1)} s for LangGraph; recording is not part of the figures.`
    },
    setup: async () => {
      runsDir = mkdtempSync(join(tmpdir(), 'locus-compare-resume-'))
      const host = createScriptedHost({ rules: [{ steps: [{ text: ANSWER }] }] })
      let started = performance.now()
      const recorded = await runWorkflowScript(workflow, { host, runsDir, runId: RUN_ID, durability: 'batch' })
      recordMs = performance.now() - started
      recordedDir = recorded.executionDir
      recordedJournal = recorded.journalLocation
      if (recorded.disposition !== 'completed') throw new Error(`recording the resume workload failed: ${JSON.stringify(recorded.error ?? recorded.result)}`)

      started = performance.now()
      const thread = { configurable: { thread_id: 'recorded' }, recursionLimit: calls + 10 }
      await graph.invoke({ next: 0, done: false }, thread)
      graphRecordMs = performance.now() - started
      interruptedAt = (await graph.getState(thread)).config
    },
    teardown: () => {
      if (runsDir !== '') rmSync(runsDir, { recursive: true, force: true })
    },
    implementations: [
      {
        system: 'Locus',
        name: RESUME_LOCUS,
        note: '`resumeRun(runId, workflow, { host })` with a host that throws if called: reads the journal once, a chunk at a time, into a recording that keeps each call\'s key and where its lines are (answers are read back from the journal when the script asks for them), re-runs the script, answers every agent() call from the recording while its request key matches, journals the new execution and writes its result. Each round first deletes the previous round\'s resume execution (a few files), so every round resumes the same recorded run.',
        run: async () => {
          for (const execution of await createFileRunStore(runsDir).listExecutions(RUN_ID)) {
            if (execution.kind !== 'root') rmSync(execution.location, { recursive: true, force: true })
          }
          hostCalls = 0
          const resumed = await resumeRun(RUN_ID, workflow, { host: forbiddenHost, runsDir, durability: 'batch' })
          const answered = (resumed.result as { answered?: number } | null)?.answered ?? 0
          if (hostCalls > 0 || resumed.disposition !== 'completed') {
            return { succeeded: answered, failed: calls - answered, retries: 0, checksum: 0, failures: [] }
          }
          return { succeeded: Math.min(answered, resumed.replayed), failed: resumed.live, retries: 0, checksum: 0, failures: [] }
        },
      },
      {
        system: 'raw floor',
        name: RESUME_FLOOR,
        note: 'What any resume must at least do: read the journal, split it into lines, `JSON.parse` and validate each line with the journal\'s zod schema. It does not get the answers back (they are in the per-call result files).',
        run: () => {
          const { completed } = readJournalFloor()
          return Promise.resolve({ succeeded: completed, failed: 0, retries: 0, checksum: 0, failures: [] })
        },
      },
      {
        system: 'raw floor',
        name: RESUME_FLOOR_WITH_ENVELOPES,
        note: 'The floor plus what a resume needs for the answers: read, parse and validate each call\'s `result.json` envelope.',
        run: () => {
          const { callIds } = readJournalFloor()
          let answered = 0
          for (const callId of callIds) {
            const path = artifactLocation(recordedDir, ARTIFACT_KEYS.callEnvelope(callId))
            const envelope = AgentResultEnvelopeSchema.parse(JSON.parse(readFileSync(path, 'utf8')))
            if (envelope.status === 'completed' && envelope.answer === ANSWER) answered += 1
          }
          return Promise.resolve({ succeeded: answered, failed: 0, retries: 0, checksum: 0, failures: [] })
        },
      },
      {
        system: 'Effect',
        name: 'Effect',
        reason: 'not expressible: Effect has no journal and no resume of its own (durable workflows live in @effect/workflow with @effect/cluster, outside this comparison)',
      },
      {
        system: 'LangGraph.js',
        name: 'LangGraph resume from MemorySaver checkpoint',
        note: 'The thread was run to the last call and interrupted before its final node; each round resumes from that checkpoint (`invoke(null, config)` with its `checkpoint_id`). LangGraph restores the state snapshot instead of replaying the calls: it never re-runs the nodes, so it cannot notice that the code now asks for different calls, and its cost does not grow with the calls the way a replay does. **MemorySaver keeps the checkpoints in process memory**: this resume is only possible inside the process that recorded the run.',
        run: async () => {
          graphCalls = 0
          const state = await graph.invoke(null, interruptedAt)
          const recovered = state.done && graphCalls === 0 ? state.next : 0
          return { succeeded: recovered, failed: calls - recovered, retries: 0, checksum: 0, failures: [] }
        },
      },
      mastraNotMeasured(),
    ],
  }
}
