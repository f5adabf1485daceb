// Act only under a live claim (issue #37): between a call's start line and its dispatch the runtime
// awaits the writer's beforeDispatch(), so a store that cannot commit the start (a PostgreSQL writer
// whose lease was taken) stops the call before anything runs.
import type { JournalLine } from '@locus/journal'
import { createScriptedHost, defineDeferredTool, defineTool, defineWorkflow, runWorkflowScript, startWorkflowRun } from '@locus/runtime'
import { type ExecutionWriter, LeaseLostError, type RunStore, createMemoryRunStore } from '@locus/store'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'

const START_TYPES = new Set(['tool_start', 'agent_start', 'child_start', 'deferred_open'])

/**
 * A memory store whose writers keep a log: every start line appended, every
 * beforeDispatch() resolved, and (from the workflow) every dispatch. A
 * beforeDispatch() whose number `refuse` says rejects, as a lost lease would.
 */
function loggingStore(log: string[], refuse: (n: number) => boolean = () => false): RunStore {
  const inner = createMemoryRunStore()
  let commits = 0
  return Object.assign(Object.create(inner) as RunStore, {
    async createExecution(options: Parameters<RunStore['createExecution']>[0]): Promise<ExecutionWriter> {
      const writer = await inner.createExecution(options)
      return {
        runId: writer.runId,
        executionId: writer.executionId,
        kind: writer.kind,
        location: writer.location,
        runLocation: writer.runLocation,
        artifacts: writer.artifacts,
        get lastSeq() {
          return writer.lastSeq
        },
        append(input) {
          const line = writer.append(input)
          if (START_TYPES.has(line.type)) log.push(`start ${startName(line)}`)
          return line
        },
        flush: () => writer.flush(),
        close: () => writer.close(),
        async beforeDispatch() {
          commits += 1
          const n = commits
          // Committing takes a while: nothing may be dispatched meanwhile.
          await new Promise((resolve) => setTimeout(resolve, 1))
          if (refuse(n)) {
            log.push(`refused ${String(n)}`)
            throw new LeaseLostError(writer.runId, 1, 2)
          }
          log.push('committed')
        },
      }
    },
  })
}

function startName(line: JournalLine): string {
  if (line.type === 'tool_start') return `${line.tool}#${String(line.attempt)}`
  if (line.type === 'agent_start') return `agent#${String(line.attempt)}`
  if (line.type === 'child_start') return `child#${String(line.attempt)}`
  if (line.type === 'deferred_open') return `deferral ${line.tool}`
  return line.type
}

describe('beforeDispatch(): a call starts only once its start line is committed', () => {
  it('awaits it between the start line and the dispatch of a tool, an agent, a spawn and a deferral', async () => {
    const log: string[] = []
    const store = loggingStore(log)
    const child = defineWorkflow({
      name: 'child',
      async run() {
        log.push('run child')
        return { ok: true }
      },
    })
    const flow = defineWorkflow({
      name: 'flow',
      tools: {
        step: defineTool({ input: z.object({}), run: () => (log.push('run step'), { done: true }) }),
        approve: defineDeferredTool({ input: z.object({}), output: z.object({ yes: z.boolean() }) }),
      },
      async run({ tool, agent, spawn }) {
        await tool('step', {})
        await agent('ask')
        await spawn(child, {})
        await tool('approve', {})
        return { ok: true }
      },
    })
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'answer' }] }] })
    const answering = { ...host, openSession: (request: Parameters<typeof host.openSession>[0]) => (log.push('run agent'), host.openSession(request)) }
    const handle = await startWorkflowRun(flow, {
      store,
      host: answering,
      workflows: [child],
      onEvent: (line) => {
        if (line.type === 'deferred_open') {
          // The deferral's id is only visible to anyone once its line committed.
          setTimeout(() => {
            log.push('answer')
            handle.resolveDeferred(line.deferredId, { yes: true })
          }, 5)
        }
      },
    })
    const result = await handle.done
    expect(result.disposition).toBe('completed')
    expect(log).toEqual([
      'start step#1',
      'committed',
      'run step',
      'start agent#1',
      'committed',
      'run agent',
      'start child#1',
      'committed',
      'run child',
      'start approve#1',
      'committed',
      'start deferral approve',
      'committed',
      'answer',
    ])
  })

  it('property: a refused commit stops that call and every later one; the calls before it ran once each', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 8 }), async (calls, refusedAt) => {
        const log: string[] = []
        const ran: number[] = []
        const store = loggingStore(log, (n) => n >= refusedAt)
        const flow = defineWorkflow({
          name: 'steps',
          tools: {
            step: defineTool({ input: z.object({ index: z.number() }), run: ({ index }) => (ran.push(index), { index }) }),
          },
          async run({ tool }) {
            for (let index = 0; index < calls; index += 1) await tool('step', { index })
            return { ok: true }
          },
        })
        const result = await runWorkflowScript(flow, { store })
        const expected = Array.from({ length: Math.min(calls, refusedAt - 1) }, (_, index) => index)
        expect(ran).toEqual(expected)
        expect(result.disposition).toBe(refusedAt > calls ? 'completed' : 'failed')
      }),
      { numRuns: 40 },
    )
  })

  it('costs nothing where the writer has none: the memory store runs the same calls without it', async () => {
    const ran: number[] = []
    const flow = defineWorkflow({
      name: 'plain',
      tools: { step: defineTool({ input: z.object({ index: z.number() }), run: ({ index }) => (ran.push(index), { index }) }) },
      async run({ tool }) {
        for (let index = 0; index < 3; index += 1) await tool('step', { index })
        return { ok: true }
      },
    })
    const store = createMemoryRunStore()
    const writer = await store.createExecution({ runId: 'probe', kind: 'root' })
    expect(writer.beforeDispatch).toBeUndefined()
    await writer.close()
    expect((await runWorkflowScript(flow, { store })).disposition).toBe('completed')
    expect(ran).toEqual([0, 1, 2])
  })
})
