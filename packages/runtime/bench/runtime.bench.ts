// Per-call cost of tool() and agent() inside a real run (journal, per-call
// files), next to a floor measured in the same process run: the raw function
// call plus one writeSync of a journal-sized line.
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { measure, printTable, reportTarget } from '@locus/bench-kit'
import { createScriptedHost, defineTool, defineWorkflow, runWorkflowScript } from '@locus/runtime'
import { z } from 'zod'

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const toolCalls = smoke ? 100 : 10_000
const agentCalls = smoke ? 20 : 2_000
const rounds = smoke ? 1 : 5
const scratch = mkdtempSync(join(tmpdir(), 'locus-runtime-bench-'))

const instant = (args: { id: string }): { id: string; ok: boolean } => ({ id: args.id, ok: true })
const toolWorkflow = defineWorkflow({
  name: 'bench-tools',
  tools: { instant: defineTool({ input: z.object({ id: z.string() }), run: instant }) },
  run: async ({ tool }) => {
    for (let index = 0; index < toolCalls; index += 1) await tool('instant', { id: 'x' })
    return { ok: true }
  },
})
const agentWorkflow = defineWorkflow({
  name: 'bench-agents',
  run: async ({ agent }) => {
    for (let index = 0; index < agentCalls; index += 1) await agent('instant question')
    return { ok: true }
  },
})

let round = 0
function floorLoop(count: number): void {
  const path = join(scratch, `floor-${round++}.jsonl`)
  const fd = openSync(path, 'a')
  for (let index = 0; index < count; index += 1) {
    const value = instant({ id: 'x' })
    const line = { v: 1, seq: index + 1, ts: new Date().toISOString(), runId: 'r', executionId: 'root', type: 'tool_end', toolCallId: `tool-${index}`, tool: 'instant', attempt: 1, maxAttempts: 1, status: 'completed', durationMs: 0, value }
    writeSync(fd, JSON.stringify(line) + '\n')
  }
  closeSync(fd)
}

const toolResults = await measure(
  [
    { name: 'floor: call + writeSync', operations: toolCalls, run: () => { floorLoop(toolCalls) } },
    // Durability 'none' writes each line as the floor does; 'batch' (the default) adds an fsync every 1,000 lines or 200 ms.
    { name: "tool() in a run, durability 'none'", operations: toolCalls, run: async () => { await runWorkflowScript(toolWorkflow, { runsDir: scratch, durability: 'none' }) } },
    { name: "tool() in a run, durability 'batch'", operations: toolCalls, run: async () => { await runWorkflowScript(toolWorkflow, { runsDir: scratch }) } },
  ],
  { rounds, warmupRounds: smoke ? 0 : 1 },
)
const toolRatios = printTable(`@locus/runtime: ${toolCalls} sequential tool() calls on an instant tool`, toolResults, 'floor: call + writeSync')
// Each call writes two lines (tool_start and tool_end) against the floor's one.
reportTarget("tool() vs floor, same durability as the floor ('none')", toolRatios.get("tool() in a run, durability 'none'") ?? Number.NaN, 3)
reportTarget("tool() vs floor, default durability ('batch', with fsync)", toolRatios.get("tool() in a run, durability 'batch'") ?? Number.NaN, 3)

// Each agent() call creates three directories and two files. On a disk whose
// metadata operations are slow those dominate, so the same run is measured on
// tmpfs too when the machine has one: the difference is the disk, not Locus.
const host = createScriptedHost({ rules: [{ steps: [{ text: 'instant answer' }] }] })
const memoryScratch = existsSync('/dev/shm') ? mkdtempSync('/dev/shm/locus-runtime-bench-') : undefined
const agentCases = [
  { name: 'floor: call + writeSync', operations: agentCalls, run: () => { floorLoop(agentCalls) } },
  { name: 'agent() in a run (disk)', operations: agentCalls, run: async () => { await runWorkflowScript(agentWorkflow, { runsDir: scratch, host }) } },
  ...(memoryScratch === undefined
    ? []
    : [{ name: 'agent() in a run (tmpfs)', operations: agentCalls, run: async () => { await runWorkflowScript(agentWorkflow, { runsDir: memoryScratch, host }) } }]),
]
const agentResults = await measure(agentCases, { rounds, warmupRounds: smoke ? 0 : 1 })
printTable(`@locus/runtime: ${agentCalls} sequential agent() calls on an instant scripted host (with per-call files)`, agentResults, 'floor: call + writeSync')
for (const result of agentResults.filter((candidate) => candidate.name.startsWith('agent()'))) {
  reportTarget(`${result.name} per call`, result.nsPerOp / 1000, 150, ' µs')
}
rmSync(scratch, { recursive: true, force: true })
if (memoryScratch !== undefined) rmSync(memoryScratch, { recursive: true, force: true })
