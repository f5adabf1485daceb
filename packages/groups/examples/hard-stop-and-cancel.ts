/**
 * Example: hard stops and host cancellation.
 *
 * What it shows: a cap error thrown deep in a nested group stops queued work in
 * the outer group, and the outer group rejects with that same object (not a
 * group failure). Then a host abort stops queued work and ends with a
 * `WorkflowCancelledError` listing the positions that never started. Look for
 * `notDispatched` on the `group_end` events.
 *
 * Run: node --conditions=@locus/source --import tsx examples/hard-stop-and-cancel.ts
 */
import {
  type GroupEvent,
  WorkflowCancelledError,
  WorkflowInvocationCapError,
  createRunScope,
  parallel,
  runInScope,
} from '@locus/groups'
import { fileURLToPath } from 'node:url'

export interface StopReport {
  readonly sameObject: boolean
  readonly started: string[]
  readonly cancelled: WorkflowCancelledError
  readonly events: GroupEvent[]
}

export async function main(): Promise<StopReport> {
  const events: GroupEvent[] = []
  const started: string[] = []
  const cap = new WorkflowInvocationCapError({ limit: 2, attempted: 3 })
  let caught: unknown
  await runInScope(createRunScope({ observer: (event) => events.push(event) }), async () => {
    try {
      await parallel(
        [
          () => parallel([() => Promise.reject(cap)]),
          () => started.push('second branch'),
          () => started.push('third branch'),
        ],
        { concurrency: 1 },
      )
    } catch (error) {
      caught = error
    }
  })

  const controller = new AbortController()
  const scope = createRunScope({ signal: controller.signal, concurrency: 1, observer: (event) => events.push(event) })
  const cancelled = await runInScope(scope, async () => {
    try {
      await parallel([
        () => {
          controller.abort(new Error('operator pressed stop'))
          return 'first finished'
        },
        () => 'never started',
        () => 'never started',
      ])
    } catch (error) {
      if (WorkflowCancelledError.isInstance(error)) return error
      throw error
    }
    throw new Error('unreachable: the run was cancelled')
  })
  return { sameObject: caught === cap, started, cancelled, events }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const report = await main()
  console.log('outer group rejected with the cap error itself:', report.sameObject)
  console.log('queued branches started after the cap:', report.started.length)
  console.log(`${report.cancelled.code}: never dispatched ${JSON.stringify(report.cancelled.notDispatched)}`)
  for (const event of report.events) if (event.type === 'group_end') console.log(' ', JSON.stringify(event))
}
