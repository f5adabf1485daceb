import { describe, expect, it } from 'vitest'
import type { CliIo } from './cli-io.js'
import { JITTER_FLAG_MODES, budgetsFromFlags, executionOptions, parseRetryBudget } from './commands/run-flags.js'
import { createProgram } from './program.js'

describe('run flags', () => {
  it('maps --max-agents, --deadline and the per-call flags onto run budgets', () => {
    expect(budgetsFromFlags({ maxAgents: 20, deadline: 600_000, maxToolCalls: 5 })).toEqual({
      maxTotalAgentInvocations: 20,
      deadlineMs: 600_000,
      perCall: { maxToolCalls: 5 },
    })
    expect(budgetsFromFlags({})).toBeUndefined()
  })

  it('lets a flag override what a run recorded, and keeps the rest (locus resume)', () => {
    const recorded = { budgets: { maxTotalAgentInvocations: 10, perCall: { maxAnswerChars: 100 } }, concurrency: 3, launchMode: 'background' as const }
    expect(executionOptions({ maxAgents: 12, durability: 'line' }, recorded)).toEqual({
      budgets: { maxTotalAgentInvocations: 12, perCall: { maxAnswerChars: 100 } },
      concurrency: 3,
      durability: 'line',
      launchMode: 'background',
    })
  })

  it('maps --retry-budget and --jitter onto the run options retryBudget and jitter, over recorded values', () => {
    expect(executionOptions({ retryBudget: 0, jitter: 'full' })).toEqual({ retryBudget: 0, jitter: 'full' })
    expect(executionOptions({ jitter: 'equal' }, { retryBudget: 5, jitter: 'none' })).toEqual({ retryBudget: 5, jitter: 'equal' })
    expect(executionOptions({})).toEqual({})
  })

  it('reads --retry-budget as a whole number of retries, 0 or more', () => {
    expect(parseRetryBudget('0')).toBe(0)
    expect(parseRetryBudget('25')).toBe(25)
    for (const text of ['-1', '1.5', 'many', '']) {
      expect(() => parseRetryBudget(text)).toThrow(expect.objectContaining({ code: 'CLI_USAGE', message: expect.stringMatching(/--retry-budget must be a whole number/) }))
    }
  })

  it('offers the jitter modes of @locus/retry', () => {
    expect(JITTER_FLAG_MODES).toEqual(['none', 'full', 'equal'])
  })
})

describe('locus run --retry-budget and --jitter', () => {
  const io: CliIo = { stdout: { write: () => true }, stderr: { write: () => true }, env: {}, cwd: process.cwd(), onInterrupt: () => () => undefined, exit: () => undefined }

  async function parsedRunFlags(args: string[]): Promise<Record<string, unknown>> {
    const program = createProgram(io, () => undefined)
    let seen: Record<string, unknown> = {}
    program.commands.find((command) => command.name() === 'run')?.action((_file: string, flags: Record<string, unknown>) => {
      seen = flags
    })
    await program.parseAsync(['run', 'workflow.ts', ...args], { from: 'user' })
    return seen
  }

  it('parses both flags into the run flags', async () => {
    expect(await parsedRunFlags(['--retry-budget', '3', '--jitter', 'full'])).toMatchObject({ retryBudget: 3, jitter: 'full' })
  })

  it('refuses a jitter mode @locus/retry does not know', async () => {
    await expect(parsedRunFlags(['--jitter', 'sometimes'])).rejects.toThrow(/--jitter <mode>' argument 'sometimes' is invalid/)
  })
})
