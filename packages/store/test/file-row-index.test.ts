// The file store keeps the rows it listed between listings (issue #31: GET /v1/runs?workflow= over 10,000 runs).
// Whatever other processes do to the runs directory meanwhile, a warm store lists exactly what a cold one does.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type ListRunRowsFilter, type RunStore, createFileRunStore } from '../src/index.js'

type Op =
  | { readonly kind: 'start'; readonly run: number; readonly workflow: string; readonly end: 'completed' | 'failed' | undefined }
  | { readonly kind: 'resume'; readonly run: number; readonly end: 'completed' | 'failed' | 'cancelled' }
  | { readonly kind: 'remove'; readonly run: number }

const runIdOf = (run: number): string => `run-${String(run).padStart(3, '0')}`

/** Every page of a listing, walked by its cursor: who is listed, with which status and workflow, in order. */
async function walk(store: RunStore, filter: ListRunRowsFilter): Promise<string[]> {
  const seen: string[] = []
  let cursor: string | undefined
  do {
    const page = await store.listRunRows({ ...filter, limit: 3, ...(cursor === undefined ? {} : { cursor }) })
    for (const row of page.rows) seen.push(`${row.runId} ${row.status} ${row.workflow ?? '-'}`)
    cursor = page.nextCursor
  } while (cursor !== undefined)
  return seen
}

const FILTERS: readonly ListRunRowsFilter[] = [{}, { workflow: 'a' }, { workflow: 'b' }, { status: 'running' }, { status: 'completed' }, { workflow: 'a', status: 'failed' }]

describe('file store listings between listings', () => {
  it('a warm store lists what a cold one does, after starts, ends, resumes by other processes and removals', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({ kind: fc.constant('start' as const), run: fc.nat(7), workflow: fc.constantFrom('a', 'b'), end: fc.constantFrom(undefined, 'completed' as const, 'failed' as const) }),
            fc.record({ kind: fc.constant('resume' as const), run: fc.nat(7), end: fc.constantFrom('completed' as const, 'failed' as const, 'cancelled' as const) }),
            fc.record({ kind: fc.constant('remove' as const), run: fc.nat(7) }),
          ),
          { minLength: 1, maxLength: 12 },
        ),
        async (ops: Op[]) => {
          const dir = await mkdtemp(join(tmpdir(), 'locus-row-index-'))
          try {
            const runsDir = join(dir, 'runs')
            // The store that keeps listing; every write comes from other store instances, as other processes would.
            const warm = createFileRunStore(runsDir)
            const exists = new Set<number>()
            let tick = 0
            for (const op of ops) {
              const other = createFileRunStore(runsDir)
              tick += 1
              if (op.kind === 'start' && !exists.has(op.run)) {
                const writer = await other.createExecution({ runId: runIdOf(op.run), kind: 'root', now: () => 1_700_000_000_000 + tick })
                writer.append({ type: 'run_start', workflow: op.workflow, input: {}, options: {} })
                if (op.end !== undefined) writer.append({ type: 'run_end', disposition: op.end, ok: op.end === 'completed', result: null, durationMs: 1 })
                await writer.close()
                exists.add(op.run)
              } else if (op.kind === 'resume' && exists.has(op.run)) {
                const writer = await other.createExecution({ runId: runIdOf(op.run), kind: 'resume' })
                writer.append({ type: 'run_start', workflow: 'ignored-by-the-row', input: {}, options: {} })
                writer.append({ type: 'run_end', disposition: op.end, ok: op.end === 'completed', result: null, durationMs: 1 })
                await writer.close()
              } else if (op.kind === 'remove' && exists.has(op.run)) {
                await rm(join(runsDir, runIdOf(op.run)), { recursive: true, force: true })
                exists.delete(op.run)
              }
              for (const filter of FILTERS) expect(await walk(warm, filter)).toEqual(await walk(createFileRunStore(runsDir), filter))
            }
          } finally {
            await rm(dir, { recursive: true, force: true })
          }
        },
      ),
      { numRuns: 40 },
    )
  }, 120_000)
})
