import { defineConfig } from 'tsup'

/**
 * The build every public package shares: ESM with declarations and source
 * maps from src/index.ts, compiled against tsconfig.build.json (which drops
 * the @locus/source condition so siblings stay external imports).
 *
 * @param {import('tsup').Options} [overrides] package-specific additions
 */
export function locusPackage(overrides = {}) {
  return defineConfig({
    entry: ['src/index.ts'],
    format: ['esm'],
    dts: true,
    sourcemap: true,
    clean: true,
    tsconfig: 'tsconfig.build.json',
    ...overrides,
  })
}
