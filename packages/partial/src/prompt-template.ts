import { readFile } from 'node:fs/promises'
import { PartialInputError } from './partial-error.js'

/** The prompt templates shipped with the package, in `src/prompts/` and `dist/prompts/`. */
export const PROMPT_NAMES = ['answer', 'answer-partial'] as const
export type PromptName = (typeof PROMPT_NAMES)[number]

const loaded = new Map<PromptName, Promise<string>>()

/**
 * Reads a shipped prompt template once and keeps it. The file sits beside
 * this module: `src/prompts/` when running from source, `dist/prompts/`
 * (copied by the build) when running from the published package.
 */
export function loadPromptTemplate(name: PromptName): Promise<string> {
  let template = loaded.get(name)
  if (template === undefined) {
    template = readFile(new URL(`./prompts/${name}.md`, import.meta.url), 'utf8')
    void template.catch(() => {
      loaded.delete(name)
    })
    loaded.set(name, template)
  }
  return template
}

/**
 * Fills `{{name}}` placeholders in one pass, so text substituted for one
 * placeholder is never read as another. An unknown placeholder is an error,
 * not a silent blank in a model's prompt.
 */
export function fillPromptTemplate(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (_match, key: string) => {
    const value = values[key]
    if (value === undefined) {
      throw new PartialInputError(`template {{${key}}}`, `no value was given for it; known placeholders are ${Object.keys(values).join(', ')}.`)
    }
    return value
  })
}
