import { createMemoryRunStore } from '@locus/store'
import { type AgentHost, HOST_SPECIFICATION_VERSION, createScriptedHost, runWorkflowScript } from '@locus/runtime'
import { describe, expect, it } from 'vitest'

const flow = async ({ agent }: { agent: (prompt: string) => Promise<{ answer: string }> }) => ({ ok: true, answer: (await agent('hello')).answer })

describe('the host contract version', () => {
  it('runs a host that declares v1 (the scripted host does)', async () => {
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'hi' }] }] })
    expect(host.specificationVersion).toBe(HOST_SPECIFICATION_VERSION)
    const run = await runWorkflowScript(flow, { store: createMemoryRunStore(), host })
    expect(run.disposition).toBe('completed')
  })

  it('refuses a host that declares another version before the run starts, naming both versions', async () => {
    let opened = 0
    const future = {
      name: 'future',
      specificationVersion: 'v2',
      openSession() {
        opened += 1
        throw new Error('never called')
      },
    } as unknown as AgentHost
    const attempt = runWorkflowScript(flow, { store: createMemoryRunStore(), host: future })
    await expect(attempt).rejects.toMatchObject({ code: 'RUN_OPTIONS_INVALID' })
    await expect(attempt).rejects.toThrow(/host "future" implements host contract "v2", but this runtime implements "v1"/)
    expect(opened).toBe(0)
  })

  it('still runs a host written before the contract had a version', async () => {
    const legacy: AgentHost = {
      name: 'legacy',
      openSession: () => ({ prompt: () => Promise.resolve({ text: 'old but fine', stopReason: 'end' }), transcript: () => [] }),
    }
    const run = await runWorkflowScript(flow, { store: createMemoryRunStore(), host: legacy })
    expect(run.result).toMatchObject({ answer: 'old but fine' })
  })
})
