import { locusConfig } from '@locus/eslint-config'

export default locusConfig({ tsconfigRootDir: import.meta.dirname })
