/**
 * The README snippet, runnable as it is printed there.
 *
 * Run: node --conditions=@locus/source --import tsx examples/readme.ts
 */
import { WorkflowGroupFailureError, createRunScope, parallel, pipeline, runInScope } from '@locus/groups'

const scope = createRunScope({
  concurrency: 4,
  observer: (event) => {
    console.log(event.type, event.groupId)
  },
})

export const output = await runInScope(scope, async () => {
  const [a, b] = await parallel([() => Promise.resolve('alpha'), () => null]) // ['alpha', null]
  const lengths = await pipeline(['x', 'yy'], [(word) => word.toUpperCase(), (upper) => upper.length]) // [1, 2]
  try {
    await parallel([() => 'fine', () => ({ status: 'blocked', summary: 'Owner decision required' })])
  } catch (error) {
    if (!WorkflowGroupFailureError.isInstance(error)) throw error
    return { a, b, lengths, completed: error.completed, failed: error.failed, status: error.failures[0]?.status }
  }
  return { a, b, lengths }
})
console.log(output) // { a: 'alpha', b: null, lengths: [1, 2], completed: 1, failed: 1, status: 'blocked' }
