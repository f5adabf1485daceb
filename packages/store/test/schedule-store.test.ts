import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createFileRunStore, createMemoryRunStore } from '../src/index.js'
import { scheduleStoreContract } from '../src/testing.js'

scheduleStoreContract('memory', () => {
  const { schedules } = createMemoryRunStore()
  if (schedules === undefined) throw new Error('the memory store has no schedules')
  return Promise.resolve({ schedules })
})

scheduleStoreContract('file', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'locus-schedules-'))
  const { schedules } = createFileRunStore(join(dir, 'runs'))
  if (schedules === undefined) throw new Error('the file store has no schedules')
  return { schedules, cleanup: () => rm(dir, { recursive: true, force: true }) }
})

describe('file schedules', () => {
  it('are shared by two stores on one directory, and run listings pass them by', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'locus-schedules-'))
    try {
      const one = createFileRunStore(join(dir, 'runs'))
      const two = createFileRunStore(join(dir, 'runs'))
      await one.schedules?.registerSchedule({ id: 's', workflow: 'w', every: '1s', overlap: 'skip', catchUpWindow: '1m' }, 0)
      const slot = { slot: '2026-01-01T00:00:01.000Z', outcome: 'started', runId: 'r', recordedAt: '2026-01-01T00:00:01.000Z' } as const
      expect(await one.schedules?.claimSlot('s', slot)).toBe(true)
      expect(await two.schedules?.claimSlot('s', { ...slot, runId: 'other' })).toBe(false)
      expect(await two.schedules?.listSlots('s')).toEqual([slot])
      expect(await two.listRuns()).toEqual([])
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
