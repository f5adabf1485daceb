import { createRuntime, defineWorkflow } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { LocusApiError, createLocusClient } from '../src/index.js'
import { KEY, tempRunsDir, testServer } from './helpers.js'

let open: () => void = () => undefined

const ledger = defineWorkflow({
  name: 'ledger',
  signals: { close: z.null() },
  updates: {
    credit: { input: z.object({ amount: z.number().positive() }), output: z.object({ balance: z.number() }), validate: (input) => ((input as { amount: number }).amount > 1000 ? 'amount: over the limit' : undefined) },
    slow: { input: z.null(), output: z.null() },
  },
  async run({ onUpdate, waitForSignal }) {
    let balance = 0
    onUpdate('credit', (input) => ({ balance: (balance += (input as { amount: number }).amount) }))
    onUpdate(
      'slow',
      () =>
        new Promise((resolve) => {
          open = () => {
            resolve(null)
          }
        }),
    )
    await waitForSignal('close')
    return { balance }
  },
})

describe('client.update', () => {
  it('answers the handler result, accepted with the updateId when the wait runs out, and throws the server error on a rejected input', async () => {
    const server = await testServer({ runtime: createRuntime({ workflows: [ledger], runsDir: tempRunsDir() }) })
    const locus = createLocusClient({ baseUrl: server.url, apiKey: KEY })
    const { runId } = await locus.startRun('ledger', { input: null })
    expect(await locus.update(runId, 'credit', { amount: 5 })).toMatchObject({ runId, name: 'credit', result: { balance: 5 } })
    expect(await locus.update(runId, 'credit', { amount: 7 }, { wait: 10 })).toMatchObject({ result: { balance: 12 } })
    const rejected = await locus.update(runId, 'credit', { amount: 5000 }).catch((error: unknown) => error)
    expect(LocusApiError.isInstance(rejected)).toBe(true)
    expect(rejected).toMatchObject({ code: 'invalid_request', status: 400, issues: ['amount: over the limit'] })
    const unknown = await locus.update(runId, 'debit', { amount: 1 }).catch((error: unknown) => error)
    expect(unknown).toMatchObject({ code: 'not_found', status: 404 })
    const accepted = await locus.update(runId, 'slow', null, { wait: 0 })
    expect(accepted).toMatchObject({ runId, name: 'slow', status: 'accepted' })
    expect((accepted as { updateId: string }).updateId).toMatch(/^upd_/)
    // The handler starts once the run has journaled the update: only then can it be let go.
    while (!(await locus.journal(runId)).some((line) => line.type === 'update_received' && line.updateId === (accepted as { updateId: string }).updateId)) await new Promise((resolve) => setTimeout(resolve, 10))
    await new Promise((resolve) => setTimeout(resolve, 10))
    open()
    await locus.signal(runId, 'close', null)
    expect(await locus.waitForResult(runId, { waitSeconds: 10 })).toMatchObject({ disposition: 'completed', result: { balance: 12 } })
  })
})
