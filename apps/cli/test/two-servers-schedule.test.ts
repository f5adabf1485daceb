// Issue #33: one schedule held by two `locus serve --database-url` processes
// sharing one PostgreSQL database, its runs executed by a `locus worker`. An
// every-1s, overlap-skip schedule over a run that takes 2.5 s records every
// slot exactly once, as `started` or `skipped-overlap`; with both servers
// stopped for 5 s and a 3 s catch-up window, the slots older than the window
// when they come back are `missed`, and the ones inside it are caught up.
// Real processes on the real clock: what is tested is that separate servers
// agree through the database alone.
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { adminQuery, pgRows, repoRoot, runLocus, startLocus, tempDir, until, waitForOutput } from './helpers.js'

const url = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL
const ci = (process.env.CI ?? '') !== ''
const runtimeEntry = join(repoRoot, 'packages', 'runtime', 'dist', 'index.js')
const KEY = 'two-servers-schedule-key-0123456'

interface Slot {
  readonly slot: string
  readonly outcome: string
  readonly runId?: string
  readonly error?: string
}

const children: ChildProcess[] = []
const database = `locus_two_servers_${process.pid}_${Math.random().toString(36).slice(2, 8)}`

afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  await Promise.all(children.filter((child) => child.exitCode === null && child.signalCode === null).map((child) => once(child, 'exit')))
  if (url !== undefined) await adminQuery(url, `drop database if exists "${database}" with (force)`)
})

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  child.kill('SIGTERM')
  await once(child, 'exit')
}

describe('a schedule held by two servers on one PostgreSQL database', () => {
  it.skipIf(url === undefined && !ci)('records every slot once, skips over the running run, and marks the slots past the catch-up window missed', async () => {
    if (url === undefined) throw new Error('LOCUS_TEST_PG_URL is not set, but CI is: start PostgreSQL (scripts/ci-services.sh start).')
    await adminQuery(url, `create database "${database}"`)
    const parsed = new URL(url)
    parsed.pathname = `/${database}`
    const databaseUrl = parsed.href
    const dir = await tempDir()
    // The worker loads only the workflow, so only the two servers hold the schedule.
    await writeFile(
      join(dir, 'slow.mts'),
      [
        `import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
        "export default defineWorkflow({ name: 'slow', run: async () => { await new Promise((resolve) => setTimeout(resolve, 2500)); return { ok: true } } })",
      ].join('\n'),
    )
    await writeFile(
      join(dir, 'schedule.mts'),
      [
        `import { defineSchedule } from ${JSON.stringify(runtimeEntry)}`,
        "import slow from './slow.mts'",
        'export default slow',
        "export const schedules = [defineSchedule({ id: 'every-second', workflow: 'slow', every: '1s', input: {}, overlap: 'skip', catchUpWindow: '3s' })]",
      ].join('\n'),
    )
    const worker = startLocus(['worker', '--database-url', databaseUrl, '--workflows', join(dir, 'slow.mts'), '--concurrency', '8'], { cwd: dir })
    children.push(worker)
    await waitForOutput(worker, /worker running slow/)
    const serve = (): ChildProcess => {
      const child = startLocus(['serve', '--database-url', databaseUrl, '--workflows', join(dir, 'schedule.mts'), '--port', '0'], { cwd: dir, env: { LOCUS_API_KEYS: KEY } })
      children.push(child)
      return child
    }
    try {
      const slots = async (): Promise<Slot[]> =>
        (await pgRows(databaseUrl, "select record from locus_schedule_slots where schedule_id = 'every-second' order by slot")).map((row) => row.record as Slot)
      const slotCount = async (): Promise<number> => Number((await pgRows(databaseUrl, 'select count(*) from locus_schedule_slots'))[0]?.count)

      // Ten seconds of both servers firing.
      let servers = [serve(), serve()]
      await Promise.all(servers.map((server) => waitForOutput(server, /firing 1 schedule: every-second/)))
      await until('ten slots recorded', async () => ((await slotCount()) >= 10 ? true : undefined), 30_000)
      await Promise.all(servers.map((server) => stop(server)))
      const beforeStop = await slots()
      const stoppedAt = Date.now()

      // Five seconds with no server, then both again until three slots past the restart are recorded.
      await new Promise((resolve) => setTimeout(resolve, 5000 - (Date.now() - stoppedAt)))
      servers = [serve(), serve()]
      await Promise.all(servers.map((server) => waitForOutput(server, /firing 1 schedule: every-second/)))
      const restartedAt = Date.now()
      await until('three slots after the restart', async () => ((await slots()).filter((slot) => Date.parse(slot.slot) > restartedAt).length >= 3 ? true : undefined), 30_000)
      await Promise.all(servers.map((server) => stop(server)))

      const all = await slots()
      // Each slot once: one row per slot, and the slots are every second with no gap.
      expect(await slotCount()).toBe(all.length)
      const times = all.map((slot) => Date.parse(slot.slot))
      for (let index = 1; index < times.length; index += 1) expect(times[index]! - times[index - 1]!).toBe(1000)

      // While the servers ran: started and skipped-overlap only, never a start over the 2.5 s run.
      expect(beforeStop.length).toBeGreaterThanOrEqual(10)
      for (const slot of beforeStop) expect(['started', 'skipped-overlap']).toContain(slot.outcome)
      const started = beforeStop.filter((slot) => slot.outcome === 'started')
      expect(started.length).toBeGreaterThanOrEqual(2)
      expect(beforeStop.some((slot) => slot.outcome === 'skipped-overlap')).toBe(true)
      for (let index = 1; index < started.length; index += 1) expect(Date.parse(started[index]!.slot) - Date.parse(started[index - 1]!.slot)).toBeGreaterThanOrEqual(3000)
      // A skipped slot names the run it skipped over: the latest started one.
      let latest: string | undefined
      for (const slot of beforeStop) {
        if (slot.outcome === 'started') latest = slot.runId
        else expect(slot.runId).toBe(latest)
      }

      // The gap: the slots that fell due while no server ran. The oldest, past the 3 s window when the servers
      // came back, are missed and say so; the rest of the gap is caught up.
      const lastBefore = Date.parse(beforeStop.at(-1)!.slot)
      const gap = all.filter((slot) => Date.parse(slot.slot) > lastBefore && Date.parse(slot.slot) <= restartedAt)
      expect(gap.length).toBeGreaterThanOrEqual(4)
      const missed = gap.filter((slot) => slot.outcome === 'missed')
      expect(missed.length).toBeGreaterThanOrEqual(1)
      expect(gap.slice(0, missed.length)).toEqual(missed)
      for (const slot of missed) {
        expect(slot.error).toMatch(/past the catch-up window of 3s/)
        expect(restartedAt - Date.parse(slot.slot)).toBeGreaterThan(3000)
      }
      const caughtUp = gap.slice(missed.length)
      expect(caughtUp.length).toBeGreaterThanOrEqual(1)
      for (const slot of caughtUp) expect(['started', 'skipped-overlap']).toContain(slot.outcome)
      expect(restartedAt - Date.parse(caughtUp[0]!.slot)).toBeLessThanOrEqual(3000 + 1000)
      // And after the restart the servers go on as before.
      for (const slot of all.filter((one) => Date.parse(one.slot) > restartedAt)) expect(['started', 'skipped-overlap']).toContain(slot.outcome)

      // `locus schedule show` reads the same records from the database.
      const shown = await runLocus(['schedule', 'show', 'every-second', '--database-url', databaseUrl, '--json'], { cwd: dir })
      expect(shown.code).toBe(0)
      const parsedShow = JSON.parse(shown.stdout) as { slots: Slot[] }
      expect(parsedShow.slots.map((slot) => `${slot.slot} ${slot.outcome}`).sort()).toEqual(all.map((slot) => `${slot.slot} ${slot.outcome}`).sort())
    } finally {
      await stop(worker)
    }
  }, 120_000)
})
