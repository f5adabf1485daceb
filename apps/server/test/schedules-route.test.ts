// GET /v1/schedules and /v1/schedules/{id} over real HTTP on loopback, with the runs:read scope.
import { createFileRunStore } from '@locus/store'
import { describe, expect, it } from 'vitest'
import { startServer } from '../src/index.js'
import { tempRunsDir, testRuntime } from './helpers.js'

const ADMIN = 'schedules-admin-key-0123456789abcd'
const WRITER = 'schedules-writer-key-0123456789ab'
const READER = 'schedules-reader-key-0123456789ab'

describe('GET /v1/schedules', () => {
  it('lists the schedules and shows one with its slot records, behind runs:read', async () => {
    const runsDir = tempRunsDir()
    const schedules = createFileRunStore(runsDir).schedules!
    await schedules.registerSchedule({ id: 'nightly', workflow: 'w', cron: '0 2 * * *', input: {}, overlap: 'skip', catchUpWindow: '1h' }, Date.UTC(2026, 0, 1))
    await schedules.claimSlot('nightly', { slot: '2026-01-02T02:00:00.000Z', outcome: 'started', runId: 'sched-nightly-1', recordedAt: '2026-01-02T02:00:00.000Z' })
    await schedules.claimSlot('nightly', { slot: '2026-01-03T02:00:00.000Z', outcome: 'missed', error: 'late', recordedAt: '2026-01-03T05:00:00.000Z' })
    const server = await startServer({ runtime: testRuntime(runsDir), schedules, port: 0, env: { LOCUS_API_KEYS: `${ADMIN},${WRITER}:runs:start` }, onError: () => undefined })
    try {
      const get = (path: string, key = ADMIN): Promise<Response> => fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${key}` } })
      const list = await get('/v1/schedules')
      expect(list.status).toBe(200)
      expect(await list.json()).toEqual({
        schedules: [
          {
            schedule: { id: 'nightly', workflow: 'w', cron: '0 2 * * *', input: {}, overlap: 'skip', catchUpWindow: '1h' },
            paused: false,
            registeredAt: '2026-01-01T00:00:00.000Z',
            lastSlot: { slot: '2026-01-03T02:00:00.000Z', outcome: 'missed', error: 'late', recordedAt: '2026-01-03T05:00:00.000Z' },
          },
        ],
      })
      const one = (await (await get('/v1/schedules/nightly')).json()) as { slots: { slot: string; outcome: string; runId?: string }[] }
      expect(one.slots.map((slot) => [slot.outcome, slot.runId])).toEqual([
        ['missed', undefined],
        ['started', 'sched-nightly-1'],
      ])
      expect((await get('/v1/schedules/nope')).status).toBe(404)
      expect((await get('/v1/schedules/..%2Fetc')).status).toBe(404)
      expect((await fetch(`${server.url}/v1/schedules`)).status).toBe(401)
      expect((await get('/v1/schedules', WRITER)).status).toBe(403)
      const spec = (await (await get('/openapi.json')).json()) as { paths: Record<string, unknown> }
      expect(Object.keys(spec.paths)).toEqual(expect.arrayContaining(['/v1/schedules', '/v1/schedules/{id}']))
    } finally {
      await server.close()
    }
  })

  it('pauses, unpauses, triggers and backfills over POST, behind runs:start, writing only what was asked', async () => {
    const runsDir = tempRunsDir()
    const schedules = createFileRunStore(runsDir).schedules!
    await schedules.registerSchedule({ id: 'hourly', workflow: 'w', every: '1h', input: {}, overlap: 'skip', catchUpWindow: '10m' }, Date.UTC(2026, 0, 1))
    const now = Date.UTC(2026, 0, 2, 12, 30)
    const server = await startServer({ runtime: testRuntime(runsDir), schedules, port: 0, now: () => now, env: { LOCUS_API_KEYS: `${ADMIN},${READER}:runs:read` }, onError: () => undefined })
    try {
      const post = (path: string, body?: unknown, key = ADMIN): Promise<Response> =>
        fetch(`${server.url}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        })
      const paused = await post('/v1/schedules/hourly/pause')
      expect(paused.status).toBe(200)
      expect(await paused.json()).toMatchObject({ schedule: { id: 'hourly' }, paused: true })
      expect((await schedules.readSchedule('hourly'))?.paused).toBe(true)
      expect(await (await post('/v1/schedules/hourly/unpause')).json()).toMatchObject({ paused: false })
      expect((await schedules.readSchedule('hourly'))?.paused).toBe(false)

      const triggered = await post('/v1/schedules/hourly/trigger')
      expect(triggered.status).toBe(202)
      expect(await triggered.json()).toEqual({ scheduleId: 'hourly', requested: ['2026-01-02T12:30:00.000Z'] })
      expect(await schedules.takeRequests('hourly')).toEqual([{ slot: '2026-01-02T12:30:00.000Z', source: 'trigger' }])

      // Both ends included: 09:00, 10:00 and 11:00.
      const backfilled = await post('/v1/schedules/hourly/backfill', { from: '2026-01-02T09:00:00Z', to: '2026-01-02T11:00:00Z' })
      expect(backfilled.status).toBe(202)
      const slots = ['2026-01-02T09:00:00.000Z', '2026-01-02T10:00:00.000Z', '2026-01-02T11:00:00.000Z']
      expect(await backfilled.json()).toEqual({ scheduleId: 'hourly', requested: slots })
      expect(await schedules.takeRequests('hourly')).toEqual(slots.map((slot) => ({ slot, source: 'backfill' })))

      // Bad input is refused naming what is wrong, and asks for nothing.
      const backwards = await post('/v1/schedules/hourly/backfill', { from: '2026-01-02T11:00:00Z', to: '2026-01-02T09:00:00Z' })
      expect(backwards.status).toBe(400)
      expect(JSON.stringify(await backwards.json())).toContain('before body.from')
      const notATime = await post('/v1/schedules/hourly/backfill', { from: 'yesterday', to: '2026-01-02T09:00:00Z' })
      expect(notATime.status).toBe(400)
      expect(JSON.stringify(await notATime.json())).toContain('body.from')
      const tooMany = await post('/v1/schedules/hourly/backfill', { from: '2020-01-01T00:00:00Z', to: '2026-01-01T00:00:00Z' })
      expect(tooMany.status).toBe(400)
      expect(JSON.stringify(await tooMany.json())).toContain('shorter range')
      expect((await post('/v1/schedules/hourly/backfill')).status).toBe(400)
      expect(await schedules.takeRequests('hourly')).toEqual([])

      expect((await post('/v1/schedules/nope/trigger')).status).toBe(404)
      expect((await post('/v1/schedules/nope/pause')).status).toBe(404)
      expect((await post('/v1/schedules/hourly/trigger', undefined, READER)).status).toBe(403)
      expect((await post('/v1/schedules/hourly/pause', undefined, READER)).status).toBe(403)
      expect(await schedules.takeRequests('hourly')).toEqual([])
      expect((await schedules.readSchedule('hourly'))?.paused).toBe(false)
      const spec = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, { 'x-locus-scope'?: string }>> }
      for (const op of ['pause', 'unpause', 'trigger', 'backfill']) expect(spec.paths[`/v1/schedules/{id}/${op}`]?.post?.['x-locus-scope']).toBe('runs:start')
    } finally {
      await server.close()
    }
  })
})
