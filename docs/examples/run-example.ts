/**
 * Runs an example workflow through the runtime API with the scripted host and
 * its fixtures file, in a fresh temporary runs directory. The tests of every
 * example use it; `npm run demo` runs the same files through the CLI instead.
 */
import { readFileSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type RunResult, type WorkflowDefinition, createScriptedHost, parseScriptedFixtures, runWorkflowScript } from '@locus/runtime'

/**
 * A clock that never waits for real. Sleeps are kept in order of when they are
 * due; whenever the event loop has nothing else to do, the earliest one fires
 * and virtual time jumps to it. Backoffs and scripted delays take no wall
 * time, and a call that hangs still loses to its deadline, in the same order
 * a real clock would give.
 */
export function instantClock(): { now(): number; sleep(ms: number, signal?: AbortSignal): Promise<void> } {
  let now = Date.parse('2026-01-01T00:00:00Z')
  let sequence = 0
  const pending: { due: number; order: number; fire: () => void }[] = []
  let scheduled = false
  const schedule = (): void => {
    if (scheduled || pending.length === 0) return
    scheduled = true
    // setImmediate runs after the work already queued, so settled promises win their races.
    setImmediate(() => {
      scheduled = false
      pending.sort((left, right) => left.due - right.due || left.order - right.order)
      const next = pending.shift()
      if (next !== undefined) {
        now = Math.max(now, next.due)
        next.fire()
      }
      schedule()
    })
  }
  return {
    now: () => now,
    sleep: (ms, signal) =>
      new Promise((resolve, reject) => {
        const entry = { due: now + ms, order: sequence++, fire: () => { signal?.removeEventListener('abort', onAbort); resolve() } }
        const onAbort = (): void => {
          const index = pending.indexOf(entry)
          if (index !== -1) pending.splice(index, 1)
          reject(signal?.reason instanceof Error ? signal.reason : new Error('aborted'))
        }
        if (signal?.aborted === true) {
          onAbort()
          return
        }
        signal?.addEventListener('abort', onAbort, { once: true })
        pending.push(entry)
        schedule()
      }),
  }
}

/** Runs `workflow` with the scripted host answering from `fixturesPath`. */
export async function runExample(
  workflow: WorkflowDefinition<never>,
  fixturesPath: string,
  input?: unknown,
): Promise<RunResult & { readonly runsDir: string }> {
  const clock = instantClock()
  const fixtures = parseScriptedFixtures(JSON.parse(readFileSync(fixturesPath, 'utf8')), fixturesPath)
  const runsDir = await mkdtemp(join(tmpdir(), 'locus-example-'))
  const run = await runWorkflowScript(workflow, {
    host: createScriptedHost({ ...fixtures, clock }),
    clock,
    runsDir,
    ...(input === undefined ? {} : { input }),
  })
  return { ...run, runsDir }
}
