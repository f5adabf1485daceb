import { LocusError, hasLocusErrorCode } from '@locus/outcome'

/** The stable code of {@link AiSdkHostOptionsError}. */
export const AI_SDK_HOST_OPTIONS_INVALID = 'AI_SDK_HOST_OPTIONS_INVALID'

/**
 * `createAiSdkHost` was given options it cannot work with: no way to reach a
 * model, a base URL that is not a URL, a malformed retry policy on an agent.
 * `issues` lists each problem as `field: what is wrong`, and the message
 * repeats them with what to do.
 *
 * @example
 * ```ts
 * createAiSdkHost({ modelId: 'llama3.2' }) // throws: give baseURL, provider or model
 * ```
 */
export class AiSdkHostOptionsError extends LocusError {
  declare readonly code: typeof AI_SDK_HOST_OPTIONS_INVALID
  /** Each problem, as `field: what is wrong`. */
  readonly issues: readonly string[]

  constructor(issues: readonly string[], cause?: unknown) {
    super(`Invalid createAiSdkHost options:\n  ${issues.join('\n  ')}`, { code: AI_SDK_HOST_OPTIONS_INVALID, cause })
    this.name = 'AiSdkHostOptionsError'
    this.issues = issues
  }

  /** True for an {@link AiSdkHostOptionsError} from any installed copy of this package. */
  static override isInstance(value: unknown): value is AiSdkHostOptionsError {
    return isAiSdkHostOptionsError(value)
  }
}

/** True for an {@link AiSdkHostOptionsError} from any installed copy of this package. */
export function isAiSdkHostOptionsError(value: unknown): value is AiSdkHostOptionsError {
  return hasLocusErrorCode(value, AI_SDK_HOST_OPTIONS_INVALID)
}
