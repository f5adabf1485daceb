// @locus/journal/testing: helpers for testing code that reads journals. Not
// part of the runtime's path; it needs fast-check, an optional peer dependency.
// A fast-check arbitrary of whole, plausible journals: a run_start, logical
// agent and tool calls whose attempts interleave, retry boundaries, groups,
// and (sometimes) a run_end. The lines are valid and in seq order, as one
// writer would leave them, so folds over them can be compared.
import fc from 'fast-check'
import { FAILURE_CAUSES } from '@locus/outcome'
import type { JournalLine, JournalLineInput } from './journal-line-schema.js'

type AttemptEnd = 'completed' | 'failed' | 'threw' | 'unfinished'

interface PlannedCall {
  readonly kind: 'agent' | 'tool'
  readonly ends: readonly AttemptEnd[]
  readonly replayed: boolean
  readonly childOf: number | undefined
}

const attemptEnd = fc.constantFrom<AttemptEnd>('completed', 'failed', 'threw', 'unfinished')

const plannedCall: fc.Arbitrary<PlannedCall> = fc.record({
  kind: fc.constantFrom<'agent' | 'tool'>('agent', 'tool'),
  // Only the last attempt may complete or stay unfinished; earlier ones failed or threw.
  ends: fc
    .tuple(fc.array(fc.constantFrom<AttemptEnd>('failed', 'threw'), { maxLength: 3 }), attemptEnd)
    .map(([discarded, last]) => [...discarded, last]),
  replayed: fc.boolean(),
  childOf: fc.option(fc.nat({ max: 5 }), { nil: undefined }),
})

/** Builds the lines of one planned run; `seed` orders the interleaving of concurrent calls. */
function build(calls: readonly PlannedCall[], order: readonly number[], ended: boolean, groupCount: number): JournalLine[] {
  const inputs: JournalLineInput[] = [{ type: 'run_start', workflow: 'random', input: null, options: {} }]
  for (let group = 1; group <= groupCount; group += 1) {
    inputs.push({ type: 'group_start', groupId: `g${group}`, groupKind: 'parallel', total: 2 })
  }
  // Each call is a queue of its lines; `order` picks which call writes next, so attempts of different calls interleave.
  const queues = calls.map((call, index) => linesOf(call, index))
  let cursor = 0
  while (queues.some((queue) => queue.length > 0)) {
    const pick = order.length === 0 ? 0 : (order[cursor % order.length] ?? 0)
    cursor += 1
    const queue = queues.find((_, index) => (index + pick) % queues.length === index && (queues[index]?.length ?? 0) > 0) ?? queues.find((candidate) => candidate.length > 0)
    const next = queue?.shift()
    if (next !== undefined) inputs.push(next)
  }
  for (let group = 1; group <= groupCount; group += 1) {
    const completed = group % 2 === 1
    inputs.push({ type: 'group_end', groupId: `g${group}`, groupKind: 'parallel', total: 2, completed: completed ? 2 : 1, failed: completed ? 0 : 1, notDispatched: 0, outcome: completed ? 'completed' : 'failed' })
  }
  if (ended) inputs.push({ type: 'run_end', disposition: 'failed', ok: false, result: { ok: false }, durationMs: 5 })
  return inputs.map((input, seq) => ({ ...input, v: 1, seq, ts: new Date(1_700_000_000_000 + seq).toISOString(), runId: 'run', executionId: 'run' }))
}

function linesOf(call: PlannedCall, index: number): JournalLineInput[] {
  const out: JournalLineInput[] = []
  const attempts = call.ends.length
  if (call.kind === 'agent') {
    const logicalCallId = `call-${index}`
    call.ends.forEach((end, offset) => {
      const attempt = offset + 1
      const callId = `${logicalCallId}-a${attempt}`
      const trio = { attempt, attempts, logicalCallId }
      out.push({ type: 'agent_start', callId, ...trio, agent: 'analyst', ordinal: String(index), prompt: 'p' })
      if (end === 'completed') out.push({ type: 'agent_end', callId, ...trio, agent: 'analyst', ordinal: String(index), status: 'completed', durationMs: 1, ...(call.replayed ? { replayed: true } : {}), answer: 'a' })
      if (end === 'failed') out.push({ type: 'agent_end', callId, ...trio, agent: 'analyst', ordinal: String(index), status: 'failed', failureCause: FAILURE_CAUSES[index % FAILURE_CAUSES.length] ?? 'unclassified', durationMs: 1 })
      if (end === 'threw') out.push({ type: 'error', message: 'boom', error: { name: 'Error', code: 'X', message: 'boom' }, failureCause: 'unclassified', callId, ...trio })
      if (attempt < attempts) out.push({ type: 'retry', kind: 'agent', message: '[workflow:retry] again', logicalCallId, callId, fromAttempt: attempt, toAttempt: attempt + 1, attempts, cause: 'call-timeout' })
    })
    return out
  }
  const toolCallId = call.childOf === undefined ? `tool-${index}` : `call-${call.childOf}-a1-tool-${index}`
  const place = call.childOf === undefined ? { ordinal: String(index) } : { parentCallId: `call-${call.childOf}-a1` }
  call.ends.forEach((end, offset) => {
    const attempt = offset + 1
    const where = { toolCallId, tool: 'lookup', attempt, maxAttempts: attempts, ...place }
    out.push({ type: 'tool_start', ...where })
    if (end === 'completed') out.push({ type: 'tool_end', ...where, status: 'completed', result: { n: index }, ...(call.replayed ? { replayed: true } : {}), durationMs: 1 })
    else if (end !== 'unfinished') out.push({ type: 'tool_end', ...where, status: end === 'threw' ? 'timed-out' : 'failed', failure: { error: 'no', retryable: true }, durationMs: 1 })
    if (attempt < attempts) out.push({ type: 'retry', kind: 'tool', message: '[workflow:retry] again', callId: toolCallId, fromAttempt: attempt, toAttempt: attempt + 1, attempts, cause: 'retryable' })
  })
  return out
}

/** A random, valid journal of one execution. */
export const randomJournal: fc.Arbitrary<JournalLine[]> = fc
  .tuple(fc.array(plannedCall, { maxLength: 12 }), fc.array(fc.nat({ max: 11 }), { maxLength: 30 }), fc.boolean(), fc.nat({ max: 3 }))
  .map(([calls, order, ended, groups]) => build(calls, order, ended, groups))
