// The client's schedule methods against a real server over loopback, on the file store's schedules.
import { describe, expect, it } from 'vitest'
import { LocusApiError, createLocusClient } from '../src/index.js'
import { KEY, testRuntime, testServer } from './helpers.js'

describe('the client on schedules', () => {
  it('lists, shows, pauses, unpauses, triggers and backfills a schedule, and says what is wrong with bad input', async () => {
    const { runtime, workers } = testRuntime()
    const schedules = runtime.store.schedules!
    await schedules.registerSchedule({ id: 'hourly', workflow: 'echo', every: '1h', input: { ticket: 'T-1' }, overlap: 'skip', catchUpWindow: '10m' }, Date.UTC(2026, 0, 1))
    await schedules.claimSlot('hourly', { slot: '2026-01-01T01:00:00.000Z', outcome: 'started', runId: 'sched-hourly-1', recordedAt: '2026-01-01T01:00:00.000Z' })
    const now = Date.UTC(2026, 0, 2, 12, 30)
    const server = await testServer({ runtime, workers, schedules, now: () => now })
    const locus = createLocusClient({ baseUrl: server.url, apiKey: KEY })

    const listed = await locus.listSchedules()
    expect(listed).toEqual([expect.objectContaining({ schedule: expect.objectContaining({ id: 'hourly', every: '1h' }) as unknown, paused: false, lastSlot: expect.objectContaining({ outcome: 'started', runId: 'sched-hourly-1' }) as unknown })])
    expect((await locus.getSchedule('hourly')).slots.map((slot) => slot.runId)).toEqual(['sched-hourly-1'])

    expect(await locus.pauseSchedule('hourly')).toMatchObject({ paused: true })
    expect((await schedules.readSchedule('hourly'))?.paused).toBe(true)
    expect(await locus.unpauseSchedule('hourly')).toMatchObject({ paused: false })
    expect((await schedules.readSchedule('hourly'))?.paused).toBe(false)

    expect(await locus.triggerSchedule('hourly')).toEqual({ scheduleId: 'hourly', requested: ['2026-01-02T12:30:00.000Z'] })
    const slots = ['2026-01-02T09:00:00.000Z', '2026-01-02T10:00:00.000Z']
    expect(await locus.backfillSchedule('hourly', { from: '2026-01-02T09:00:00Z', to: '2026-01-02T10:00:00Z' })).toEqual({ scheduleId: 'hourly', requested: slots })
    // Taken in slot order, whoever asked first.
    expect(await schedules.takeRequests('hourly')).toEqual([...slots.map((slot) => ({ slot, source: 'backfill' })), { slot: '2026-01-02T12:30:00.000Z', source: 'trigger' }])

    // Bad input: an unknown schedule, a range backwards, a time that is not one. Nothing more is requested.
    const unknown = await locus.getSchedule('nope').catch((error: unknown) => error)
    expect(LocusApiError.isInstance(unknown) && unknown.status).toBe(404)
    const backwards = await locus.backfillSchedule('hourly', { from: '2026-01-02T10:00:00Z', to: '2026-01-02T09:00:00Z' }).catch((error: unknown) => error)
    expect(backwards).toMatchObject({ code: 'invalid_request', status: 400 })
    expect(LocusApiError.isInstance(backwards) && backwards.message).toMatch(/before body\.from/)
    const notATime = await locus.backfillSchedule('hourly', { from: 'yesterday', to: '2026-01-02T09:00:00Z' }).catch((error: unknown) => error)
    expect(notATime).toMatchObject({ code: 'invalid_request', status: 400 })
    expect(await schedules.takeRequests('hourly')).toEqual([])
  })
})
