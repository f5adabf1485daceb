import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { readJournal } from '@locus/journal'
import { describe, expect, it } from 'vitest'
import { runExample } from '../run-example.js'
import triagePipeline from './triage-pipeline.js'

describe('triage pipeline example', () => {
  it('completes after retrying the flaky tool with backoff and the timed-out agent in a new child', async () => {
    const run = await runExample(triagePipeline as never, join(import.meta.dirname, 'triage-pipeline.fixtures.json'))
    expect(run.disposition).toBe('completed')
    expect(run.result).toMatchObject({ ok: true, triaged: [{ id: 'T-1' }, { id: 'T-2' }, { id: 'T-3', attempts: 2 }] })
    const retries = readJournal(join(run.runDir, 'journal.jsonl')).lines.filter((line) => line.type === 'retry')
    expect(retries.map((line) => line.kind).sort()).toEqual(['agent', 'tool'])
    // backoff_base_secs 1: the retry of the tool waits 1^1 = 1 second (on the injected clock).
    expect(retries.find((line) => line.kind === 'tool')).toMatchObject({ cause: 'provider_error', delayMs: 1000 })
    expect(retries.find((line) => line.kind === 'agent')).toMatchObject({ cause: 'host-turn-timeout' })
    expect(readFileSync(join(run.runDir, 'outputs', 'README.md'), 'utf8')).toContain('## Retried agent calls')
  })
})
