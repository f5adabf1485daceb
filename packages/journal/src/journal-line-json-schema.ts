import { z } from 'zod'
import { AgentResultEnvelopeSchema } from './agent-result-envelope.js'
import { JournalLineSchema } from './journal-line-schema.js'

/**
 * The JSON Schema (draft 2020-12) of a journal line, generated from
 * {@link JournalLineSchema} for readers in other languages. It describes the
 * input side: unknown fields are allowed, as the reader ignores them.
 * Cross-field rules (the attempt trio travelling together, `failureCause`
 * present exactly when an `agent_end` failed, `ok` matching the disposition)
 * are written in each definition's description rather than in the schema.
 *
 * @example
 * ```ts
 * writeFileSync('journal-line.schema.json', JSON.stringify(journalLineJsonSchema, null, 2))
 * ```
 */
export const journalLineJsonSchema: Record<string, unknown> = z.toJSONSchema(JournalLineSchema, { io: 'input' })

/** The JSON Schema of the `locus.agent.run-result.v2` envelope. */
export const agentResultJsonSchema: Record<string, unknown> = z.toJSONSchema(AgentResultEnvelopeSchema, { io: 'input' })
