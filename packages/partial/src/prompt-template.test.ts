import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { PartialInputError } from './partial-error.js'
import { PROMPT_NAMES, fillPromptTemplate, loadPromptTemplate } from './prompt-template.js'

describe('prompt templates', () => {
  it.each(PROMPT_NAMES)('loads the shipped %s template from src/prompts', async (name) => {
    const onDisk = await readFile(new URL(`./prompts/${name}.md`, import.meta.url), 'utf8')
    expect(await loadPromptTemplate(name)).toBe(onDisk)
  })

  it('the partial template states the three rules: say what could not be checked, do not speculate, say when a gap could change the answer', async () => {
    const template = await loadPromptTemplate('answer-partial')
    expect(template).toMatch(/what could not be checked/)
    expect(template).toMatch(/do not guess what the unfinished checks would have returned/i)
    expect(template).toMatch(/could change the answer, say so/i)
    expect(template).toContain('{{gaps}}')
    expect(template).toContain('{{sources}}')
    expect(template).toContain('{{question}}')
  })

  it('fills placeholders in one pass, so substituted text is never expanded again', () => {
    expect(fillPromptTemplate('Q: {{question}} / {{sources}}', { question: '{{sources}}', sources: 'S' })).toBe('Q: {{sources}} / S')
  })

  it('refuses a placeholder it has no value for', () => {
    expect(() => fillPromptTemplate('{{missing}}', { question: 'q' })).toThrow(PartialInputError)
  })
})
