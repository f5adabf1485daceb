import type { FailureCause, JsonValue } from '@locus/outcome'
import { describe, expectTypeOf, it } from 'vitest'
import type { AgentResultEnvelope } from './agent-result-envelope.js'
import type { JournalLine, JournalLineInput, JournalLineOf, JournalLineType } from './journal-line-schema.js'
import type { JournalWriter } from './journal-writer.js'
import type { SerializedError } from './serialized-error.js'

describe('journal types', () => {
  it('every line has the common fields and narrows on type', () => {
    expectTypeOf<JournalLine['v']>().toEqualTypeOf<1>()
    expectTypeOf<JournalLine['seq']>().toEqualTypeOf<number>()
    expectTypeOf<JournalLine['type']>().toEqualTypeOf<JournalLineType>()
    const line = {} as JournalLine
    if (line.type === 'agent_end') {
      expectTypeOf(line.failureCause).toEqualTypeOf<FailureCause | undefined>()
      expectTypeOf(line.logicalCallId).toEqualTypeOf<string>()
    }
    if (line.type === 'run_end') expectTypeOf(line.result).toEqualTypeOf<JsonValue>()
    if (line.type === 'error') expectTypeOf(line.error).toEqualTypeOf<SerializedError>()
  })

  it('a line input leaves the common fields to the writer', () => {
    expectTypeOf<JournalLineInput>().not.toHaveProperty('seq')
    expectTypeOf<{ type: 'log'; level: 'info'; message: string }>().toExtend<JournalLineInput>()
    expectTypeOf<{ type: 'log'; level: 'loud'; message: string }>().not.toExtend<JournalLineInput>()
    expectTypeOf<JournalWriter['append']>().returns.toEqualTypeOf<JournalLine>()
  })

  it('tool lines use attempt/maxAttempts, not the agent trio', () => {
    expectTypeOf<JournalLineOf<'tool_start'>>().toHaveProperty('maxAttempts')
    expectTypeOf<JournalLineOf<'tool_start'>>().not.toHaveProperty('logicalCallId')
  })

  it('a parsed failed envelope always has its cause', () => {
    const envelope = {} as AgentResultEnvelope
    if (envelope.status === 'failed') expectTypeOf(envelope.failureCause).toEqualTypeOf<FailureCause>()
  })
})
