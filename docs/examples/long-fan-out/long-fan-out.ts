/**
 * Example: a long fan-out to kill and resume.
 *
 * What it shows: twelve regional summaries fan out with parallel(), three at
 * a time, each an agent() call that takes a moment. Every finished call is
 * journaled with its result envelope as it ends, so when the process dies
 * part-way (kill -9, a crash, a closed laptop), `locus resume <runId>`
 * starts a new execution under the same run that answers the finished calls
 * from the recording, without asking the host again, and runs only the rest
 * live. Ctrl-C instead cancels: started calls settle and the run ends
 * `cancelled` (exit 130), also resumable.
 *
 * Look for: after a kill, `locus show <runId>` says `unfinished`; after
 * `locus resume <runId>` the summary says how many calls were replayed and
 * how many ran live, and the run is `completed`; `locus replay <runId>` then
 * checks that the workflow still asks exactly what the recording holds.
 *
 * Run: locus run docs/examples/long-fan-out/long-fan-out.ts --host scripted --run-id fan-out-1
 * then, from another terminal, kill -9 the process, and: locus resume fan-out-1
 */
import { defineWorkflow } from '@locus/runtime'
import { z } from 'zod'

/** The regions summarised, one agent call each. */
export const REGIONS = ['eu-west', 'eu-central', 'eu-north', 'us-east', 'us-west', 'us-central', 'ap-south', 'ap-east', 'ap-northeast', 'sa-east', 'af-south', 'me-central'] as const

export default defineWorkflow({
  name: 'long-fan-out',
  description: 'Summarises incidents per region, three regions at a time.',
  input: z.object({ regions: z.array(z.string().min(1)).min(1), concurrency: z.number().int().positive() }).default({ regions: [...REGIONS], concurrency: 3 }),
  agents: { summariser: { system: 'You summarise the incident log of one region in one sentence.' } },
  async run({ input, agent, parallel }) {
    const summaries = await parallel(
      input.regions.map((region) => async () => {
        const { answer } = await agent(`Summarise last week's incidents in ${region}.`, { agent: 'summariser', label: region, attempts: 2, timeoutMs: 30_000 })
        return { region, summary: answer }
      }),
      { label: 'regions', concurrency: input.concurrency },
    )
    return { ok: true, regions: summaries.length, summaries }
  },
})
