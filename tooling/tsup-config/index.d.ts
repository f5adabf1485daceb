import type { Options } from 'tsup'

export declare function locusPackage(overrides?: Options): Options | Options[] | ((overrideOptions: Options) => Options | Options[] | Promise<Options | Options[]>)
