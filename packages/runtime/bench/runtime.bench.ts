// Per-call cost of tool() and agent() inside a real run (journal, per-call
// files), next to a floor measured in the same process run: the raw function
// call plus one writeSync of a journal-sized line.
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
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
    { name: 'tool() in a run', operations: toolCalls, run: async () => { await runWorkflowScript(toolWorkflow, { runsDir: scratch }) } },
  ],
  { rounds, warmupRounds: smoke ? 0 : 1 },
)
const toolRatios = printTable(`@locus/runtime: ${toolCalls} sequential tool() calls on an instant tool`, toolResults, 'floor: call + writeSync')
reportTarget('tool() vs floor', toolRatios.get('tool() in a run') ?? Number.NaN, 3)

const host = createScriptedHost({ rules: [{ steps: [{ text: 'instant answer' }] }] })
const agentResults = await measure(
  [
    { name: 'floor: call + writeSync', operations: agentCalls, run: () => { floorLoop(agentCalls) } },
    { name: 'agent() in a run', operations: agentCalls, run: async () => { await runWorkflowScript(agentWorkflow, { runsDir: scratch, host }) } },
  ],
  { rounds, warmupRounds: smoke ? 0 : 1 },
)
printTable(`@locus/runtime: ${agentCalls} sequential agent() calls on an instant scripted host (with per-call files)`, agentResults, 'floor: call + writeSync')
const agentMicros = (agentResults.find((result) => result.name === 'agent() in a run')?.nsPerOp ?? Number.NaN) / 1000
reportTarget('agent() per call', agentMicros, 150, ' µs')
rmSync(scratch, { recursive: true, force: true })
