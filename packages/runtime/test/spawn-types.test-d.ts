import type { JsonValue } from '@locus/outcome'
import { defineTool, defineWorkflow } from '@locus/runtime'
import { describe, expectTypeOf, it } from 'vitest'
import { z } from 'zod'

const child = defineWorkflow({
  name: 'child',
  input: z.object({ ticket: z.string() }),
  tools: { ping: defineTool({ input: z.object({}), run: () => 'pong' }) },
  run: async ({ input }) => ({ ok: true, ticket: input.ticket }),
})

describe('typed spawn()', () => {
  it("checks a definition's input against its schema, takes any input by name, and resolves to JSON", () => {
    defineWorkflow({
      name: 'parent',
      async run({ spawn }) {
        expectTypeOf(await spawn(child, { ticket: 'T-1' })).toEqualTypeOf<JsonValue>()
        // @ts-expect-error the child's schema wants a string ticket
        await spawn(child, { ticket: 7 })
        // @ts-expect-error a missing field is refused too
        await spawn(child, {})
        await spawn('registered-by-name', { anything: [1, 2] }, { label: 'by name', retry: { timeout_secs: null, max_retries: 2, backoff_base_secs: 1, backoff_max_secs: 4 } })
        return { ok: true }
      },
    })
  })
})
