import { parseAttempts } from '@locus/retry'
import { STEP_CRITICALITIES } from '@locus/outcome'
import { z } from 'zod'
import type { AgentCallOptions } from '../define.js'
import { RuntimeInputError, TransportRetryRefusedError } from '../errors.js'
import type { CallBudgets } from '../host.js'
import { AgentCallBudgetsSchema } from '../run-options.js'
import { describeZodIssues } from '../zod-issues.js'

const agentOptionsSchema = z
  .object({
    agent: z.string().min(1).optional(),
    label: z.string().optional(),
    phase: z.string().optional(),
    attempts: z.unknown().optional(),
    timeoutMs: z.number().int('timeoutMs must be a whole number of milliseconds').positive('timeoutMs must be at least 1').optional(),
    choice: z
      .array(z.string().min(1, 'a choice may not be empty'))
      .min(1, 'choice must list at least one value')
      .refine((choices) => new Set(choices).size === choices.length, 'choice values must be unique')
      .optional(),
    choiceFallback: z.string().optional(),
    budgets: AgentCallBudgetsSchema.optional(),
    criticality: z.enum(STEP_CRITICALITIES, { error: `criticality must be one of ${STEP_CRITICALITIES.join(', ')}` }).optional(),
    accept: z.custom<(answer: string) => true | string>((value) => typeof value === 'function', { error: 'accept must be a function' }).optional(),
    worktree: z.string().min(1).optional(),
    workspaceHandle: z.string().min(1).optional(),
  })
  .strict()

/**
 * Checks an `agent()` call's prompt and options and reads its attempt count.
 * A transport retry is refused for a call bound to a worktree or workspace,
 * whose second child would not start from the first one's state.
 *
 * @throws {RuntimeInputError} naming each invalid option.
 * @throws {TransportRetryRefusedError} for `attempts > 1` with a binding.
 */
export function parseAgentCall(prompt: unknown, rawOptions: AgentCallOptions): { options: AgentCallOptions; attempts: number } {
  if (typeof prompt !== 'string' || prompt.trim() === '') {
    throw new RuntimeInputError('RUN_OPTIONS_INVALID', 'agent(prompt): prompt must be a non-empty string', ['prompt: must be a non-empty string'])
  }
  const parsedOptions = agentOptionsSchema.safeParse(rawOptions)
  if (!parsedOptions.success) {
    const issues = describeZodIssues(parsedOptions.error, 'agent options')
    throw new RuntimeInputError('RUN_OPTIONS_INVALID', `Invalid agent() options:\n  ${issues.join('\n  ')}`, issues)
  }
  const options = rawOptions
  const attempts = parseAttempts(options.attempts)
  const binding = options.worktree !== undefined ? `worktree ${options.worktree}` : options.workspaceHandle !== undefined ? `workspaceHandle ${options.workspaceHandle}` : undefined
  if (attempts > 1 && binding !== undefined) throw new TransportRetryRefusedError(attempts, binding)
  return { options, attempts }
}

/** The turn-budget fields a caller set, passed to the host only when set so its own defaults apply otherwise. */
export function turnBudgetOf(budgets: CallBudgets | undefined): Pick<CallBudgets, 'turnTimeoutMs' | 'turnIdleMs'> {
  if (budgets === undefined) return {}
  return {
    ...(budgets.turnTimeoutMs === undefined ? {} : { turnTimeoutMs: budgets.turnTimeoutMs }),
    ...(budgets.turnIdleMs === undefined ? {} : { turnIdleMs: budgets.turnIdleMs }),
  }
}

/** How a call is named in messages: its role, and its label when it has one. */
export function describeCall(agent: string, label: string | undefined): string {
  return label === undefined ? `agent "${agent}"` : `agent "${agent}" (${label})`
}
