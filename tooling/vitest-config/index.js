import { defineConfig } from 'vitest/config'

/**
 * The export condition every @locus package lists first in its `exports` map.
 * Tests resolve siblings through it to their TypeScript sources, so the suite
 * runs without a prior build.
 */
export const SOURCE_CONDITION = '@locus/source'

const serverConditions = [SOURCE_CONDITION, 'node', 'import', 'module', 'default']

/** Shared settings that every package's vitest project merges. */
export const sharedConfig = defineConfig({
  resolve: { conditions: serverConditions },
  ssr: { resolve: { conditions: serverConditions, externalConditions: [SOURCE_CONDITION, 'node'] } },
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
