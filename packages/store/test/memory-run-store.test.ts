import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createMemoryRunStore } from '../src/index.js'
import { runStoreContract } from '../src/testing.js'

runStoreContract('memory', () => Promise.resolve({ store: createMemoryRunStore() }))

describe('createMemoryRunStore', () => {
  it('writes no file while a run goes through it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'locus-memory-store-'))
    const cwd = process.cwd()
    process.chdir(dir)
    try {
      const store = createMemoryRunStore()
      const writer = await store.createExecution({ runId: 'run-m', kind: 'root' })
      writer.append({ type: 'log', level: 'info', message: 'in memory' })
      await writer.artifacts.write('result.json', '{}')
      await writer.close()
      expect(await readdir(dir)).toEqual([])
    } finally {
      process.chdir(cwd)
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('keeps two stores apart', async () => {
    const one = createMemoryRunStore()
    const two = createMemoryRunStore()
    await (await one.createExecution({ runId: 'shared-id', kind: 'root' })).close()
    expect(await two.hasRun('shared-id')).toBe(false)
    await expect(two.createExecution({ runId: 'shared-id', kind: 'root' })).resolves.toMatchObject({ executionId: 'shared-id' })
  })
})
