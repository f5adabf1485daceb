import { cp } from 'node:fs/promises'
import { locusPackage } from '@locus/tsup-config'

export default locusPackage({
  entry: ['src/index.ts', 'src/sqlite.ts', 'src/postgres.ts'],
  // The prompt templates are read at runtime from beside the bundle (dist/prompts/).
  onSuccess: async () => {
    await cp('src/prompts', 'dist/prompts', { recursive: true })
  },
})
