// The stand-in test of a PostgreSQL test file run without a database.
import { it } from 'vitest'
import { testDatabaseUrl } from './pg-test-database.js'

/**
 * The test server's URL for a file of PostgreSQL tests. Without one it
 * registers a stand-in test, which fails in CI (the tests must never be
 * skipped there) and is skipped elsewhere under `skipTitle`, and returns
 * undefined: the file then defines nothing else.
 */
export function postgresFor(skipTitle: string): string | undefined {
  if (testDatabaseUrl !== undefined) return testDatabaseUrl
  if (process.env.CI !== undefined && process.env.CI !== '') {
    it('has a PostgreSQL database in CI (LOCUS_TEST_PG_URL)', () => {
      throw new Error('LOCUS_TEST_PG_URL is not set, but CI is: start PostgreSQL (scripts/ci-services.sh start) and export the URL.')
    })
  } else {
    it.skip(skipTitle, () => undefined)
  }
  return undefined
}
