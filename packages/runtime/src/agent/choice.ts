import type { AgentCallOptions } from '../define.js'
import type { CountedBudgets, TurnResult } from '../host.js'
import { type ChoiceRepair, type TurnFailure, classifyTurn } from './attempt-end.js'

/** Matches an answer to the declared choices: exact after trimming, then case-insensitively. */
export function matchChoice(text: string, choices: readonly string[]): string | undefined {
  const trimmed = text.trim().replace(/^["'`]+|["'`.!]+$/g, '').trim()
  if (choices.includes(trimmed)) return trimmed
  const lower = trimmed.toLowerCase()
  return choices.find((choice) => choice.toLowerCase() === lower)
}

function clarificationPrompt(answer: string, choices: readonly string[]): string {
  return (
    `Your answer ${JSON.stringify(answer.trim().slice(0, 200))} is not one of the allowed values. ` +
    `Reply with exactly one of: ${choices.map((choice) => JSON.stringify(choice)).join(', ')}. Reply with the value only.`
  )
}

/** Sends one more turn in the same child; `undefined` means the fuse or a cancellation ended it. */
export type SendTurn = (text: string) => Promise<TurnResult | undefined>

/** What the call makes of a child's first answer. */
export type Verdict =
  | { kind: 'answered'; answer: string; usedFallback: boolean; repaired?: ChoiceRepair }
  | ({ kind: 'failed'; choiceAnswers?: string[] } & TurnFailure)
  | { kind: 'interrupted' }

/**
 * Judges a first answer that came back as `end`: it must have text, fit the
 * answer budget, be one of the declared choices (after at most one
 * clarification turn in the same child, never a new child, then the
 * fallback) and pass the script's `accept`.
 */
export async function judgeAnswer(
  first: TurnResult,
  plan: { readonly options: AgentCallOptions; readonly budgets: CountedBudgets },
  send: SendTurn,
): Promise<Verdict> {
  if (first.text.trim() === '') return { kind: 'failed', failureCause: 'empty-answer', reason: 'the child answered with no text' }
  if (first.text.length > plan.budgets.maxAnswerChars) {
    return {
      kind: 'failed',
      failureCause: 'answer-too-long',
      reason: `the answer has ${first.text.length} characters, over the budget of ${plan.budgets.maxAnswerChars}; split the task`,
    }
  }
  let answer = first.text
  let usedFallback = false
  let repaired: ChoiceRepair | undefined
  const choices = plan.options.choice
  if (choices !== undefined) {
    let chosen = matchChoice(first.text, choices)
    if (chosen === undefined) {
      const second = await send(clarificationPrompt(first.text, choices))
      if (second === undefined) return { kind: 'interrupted' }
      const secondFailure = classifyTurn(second)
      if (secondFailure !== undefined) return { kind: 'failed', ...secondFailure }
      chosen = matchChoice(second.text, choices)
      if (chosen === undefined) {
        if (plan.options.choiceFallback === undefined) {
          return {
            kind: 'failed',
            failureCause: 'unparseable-answer',
            reason: `the answer was not one of the declared choices, twice`,
            choiceAnswers: [first.text, second.text],
          }
        }
        chosen = plan.options.choiceFallback
        usedFallback = true
      }
      repaired = { from: first.text.slice(0, 200), to: chosen, via: usedFallback ? 'fallback' : 'clarification' }
    }
    answer = chosen
  }
  const verdict = plan.options.accept?.(answer) ?? true
  if (verdict !== true) return { kind: 'failed', failureCause: 'script-rejected', reason: verdict }
  return repaired === undefined ? { kind: 'answered', answer, usedFallback } : { kind: 'answered', answer, usedFallback, repaired }
}
