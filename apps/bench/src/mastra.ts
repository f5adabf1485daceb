import type { UnmeasuredImplementation } from './workload.js'

/** Mastra's row in every table: its core declares `engines: node >= 22.13`, so it is not installed here. */
export function mastraNotMeasured(): UnmeasuredImplementation {
  return {
    system: 'Mastra',
    name: 'Mastra',
    reason: `not measured: needs Node 22 (@mastra/core declares engines node >= 22.13; this machine runs Node ${process.versions.node})`,
  }
}
