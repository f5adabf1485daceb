/**
 * The workflow the deploy-check benchmark records and checks: `calls` calls
 * alternating between an instant tool and an agent (answered by a scripted
 * host), then a deferred approval that nobody answers, so every run is left
 * waiting on it (the bench cancels it there, as a deploy would find it).
 */
import { defineDeferredTool, defineTool, defineWorkflow } from '@locus/runtime'
import { z } from 'zod'

export default defineWorkflow({
  name: 'deploy-check-bench',
  input: z.object({ batch: z.number().int().nonnegative(), calls: z.number().int().positive() }),
  tools: {
    lookup: defineTool({ input: z.object({ batch: z.number(), step: z.number() }), run: ({ batch, step }) => ({ batch, step, found: true }) }),
    approve: defineDeferredTool({ input: z.object({ batch: z.number() }), output: z.object({ approved: z.boolean() }) }),
  },
  run: async ({ input, tool, agent }) => {
    for (let step = 0; step < input.calls; step += 1) {
      if (step % 2 === 0) await tool('lookup', { batch: input.batch, step })
      else await agent(`Summarise step ${step} of batch ${input.batch}.`)
    }
    const approval = await tool('approve', { batch: input.batch })
    return { ok: true, approval }
  },
})
