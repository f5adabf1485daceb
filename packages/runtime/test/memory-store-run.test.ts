import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRunView } from '@locus/journal'
import { createMemoryRunStore } from '@locus/store'
import { createScriptedHost, defineTool, defineWorkflow, readStoredRun, resumeRun, runWorkflowScript, startWorkflowRun } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'

const flow = defineWorkflow({
  name: 'in-memory',
  tools: { lookup: defineTool({ input: z.object({ id: z.string() }), run: ({ id }) => ({ id, found: true }) }) },
  run: async ({ agent, tool, parallel }) => {
    const answers = await parallel([() => agent('first'), () => agent('second')])
    return { ok: true, answers: answers.map((answer) => answer.answer), found: await tool('lookup', { id: 'T-1' }) }
  },
})

describe('a run through a RunStore', () => {
  it('runs end to end through createMemoryRunStore() and writes no file at all', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'locus-memory-run-'))
    const cwd = process.cwd()
    process.chdir(dir)
    try {
      const store = createMemoryRunStore()
      const run = await runWorkflowScript(flow, { store, host: createScriptedHost({ rules: [{ steps: [{ text: 'fine' }] }] }) })
      expect(run.disposition).toBe('completed')
      expect(await readdir(dir)).toEqual([])
      const stored = await readStoredRun(store, run.runId, { keep: 'all' })
      expect(stored.latest.summary).toMatchObject({ standing: 'completed', agentCalls: 2, toolCalls: 1, answerOutcome: 'complete' })
      expect(stored.latest.resultFile).toMatchObject({ disposition: 'completed', runId: run.runId })
      const ref = { runId: run.runId, executionId: run.runId }
      expect(await store.readArtifact(ref, 'outputs/README.md')).toMatch(/- Agent calls: 2 \(2 attempts/)
      const start = stored.latest.view.calls().find((call) => call.kind === 'agent')
      const callId = start?.kind === 'agent' ? start.attempts[0]?.callId : undefined
      const envelope = JSON.parse((await store.readArtifact(ref, `calls/${callId ?? ''}/result/result.json`)) ?? '{}') as { paths?: unknown; status?: string }
      // The envelope names artifact keys, not paths on a disk.
      expect(envelope).toMatchObject({ status: 'completed', paths: { transcriptDir: `calls/${callId ?? ''}/transcript`, resultDir: `calls/${callId ?? ''}/result` } })
    } finally {
      process.chdir(cwd)
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('refuses a run id the store has, before the script starts, and keeps the stored run', async () => {
    const store = createMemoryRunStore()
    await runWorkflowScript(flow, { store, runId: 'taken', host: createScriptedHost({ rules: [{ steps: [{ text: 'fine' }] }] }) })
    let started = false
    const second = startWorkflowRun(
      defineWorkflow({
        name: 'second',
        run: () => {
          started = true
          return { ok: true }
        },
      }),
      { store, runId: 'taken' },
    )
    // The handle is only handed out once the run exists: a taken id rejects the start itself.
    await expect(second).rejects.toMatchObject({ code: 'RUN_EXISTS' })
    expect(started).toBe(false)
    const view = createRunView()
    for await (const line of store.readLines({ runId: 'taken', executionId: 'taken' })) view.apply(line)
    expect(view.workflow).toBe('in-memory')
  })

  it('cancels a run in a store, even before its execution exists', async () => {
    const store = createMemoryRunStore()
    const handle = await startWorkflowRun(defineWorkflow({ name: 'waits', run: async ({ agent }) => agent('hang') }), {
      store,
      host: createScriptedHost({ rules: [{ steps: [{ hang: true }] }] }),
    })
    handle.cancel('no longer needed')
    expect((await handle.done).disposition).toBe('cancelled')
  })

  it('says which run a resume through a store cannot find', async () => {
    await expect(resumeRun('x', flow, { store: createMemoryRunStore() })).rejects.toThrow(/runs directory|No run/)
  })
})
