import { defineConfig } from 'vitest/config'
import SummaryReporter from '@locus/vitest-config/summary-reporter'

export default defineConfig({
  test: {
    projects: ['packages/*', 'apps/*', 'docs/examples', 'apps/bench'],
    // Two cores on CI machines: two workers keep the suite honest about its size.
    maxWorkers: 2,
    reporters: ['default', new SummaryReporter()],
  },
})
