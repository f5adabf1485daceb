import { defineTool, defineWorkflow, type WorkflowContext } from '@locus/runtime'
import { describe, expectTypeOf, it } from 'vitest'
import { z } from 'zod'

const lookup = defineTool({
  input: z.object({ id: z.string(), limit: z.number().default(10) }),
  run: async ({ id, limit }) => ({ id, rows: limit }),
})
const ping = defineTool({ input: z.object({}), run: () => 'pong' as const })

describe('typed tools', () => {
  it('checks the tool name, its arguments, and returns its result type', () => {
    defineWorkflow({
      name: 'typed',
      tools: { lookup, ping },
      async run({ tool }) {
        // The schema's input type: `limit` has a default, so it may be left out.
        expectTypeOf(await tool('lookup', { id: 'T-1' })).toEqualTypeOf<{ id: string; rows: number }>()
        expectTypeOf(await tool('ping', {})).toEqualTypeOf<'pong'>()
        // @ts-expect-error an undeclared tool name is refused
        await tool('lokup', { id: 'T-1' })
        // @ts-expect-error a wrong argument type is refused
        await tool('lookup', { id: 42 })
        // @ts-expect-error a missing required argument is refused
        await tool('lookup', {})
        return { ok: true }
      },
    })
  })

  it('a workflow without tools keeps an untyped tool()', () => {
    type Context = WorkflowContext<{ ticket: string }>
    expectTypeOf<Awaited<ReturnType<Context['tool']>>>().toEqualTypeOf<unknown>()
  })

  it('passes the input type to the script', () => {
    defineWorkflow({
      name: 'input',
      input: z.object({ ticket: z.string() }),
      run({ input }) {
        expectTypeOf(input).toEqualTypeOf<{ ticket: string }>()
        return { ok: true }
      },
    })
  })
})
