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

/** How long an I/O-bound call waits, as a model call does, holding its slot while the CPU is free. */
export const IO_CALL_MS = 200

/** An I/O-bound run: `calls` tool calls that each wait {@link IO_CALL_MS}. */
export const ioWorkflow = defineWorkflow({
  name: 'bench-dispatch-io',
  input: z.object({ calls: z.number().int().min(1) }),
  tools: {
    wait: defineTool({
      input: z.object({ index: z.number() }),
      run: async ({ index }) => {
        await new Promise((resolve) => setTimeout(resolve, IO_CALL_MS))
        return { index }
      },
    }),
  },
  async run({ tool, input }) {
    for (let index = 0; index < input.calls; index += 1) await tool('wait', { index })
    return { ok: true }
  },
})

/** The tenants' limit in the fairness soak: half of four workers' sixteen slots. */
export const TENANT_LIMIT = 8

/** An I/O-bound run of a tenant, one call, under its tenant's concurrency key. */
export const tenantWorkflow = defineWorkflow({
  name: 'bench-dispatch-tenant',
  input: z.object({ tenant: z.string() }),
  concurrency: [{ key: (input) => `tenant:${input.tenant}`, limit: TENANT_LIMIT }],
  tools: {
    wait: defineTool({
      input: z.object({}),
      run: async () => {
        await new Promise((resolve) => setTimeout(resolve, IO_CALL_MS))
        return { done: true }
      },
    }),
  },
  async run({ tool }) {
    await tool('wait', {})
    return { ok: true }
  },
})

/** {@link stepsWorkflow} under a concurrency key (a limit no run reaches): what a key costs per start. */
export const keyedStepsWorkflow = defineWorkflow({
  name: 'bench-dispatch-steps-keyed',
  concurrency: [{ key: () => 'bench', limit: 1000 }],
  tools: { step: defineTool({ input: z.object({ index: z.number() }), run: ({ index }) => ({ index, done: true }) }) },
  async run({ tool, agent }) {
    for (let index = 0; index < 10; index += 1) {
      await tool('step', { index })
      await agent(`call ${String(index)}`)
    }
    return { ok: true }
  },
})
