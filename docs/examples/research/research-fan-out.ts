/**
 * Example: a research fan-out that ends in an honest partial answer.
 *
 * What it shows: three lookups fan out with parallel(). Each branch turns its
 * own tool failure into a ToolResult of @locus/partial, so the barrier holds
 * and the failure becomes data instead of a crash. assessPartial() finds that
 * only an enriching step is missing, so the run can still answer;
 * answerPartial() asks the writer agent with the gap written into its prompt
 * and attaches one caveat per gap as a field, outside the prose. The run
 * returns that Answer.
 *
 * Look for: the run ends `failed` with answer outcome `partial` (a partial
 * answer is not a success, so `locus run` exits 1, by design); the summary
 * prints the caveat under the answer text; "open tickets" is reported as
 * checked and empty, not as a gap; `locus report` counts one partial run and
 * one gap for payment_history; outputs/README.md lists every call.
 *
 * Run: locus run docs/examples/research/research-fan-out.ts --host scripted
 * (the fixtures are research-fan-out.fixtures.json, beside this file).
 */
import { type Plan, type ToolResult, answerPartial, assessPartial, renderAnswer, toolFailed, toolOk } from '@locus/partial'
import { ToolCallError, defineTool, defineWorkflow } from '@locus/runtime'
import { z } from 'zod'

/** The plan: what each step checks and how much the answer needs it. */
export const plan: Plan = {
  steps: [
    { n: 1, tool: 'contract_terms', criticality: 'required', description: 'the contract terms' },
    { n: 2, tool: 'payment_history', criticality: 'enriching', description: 'the payment history' },
    { n: 3, tool: 'open_tickets', criticality: 'confirming', description: 'open support tickets' },
  ],
}

const customerInput = z.object({ customer: z.string().min(1) })

export default defineWorkflow({
  name: 'research-fan-out',
  description: 'Answers a question about a customer from three lookups, honestly when one of them fails.',
  input: z
    .object({ customer: z.string().min(1, 'customer must not be empty'), question: z.string().min(1) })
    .default({ customer: 'Henderson', question: 'What payment terms does Henderson have?' }),
  tools: {
    contract_terms: defineTool({
      description: 'The contract terms on file for a customer.',
      input: customerInput,
      run: ({ customer }) => ({ customer, terms: 'Net 45', source: 'amendment 2 (2024-03-01)' }),
    }),
    payment_history: defineTool({
      description: 'Invoices and payments from the finance system.',
      input: customerInput,
      // The finance system never answers; the call's own deadline ends it.
      retry: { timeout_secs: 0.2, max_retries: 1, backoff_base_secs: 0, backoff_max_secs: 0 },
      run: (_args, { signal }) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener('abort', () => { reject(new Error('finance system did not respond')) }, { once: true })
        }),
    }),
    open_tickets: defineTool({
      description: 'Open support tickets of a customer.',
      input: customerInput,
      run: () => [],
    }),
  },
  agents: { writer: { system: 'You answer questions about customer accounts from the sources you are given, and you say what you could not check.' } },
  async run({ input, agent, tool, parallel, log }) {
    // Each branch returns { step, result }: a failed lookup is a value the plan can reason about.
    const lookup = async (step: number, name: 'contract_terms' | 'payment_history' | 'open_tickets'): Promise<{ step: number; result: ToolResult }> => {
      try {
        return { step, result: toolOk(await tool(name, { customer: input.customer })) }
      } catch (error) {
        if (!ToolCallError.isInstance(error)) throw error
        return { step, result: toolFailed('unavailable', error.failure.code === 'deadline_exceeded' ? 'finance system did not respond in time' : error.failure.error) }
      }
    }
    const lookups = await parallel(
      [() => lookup(1, 'contract_terms'), () => lookup(2, 'payment_history'), () => lookup(3, 'open_tickets')],
      { label: 'lookups' },
    )
    const results = new Map(lookups.map(({ step, result }) => [step, result]))
    const assessment = assessPartial(plan, results)
    const answer = await answerPartial({ question: input.question, plan, results }, assessment, async (request) => {
      // The writer sees the filled prompt, gaps included; its prose never carries the caveats.
      const { answer: text } = await agent(request.prompt, { agent: 'writer', label: 'answer', attempts: 2, timeoutMs: 30_000 })
      return { text }
    })
    log('rendered answer', { rendered: renderAnswer(answer) })
    return answer
  },
})
