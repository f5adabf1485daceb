/**
 * Example: ids come from the group tree, not from timing.
 *
 * What it shows: the same workflow run twice with opposite branch latencies
 * allocates the same ids (`2[1].1`, `2[0].1[0].1`, ...). Replay relies on this.
 *
 * Run: node --conditions=@locus/source --import tsx examples/deterministic-ids.ts
 */
import { allocateChildId, createRunScope, parallel, runInScope } from '@locus/groups'
import { fileURLToPath } from 'node:url'

const turns = async (count: number): Promise<void> => {
  for (let turn = 0; turn < count; turn += 1) await Promise.resolve()
}

async function workflow(latencies: readonly number[]): Promise<string[]> {
  const ids: string[] = []
  ids.push(`first call ${allocateChildId()}`)
  await parallel([
    async () => {
      await turns(latencies[0] ?? 0)
      await parallel([
        () => {
          ids.push(`nested call ${allocateChildId()}`)
        },
      ])
    },
    async () => {
      await turns(latencies[1] ?? 0)
      ids.push(`call in branch 1 ${allocateChildId()}`)
    },
  ])
  return ids.sort()
}

export async function main(): Promise<{ fastFirst: string[]; slowFirst: string[] }> {
  const fastFirst = await runInScope(createRunScope(), () => workflow([1, 9]))
  const slowFirst = await runInScope(createRunScope(), () => workflow([9, 1]))
  return { fastFirst, slowFirst }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { fastFirst, slowFirst } = await main()
  console.log(fastFirst)
  console.log('same ids with opposite latencies:', JSON.stringify(fastFirst) === JSON.stringify(slowFirst))
}
