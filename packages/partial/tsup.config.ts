import { cp } from 'node:fs/promises'
import { defineConfig } from 'tsup'

export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
  tsconfig: 'tsconfig.build.json',
  // The prompt templates are read at runtime from beside the bundle (dist/prompts/).
  onSuccess: async () => {
    await cp('src/prompts', 'dist/prompts', { recursive: true })
  },
})
