import { writeFileSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { loadWorkflow } from './load-workflow.js'

let dir: string

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'locus-load-'))
  writeFileSync(join(dir, 'default.mjs'), "export default { name: 'by-default', run: () => ({ ok: true }) }\n")
  writeFileSync(join(dir, 'named.mts'), "const n: number = 1\nexport const workflow = { name: 'by-name', run: () => ({ ok: true, n }) }\n")
  writeFileSync(join(dir, 'function.mjs'), 'export default async function triage() { return { ok: true } }\n')
  writeFileSync(join(dir, 'notes.txt'), 'not a module\n')
})

describe('loadWorkflow (the issue: "default export, or a named export `workflow`")', () => {
  it('takes the default export', async () => {
    const loaded = await loadWorkflow('default.mjs', dir)
    expect(loaded).toMatchObject({ exportName: 'default', path: join(dir, 'default.mjs') })
    expect((loaded.workflow as { name: string }).name).toBe('by-default')
  })

  it('takes a named export `workflow` from TypeScript', async () => {
    const loaded = await loadWorkflow('named.mts', dir)
    expect(loaded.exportName).toBe('workflow')
    expect((loaded.workflow as { name: string }).name).toBe('by-name')
  })

  it('takes a bare async function', async () => {
    expect(typeof (await loadWorkflow('function.mjs', dir)).workflow).toBe('function')
  })

  it('refuses other file types', async () => {
    await expect(loadWorkflow('notes.txt', dir)).rejects.toThrow(/notes\.txt is not a workflow module: locus loads \.ts, \.mts, \.js, \.mjs files/)
  })
})
