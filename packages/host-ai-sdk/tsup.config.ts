import { locusPackage } from '@locus/tsup-config'

export default locusPackage({ entry: ['src/index.ts', 'src/testing.ts'] })
