// What the PostgreSQL tests of this package share: the URL of the test
// server, a database of a file's own (graphile-worker's schema is per
// database), admin statements, and waiting for a condition to hold.
import pg from 'pg'

/** `LOCUS_TEST_PG_URL`, or undefined when the tests have no PostgreSQL. */
export const testDatabaseUrl = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL

/** The URL of database `name` on the server of `base`. */
export function databaseUrl(base: string, name: string): string {
  const parsed = new URL(base)
  parsed.pathname = `/${name}`
  return parsed.toString()
}

/** Runs one statement on its own connection (create or drop a database, say). */
export async function admin(base: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: base })
  await client.connect()
  try {
    await client.query(text)
  } finally {
    await client.end()
  }
}

/** Polls `probe` until it returns a value, or throws naming `what` after `timeoutMs`. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000, everyMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}
