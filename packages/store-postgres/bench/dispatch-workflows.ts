// The workflows of the dispatch bench, shared by the bench and its worker processes.
import { createScriptedHost, defineTool, defineWorkflow } from '@locus/runtime'
import { z } from 'zod'

/** 20 calls per run, alternating an instant tool and an instant host. */
export const stepsWorkflow = defineWorkflow({
  name: 'bench-dispatch-steps',
  tools: { step: defineTool({ input: z.object({ index: z.number() }), run: ({ index }) => ({ index, done: true }) }) },
  async run({ tool, agent }) {
    for (let index = 0; index < 10; index += 1) {
      await tool('step', { index })
      await agent(`call ${String(index)}`)
    }
    return { ok: true }
  },
})

/** A run that keeps writing for a while (a 20 ms tool, 500 times), so it can be killed mid-run. */
export const slowWorkflow = defineWorkflow({
  name: 'bench-dispatch-slow',
  tools: {
    wait: defineTool({
      input: z.object({ index: z.number() }),
      run: async ({ index }) => {
        await new Promise((resolve) => setTimeout(resolve, 20))
        return { index, pid: process.pid }
      },
    }),
  },
  async run({ tool }) {
    for (let index = 0; index < 500; index += 1) await tool('wait', { index })
    return { ok: true }
  },
})

export function instantHost(): ReturnType<typeof createScriptedHost> {
  return createScriptedHost({ rules: [{ steps: [{ text: 'done' }] }] })
}
