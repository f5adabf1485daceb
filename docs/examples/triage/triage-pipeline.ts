/**
 * Example: a triage pipeline with a flaky tool and a flaky model.
 *
 * What it shows: pipeline() runs each ticket through two stages: fetch the
 * ticket with a tool, then ask the triager agent for a priority. The ticket
 * service answers 503 the first time it is asked for T-2; the tool's seed-001
 * retry policy (`max_retries: 3`, `backoff_base_secs: 1`) marks that failure
 * retryable and tries again after one second. The model host times out on the
 * first attempt for T-3; the call declared `attempts: 2`, and
 * `host-turn-timeout` is on the transport-retry allowlist, so a fresh child
 * answers. Both retries are journaled as `[workflow:retry]` boundaries.
 *
 * Look for: the run ends `completed` (exit 0) with 2 retries in its summary;
 * `locus show <runId>` lists both retried calls attempt by attempt;
 * outputs/README.md has a "Retried agent calls" section with the discarded
 * attempt's cause; `locus journal <runId> --type retry,tool_end` shows the
 * one-second backoff.
 *
 * Run: locus run docs/examples/triage/triage-pipeline.ts --host scripted
 */
import { defineTool, defineWorkflow } from '@locus/runtime'
import { z } from 'zod'

/** The ticket service as the tool sees it: T-2 answers 503 the first time. */
const tickets: Readonly<Record<string, { subject: string; body: string }>> = {
  'T-1': { subject: 'Invoice shows the wrong VAT rate', body: 'Our March invoice uses 19% instead of 7%.' },
  'T-2': { subject: 'Export to CSV times out', body: 'Exports over 10k rows never finish.' },
  'T-3': { subject: 'Add SSO for contractors', body: 'We would like contractors to log in with our IdP.' },
}

export default defineWorkflow({
  name: 'triage-pipeline',
  description: 'Fetches each ticket and asks for a priority, riding out a flaky tool and a flaky model.',
  input: z.object({ tickets: z.array(z.string().regex(/^T-\d+$/, 'ticket ids look like T-1')).min(1) }).default({ tickets: ['T-1', 'T-2', 'T-3'] }),
  tools: {
    fetch_ticket: defineTool({
      description: 'Reads a ticket from the ticket service.',
      input: z.object({ id: z.string() }),
      // Seed 001: up to 3 attempts in all, each bounded to 2 s, waiting 1 s (1^n, at most 1) between them.
      retry: { timeout_secs: 2, max_retries: 3, backoff_base_secs: 1, backoff_max_secs: 1 },
      run: ({ id }, { attempt }) => {
        if (id === 'T-2' && attempt === 1) {
          // The seed's failure shape: retryable says whether to try again, code only labels it.
          throw Object.assign(new Error('ticket service answered 503'), { retryable: true, code: 'provider_error' })
        }
        const ticket = tickets[id]
        if (ticket === undefined) throw Object.assign(new Error(`no ticket ${id}`), { retryable: false })
        return { id, ...ticket }
      },
    }),
  },
  agents: { triager: { system: 'You triage support tickets. Answer with a priority (P1 to P4) and one sentence of reasoning.' } },
  async run({ input, agent, tool, pipeline }) {
    const triaged = await pipeline(
      input.tickets,
      [
        async (id: string) => await tool('fetch_ticket', { id }),
        async (ticket) => {
          const { answer, attempt } = await agent(`Triage ticket ${ticket.id}: ${ticket.subject}. ${ticket.body}`, {
            agent: 'triager',
            label: ticket.id,
            attempts: 2,
            timeoutMs: 10_000,
          })
          return { id: ticket.id, subject: ticket.subject, triage: answer, attempts: attempt }
        },
      ],
      { label: 'triage', concurrency: 3 },
    )
    return { ok: true, triaged }
  },
})
