import { defineProject, mergeConfig } from 'vitest/config'
import { sharedConfig } from '@locus/vitest-config'

export default mergeConfig(
  sharedConfig,
  defineProject({
    test: {
      name: 'cli',
      testTimeout: 60_000,
      hookTimeout: 180_000,
      // End-to-end tests spawn the built binary; this builds it first when it is missing or stale.
      globalSetup: ['./test/global-setup.ts'],
    },
  }),
)
