import type { JournalLine } from '@locus/journal'
import { createRuntime, defineWorkflow, rejectedUpdatesOf } from '@locus/runtime'
import { createFileRunStore } from '@locus/store'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { tempRunsDir, testServer } from './helpers.js'

let gate: () => void = () => undefined

const counter = defineWorkflow({
  name: 'counter',
  signals: { stop: z.null() },
  updates: {
    add: {
      input: z.object({ by: z.int() }),
      output: z.object({ total: z.int() }),
      validate: (input) => ((input as { by: number }).by > 100 ? ['input.by: more than 100 at once is refused'] : undefined),
    },
    held: { input: z.null(), output: z.literal('released') },
  },
  async run({ onUpdate, waitForSignal }) {
    let total = 0
    onUpdate('add', (input) => {
      total += (input as { by: number }).by
      return { total }
    })
    onUpdate(
      'held',
      () =>
        new Promise((resolve) => {
          gate = () => {
            resolve('released')
          }
        }),
    )
    await waitForSignal('stop')
    return { total }
  },
})

describe('updates over HTTP', () => {
  it('answers the handler result (200), 202 with the updateId when the wait runs out, 404/400 writing nothing, and 409 on a finished run', async () => {
    const runsDir = tempRunsDir()
    const server = await testServer({ runtime: createRuntime({ workflows: [counter], runsDir }) })
    const started = await server.json<{ runId: string }>('/v1/workflows/counter/runs', { method: 'POST', body: JSON.stringify({ input: null }) })
    const runId = started.body.runId
    const first = await server.json(`/v1/runs/${runId}/updates/add`, { method: 'POST', body: JSON.stringify({ input: { by: 2 } }) })
    expect(first).toMatchObject({ status: 200, body: { runId, name: 'add', result: { total: 2 } } })
    const second = await server.json(`/v1/runs/${runId}/updates/add?wait=5`, { method: 'POST', body: JSON.stringify({ input: { by: 3 } }) })
    expect(second).toMatchObject({ status: 200, body: { result: { total: 5 } } })

    const undeclared = await server.json<{ error: { code: string; message: string } }>(`/v1/runs/${runId}/updates/subtract`, { method: 'POST', body: JSON.stringify({ input: { by: 1 } }) })
    expect(undeclared.status).toBe(404)
    expect(undeclared.body.error.message).toContain('Declared: add, held')
    const bad = await server.json<{ error: { code: string; issues: string[] } }>(`/v1/runs/${runId}/updates/add`, { method: 'POST', body: JSON.stringify({ input: { by: 'two' } }) })
    expect(bad.status).toBe(400)
    expect(bad.body.error.issues.join(' ')).toContain('input.by')
    const refused = await server.json<{ error: { code: string; issues: string[] } }>(`/v1/runs/${runId}/updates/add`, { method: 'POST', body: JSON.stringify({ input: { by: 500 } }) })
    expect(refused.status).toBe(400)
    expect(refused.body.error.issues).toEqual(['input.by: more than 100 at once is refused'])
    const audit = await rejectedUpdatesOf(createFileRunStore(runsDir), runId)
    expect(audit.map((record) => [record.stage, record.via])).toEqual([
      ['schema', 'api'],
      ['validate', 'api'],
    ])

    const waiting = await server.json<{ updateId: string; status: string }>(`/v1/runs/${runId}/updates/held?wait=0.05`, { method: 'POST', body: JSON.stringify({ input: null }) })
    expect(waiting).toMatchObject({ status: 202, body: { runId, name: 'held', status: 'accepted' } })
    expect(waiting.body.updateId).toMatch(/^upd_/)
    // The handler starts once the run has journaled the update: only then can it be let go.
    for (;;) {
      const seen = (await server.runtime.get(runId)).view.updates().some((line) => line.updateId === waiting.body.updateId)
      if (seen) break
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    await new Promise((resolve) => setTimeout(resolve, 10))
    gate()
    await server.json(`/v1/runs/${runId}/signals/stop`, { method: 'POST', body: JSON.stringify({ payload: null }) })
    const result = await server.json<{ disposition: string; result: unknown }>(`/v1/runs/${runId}/result?wait=10`)
    expect(result.body).toMatchObject({ disposition: 'completed', result: { total: 5 } })
    const journal = (await (await server.request(`/v1/runs/${runId}/journal`)).text())
      .split('\n')
      .filter((text) => text.length > 0)
      .map((text) => JSON.parse(text) as JournalLine)
    const updates = journal.filter((line) => line.type.startsWith('update_'))
    // Only accepted updates are journaled, each received before it ended; the held one ended before run_end.
    expect(updates.map((line) => line.type)).toEqual(['update_received', 'update_completed', 'update_received', 'update_completed', 'update_received', 'update_completed'])
    expect(updates.at(-1)).toMatchObject({ updateId: waiting.body.updateId, output: 'released' })

    const late = await server.json<{ error: { code: string } }>(`/v1/runs/${runId}/updates/add`, { method: 'POST', body: JSON.stringify({ input: { by: 1 } }) })
    expect(late).toMatchObject({ status: 409, body: { error: { code: 'run_terminal' } } })
  })
})
