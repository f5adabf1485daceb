import type { JournalLine } from '@locus/journal'
import { createRuntime, defineDeferredTool, defineTool, defineWorkflow } from '@locus/runtime'
import { createMemoryRunStore } from '@locus/store'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'

async function linesOf(store: ReturnType<typeof createMemoryRunStore>, runId: string): Promise<JournalLine[]> {
  const lines: JournalLine[] = []
  for await (const line of store.readLines({ runId, executionId: runId })) lines.push(line)
  return lines
}

const settle = async (): Promise<void> => {
  for (let round = 0; round < 20; round += 1) await new Promise((resolve) => setImmediate(resolve))
}

describe('a wait the run cancelled says nothing it did not see (issue 30, item 6)', () => {
  it('a deferral closed by a shutdown journals no "answered after its deadline": it had neither', async () => {
    const store = createMemoryRunStore()
    const approval = defineWorkflow({
      name: 'approval',
      tools: { approve: defineDeferredTool({ input: z.object({}), output: z.object({ by: z.string() }) }) },
      run: async ({ tool }) => ({ ok: true, by: (await tool('approve', {})).by }),
    })
    const runtime = createRuntime({ workflows: [approval], store })
    const handle = await runtime.start('approval')
    await new Promise<void>((resolve) => {
      if (handle.waitingOnly()) resolve()
      else
        handle.onWaitingChange((waiting) => {
          if (waiting) resolve()
        })
    })
    handle.cancel('the server is shutting down')
    expect(await handle.done).toMatchObject({ disposition: 'cancelled' })
    await settle()
    const lines = await linesOf(store, handle.runId)
    expect(lines.filter((line) => line.type === 'log' && /answered after/.test(line.message))).toEqual([])
    expect(lines.find((line) => line.type === 'deferred_settled')).toMatchObject({ outcome: 'cancelled' })
  })

  it('a tool that answers after the run cancelled it says so, in those words, not "after its deadline"', async () => {
    const store = createMemoryRunStore()
    let release: () => void = () => undefined
    const stubborn = defineWorkflow({
      name: 'stubborn',
      tools: {
        slow: defineTool({
          input: z.object({}),
          // Ignores its signal: answers when released, whatever happened meanwhile.
          run: () =>
            new Promise<string>((resolve) => {
              release = () => {
                resolve('late')
              }
            }),
        }),
      },
      run: async ({ tool }) => ({ ok: true, value: await tool('slow', {}) }),
    })
    const runtime = createRuntime({ workflows: [stubborn], store })
    const handle = await runtime.start('stubborn')
    await settle()
    handle.cancel('Ctrl-C')
    const done = handle.done
    release()
    await done
    await settle()
    const logs = (await linesOf(store, handle.runId)).filter((line) => line.type === 'log').map((line) => (line as { message: string }).message)
    expect(logs.filter((message) => /answered after/.test(message))).toEqual(['tool "slow" attempt 1 answered after the run cancelled it; the answer was ignored'])
    expect(logs.some((message) => message.includes('after its deadline'))).toBe(false)
  })
})
