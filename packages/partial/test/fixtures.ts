import type { Plan, RunSnapshot, ToolResult } from '../src/index.js'
import { toolEmpty, toolFailed, toolFound } from '../src/index.js'

/** The account question of the seed: two required lookups, one enriching, one confirming. */
export const accountPlan: Plan = {
  steps: [
    { n: 1, tool: 'get_contract', criticality: 'required', description: 'the contract terms' },
    { n: 2, tool: 'get_invoices', criticality: 'required', description: 'outstanding invoices' },
    { n: 3, tool: 'get_payment_history', criticality: 'enriching', description: 'the payment history' },
    { n: 4, tool: 'search_tickets', criticality: 'confirming', description: 'open tickets' },
  ],
}

export const contract = { customer: 'Henderson', terms: 'Net 45', source: 'amendment 2' }
export const invoices = [
  { id: 'INV-1', total: 9_100 },
  { id: 'INV-2', total: 8_000 },
  { id: 'INV-3', total: 6_000 },
]

/** Required steps answered, the payment history timed out, no open tickets. */
export function runWithGaps(): RunSnapshot {
  return {
    question: 'What are Henderson’s payment terms and what do they owe?',
    plan: accountPlan,
    results: new Map<number, ToolResult>([
      [1, toolFound(contract)],
      [2, toolFound(invoices)],
      [3, toolFailed('unavailable', 'the finance system did not respond')],
      [4, toolEmpty()],
    ]),
  }
}

/** The invoices lookup failed; the enriching and confirming steps succeeded. */
export function runMissingRequired(): RunSnapshot {
  return {
    question: 'What does Henderson owe?',
    plan: accountPlan,
    results: new Map<number, ToolResult>([
      [1, toolFound(contract)],
      [2, toolFailed('unavailable', 'the billing API returned 503')],
      [3, toolFound([{ paid: '2024-05-01', amount: 4_000 }])],
      [4, toolEmpty()],
    ]),
  }
}

/** A deterministic stand-in for the model: echoes what it was told. */
export async function echoGenerate(request: { prompt: string; gaps: readonly string[] }): Promise<{ text: string }> {
  const base = 'Henderson is on Net 45 per amendment 2 [1], and three invoices totalling $23,100 are outstanding [2].'
  return { text: request.gaps.length === 0 ? base : `${base} I could not check the payment history, so a recent rejected payment would change the picture.` }
}
