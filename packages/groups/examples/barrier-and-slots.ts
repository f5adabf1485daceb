/**
 * Example: the full barrier and the slots of a failed group.
 *
 * What it shows: one branch throws early, one returns `{ status: "blocked" }`,
 * one returns a BigInt (which cannot cross the JSON boundary), and a slow one
 * still finishes before the group reports. Look for: the slow branch in
 * `slots` as completed; the thrown slot without a `value`; `partialResults`
 * with `null` where a branch threw.
 *
 * Run: node --conditions=@locus/source --import tsx examples/barrier-and-slots.ts
 */
import { WorkflowGroupFailureError, parallel } from '@locus/groups'
import { fileURLToPath } from 'node:url'

const later = <T>(value: T): Promise<T> => new Promise((resolve) => setImmediate(resolve, value))

export async function main(): Promise<WorkflowGroupFailureError> {
  try {
    await parallel([
      () => later({ ok: true, invoices: 12 }), // slow, still awaited
      () => Promise.reject(new Error('ledger API timed out')), // thrown
      () => ({ status: 'blocked', summary: 'Owner decision required' }), // returned failure
      () => ({ total: 23_100n }), // boundary failure
      () => null, // a fulfilled null is a value
    ])
    throw new Error('unreachable: the group has failures')
  } catch (error) {
    if (!WorkflowGroupFailureError.isInstance(error)) throw error
    return error
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const error = await main()
  console.log(`${error.code}: ${error.completed} completed, ${error.failed} failed of ${error.total}`)
  for (const slot of error.slots) {
    const detail = slot.status === 'completed' ? JSON.stringify(slot.value) : `${slot.failure.kind}${'value' in slot ? ' (raw value kept)' : ''}`
    console.log(`  slot ${slot.index}: ${slot.status} ${detail}`)
  }
  console.log('partialResults:', error.partialResults)
}
