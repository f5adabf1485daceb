import { defineConfig } from 'vitest/config'

/**
 * The export condition every @locus package lists first in its `exports` map.
 * Tests resolve siblings through it to their TypeScript sources, so the suite
 * runs without a prior build.
 */
export const SOURCE_CONDITION = '@locus/source'

// Only the source condition and 'node': vitest hands these to the worker as
// `node --conditions`, and 'import' or 'module' there would make Node's own
// require() of dual CJS/ESM dependencies (pg, pg-pool) load their ESM builds.
const serverConditions = [SOURCE_CONDITION, 'node']

/** Shared settings that every package's vitest project merges. */
export const sharedConfig = defineConfig({
  resolve: { conditions: serverConditions },
  ssr: { resolve: { conditions: serverConditions, externalConditions: serverConditions } },
  test: {
    environment: 'node',
    restoreMocks: true,
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    typecheck: {
      enabled: true,
      include: ['src/**/*.test-d.ts', 'test/**/*.test-d.ts'],
    },
    testTimeout: 20_000,
  },
})
