import { cpSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { readJournal } from '@locus/journal'
import { createFileRunStore } from '@locus/store'
import { replayRun, resumeRun } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { mixedHost, mixedWorkflow } from './fixtures/mixed-workflow.js'
import { tempRunsDir } from './helpers.js'

/** Runs written by the runtime before persistence went through the store alone (see fixtures/make-recorded-runs.ts). */
const RECORDED = fileURLToPath(new URL('./fixtures/recorded-runs', import.meta.url))

function copyOfRecordedRuns(): string {
  const runsDir = tempRunsDir()
  cpSync(RECORDED, runsDir, { recursive: true })
  return runsDir
}

const recordedResult = (JSON.parse(readFileSync(join(RECORDED, 'finished', 'result.json'), 'utf8')) as { result: unknown }).result

describe('runs recorded by an earlier runtime, whose envelopes hold paths', () => {
  for (const through of ['runsDir', 'store'] as const) {
    const optionsFor = (runsDir: string) => (through === 'runsDir' ? { runsDir } : { store: createFileRunStore(runsDir) })

    it(`replays a finished run identical, the caught provider-error included (${through})`, async () => {
      const runsDir = copyOfRecordedRuns()
      const replayed = await replayRun('finished', mixedWorkflow, optionsFor(runsDir))
      expect(replayed.report.divergence).toBeNull()
      expect(replayed.ok).toBe(true)
      expect(replayed.run.result).toEqual(recordedResult)
      expect(replayed.report.counts.live).toBe(0)
    })

    it(`resumes a run killed mid-way: the recorded calls answer from the journal, the rest runs live (${through})`, async () => {
      const runsDir = copyOfRecordedRuns()
      const host = mixedHost()
      const resumed = await resumeRun('cut', mixedWorkflow, { ...optionsFor(runsDir), host })
      expect(resumed.disposition).toBe('completed')
      expect(resumed.result).toEqual(recordedResult)
      expect(resumed.replayed).toBe(2)
      expect(host.calls.map((call) => call.prompt)).not.toContain('first step on tides')
      const lines = readJournal(join(runsDir, 'cut', 'executions', 'resume-001', 'journal.jsonl')).lines
      expect(lines.at(-1)?.type).toBe('run_end')
      // The layout on disk is the one the run was recorded in: the resume sits beside the root journal.
      expect(readJournal(join(runsDir, 'cut', 'journal.jsonl')).lines.at(-1)?.type).toBe('agent_end')
    })
  }
})
