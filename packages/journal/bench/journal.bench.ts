// Throughput of the journal writer in each durability mode next to a raw
// fs.writeSync loop over the same lines, and of readJournal next to a raw
// read + split + JSON.parse of the same file, all measured in one run.
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { measure, printTable, reportTarget, type BenchResult } from '@locus/bench-kit'
import { JournalLineSchema, createJournalWriter, readJournal, type JournalDurability, type JournalLineInput } from '@locus/journal'

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const count = smoke ? 200 : 20_000
/** fsync per line costs milliseconds on a real disk, so `line` mode is measured over fewer lines. */
const lineModeCount = smoke ? 5 : 300
const rounds = smoke ? 1 : 7
const warmupRounds = smoke ? 0 : 2

/** A realistic mix: agent attempts with prompts, tool calls, logs with data. */
function makeInputs(total: number): JournalLineInput[] {
  const inputs: JournalLineInput[] = []
  for (let index = 0; index < total; index += 1) {
    const place = { agent: 'analyst', label: 'summarise', phase: 'gather', groupId: 'g1', ordinal: `g1[${index}].1` }
    const trio = { callId: `call-${index}`, logicalCallId: `lc-${index}`, attempt: 1, attempts: 2 }
    switch (index % 4) {
      case 0:
        inputs.push({ type: 'agent_start', ...trio, ...place, timeoutMs: 60_000, prompt: `Summarise the history of ticket T-${index} with every fact you can find.` })
        break
      case 1:
        inputs.push({ type: 'agent_end', ...trio, ...place, status: 'failed', failureCause: 'call-timeout', reason: 'the call timed out after 60 s', durationMs: 60_000, usage: { inputTokens: 812, outputTokens: 0 } })
        break
      case 2:
        inputs.push({ type: 'tool_end', toolCallId: `tool-${index}`, tool: 'lookup', attempt: 1, maxAttempts: 3, status: 'completed', durationMs: 12 })
        break
      default:
        inputs.push({ type: 'log', level: 'info', message: 'fetched facts', data: { ticket: `T-${index}`, facts: 3, sources: ['crm', 'mail'] } })
    }
  }
  return inputs
}

const inputs = makeInputs(count)
const lineModeInputs = inputs.slice(0, lineModeCount)
const workDir = mkdtempSync(join(tmpdir(), 'locus-journal-bench-'))
let fileIndex = 0
const nextPath = (): string => join(workDir, `journal-${fileIndex++}.jsonl`)

// Lines as the writer would stamp them, for the raw loops.
const stamped = inputs.map((input, index) => ({ v: 1, seq: index + 1, ts: new Date(1_790_000_000_000 + index).toISOString(), runId: 'run-1', executionId: 'run-1', ...input }))
const texts = stamped.map((line) => JSON.stringify(line) + '\n')

function rawLoop(serialize: boolean): () => void {
  return () => {
    const path = nextPath()
    const fd = openSync(path, 'a')
    if (serialize) for (const line of stamped) writeSync(fd, JSON.stringify(line) + '\n')
    else for (const text of texts) writeSync(fd, text)
    closeSync(fd)
    rmSync(path)
  }
}

function writerLoop(durability: JournalDurability, lines: readonly JournalLineInput[]): () => void {
  return () => {
    const path = nextPath()
    const writer = createJournalWriter(path, { runId: 'run-1', executionId: 'run-1', durability })
    for (const input of lines) writer.append(input)
    writer.close()
    rmSync(path)
  }
}

const RAW_WRITE = 'raw writeSync(JSON.stringify(line))'
const writeResults = await measure(
  [
    { name: RAW_WRITE, operations: count, run: rawLoop(true) },
    { name: 'raw writeSync(pre-serialized text)', operations: count, run: rawLoop(false) },
    { name: "writer durability 'none'", operations: count, run: writerLoop('none', inputs) },
    { name: "writer durability 'batch' (default)", operations: count, run: writerLoop('batch', inputs) },
    { name: `writer durability 'line' (${lineModeCount} lines)`, operations: lineModeCount, run: writerLoop('line', lineModeInputs) },
  ],
  { rounds, warmupRounds },
)
const writeRatios = printTable(`@locus/journal: append ${count} lines (validate, stamp, serialize, write)`, writeResults, RAW_WRITE)
printRates(writeResults)

const journalFile = join(workDir, 'read.jsonl')
{
  const writer = createJournalWriter(journalFile, { runId: 'run-1', executionId: 'run-1', durability: 'none' })
  for (const input of inputs) writer.append(input)
  writer.close()
}

let sink = 0
const RAW_READ = 'raw read + split + JSON.parse'
const readResults = await measure(
  [
    {
      name: RAW_READ,
      operations: count,
      run: () => {
        for (const text of readFileSync(journalFile, 'utf8').split('\n')) if (text.length > 0) sink += (JSON.parse(text) as { seq: number }).seq
      },
    },
    {
      name: 'readJournal (validated)',
      operations: count,
      run: () => {
        sink += readJournal(journalFile).lines.length
      },
    },
    {
      name: 'raw + zod JournalLineSchema.parse',
      operations: count,
      run: () => {
        for (const text of readFileSync(journalFile, 'utf8').split('\n')) if (text.length > 0) sink += JournalLineSchema.parse(JSON.parse(text)).seq
      },
    },
  ],
  { rounds, warmupRounds },
)
const readRatios = printTable(`@locus/journal: read ${count} lines`, readResults, RAW_READ)
printRates(readResults)

console.log('')
reportTarget("writer 'none' vs raw writeSync loop", writeRatios.get("writer durability 'none'") ?? Number.NaN, 2)
reportTarget("writer 'batch' vs raw writeSync loop", writeRatios.get("writer durability 'batch' (default)") ?? Number.NaN, 2)
reportTarget('readJournal vs raw read + split + JSON.parse', readRatios.get('readJournal (validated)') ?? Number.NaN, 2)

rmSync(workDir, { recursive: true, force: true })
if (sink < 0) console.log(sink)

function printRates(results: readonly BenchResult[]): void {
  for (const result of results) console.log(`  ${result.name}: ${Math.round(1e9 / result.nsPerOp).toLocaleString('en-US')} lines/s`)
}
