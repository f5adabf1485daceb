import type { CompareSizes } from '../sizes.js'
import type { Workload } from '../workload.js'
import { createFanOutWorkload } from './fan-out.js'
import { createJournaledCallsWorkload } from './journaled-calls.js'
import { createPipelineWorkload } from './pipeline.js'
import { createResumeWorkload } from './resume.js'
import { REQUESTED_SIZES } from '../sizes.js'

/** Why the resume workload may be smaller than specified. */
const RESUME_BUDGET_REASON =
  'at 100,000 calls Locus writes 100,000 call directories and LangGraph runs 100,000 checkpointed steps before anything is timed, and the directories must be removed afterwards. ' +
  'Measured once on this machine while it was quiet, that took the resume workload alone to about 5 minutes and the whole comparison to about 7, too close to its 10-minute budget on a two-core machine shared with other work. ' +
  'Set LOCUS_BENCH_RESUME_CALLS=100000 to measure the full size.'

/** The four workloads at the given sizes, in the order they are reported; `smoke` says why sizes are small. */
export function createWorkloads(sizes: CompareSizes, mode: 'full' | 'smoke' = 'full'): Workload[] {
  let reducedBecause: string | undefined
  if (mode === 'smoke') reducedBecause = 'this is the 1% smoke run.'
  else if (sizes.resumeCalls < REQUESTED_SIZES.resumeCalls) reducedBecause = RESUME_BUDGET_REASON
  return [
    createFanOutWorkload({ tasks: sizes.fanOutTasks }),
    createJournaledCallsWorkload({ calls: sizes.journaledCalls }),
    createPipelineWorkload({ items: sizes.pipelineItems }),
    createResumeWorkload({ calls: sizes.resumeCalls, ...(reducedBecause === undefined ? {} : { reducedBecause }) }),
  ]
}
