// `locus report` lists the schedule firings that did not happen (issue #33): every slot recorded as skipped,
// missed, paused or failed to start in the window, read from the run store's schedule records, writing nothing.
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { createFileRunStore } from '@locus/store'
import { describe, expect, it } from 'vitest'
import { runLocus, tempDir } from './helpers.js'

const HOUR = 3_600_000

describe('locus report: schedule slots that did not start a run', () => {
  it('lists the skipped, missed, paused and failed slots of the window, oldest first, and none that started', async () => {
    const dir = await tempDir()
    const runsDir = join(dir, 'runs')
    const schedules = createFileRunStore(runsDir).schedules!
    const now = Date.now()
    const at = (hoursAgo: number): string => new Date(Math.floor((now - hoursAgo * HOUR) / HOUR) * HOUR).toISOString()
    await schedules.registerSchedule({ id: 'hourly', workflow: 'w', every: '1h', input: {}, overlap: 'skip', catchUpWindow: '10m' }, now - 100 * HOUR)
    await schedules.registerSchedule({ id: 'nightly', workflow: 'w', cron: '0 2 * * *', input: {}, overlap: 'skip', catchUpWindow: '1h' }, now - 100 * HOUR)
    const recordedAt = new Date(now).toISOString()
    await schedules.claimSlot('hourly', { slot: at(5), outcome: 'started', runId: 'run-a', recordedAt })
    await schedules.claimSlot('hourly', { slot: at(4), outcome: 'skipped-overlap', runId: 'run-a', recordedAt })
    await schedules.claimSlot('hourly', { slot: at(3), outcome: 'missed', error: 'the server was down past the catch-up window', recordedAt })
    await schedules.claimSlot('nightly', { slot: at(2), outcome: 'failed-to-start', error: 'WORKFLOW_INPUT_INVALID', recordedAt })
    await schedules.claimSlot('hourly', { slot: at(1), outcome: 'paused', recordedAt })
    // Outside a 48 h window.
    await schedules.claimSlot('nightly', { slot: at(60), outcome: 'missed', error: 'long ago', recordedAt })
    const before = await readdir(runsDir, { recursive: true })

    const json = await runLocus(['report', '--runs-dir', runsDir, '--since', '48h', '--json'], { cwd: dir })
    expect(json.code).toBe(0)
    const report = JSON.parse(json.stdout) as { schedules: { unfired: unknown[] } }
    expect(report.schedules.unfired).toEqual([
      { scheduleId: 'hourly', slot: at(4), outcome: 'skipped-overlap', runId: 'run-a' },
      { scheduleId: 'hourly', slot: at(3), outcome: 'missed', error: 'the server was down past the catch-up window' },
      { scheduleId: 'nightly', slot: at(2), outcome: 'failed-to-start', error: 'WORKFLOW_INPUT_INVALID' },
      { scheduleId: 'hourly', slot: at(1), outcome: 'paused' },
    ])

    const text = await runLocus(['report', '--runs-dir', runsDir, '--since', '48h'], { cwd: dir, env: { NO_COLOR: '1' } })
    expect(text.code).toBe(0)
    expect(text.stdout).toContain('Schedule slots that did not start a run')
    expect(text.stdout).toMatch(new RegExp(`hourly\\s+${at(4)}\\s+skipped-overlap\\s+run run-a still going`))
    expect(text.stdout).toMatch(new RegExp(`nightly\\s+${at(2)}\\s+failed-to-start\\s+WORKFLOW_INPUT_INVALID`))
    expect(text.stdout).not.toContain('long ago')
    // The report only read the store.
    expect(await readdir(runsDir, { recursive: true })).toEqual(before)
  })

  it('says none for a runs directory without schedules, and creates nothing there', async () => {
    const dir = await tempDir()
    const runsDir = join(dir, 'empty-runs')
    const text = await runLocus(['report', '--runs-dir', runsDir], { cwd: dir, env: { NO_COLOR: '1' } })
    expect(text.code).toBe(0)
    expect(text.stdout).toMatch(/Schedule slots that did not start a run\n\s*none in this window/)
    await expect(readdir(runsDir)).rejects.toMatchObject({ code: 'ENOENT' })
  })
})
