/**
 * Example: classification with exact choices and value repair.
 *
 * What it shows: each message is classified by an agent() call that declares
 * `choice: ['billing', 'bug', 'feature']`. An answer that is one of the
 * choices (after trimming, case-insensitively) is taken as the choice. An
 * answer outside them gets exactly one clarification turn in the same child
 * session, quoting the allowed values; if that misses too, `choiceFallback`
 * stands in and `usedFallback` says so. Without a fallback the call would
 * throw a SchemaValidationError (code SCHEMA_VALIDATION) with both answers.
 *
 * Look for: M-1 answers "billing" directly; M-2 answers in prose, is asked
 * again and answers "bug"; M-3 answers "Feature" and is accepted as
 * "feature"; M-4 misses twice and gets the fallback "needs-human" with
 * usedFallback: true. The run completes (exit 0); each clarification is a
 * second user turn in that call's transcript under the run's calls/ directory.
 *
 * Run: locus run docs/examples/classify/classify-choice.ts --host scripted
 */
import { defineWorkflow } from '@locus/runtime'
import { z } from 'zod'

/** The labels a message may get. */
export const LABELS = ['billing', 'bug', 'feature'] as const

const message = z.object({ id: z.string(), text: z.string().min(1) })

export default defineWorkflow({
  name: 'classify-choice',
  description: 'Labels support messages with one of three exact values, repairing answers that miss.',
  input: z.object({ messages: z.array(message).min(1) }).default({
    messages: [
      { id: 'M-1', text: 'I was charged twice for March.' },
      { id: 'M-2', text: 'The export button does nothing in Firefox.' },
      { id: 'M-3', text: 'Could you add dark mode?' },
      { id: 'M-4', text: 'Hello?' },
    ],
  }),
  agents: { classifier: { system: `You label support messages. Reply with exactly one of: ${LABELS.join(', ')}.` } },
  async run({ input, agent, parallel }) {
    const labelled = await parallel(
      input.messages.map((item) => async () => {
        const { answer, usedFallback } = await agent(`Label this message as ${LABELS.join(', ')}: ${item.text}`, {
          agent: 'classifier',
          label: item.id,
          choice: LABELS,
          choiceFallback: 'needs-human',
        })
        return { id: item.id, label: answer, usedFallback }
      }),
      { label: 'classify' },
    )
    return { ok: true, labelled, needsHuman: labelled.filter((item) => item.usedFallback).map((item) => item.id) }
  },
})
