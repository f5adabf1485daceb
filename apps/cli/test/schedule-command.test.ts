// Schedules end to end over a runs directory: `locus serve --workflows` fires
// the schedules a module exports, and `locus schedule ls | show | pause |
// unpause | trigger | backfill` read and operate them from another process.
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createFileRunStore } from '@locus/store'
import { afterEach, describe, expect, it } from 'vitest'
import { jsonLines, repoRoot, runLocus, startLocus, tempDir, until, waitForOutput } from './helpers.js'

const runtimeEntry = join(repoRoot, 'packages', 'runtime', 'dist', 'index.js')
const KEY = 'schedule-command-key-0123456789ab'

const children: ChildProcess[] = []
afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await once(child, 'exit')
    }
  }
})

async function moduleDir(): Promise<string> {
  const dir = await tempDir()
  await writeFile(
    join(dir, 'tick.mts'),
    [
      `import { defineSchedule, defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
      "export default defineWorkflow({ name: 'tick', run: ({ input }) => ({ ok: true, input }) })",
      "export const schedules = [defineSchedule({ id: 'every-second', workflow: 'tick', every: '1s', input: { n: 7 }, overlap: 'skip', catchUpWindow: '5s' })]",
    ].join('\n'),
  )
  return dir
}

describe('locus schedule over a runs directory', () => {
  it('serve fires a module\'s schedule; show, ls, pause, trigger and backfill operate it', async () => {
    const dir = await moduleDir()
    const runsDir = join(dir, 'runs')
    const schedules = createFileRunStore(runsDir).schedules!
    const serve = (): ChildProcess => {
      const child = startLocus(['serve', '--workflows', dir, '--port', '0', '--runs-dir', runsDir], { cwd: dir, env: { LOCUS_API_KEYS: KEY } })
      children.push(child)
      return child
    }
    const first = serve()
    await waitForOutput(first, /firing 1 schedule: every-second/)
    await until('two started slots', async () => {
      const started = (await schedules.listSlots('every-second')).filter((slot) => slot.outcome === 'started')
      return started.length >= 2 ? started : undefined
    }, 15_000)
    first.kill('SIGTERM')
    await once(first, 'exit')

    const show = await runLocus(['schedule', 'show', 'every-second', '--runs-dir', runsDir, '--json'], { cwd: dir })
    expect(show.code).toBe(0)
    const shown = JSON.parse(show.stdout) as { schedule: { workflow: string; every: string; input: unknown }; paused: boolean; slots: { slot: string; outcome: string; runId?: string }[] }
    expect(shown.schedule).toMatchObject({ workflow: 'tick', every: '1s', input: { n: 7 } })
    expect(shown.paused).toBe(false)
    const started = shown.slots.filter((slot) => slot.outcome === 'started')
    expect(started.length).toBeGreaterThanOrEqual(2)
    for (const slot of started) expect(Object.keys(slot)).toEqual(['slot', 'outcome', 'runId'])
    // Each started slot's run is a run of the store, and it completed.
    const runs = await runLocus(['ls', '--runs-dir', runsDir, '--json'], { cwd: dir })
    const byId = new Map(jsonLines(runs.stdout).map((line) => [line.runId, line.standing]))
    for (const slot of started) expect(byId.get(slot.runId)).toBe('completed')

    const text = await runLocus(['schedule', 'show', 'every-second', '--runs-dir', runsDir], { cwd: dir })
    expect(text.stdout).toMatch(/schedule every-second: workflow tick, every 1s/)
    expect(text.stdout).toContain(started[0]?.runId)

    expect((await runLocus(['schedule', 'pause', 'every-second', '--runs-dir', runsDir], { cwd: dir })).code).toBe(0)
    const listed = jsonLines((await runLocus(['schedule', 'ls', '--runs-dir', runsDir, '--json'], { cwd: dir })).stdout)
    expect(listed).toEqual([expect.objectContaining({ type: 'schedule', paused: true, schedule: expect.objectContaining({ id: 'every-second' }) })])
    const lsText = await runLocus(['schedule', 'ls', '--runs-dir', runsDir], { cwd: dir })
    expect(lsText.stdout).toMatch(/every-second\s+tick\s+every 1s\s+skip\s+paused/)

    // Asked for while no process holds the schedule; the next server fires them, paused or not for a trigger.
    const trigger = await runLocus(['schedule', 'trigger', 'every-second', '--runs-dir', runsDir, '--json'], { cwd: dir })
    const triggered = (JSON.parse(trigger.stdout) as { requested: string[] }).requested[0]
    expect((await runLocus(['schedule', 'unpause', 'every-second', '--runs-dir', runsDir], { cwd: dir })).code).toBe(0)
    const backfill = await runLocus(
      ['schedule', 'backfill', 'every-second', '--runs-dir', runsDir, '--from', '2026-01-01T00:00:00Z', '--to', '2026-01-01T00:00:02Z', '--json'],
      { cwd: dir },
    )
    expect(JSON.parse(backfill.stdout)).toEqual({ scheduleId: 'every-second', requested: ['2026-01-01T00:00:00.000Z', '2026-01-01T00:00:01.000Z', '2026-01-01T00:00:02.000Z'] })

    const second = serve()
    await waitForOutput(second, /firing 1 schedule/)
    const fired = await until('the trigger and backfill fired', async () => {
      const slots = await schedules.listSlots('every-second')
      const asked = slots.filter((slot) => slot.source === 'trigger' || slot.source === 'backfill')
      return asked.length === 4 ? asked : undefined
    }, 15_000)
    expect(fired.map((slot) => `${slot.slot} ${slot.source}`).sort()).toEqual(
      [`${triggered} trigger`, '2026-01-01T00:00:00.000Z backfill', '2026-01-01T00:00:01.000Z backfill', '2026-01-01T00:00:02.000Z backfill'].sort(),
    )
    // The server was stopped for a while: the slots older than the 5 s catch-up window are missed, none lost.
    second.kill('SIGTERM')
    await once(second, 'exit')
    const own = (await schedules.listSlots('every-second')).filter((slot) => slot.source === undefined).map((slot) => Date.parse(slot.slot))
    for (let at = Math.min(...own); at <= Math.max(...own); at += 1000) expect(own).toContain(at)
  }, 120_000)

  it('refuses an unknown schedule with SCHEDULE_NOT_FOUND, and a serve module whose schedule names an unknown workflow', async () => {
    const dir = await tempDir()
    const missing = await runLocus(['schedule', 'show', 'nope', '--runs-dir', join(dir, 'runs')], { cwd: dir })
    expect(missing.code).toBe(2)
    expect(missing.stderr).toMatch(/No schedule "nope" in this store/)
    await writeFile(
      join(dir, 'bad.mts'),
      [
        `import { defineSchedule, defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
        "export default defineWorkflow({ name: 'tick', run: () => ({ ok: true }) })",
        "export const schedules = [defineSchedule({ id: 's', workflow: 'tock', every: '1m', input: {}, overlap: 'skip', catchUpWindow: '1m' })]",
      ].join('\n'),
    )
    const refused = await runLocus(['serve', '--workflows', join(dir, 'bad.mts'), '--port', '0', '--runs-dir', join(dir, 'runs')], { cwd: dir, env: { LOCUS_API_KEYS: KEY } })
    expect(refused.code).toBe(2)
    expect(refused.stderr).toMatch(/Schedule "s" names workflow "tock", which is not among the workflows it runs with \(tick\)/)
  })
})
