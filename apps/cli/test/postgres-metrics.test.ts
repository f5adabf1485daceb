import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { examplesDir, runLocus, tempDir } from './helpers.js'

const databaseUrl = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL

describe('metrics in PostgreSQL (LOCUS_DATABASE_URL)', () => {
  it.skipIf(databaseUrl === undefined)('`locus run` records the run there and `locus report` reads it back (set LOCUS_TEST_PG_URL to run)', async () => {
    const runsDir = await tempDir()
    const env = { LOCUS_DATABASE_URL: databaseUrl ?? '' }
    const before = JSON.parse((await runLocus(['report', '--runs-dir', runsDir, '--json'], { env })).stdout) as { store: string; outcomes: { partial: number } }
    expect(before.store).toBe('postgres')
    const run = await runLocus(['run', join(examplesDir, 'research/research-fan-out.ts'), '--runs-dir', runsDir, '--quiet'], { env })
    expect(run.code).toBe(1)
    expect(run.stderr).toBe('')
    const after = JSON.parse((await runLocus(['report', '--runs-dir', runsDir, '--json'], { env })).stdout) as { outcomes: { partial: number } }
    expect(after.outcomes.partial).toBeGreaterThanOrEqual(before.outcomes.partial + 1)
  })
})
