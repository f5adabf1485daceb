import { locusPackage } from '@locus/tsup-config'

export default locusPackage()
