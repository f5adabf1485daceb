import { z } from 'zod'
import { ActionSchema, CallSchema, LlmMessageSchema, RetryPolicySchema, TriggerSchema, WireJsonSchema, WorkerResponseSchema } from './wire-schemas.js'

/**
 * The protocol as one JSON Schema (draft 2020-12) document, for workers in
 * Python, Go or anything else: `$defs` holds `Action`, `Trigger`,
 * `WorkerResponse`, `Call` and `RetryPolicy`. The package ships the same
 * document as `@locus/protocol/protocol.schema.json`.
 */
export function protocolJsonSchema(): Record<string, unknown> {
  const registry = z.registry<{ id: string }>()
  registry.add(ActionSchema, { id: 'Action' })
  registry.add(TriggerSchema, { id: 'Trigger' })
  registry.add(WorkerResponseSchema, { id: 'WorkerResponse' })
  registry.add(CallSchema, { id: 'Call' })
  registry.add(RetryPolicySchema, { id: 'RetryPolicy' })
  registry.add(WireJsonSchema, { id: 'WireJson' })
  registry.add(LlmMessageSchema, { id: 'LlmMessage' })
  const generated = z.toJSONSchema(registry, { target: 'draft-2020-12', unrepresentable: 'any', uri: (id) => `#/$defs/${id}` })
  const defs: Record<string, unknown> = {}
  for (const [id, schema] of Object.entries(generated.schemas)) {
    const { $schema: _schema, $id: _id, ...rest } = schema as Record<string, unknown>
    defs[id] = rest
  }
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'https://locus.dev/schemas/protocol.schema.json',
    title: 'Locus protocol (seed 001): actions, triggers, worker responses, calls and retry policies',
    $defs: defs,
  }
}
