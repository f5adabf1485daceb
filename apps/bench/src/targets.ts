/**
 * The targets Locus is held to in this comparison, each a ratio between two
 * rows measured in the same process run, with what is known about the cost
 * behind a miss and the design change that would close it.
 */
import type { WorkloadResult } from './run-workload.js'
import { FAN_OUT_EFFECT4, FAN_OUT_FLOOR, FAN_OUT_LOCUS, FAN_OUT_RUNTIME, FAN_OUT_WORKERS } from './workloads/fan-out.js'
import { JOURNALED_FLOOR, JOURNALED_LOCUS, JOURNALED_MEMORY } from './workloads/journaled-calls.js'
import { RESUME_FLOOR, RESUME_FLOOR_WITH_ENVELOPES, RESUME_LOCUS } from './workloads/resume.js'

export interface Target {
  readonly workloadId: string
  readonly label: string
  /**
   * `ratio = numerator / denominator`, both medians per item; with `metric:
   * 'peak-heap-mib'` the measure is the numerator row's peak heap in MiB and
   * the denominator is unused.
   */
  readonly numerator: string
  readonly denominator: string
  /** @default 'ratio' */
  readonly metric?: 'ratio' | 'peak-heap-mib'
  /** `at-most`: ratio <= limit; `at-least`: ratio >= limit. */
  readonly comparison: 'at-most' | 'at-least'
  /** The target; absent for a line printed only for context, which is neither met nor missed. */
  readonly limit?: number
  /** For a target: why Locus pays more and which design change would close the gap, shown when missed. For a context line: what it shows. */
  readonly explanation: string
}

export interface TargetOutcome extends Target {
  readonly ratio: number
  /** Absent for a context line. */
  readonly met?: boolean
}

export const TARGETS: readonly Target[] = [
  {
    workloadId: 'fan-out',
    label: 'Fan-out: Locus parallel() + runWithRetry within 2x of the raw floor (p-limit + allSettled + retry loop)',
    numerator: FAN_OUT_LOCUS,
    denominator: FAN_OUT_FLOOR,
    comparison: 'at-most',
    limit: 2,
    explanation:
      'Each branch pays for an AsyncLocalStorage frame (deterministic ids, hard-stop propagation) and for `prepareWorkflowResult` + `classifyOutcome` on its value; `runWithRetry` builds an attempt record per attempt. Skipping detachment for values that are already plain JSON leaves (numbers, strings, flat objects of them) and reusing one frame per slot would close the gap.',
  },
  {
    workloadId: 'fan-out',
    label: 'Fan-out: Locus parallel() + runWithRetry within 1.5x of 16 hand-written workers',
    numerator: FAN_OUT_LOCUS,
    denominator: FAN_OUT_WORKERS,
    comparison: 'at-most',
    limit: 1.5,
    explanation:
      'The leanest code anyone would write for this: no library, no per-slot evidence beyond the value. Locus additionally keeps per-slot evidence for the barrier, a frame per branch and a detached copy of each value.',
  },
  {
    workloadId: 'fan-out',
    label: 'Fan-out: Locus parallel() + runWithRetry ahead of Effect 4 (Effect 4 costs at least as much per task)',
    numerator: FAN_OUT_EFFECT4,
    denominator: FAN_OUT_LOCUS,
    comparison: 'at-least',
    limit: 1,
    explanation:
      'Effect 4 is the fastest peer in fan-out. Where Locus is behind it, the per-branch frame and the detached copy of each value are the costs to cut (see the first line).',
  },
  {
    workloadId: 'fan-out',
    label: 'Fan-out: Locus parallel() + runWithRetry at least 20x cheaper per task than LangGraph.js',
    numerator: 'LangGraph Send fan-out',
    denominator: FAN_OUT_LOCUS,
    comparison: 'at-least',
    limit: 20,
    explanation: 'LangGraph pays a superstep task, its channel writes and a retry wrapper per task; if Locus is not 20x cheaper, its own per-branch costs (see the first line) are what to cut.',
  },
  {
    workloadId: 'fan-out',
    label: 'Fan-out, for context: LangGraph.js per task against the full runtime tool() in a journaled run',
    numerator: 'LangGraph Send fan-out',
    denominator: FAN_OUT_RUNTIME,
    comparison: 'at-least',
    explanation:
      'What a Locus user gets, journal and argument validation included, against a LangGraph graph with no checkpointer at all.',
  },
  {
    workloadId: 'journaled-calls',
    label: 'Journaled calls: Locus tool() in a run (durability batch) within 1.3x of writeSync + batched fsync',
    numerator: JOURNALED_LOCUS,
    denominator: JOURNALED_FLOOR,
    comparison: 'at-most',
    limit: 1.3,
    explanation:
      'Per call the runtime validates the arguments with zod, allocates a deterministic id, schema-checks and stamps two journal lines and runs the retry executor. Buffering a batch\'s lines into one write (the batch fsync already allows it) and caching the argument check for schemas that are plain objects would close the gap.',
  },
  {
    workloadId: 'journaled-calls',
    label: 'Journaled calls: a run through the memory store at least 3x cheaper per tool() call than through the file store',
    numerator: JOURNALED_LOCUS,
    denominator: JOURNALED_MEMORY,
    comparison: 'at-least',
    limit: 3,
    explanation:
      'Both runs validate the arguments, stamp and schema-check every line and run the retry executor; the file store adds only the writes, which are batched. What is left is the per-call engine work the two share: the argument check, the two lines per attempt and the retry runner.',
  },
  {
    workloadId: 'resume',
    label: 'Resume: peak heap of Locus resumeRun() under 64 MiB (issue #20 sets it at 100,000 calls; the run resumes LOCUS_BENCH_RESUME_CALLS calls, 10,000 unless set)',
    numerator: RESUME_LOCUS,
    denominator: RESUME_LOCUS,
    metric: 'peak-heap-mib',
    comparison: 'at-most',
    limit: 64,
    explanation:
      'The resume reads each earlier journal once, a chunk at a time, and its recording keeps per call only the ordinal, the request key as 32 raw bytes and where the lines are (about 140 bytes a call still held at the last call, against 4.7 KB before), reading an answer back when the script asks for it. The peak is garbage, not what is held: V8 allocates a Map\'s new hash table in the old generation when the Map lives there, and the run view adds and removes every call in four such maps, so each replayed call leaves about a kilobyte of old-generation garbage (with the materialized answer) that only a full collection frees. In this process the other systems\' rows (LangGraph\'s 100,000 checkpoints) also raise the heap V8 lets garbage fill; `pnpm --filter @locus/bench run bench:run-heap` measures the run and the resume each in a process of its own. Keeping the run view\'s per-call state in one map that never empties, and handing out the recorded answer without building a whole envelope, would cut that garbage.',
  },
  {
    workloadId: 'resume',
    label: 'Resume: Locus resumeRun() within 2x of read + JSON.parse + zod of the journal',
    numerator: RESUME_LOCUS,
    denominator: RESUME_FLOOR,
    comparison: 'at-most',
    limit: 2,
    explanation:
      "The journal is now read once, streamed, and answers are read back per call from the journal (one pread of the start line and one of the end line, through a descriptor kept open). What remains: each replayed call is still journaled again as two schema-checked lines (an agent_start and a replayed agent_end), its request is hashed again to compare keys, and its answer is parsed twice (once at the scan, once when read back). Journaling a replayed prefix as one summary line and comparing keys before building the request would bring it near the floor.",
  },
  {
    workloadId: 'resume',
    label: 'Resume, for context: Locus resumeRun() against the floor that also reads each result file',
    numerator: RESUME_LOCUS,
    denominator: RESUME_FLOOR_WITH_ENVELOPES,
    comparison: 'at-most',
    explanation:
      'Against a floor that reads the same files, what is left is the second journal read, re-running the script, the request hashing and the re-journaling of replayed calls.',
  },
]

/** Evaluates every target whose workload was run. */
export function evaluateTargets(results: readonly WorkloadResult[]): TargetOutcome[] {
  const outcomes: TargetOutcome[] = []
  for (const target of TARGETS) {
    const result = results.find((candidate) => candidate.workload.id === target.workloadId)
    if (result === undefined) continue
    const perItem = (name: string): number => result.rows.find((row) => row.name === name)?.nsPerItem ?? Number.NaN
    const ratio =
      target.metric === 'peak-heap-mib'
        ? (result.rows.find((row) => row.name === target.numerator)?.peakHeapBytes ?? Number.NaN) / 2 ** 20
        : perItem(target.numerator) / perItem(target.denominator)
    if (target.limit === undefined) {
      outcomes.push({ ...target, ratio })
      continue
    }
    const met = target.comparison === 'at-most' ? ratio <= target.limit : ratio >= target.limit
    outcomes.push({ ...target, ratio, met })
  }
  return outcomes
}
