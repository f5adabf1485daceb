import { HostError } from '@locus/host-contract'
import type * as Ai from 'ai'
import type * as OpenAiCompatible from '@ai-sdk/openai-compatible'
import type * as OpenAi from '@ai-sdk/openai'
import type * as Anthropic from '@ai-sdk/anthropic'
import type * as Google from '@ai-sdk/google'

/** The AI SDK core module, as this host uses it. */
export type AiModule = typeof Ai
/** The OpenAI-compatible provider module. */
export type OpenAiCompatibleModule = typeof OpenAiCompatible
/** The OpenAI provider module. */
export type OpenAiModule = typeof OpenAi
/** The Anthropic provider module. */
export type AnthropicModule = typeof Anthropic
/** The Google Generative AI provider module. */
export type GoogleModule = typeof Google

/** Imports a module once; a failure is remembered as `sdk-unavailable`, because no turn can run without it. */
export function lazily<TModule>(specifier: string, load: () => Promise<TModule>): () => Promise<TModule> {
  let loading: Promise<TModule> | undefined
  return () => {
    loading ??= load().catch((error: unknown) => {
      throw new HostError(
        'sdk-unavailable',
        `The AI SDK module "${specifier}" could not be loaded (${error instanceof Error ? error.message : String(error)}); ` +
          `install it next to @locus/host-ai-sdk (pnpm add ${specifier}).`,
        error,
      )
    })
    return loading
  }
}

// Loaded on first use rather than at import time, so that a missing or broken
// SDK is reported as a typed `sdk-unavailable` host failure on the call that
// needed it, not as a crash while the workflow file is being imported.
export const loadAi = lazily<AiModule>('ai', () => import('ai'))
export const loadOpenAiCompatible = lazily<OpenAiCompatibleModule>('@ai-sdk/openai-compatible', () => import('@ai-sdk/openai-compatible'))
export const loadOpenAi = lazily<OpenAiModule>('@ai-sdk/openai', () => import('@ai-sdk/openai'))
export const loadAnthropic = lazily<AnthropicModule>('@ai-sdk/anthropic', () => import('@ai-sdk/anthropic'))
export const loadGoogle = lazily<GoogleModule>('@ai-sdk/google', () => import('@ai-sdk/google'))
