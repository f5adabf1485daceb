import pg from 'pg'
import { it } from 'vitest'

/** The PostgreSQL the suite runs against, or undefined to skip that half locally. */
export const postgresUrl = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL

/**
 * In CI a missing database must fail the run, never quietly skip half the
 * suite. Call once at the top of a file that has PostgreSQL tests.
 */
export function failInCiWithoutPostgres(): void {
  if (postgresUrl === undefined && process.env.CI !== undefined && process.env.CI !== '') {
    it('has a PostgreSQL database in CI (LOCUS_TEST_PG_URL)', () => {
      throw new Error('LOCUS_TEST_PG_URL is not set, but CI is: start PostgreSQL (scripts/ci-services.sh start) and export the URL.')
    })
  } else if (postgresUrl === undefined) {
    it.skip('PostgreSQL half: set LOCUS_TEST_PG_URL to run it', () => undefined)
  }
}

/** A schema name no other test file or run uses at the same time. */
export function uniqueSchema(label: string): string {
  return `locus_partial_${label}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
}

/** Drops a test schema and everything in it. */
export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`drop schema if exists "${schema}" cascade`)
  } finally {
    await client.end()
  }
}
