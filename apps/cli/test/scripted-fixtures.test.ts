// docs/scripted-host.md as a user follows it: its example runs through `locus run` as shown, its
// fixtures are valid, and a fixtures file with a wrong field stops `locus run` with exit 2 and the
// lines the guide shows, each naming the field and what is expected (issue 30, item 25).
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseScriptedFixtures } from '@locus/runtime'
import { extractSnippets } from '@locus/vitest-config/docs-snippets'
import { beforeAll, describe, expect, it } from 'vitest'
import { repoRoot, runLocus, tempDir } from './helpers.js'

const guide = 'docs/scripted-host.md'
const text = readFileSync(join(repoRoot, guide), 'utf8')
const blocks = (language: string): string[] => [...text.matchAll(new RegExp(`^\`\`\`${language}\\n([\\s\\S]*?)^\`\`\`\\s*$`, 'gm'))].map((match) => match[1] ?? '')
const [workflow] = extractSnippets(guide, text, { maxLinesBetween: 1 })
const exampleFixtures = blocks('json').find((block) => block.includes('word_count')) ?? ''
const shownError = blocks('text').find((block) => block.includes('Invalid scripted host fixtures')) ?? ''

let dir: string
beforeAll(async () => {
  dir = await tempDir('locus-fixtures-')
})

describe(`the fixtures format of ${guide}`, () => {
  it('every fixtures file the guide shows is valid', () => {
    expect(blocks('json').length).toBeGreaterThanOrEqual(2)
    for (const block of blocks('json')) expect(() => parseScriptedFixtures(JSON.parse(block), guide)).not.toThrow()
  })

  it('runs its example with every step kind through locus run, printing what it shows', async () => {
    expect(workflow?.expected).toBeDefined()
    writeFileSync(join(dir, 'review.mts'), workflow?.code ?? '')
    writeFileSync(join(dir, 'review.fixtures.json'), exampleFixtures)
    const result = await runLocus(['run', 'review.mts', '--host', 'scripted', '--quiet', '--runs-dir', join(dir, 'runs')], { cwd: dir })
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' })
    expect(result.stdout).toContain(workflow?.expected)
    expect(result.stdout).toMatch(/7 agent calls \(9 attempts\), 1 tool call \(1 attempt\)/)
  }, 60_000)

  it('stops locus run with exit 2 on a wrong field, naming its path and what is expected, as the guide shows', async () => {
    writeFileSync(join(dir, 'review.mts'), workflow?.code ?? '')
    const broken = JSON.parse(exampleFixtures) as { rules: Record<string, unknown>[] }
    broken.rules[0] = { match: { agnet: 'writer' }, steps: [{ text: 'x' }] }
    broken.rules[1] = { steps: [{ txt: 'ok' }] }
    writeFileSync(join(dir, 'broken.fixtures.json'), JSON.stringify(broken))
    const result = await runLocus(['run', 'review.mts', '--fixtures', 'broken.fixtures.json', '--runs-dir', join(dir, 'runs')], { cwd: dir })
    expect(result.code).toBe(2)
    expect(result.stderr.trim()).toBe(shownError.trim())
    expect(result.stdout).toBe('')
  }, 60_000)

  it('still runs the fixtures locus init writes', async () => {
    const initDir = join(dir, 'init')
    expect((await runLocus(['init', 'demo', '--dir', initDir], { cwd: dir })).code).toBe(0)
    const result = await runLocus(['run', 'demo.mts', '--quiet', '--runs-dir', join(dir, 'runs')], { cwd: initDir })
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' })
  }, 60_000)
})
