import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { JournalLine, JournalLineInput } from './journal-line-schema.js'
import { parseJournalLine } from './parse-journal-line.js'
import { renderOutputsReadme } from './render-outputs-readme.js'
import { stamp } from '../test/sample-lines.js'

/** Stamps inputs with increasing seq and validates each, as a real journal would hold them. */
function journal(inputs: readonly JournalLineInput[]): JournalLine[] {
  return inputs.map((input, index) => parseJournalLine(JSON.parse(JSON.stringify(stamp(input, index + 1)))))
}

const lookAlike = { agent: 'analyst', label: 'summarise', phase: 'gather', groupId: 'g1' } as const

function start(logicalCallId: string, callId: string, attempt: number, attempts: number): JournalLineInput {
  return { type: 'agent_start', callId, logicalCallId, attempt, attempts, ...lookAlike, ordinal: `ord-${logicalCallId}`, prompt: 'Summarise' }
}

function end(logicalCallId: string, callId: string, attempt: number, attempts: number, failureCause?: 'call-timeout' | 'host-turn-timeout'): JournalLineInput {
  return {
    type: 'agent_end',
    callId,
    logicalCallId,
    attempt,
    attempts,
    ...lookAlike,
    ordinal: `ord-${logicalCallId}`,
    durationMs: 1500,
    ...(failureCause === undefined ? { status: 'completed' as const } : { status: 'failed' as const, failureCause }),
  }
}

function retry(logicalCallId: string, callId: string, cause: string): JournalLineInput {
  return { type: 'retry', kind: 'agent', message: `[workflow:retry] ${logicalCallId} after ${cause}`, logicalCallId, callId, fromAttempt: 1, toAttempt: 2, attempts: 2, cause }
}

const runStart: JournalLineInput = { type: 'run_start', workflow: 'triage', input: { ticket: 'T-1' }, options: {} }
const completedEnd: JournalLineInput = { type: 'run_end', disposition: 'completed', ok: true, result: { ok: true, answer: 42 }, durationMs: 2000 }

/** The `### <logicalCallId>` sections of the retried section, by id. */
function retriedSections(markdown: string): Map<string, string> {
  const section = markdown.split('## Retried agent calls')[1]?.split(/\n## /)[0] ?? ''
  const sections = new Map<string, string>()
  for (const part of section.split('\n### ').slice(1)) {
    const id = /^`([^`]+)`/.exec(part)?.[1]
    if (id !== undefined) sections.set(id, part)
  }
  return sections
}

describe('renderOutputsReadme: ## Retried agent calls', () => {
  it('groups interleaved attempts of two look-alike calls (same agent, label, phase, group) under the right logicalCallId', () => {
    const lines = journal([
      runStart,
      { type: 'group_start', groupId: 'g1', groupKind: 'parallel', total: 2 },
      start('lc-A', 'call-A1', 1, 2),
      start('lc-B', 'call-B1', 1, 2),
      end('lc-B', 'call-B1', 1, 2, 'call-timeout'),
      end('lc-A', 'call-A1', 1, 2, 'host-turn-timeout'),
      retry('lc-B', 'call-B1', 'call-timeout'),
      start('lc-B', 'call-B2', 2, 2),
      retry('lc-A', 'call-A1', 'host-turn-timeout'),
      start('lc-A', 'call-A2', 2, 2),
      end('lc-A', 'call-A2', 2, 2),
      end('lc-B', 'call-B2', 2, 2),
      { type: 'group_end', groupId: 'g1', groupKind: 'parallel', total: 2, completed: 2, failed: 0, notDispatched: 0, outcome: 'completed' },
      completedEnd,
    ])
    const sections = retriedSections(renderOutputsReadme(lines))
    expect([...sections.keys()]).toEqual(['lc-A', 'lc-B'])
    const a = sections.get('lc-A') ?? ''
    const b = sections.get('lc-B') ?? ''
    expect(a).toMatch(/attempt 1\/2 `call-A1`: discarded — `host-turn-timeout`/)
    expect(a).toMatch(/attempt 2\/2 `call-A2`: completed/)
    expect(a).not.toMatch(/call-B|call-timeout/)
    expect(b).toMatch(/attempt 1\/2 `call-B1`: discarded — `call-timeout`/)
    expect(b).toMatch(/attempt 2\/2 `call-B2`: completed/)
    expect(b).not.toMatch(/call-A|host-turn-timeout/)
  })

  it('grouping stays right for any interleaving of the two look-alike calls', () => {
    const perCall = (id: string, cause: 'call-timeout' | 'host-turn-timeout'): JournalLineInput[] => [
      start(id, `${id}-1`, 1, 2),
      end(id, `${id}-1`, 1, 2, cause),
      retry(id, `${id}-1`, cause),
      start(id, `${id}-2`, 2, 2),
      end(id, `${id}-2`, 2, 2),
    ]
    const first = perCall('lc-A', 'host-turn-timeout')
    const second = perCall('lc-B', 'call-timeout')
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 10, maxLength: 10 }), (choices) => {
        const merged: JournalLineInput[] = []
        let i = 0
        let j = 0
        for (const takeFirst of choices) {
          if ((takeFirst && i < first.length) || j >= second.length) merged.push(first[i++] as JournalLineInput)
          else merged.push(second[j++] as JournalLineInput)
        }
        const sections = retriedSections(renderOutputsReadme(journal([runStart, ...merged, completedEnd])))
        expect(sections.get('lc-A')).toMatch(/`lc-A-1`: discarded — `host-turn-timeout`[\s\S]*`lc-A-2`: completed/)
        expect(sections.get('lc-B')).toMatch(/`lc-B-1`: discarded — `call-timeout`[\s\S]*`lc-B-2`: completed/)
        expect(sections.get('lc-A')).not.toContain('lc-B')
        expect(sections.get('lc-B')).not.toContain('lc-A')
      }),
    )
  })

  it('an attempt that timed out, was re-run and then threw appears twice: discarded with its cause, then threw', () => {
    const lines = journal([
      runStart,
      start('lc-1', 'call-1', 1, 2),
      end('lc-1', 'call-1', 1, 2, 'call-timeout'),
      retry('lc-1', 'call-1', 'call-timeout'),
      start('lc-1', 'call-2', 2, 2),
      {
        type: 'error',
        message: 'Agent SDK unavailable',
        error: { name: 'AgentSdkUnavailableError', code: 'SDK_UNAVAILABLE', message: 'Agent SDK unavailable' },
        failureCause: 'sdk-unavailable',
        callId: 'call-2',
        logicalCallId: 'lc-1',
        attempt: 2,
        attempts: 2,
      },
      { type: 'run_end', disposition: 'failed', ok: false, result: null, durationMs: 70_000, error: { name: 'AgentSdkUnavailableError', code: 'SDK_UNAVAILABLE', message: 'Agent SDK unavailable' } },
    ])
    expect(lines.filter((line) => line.type === 'agent_end')).toHaveLength(1)
    const markdown = renderOutputsReadme(lines)
    const section = retriedSections(markdown).get('lc-1') ?? ''
    const attempts = section.split('\n').filter((line) => line.startsWith('- attempt'))
    expect(attempts).toHaveLength(2)
    expect(attempts[0]).toMatch(/^- attempt 1\/2 `call-1`: discarded — `call-timeout`/)
    expect(attempts[1]).toMatch(/^- attempt 2\/2 `call-2`: threw `sdk-unavailable` — Agent SDK unavailable/)
    expect(section).toContain('the call threw')
    expect(markdown).toMatch(/Agent calls: 1 \(2 attempts, 1 retry across 1 call\); 0 completed, 0 failed, 1 threw/)
  })

  it('matches an error line that names only its callId to the attempt it ended', () => {
    const lines = journal([
      runStart,
      start('lc-1', 'call-1', 1, 2),
      end('lc-1', 'call-1', 1, 2, 'host-turn-timeout'),
      start('lc-1', 'call-2', 2, 2),
      { type: 'error', message: 'boom', error: { name: 'Error', code: 'UNKNOWN_ERROR', message: 'boom' }, callId: 'call-2' },
    ])
    expect(retriedSections(renderOutputsReadme(lines)).get('lc-1')).toMatch(/`call-2`: threw — boom/)
  })

  it('has no retried section when nothing was retried', () => {
    const lines = journal([runStart, start('lc-1', 'call-1', 1, 1), end('lc-1', 'call-1', 1, 1), completedEnd])
    expect(renderOutputsReadme(lines)).not.toContain('## Retried agent calls')
  })
})

describe('renderOutputsReadme: the run as a whole', () => {
  it('states a completed run, what it returned, and the counts', () => {
    const markdown = renderOutputsReadme(journal([runStart, start('lc-1', 'call-1', 1, 1), end('lc-1', 'call-1', 1, 1), completedEnd]))
    expect(markdown).toMatch(/^# Run run-1\n/)
    expect(markdown).toContain('Disposition: **completed**')
    expect(markdown).toContain('## Result')
    expect(markdown).toContain('"answer": 42')
    expect(markdown).toContain('Agent calls: 1 (1 attempt, 0 retries across 0 calls); 1 completed, 0 failed, 0 threw, 0 unfinished')
  })

  it('never presents a failed, cancelled, partial or unfinished run as success', () => {
    const runEnd = fc.oneof(
      fc.record({ disposition: fc.constantFrom('failed' as const, 'cancelled' as const), ok: fc.constant(false), result: fc.jsonValue() }),
      fc.record({
        disposition: fc.constant('completed' as const),
        ok: fc.constant(true),
        result: fc.constantFrom<unknown>({ partial: true }, { ok: false }, { status: 'blocked' }, { status: 'failed', ok: true }),
      }),
    )
    fc.assert(
      fc.property(fc.option(runEnd, { nil: undefined }), (end) => {
        const inputs: JournalLineInput[] = [runStart]
        if (end !== undefined) inputs.push({ type: 'run_end', ...end, result: end.result as never, durationMs: 1 })
        const markdown = renderOutputsReadme(journal(inputs))
        expect(markdown).not.toContain('Disposition: **completed**')
        expect(markdown).not.toContain('## Result\n')
      }),
    )
  })

  it('says a run without run_end did not finish', () => {
    expect(renderOutputsReadme(journal([runStart]))).toContain('Disposition: **did not finish**')
  })

  it('says a partial result is a failure and shows it as returned value, not result', () => {
    const markdown = renderOutputsReadme(
      journal([runStart, { type: 'run_end', disposition: 'failed', ok: false, result: { ok: false, partial: true, completed: 1, failed: 1 }, durationMs: 5 }]),
    )
    expect(markdown).toContain('Disposition: **failed**, with a partial result (`partial: true`). A partial result is not a success.')
    expect(markdown).toContain('## Returned value (not a success)')
  })

  it('shows the failure and group failures with their counts', () => {
    const markdown = renderOutputsReadme(
      journal([
        runStart,
        { type: 'group_start', groupId: 'g1', groupKind: 'pipeline', total: 3, label: 'stages' },
        { type: 'group_end', groupId: 'g1', groupKind: 'pipeline', total: 3, completed: 1, failed: 1, notDispatched: 1, outcome: 'failed', stageIndex: 2 },
        { type: 'group_start', groupId: 'g2', groupKind: 'parallel', total: 1 },
        {
          type: 'run_end',
          disposition: 'failed',
          ok: false,
          result: { ok: false, code: 'WORKFLOW_GROUP_FAILURE' },
          error: { name: 'WorkflowGroupFailureError', code: 'WORKFLOW_GROUP_FAILURE', message: '1 of 3 failed' },
          durationMs: 10,
        },
      ]),
    )
    expect(markdown).toContain('## Failure')
    expect(markdown).toContain('`WorkflowGroupFailureError` (`WORKFLOW_GROUP_FAILURE`): 1 of 3 failed')
    expect(markdown).toContain('- Groups: 2, 2 did not complete')
    expect(markdown).toContain('| `g1` | pipeline | **failed** at stage 2 | 3 | 1 | 1 | 1 | stages |')
    expect(markdown).toContain('| `g2` | parallel | **no group_end** |')
  })

  it('lists failed calls that were not retried with their cause', () => {
    const markdown = renderOutputsReadme(journal([runStart, start('lc-1', 'call-1', 1, 1), end('lc-1', 'call-1', 1, 1, 'call-timeout')]))
    expect(markdown).toMatch(/## Failed agent calls \(not retried\)\n\n- `lc-1` \(call `call-1`, `analyst`, label `summarise`\): failed — `call-timeout`/)
  })

  it('escapes Markdown in text taken from the journal', () => {
    const markdown = renderOutputsReadme(
      journal([
        runStart,
        { type: 'run_end', disposition: 'failed', ok: false, result: null, durationMs: 1, error: { name: 'E', code: 'X', message: '*bold* | `tick` <b>\n# heading' } },
      ]),
    )
    expect(markdown).toContain('\\*bold\\* \\| \\`tick\\` \\<b\\> \\# heading')
  })

  it('uses the given title', () => {
    expect(renderOutputsReadme(journal([runStart]), { title: 'Triage outputs' })).toMatch(/^# Triage outputs\n/)
  })

  it('counts no retry for a retry line whose second attempt never ran (the invocation cap refused it)', () => {
    const markdown = renderOutputsReadme(
      journal([
        runStart,
        start('lc-1', 'call-1', 1, 2),
        end('lc-1', 'call-1', 1, 2, 'call-timeout'),
        retry('lc-1', 'call-1', 'call-timeout'),
        { type: 'run_end', disposition: 'failed', ok: false, result: { ok: false }, durationMs: 10 },
      ]),
    )
    expect(markdown).toContain('- Agent calls: 1 (1 attempt, 0 retries across 0 calls); 0 completed, 1 failed')
    expect(markdown).not.toContain('## Retried agent calls')
    expect(markdown).toContain('## Failed agent calls (not retried)')
  })

  it("shows the host's own LLM retries apart from agent call retries", () => {
    const llm = (llmAttempt: number, outcome: 'failed' | 'succeeded'): JournalLineInput => ({
      type: 'llm_attempt',
      callId: 'call-1',
      logicalCallId: 'lc-1',
      attempt: 1,
      attempts: 1,
      agent: 'analyst',
      model: 'm',
      turn: 1,
      step: 1,
      llmAttempt,
      llmMaxAttempts: 3,
      outcome,
      durationMs: 5,
      streamed: false,
      ...(outcome === 'failed' ? { code: 'rate_limited' as const, status: 429, retryable: true } : {}),
    })
    const markdown = renderOutputsReadme(journal([runStart, start('lc-1', 'call-1', 1, 1), llm(1, 'failed'), llm(2, 'failed'), llm(3, 'succeeded'), end('lc-1', 'call-1', 1, 1), completedEnd]))
    expect(markdown).toContain('- Agent calls: 1 (1 attempt, 0 retries across 0 calls)')
    expect(markdown).toContain("- LLM requests: 3 attempts, 2 retries by the host's own policy")
  })
})
