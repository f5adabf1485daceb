import type { ViteUserConfig } from 'vitest/config'

export declare const SOURCE_CONDITION: '@locus/source'
export declare const sharedConfig: ViteUserConfig
