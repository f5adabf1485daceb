// The inspector's schedule pages (issue #33): each schedule with its timing in cronstrue's words, and a schedule's
// slot records, newest first, each started slot linking to its run; escaped like every page, 404 for an unknown id.
import { createFileRunStore } from '@locus/store'
import { describe, expect, it } from 'vitest'
import { createServer } from '../src/index.js'
import { tempRunsDir, testRuntime } from './helpers.js'
import { parse, rowsOf, textOf } from './html-doc.js'

describe('inspector schedule pages', () => {
  it('lists schedules in words and shows one with its slots, newest first, linking started slots to their runs', async () => {
    const runsDir = tempRunsDir()
    const schedules = createFileRunStore(runsDir).schedules!
    await schedules.registerSchedule({ id: 'nightly', workflow: 'w', cron: '0 2 * * *', timezone: 'Europe/Paris', input: {}, overlap: 'skip', catchUpWindow: '1h' }, Date.UTC(2026, 0, 1))
    await schedules.registerSchedule({ id: 'ticker', workflow: 'w', every: '1s', input: {}, overlap: 'allow', catchUpWindow: '5s', paused: true }, Date.UTC(2026, 0, 1))
    await schedules.claimSlot('nightly', { slot: '2026-01-02T01:00:00.000Z', outcome: 'started', runId: 'sched-nightly-a', recordedAt: '2026-01-02T01:00:00.000Z' })
    await schedules.claimSlot('nightly', { slot: '2026-01-03T01:00:00.000Z', outcome: 'missed', error: '<script>alert(1)</script> late', recordedAt: '2026-01-03T05:00:00.000Z' })
    const app = createServer({ runtime: testRuntime(runsDir), schedules })

    const list = await app.request('/schedules')
    expect(list.status).toBe(200)
    const listed = parse(await list.text())
    expect(rowsOf(listed, 'table[data-testid="schedules"]')).toEqual([
      ['nightly', 'w', 'At 02:00 (Europe/Paris)', 'skip', 'active', '2026-01-03T01:00:00.000Z', 'missed'],
      ['ticker', 'w', 'every 1s', 'allow', 'paused', '-', '-'],
    ])
    expect(listed.querySelector('a[href="/schedules/nightly"]')).not.toBeNull()

    const one = await app.request('/schedules/nightly')
    expect(one.status).toBe(200)
    const text = await one.text()
    expect(text).not.toContain('<script>alert(1)</script>')
    const shown = parse(text)
    expect(textOf(shown.querySelector('[data-testid="schedule-when"]'))).toBe('At 02:00 (Europe/Paris)')
    expect(rowsOf(shown, 'table[data-testid="slots"]')).toEqual([
      ['2026-01-03T01:00:00.000Z', 'missed', '-', '<script>alert(1)</script> late'],
      ['2026-01-02T01:00:00.000Z', 'started', 'sched-nightly-a', ''],
    ])
    expect(shown.querySelector('a[href="/runs/sched-nightly-a"]')).not.toBeNull()

    const missing = await app.request('/schedules/nope')
    expect(missing.status).toBe(404)
    expect(await missing.text()).toContain('No schedule')
  })

  it('says how to get schedules when there are none, and 404s on a server whose store keeps none', async () => {
    const runsDir = tempRunsDir()
    const empty = await createServer({ runtime: testRuntime(runsDir), schedules: createFileRunStore(runsDir).schedules! }).request('/schedules')
    expect(textOf(parse(await empty.text()).querySelector('main'))).toContain('No schedules in this store yet')
    expect((await createServer({ runtime: testRuntime(runsDir) }).request('/schedules')).status).toBe(404)
  })
})
