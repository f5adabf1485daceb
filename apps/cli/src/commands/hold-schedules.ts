import { type Runtime, type ScheduleDefinition, type WorkflowDefinition, startScheduler } from '@locus/runtime'
import type { RunStore } from '@locus/store'
import type { CliIo } from '../cli-io.js'

/**
 * Fires the schedules a `--workflows` module exported, from this process
 * (`locus serve`, `locus worker`): every slot is claimed in the store, so
 * several processes holding the same schedules fire each slot once. Resolves
 * the function that stops it at shutdown.
 */
export async function holdSchedules(options: {
  readonly schedules: readonly ScheduleDefinition[]
  readonly workflows: readonly WorkflowDefinition[]
  readonly runtime: Runtime
  readonly store: RunStore
  readonly io: CliIo
}): Promise<() => Promise<void>> {
  const { schedules, io } = options
  if (schedules.length === 0) return () => Promise.resolve()
  const scheduler = await startScheduler({
    schedules,
    workflows: options.workflows,
    runtime: options.runtime,
    store: options.store,
    onError: (error) => io.stderr.write(`locus: warning: a schedule tick failed and is tried again: ${error instanceof Error ? error.message : String(error)}\n`),
  })
  io.stdout.write(`locus: firing ${schedules.length === 1 ? '1 schedule' : `${schedules.length} schedules`}: ${schedules.map((schedule) => schedule.id).join(', ')}\n`)
  return () => scheduler.stop()
}
