// Writes real run directories with the journal's own writer and real envelope
// files, so tests and the benchmark read exactly the formats a run leaves.
import { AGENT_RESULT_SCHEMA, type AgentResultEnvelopeBody, createJournalWriter } from '@locus/journal'
import type { FailureCause } from '@locus/outcome'
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type AgentCallRequest, type LoadRecordingOptions, type LoadedRecording, loadRecording, requestKey } from '../src/index.js'

/**
 * The names these fixtures give their files: the file store's layout, written
 * out here because that layout is private to @locus/store; a recording only
 * ever needs the journal's path and an `envelopeOf`.
 */
export const FIXTURE_LAYOUT = {
  journal: 'journal.jsonl',
  calls: 'calls',
  callResult: 'result',
  transcript: 'transcript',
  executions: 'executions',
} as const

/** The journal file of a fixture execution directory. */
export function journalOf(executionDir: string): string {
  return join(executionDir, FIXTURE_LAYOUT.journal)
}

export interface FixtureAttempt {
  /** How the attempt ended; `unfinished` writes no terminal line (a crash mid-call). */
  readonly outcome: 'completed' | 'failed' | 'threw' | 'unfinished'
  readonly failureCause?: FailureCause
  readonly answer?: string
  /** @default true except for `unfinished` */
  readonly writeEnvelope?: boolean
}

export interface FixtureCall {
  readonly ordinal: string
  readonly request: AgentCallRequest & { readonly agent: string }
  readonly attempts: readonly FixtureAttempt[]
  /** The declared `attempts`. @default attempts.length */
  readonly declared?: number
  /** @default derived from the ordinal */
  readonly logicalCallId?: string
  /** Write `requestKey` on agent_start. @default true */
  readonly journalKey?: boolean
}

export function tempRunsDir(prefix = 'locus-replay-'): string {
  return mkdtempSync(join(tmpdir(), prefix))
}

export function logicalCallIdOf(ordinal: string): string {
  return `call-${ordinal.replaceAll('[', '.').replaceAll(']', '')}`
}

/** Writes `<executionDir>/journal.jsonl` plus one envelope per finished attempt. */
export function writeRun(
  executionDir: string,
  calls: readonly FixtureCall[],
  options: { runId?: string; tornTail?: string; answersInJournal?: boolean; envelopeFiles?: boolean } = {},
): void {
  mkdirSync(executionDir, { recursive: true })
  const runId = options.runId ?? 'run-1'
  const journalPath = join(executionDir, FIXTURE_LAYOUT.journal)
  const journal = createJournalWriter(journalPath, { runId, executionId: runId, durability: 'none' })
  journal.append({ type: 'run_start', workflow: 'fixture', input: null, options: {} })
  for (const call of calls) {
    const logicalCallId = call.logicalCallId ?? logicalCallIdOf(call.ordinal)
    const declared = call.declared ?? call.attempts.length
    const key = requestKey(call.request)
    call.attempts.forEach((attempt, index) => {
      const number = index + 1
      const callId = `${logicalCallId}-a${number}`
      const trio = { attempt: number, attempts: declared, logicalCallId }
      journal.append({
        type: 'agent_start',
        callId,
        ...trio,
        agent: call.request.agent,
        ordinal: call.ordinal,
        prompt: call.request.prompt,
        ...(call.journalKey === false ? {} : { requestKey: key }),
        ...(call.request.timeoutMs === undefined ? {} : { timeoutMs: call.request.timeoutMs }),
      })
      if (attempt.outcome === 'unfinished') return
      const failed = attempt.outcome !== 'completed'
      const failureCause = attempt.failureCause ?? (failed ? 'call-timeout' : undefined)
      if (attempt.writeEnvelope !== false && options.envelopeFiles !== false) {
        const resultDir = join(executionDir, FIXTURE_LAYOUT.calls, callId, FIXTURE_LAYOUT.callResult)
        mkdirSync(resultDir, { recursive: true })
        const envelope: AgentResultEnvelopeBody = {
          schema: AGENT_RESULT_SCHEMA,
          callId,
          ...trio,
          agent: call.request.agent,
          ordinal: call.ordinal,
          status: failed ? 'failed' : 'completed',
          ...(failed ? { failureCause } : { answer: attempt.answer ?? `answer to ${call.request.prompt}` }),
          paths: { transcriptDir: join(executionDir, FIXTURE_LAYOUT.calls, callId, FIXTURE_LAYOUT.transcript), resultDir },
        }
        writeFileSync(join(resultDir, 'result.json'), JSON.stringify(envelope))
      }
      if (attempt.outcome === 'threw') {
        journal.append({
          type: 'error',
          message: `attempt ${number} threw`,
          error: { name: 'Error', code: 'UNKNOWN_ERROR', message: 'boom' },
          ...(failureCause === undefined ? {} : { failureCause }),
          callId,
          ...trio,
          agent: call.request.agent,
          ordinal: call.ordinal,
        })
      } else {
        journal.append({
          type: 'agent_end',
          callId,
          ...trio,
          agent: call.request.agent,
          ordinal: call.ordinal,
          status: failed ? 'failed' : 'completed',
          ...(failed && failureCause !== undefined ? { failureCause } : {}),
          ...(options.answersInJournal === true && !failed ? { answer: attempt.answer ?? `answer to ${call.request.prompt}` } : {}),
          durationMs: 5,
        })
      }
    })
  }
  journal.close()
  if (options.tornTail !== undefined) writeFileSync(journalPath, options.tornTail, { flag: 'a' })
}

/**
 * A run directory's envelopes as a recording asks for them, read from
 * `<dir>/calls/<callId>/result/result.json` the way the file store keeps them.
 */
export function envelopesOnDisk(dir: string): (callId: string) => string | undefined {
  return (callId) => {
    try {
      return readFileSync(join(dir, FIXTURE_LAYOUT.calls, callId, FIXTURE_LAYOUT.callResult, 'result.json'), 'utf8')
    } catch {
      return undefined
    }
  }
}

/** `loadRecording` of a run directory, its envelopes read from the disk as the file store reads them. */
export function loadFromDisk(dir: string, options: LoadRecordingOptions = {}): LoadedRecording {
  return loadRecording(journalOf(dir), { envelopeOf: envelopesOnDisk(dir), ...options })
}
