// What the CLI does per journal line, on the journal of a big run: fold it
// into the RunView the live progress tree is drawn from, format it as a plain
// progress line, and summarise the run for `locus show`/`ls` (the runtime's
// readStoredRun through the file store). The baseline, measured in the same
// process run, is @locus/journal reading and validating those lines, which
// every one of these commands pays anyway.
import { setMaxListeners } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { measure, printTable, reportTarget } from '@locus/bench-kit'
import { createRunView, progressTree, readJournal } from '@locus/journal'
import { createScriptedHost, defineWorkflow, readStoredRun, runWorkflowScript } from '@locus/runtime'
import { createFileRunStore } from '@locus/store'
import { formatJournalLine } from '../src/format-journal-line.js'
import { renderProgressTree } from '../src/progress/render-progress-tree.js'
import { styleFor } from '../src/style.js'

// As in the binary: a 50-wide fan-out is not a listener leak.
setMaxListeners(0)

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const calls = smoke ? 20 : 2_000
const rounds = smoke ? 1 : 7
const scratch = mkdtempSync(join(tmpdir(), 'locus-cli-bench-'))

// A real journal: `calls` agent calls in groups of 50, every tenth one retried after a host timeout.
const workflow = defineWorkflow({
  name: 'bench-fan-out',
  async run({ agent, parallel }) {
    for (let start = 0; start < calls; start += 50) {
      await parallel(
        Array.from({ length: Math.min(50, calls - start) }, (_, offset) => () =>
          agent(`question ${start + offset}`, { label: (start + offset) % 10 === 0 ? 'flaky' : 'steady', attempts: 2 }),
        ),
      )
    }
    return { ok: true }
  },
})
const host = createScriptedHost({
  rules: [
    { match: { label: 'flaky' }, steps: [{ throw: 'host-turn-timeout' }, { text: 'answer' }] },
    { steps: [{ text: 'answer' }] },
  ],
})
await runWorkflowScript(workflow, { host, runsDir: scratch, runId: 'bench', durability: 'none' })
const journalPath = join(scratch, 'bench', 'journal.jsonl')
const lines = readJournal(journalPath).lines
const store = createFileRunStore(scratch)
const plain = styleFor({ write: () => true }, {})
const view = createRunView({ keep: 'all' })
for (const line of lines) view.apply(line)

const results = await measure(
  [
    { name: 'readJournal (baseline)', operations: lines.length, run: () => readJournal(journalPath) },
    {
      name: 'progress tree: apply',
      operations: lines.length,
      run: () => {
        const fresh = createRunView({ keep: 'all' })
        for (const line of lines) fresh.apply(line)
      },
    },
    {
      name: 'plain progress line',
      operations: lines.length,
      run: () => {
        for (const line of lines) formatJournalLine(line, 0, plain)
      },
    },
    { name: 'summarise for show/ls', operations: lines.length, run: () => readStoredRun(store, 'bench') },
  ],
  { rounds, warmupRounds: smoke ? 0 : 2 },
)
const ratios = printTable(`@locus/cli: per journal line, on a ${lines.length}-line journal (${calls} agent calls)`, results, 'readJournal (baseline)')
reportTarget('progress tree apply vs reading the line', ratios.get('progress tree: apply') ?? Number.NaN, 1)
reportTarget('plain progress line vs reading the line', ratios.get('plain progress line') ?? Number.NaN, 1)
reportTarget('summary vs reading the line', ratios.get('summarise for show/ls') ?? Number.NaN, 1)

const [redraw] = await measure([{ name: 'redraw', run: () => renderProgressTree(progressTree(view), { now: Date.now(), style: plain, maxLines: 40 }) }], { rounds, warmupRounds: smoke ? 0 : 2 })
console.log(`\nOne redraw of the finished tree (${calls} calls, 40 visible lines): ${((redraw?.nsPerOp ?? Number.NaN) / 1e6).toFixed(2)} ms`)
// Redraws happen every 250 ms; one should cost well under a frame of that.
reportTarget('redraw of the whole tree', (redraw?.nsPerOp ?? Number.NaN) / 1e6, 5, ' ms')
rmSync(scratch, { recursive: true, force: true })
