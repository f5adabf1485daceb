import { defineProject, mergeConfig } from 'vitest/config'
import { sharedConfig } from '@locus/vitest-config'

export default mergeConfig(sharedConfig, defineProject({ test: { name: 'testing' } }))
