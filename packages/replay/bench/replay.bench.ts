// Cost of loading a recorded run and replaying every call of it, next to the
// floor any reader of the same run pays: read the journal, split it, parse and
// schema-check each line. Both are measured in the same run.
import { measure, printTable, reportTarget } from '@locus/bench-kit'
import { JournalLineSchema } from '@locus/journal'
import { type AgentCallRequest, createReplaySession, loadRecording } from '@locus/replay'
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { type FixtureCall, journalOf, tempRunsDir, writeRun } from '../test/run-fixture.js'

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const count = smoke ? 1_000 : 100_000
const runsDir = tempRunsDir('locus-replay-bench-')
const runDir = join(runsDir, 'run-bench')

function ordinalOf(index: number): string {
  // A realistic mix: top-level calls and calls inside parallel slots.
  return index % 4 === 0 ? String(index / 4 + 1) : `g${Math.floor(index / 4) + 1}[${index % 4}].1`
}

const requests: AgentCallRequest[] = []
const calls: FixtureCall[] = []
for (let index = 0; index < count; index += 1) {
  const request = {
    agent: 'analyst',
    prompt: `Summarise the history of ticket T-${index} and list the three most recent changes with their authors.`,
    timeoutMs: 60_000,
  }
  requests.push({ ...request, attempts: 2, label: `ticket ${index}` })
  calls.push({ ordinal: ordinalOf(index), request, attempts: [{ outcome: 'completed' }] })
}

const setupStarted = process.hrtime.bigint()
// As the runtime writes runs: answers on agent_end, so replay needs the journal alone.
writeRun(runDir, calls, { runId: 'run-bench', answersInJournal: true, envelopeFiles: false })
const setupMs = Number(process.hrtime.bigint() - setupStarted) / 1e6
console.log(`wrote ${count} recorded calls (journal only) in ${(setupMs / 1000).toFixed(1)} s`)

const journalPath = journalOf(runDir)

let sink = 0
const floorName = 'floor: read + split + JSON.parse + zod (journal)'
const results = await measure(
  [
    {
      name: floorName,
      operations: count,
      run: () => {
        const text = readFileSync(journalPath, 'utf8')
        for (const line of text.split('\n')) {
          if (line.length === 0) continue
          sink += JournalLineSchema.parse(JSON.parse(line)).seq
        }
      },
    },
    {
      name: 'loadRecording + replay all via next()',
      operations: count,
      run: () => {
        const session = createReplaySession(loadRecording(journalPath))
        for (let index = 0; index < count; index += 1) {
          const decision = session.next({ ordinal: calls[index]!.ordinal, request: requests[index]! })
          if (decision.mode !== 'replay') throw new Error(`call ${index} did not replay: ${decision.reason}`)
          sink += decision.envelope.attempt
        }
      },
    },
    {
      name: 'loadRecording alone',
      operations: count,
      run: () => {
        sink += loadRecording(journalPath).size
      },
    },
  ],
  { rounds: smoke ? 1 : 5, warmupRounds: smoke ? 0 : 1 },
)

const ratios = printTable(`@locus/replay: load a recorded run and replay every call (${count} calls, per call)`, results, floorName)
reportTarget('loadRecording + replay vs the journal floor', ratios.get('loadRecording + replay all via next()') ?? Number.NaN, 2)
rmSync(runsDir, { recursive: true, force: true })
if (sink < 0) console.log(sink)
