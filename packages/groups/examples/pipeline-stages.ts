/**
 * Example: a pipeline where one item is blocked at its second stage.
 *
 * What it shows: the blocked item does not reach stage 2, the other items run
 * every stage, and the failure names the `stageIndex` where the item stopped.
 *
 * Run: node --conditions=@locus/source --import tsx examples/pipeline-stages.ts
 */
import { WorkflowGroupFailureError, pipeline } from '@locus/groups'
import { fileURLToPath } from 'node:url'

export interface PipelineReport {
  readonly stagesRun: string[]
  readonly error: WorkflowGroupFailureError
}

export async function main(): Promise<PipelineReport> {
  const stagesRun: string[] = []
  try {
    await pipeline(
      ['T-1', 'T-2', 'T-3'],
      [
        (id) => {
          stagesRun.push(`fetch ${id}`)
          return { id, owner: id === 'T-2' ? undefined : 'ana' }
        },
        (ticket) => {
          stagesRun.push(`check ${ticket.id}`)
          // A blocked record fails this item here; its type is not passed on to the next stage.
          return ticket.owner === undefined ? { status: 'blocked' as const, summary: `${ticket.id} has no owner` } : ticket
        },
        (ticket) => {
          stagesRun.push(`summarise ${ticket.id}`)
          return `${ticket.id}: ok`
        },
      ],
      { concurrency: 2 },
    )
    throw new Error('unreachable: T-2 is blocked')
  } catch (error) {
    if (!WorkflowGroupFailureError.isInstance(error)) throw error
    return { stagesRun, error }
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { stagesRun, error } = await main()
  console.log('stages run:', stagesRun.join(', '))
  console.log(`failed item ${error.failures[0]?.index} at stage ${error.stageIndex}:`, error.partialResults[1])
}
