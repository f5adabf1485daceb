import { describe, expect, it } from 'vitest'
import type { CliIo } from './cli-io.js'
import { createHost } from './create-host.js'
import { parseTurnBound } from './host-flags.js'
import { createProgram } from './program.js'

const io: CliIo = { stdout: { write: () => true }, stderr: { write: () => true }, env: {}, cwd: process.cwd(), onInterrupt: () => () => undefined, exit: () => undefined }

/** The options commander parsed for one command, its action replaced so nothing runs. */
async function parsedFlags(command: string, args: string[]): Promise<Record<string, unknown>> {
  const program = createProgram(io, () => undefined)
  const target = program.commands.find((candidate) => candidate.name() === command)
  if (target === undefined) throw new Error(`no command ${command}`)
  target.action(() => undefined)
  await program.parseAsync([command, ...args], { from: 'user' })
  return target.opts()
}

const COMMANDS_THAT_RUN_WORKFLOWS = {
  run: ['workflow.ts'],
  resume: ['run-1'],
  serve: ['--workflows', 'dir'],
  worker: ['--workflows', 'dir'],
  mcp: ['--workflows', 'dir'],
} as const

describe('model host flags, alike on every command that runs workflows', () => {
  it.each(Object.entries(COMMANDS_THAT_RUN_WORKFLOWS))('%s takes --model-host, --turn-timeout, --turn-idle and --no-stream', async (command, positional) => {
    const flags = await parsedFlags(command, [...positional, '--model-host', 'openai', '--turn-timeout', '10m', '--turn-idle', '30s', '--no-stream'])
    expect(flags).toMatchObject({ modelHost: 'openai', turnTimeout: 600_000, turnIdle: 30_000, stream: false })
    expect((await parsedFlags(command, [...positional])).stream).toBe(true)
    expect(await parsedFlags(command, [...positional, '--turn-idle', 'off'])).toMatchObject({ turnIdle: 'off' })
  })

  it.each(['run', 'resume', 'worker', 'mcp'] as const)('%s keeps --host as the older spelling of --model-host', async (command) => {
    expect(await parsedFlags(command, [...COMMANDS_THAT_RUN_WORKFLOWS[command], '--host', 'scripted'])).toMatchObject({ host: 'scripted' })
    await expect(parsedFlags(command, [...COMMANDS_THAT_RUN_WORKFLOWS[command], '--host', 'ollama'])).rejects.toThrow(/argument 'ollama' is invalid/)
  })

  it('serve keeps --host for the bind address', async () => {
    expect(await parsedFlags('serve', ['--workflows', 'dir', '--host', '0.0.0.0', '--model-host', 'none'])).toMatchObject({ host: '0.0.0.0', modelHost: 'none' })
  })

  it('reads a turn bound as a duration, or off for none, naming the flag otherwise', () => {
    expect(parseTurnBound('2m', '--turn-idle')).toBe(120_000)
    expect(parseTurnBound('off', '--turn-idle')).toBe('off')
    expect(() => parseTurnBound('10', '--turn-timeout')).toThrow(/--turn-timeout must be a duration/)
    expect(() => parseTurnBound('0s', '--turn-timeout')).toThrow(/--turn-timeout must be a duration/)
  })
})

describe('createHost with the turn and stream flags', () => {
  const context = { cwd: process.cwd(), env: {}, workflowPath: '/nowhere/workflow.mts' }

  it('gives a model host its turn budget and streaming, and records them', async () => {
    const chosen = await createHost({ modelHost: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1', model: 'tiny', turnTimeout: 600_000, turnIdle: 'off', stream: false }, context)
    expect(chosen.host?.settings).toMatchObject({ turnBudget: { totalMs: 600_000, idleMs: null }, streaming: false })
    const streamed = await createHost({ host: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1', model: 'tiny', stream: true }, context)
    expect(streamed.host?.settings).toMatchObject({ streaming: true })
    expect((streamed.host?.settings as { turnBudget?: unknown }).turnBudget).toBeUndefined()
  })

  it('lays the flags over what a resumed run recorded, keeping the bound not given', async () => {
    const { createAiSdkHost } = await import('@locus/host-ai-sdk')
    const original = createAiSdkHost({ api: 'openai-compatible', baseURL: 'http://127.0.0.1:9/v1', modelId: 'tiny', turnBudget: { totalMs: 60_000, idleMs: 5_000 } })
    const recorded = JSON.parse(JSON.stringify(original.settings)) as unknown
    const rebuilt = await createHost({ turnIdle: 20_000, stream: false }, { ...context, preferred: original.name, recordedSettings: recorded })
    expect(rebuilt.host?.settings).toMatchObject({ turnBudget: { totalMs: 60_000, idleMs: 20_000 }, streaming: false })
  })

  it('refuses turn and stream flags for a host that has no turns to bound, and two host names that disagree', async () => {
    await expect(createHost({ modelHost: 'none', turnIdle: 1000, stream: false }, context)).rejects.toThrow(/--turn-idle, --no-stream belong to a model host/)
    await expect(createHost({ modelHost: 'none', host: 'openai' }, context)).rejects.toThrow(/--model-host none and --host openai disagree/)
  })
})
