import { writeFileSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { CliError } from './cli-error.js'
import { createHost, siblingFixturesPath } from './create-host.js'

let dir: string
let workflowPath: string

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'locus-host-'))
  workflowPath = join(dir, 'triage.mts')
  writeFileSync(siblingFixturesPath(workflowPath), JSON.stringify({ rules: [{ steps: [{ text: 'ok' }] }] }))
  writeFileSync(join(dir, 'bad.json'), JSON.stringify({ rules: [{ steps: [{ txt: 'typo' }] }] }))
})

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise
  } catch (error) {
    return CliError.isInstance(error) ? error.code : 'not a CliError'
  }
  return undefined
}

describe('createHost', () => {
  it('--host scripted reads --fixtures, or else <workflow>.fixtures.json beside the workflow', async () => {
    expect(siblingFixturesPath('/a/triage.mts')).toBe('/a/triage.fixtures.json')
    const chosen = await createHost({ host: 'scripted' }, { cwd: dir, env: {}, workflowPath })
    expect(chosen.kind).toBe('scripted')
    expect(chosen.host?.name).toBe('scripted')
    expect(chosen.description).toBe('scripted (fixtures: triage.fixtures.json)')
  })

  it('without --host: --fixtures means scripted, LOCUS_MODEL_BASE_URL means a model, a sibling fixtures file means scripted, else none', async () => {
    expect((await createHost({ fixtures: 'triage.fixtures.json' }, { cwd: dir, env: {}, workflowPath })).kind).toBe('scripted')
    expect((await createHost({}, { cwd: dir, env: {}, workflowPath })).kind).toBe('scripted')
    expect((await createHost({}, { cwd: dir, env: {}, workflowPath: join(dir, 'other.mts') })).kind).toBe('none')
    const model = await createHost({}, { cwd: dir, env: { LOCUS_MODEL_BASE_URL: 'http://127.0.0.1:9/v1', LOCUS_MODEL: 'tiny' }, workflowPath })
    expect(model).toMatchObject({ kind: 'openai-compatible', description: 'openai-compatible (tiny at http://127.0.0.1:9/v1)' })
  })

  it('a resumed run made with a model host is not silently resumed without one', async () => {
    expect(await codeOf(createHost({}, { cwd: dir, env: {}, workflowPath, preferred: 'ai-sdk' }))).toBe('HOST_OPTIONS_INVALID')
  })

  it('a resumed run made with a model host is rebuilt from its recorded settings, flags winning, the key never recorded', async () => {
    const { createAiSdkHost } = await import('@locus/host-ai-sdk')
    const original = createAiSdkHost({ api: 'openai-compatible', baseURL: 'http://127.0.0.1:9/v1', modelId: 'tiny', apiKey: 'secret' })
    const recorded = JSON.parse(JSON.stringify(original.settings)) as unknown
    expect(JSON.stringify(recorded)).not.toContain('secret')
    const rebuilt = await createHost({ apiKey: 'secret' }, { cwd: dir, env: {}, workflowPath, preferred: original.name, recordedSettings: recorded, launchMode: 'background' })
    expect(rebuilt).toMatchObject({ kind: 'openai-compatible', description: 'openai-compatible (tiny at http://127.0.0.1:9/v1, as the run recorded it)' })
    expect(rebuilt.host?.settings).toMatchObject({ modelId: 'tiny', baseURL: 'http://127.0.0.1:9/v1', launchMode: 'background', apiKey: 'given' })
    const otherModel = await createHost({ apiKey: 'secret', model: 'bigger' }, { cwd: dir, env: {}, workflowPath, preferred: original.name, recordedSettings: recorded })
    expect(otherModel.host?.settings).toMatchObject({ modelId: 'bigger' })
    // The key was given and is never recorded: without one, the resume says what to pass.
    await expect(createHost({}, { cwd: dir, env: {}, workflowPath, preferred: original.name, recordedSettings: recorded })).rejects.toThrow(/set LOCUS_API_KEY or pass --api-key/)
  })

  it('refuses unusable fixtures, naming the field, and model settings that are missing', async () => {
    await expect(createHost({ host: 'scripted', fixtures: 'bad.json' }, { cwd: dir, env: {}, workflowPath })).rejects.toThrow(/Invalid scripted host fixtures \(the format: docs\/scripted-host\.md; JSON Schema: @locus\/runtime\/fixtures\.schema\.json\):\n {2}bad\.json\.rules\.0\.steps\.0: a step needs one of the keys/)
    expect(await codeOf(createHost({ host: 'scripted', fixtures: 'missing.json' }, { cwd: dir, env: {}, workflowPath }))).toBe('HOST_OPTIONS_INVALID')
    expect(await codeOf(createHost({ host: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1' }, { cwd: dir, env: {}, workflowPath }))).toBe('HOST_OPTIONS_INVALID')
    expect(await codeOf(createHost({ host: 'none', fixtures: 'x.json' }, { cwd: dir, env: {}, workflowPath }))).toBe('CLI_USAGE')
  })
})
