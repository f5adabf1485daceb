// GET /v1/schedules and /v1/schedules/{id} over real HTTP on loopback, with the runs:read scope.
import { createFileRunStore } from '@locus/store'
import { describe, expect, it } from 'vitest'
import { startServer } from '../src/index.js'
import { tempRunsDir, testRuntime } from './helpers.js'

const ADMIN = 'schedules-admin-key-0123456789abcd'
const WRITER = 'schedules-writer-key-0123456789ab'

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
})
