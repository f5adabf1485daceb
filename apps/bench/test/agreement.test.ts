// CI smoke for `pnpm bench:compare`: every workload at 1% of its size, every
// system, no timing. What is checked is that all implementations agree on
// what happened: successes, failures, retries, values, and for the pipeline
// which items failed at which stage.
import { setMaxListeners } from 'node:events'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { checkAgreement } from '../src/check-agreement.js'
import { smokeSizes } from '../src/sizes.js'
import { isMeasured } from '../src/workload.js'
import { createWorkloads } from '../src/workloads/index.js'

beforeAll(() => {
  // LangGraph adds an abort listener per task in flight to one signal.
  setMaxListeners(64)
})

const workloads = createWorkloads(smokeSizes(), 'smoke')

describe.each(workloads.map((workload) => [workload.id, workload] as const))('workload %s at 1%% size', (_id, workload) => {
  beforeAll(async () => {
    await workload.setup?.()
  }, 60_000)
  afterAll(() => {
    workload.teardown?.()
  })

  it('every implementation reports the same successes, failures, retries and failed items by stage', async () => {
    const rows = await checkAgreement(workload)
    expect(rows.length).toBe(workload.implementations.filter(isMeasured).length)
    for (const row of rows) expect({ name: row.name, differences: row.differences }).toEqual({ name: row.name, differences: [] })
  })

  it('has a Locus row to take ratios against, and a reason for every row it does not time', () => {
    expect(workload.implementations.some((implementation) => isMeasured(implementation) && implementation.name === workload.locusName)).toBe(true)
    for (const implementation of workload.implementations) {
      if (!isMeasured(implementation)) expect(implementation.reason).toMatch(/^not (measured|expressible): /)
    }
  })
})

describe('the workloads have the shape the comparison specifies', () => {
  it('fan-out: 1% of the tasks fail once and are retried, nothing fails for good', () => {
    const fanOut = workloads.find((workload) => workload.id === 'fan-out')
    expect(fanOut?.expected).toMatchObject({ succeeded: 100, failed: 0, retries: 1 })
  })

  it('pipeline: 2% of the items fail, each at stage index 1', () => {
    const pipeline = workloads.find((workload) => workload.id === 'pipeline')
    expect(pipeline?.expected.failures).toEqual([{ index: 0, stage: 1 }])
  })

  it('Mastra is listed in every workload as not measured because it needs Node 22', () => {
    for (const workload of workloads) {
      const mastra = workload.implementations.find((implementation) => implementation.system === 'Mastra')
      expect(mastra && !isMeasured(mastra) ? mastra.reason : undefined).toMatch(/needs Node 22/)
    }
  })
})
