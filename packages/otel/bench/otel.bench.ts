// The cost of tracing a run: the same workflow of tool() and agent() calls run
// untraced (the floor) and with every journal line turned into spans by
// createJournalTracer, on the OTel SDK with a batch processor and the in-memory
// exporter, emptied after each run (so the network is not measured), in one process run.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { measure, printTable, reportTarget } from '@locus/bench-kit'
import { createScriptedHost, defineTool, defineWorkflow, runWorkflowScript } from '@locus/runtime'
import { createMemoryRunStore } from '@locus/store'
import { BasicTracerProvider, BatchSpanProcessor, InMemorySpanExporter } from '@opentelemetry/sdk-trace-base'
import { trace } from '@opentelemetry/api'
import { z } from 'zod'
import { createJournalTracer } from '../src/index.js'

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const calls = smoke ? 50 : 300
const rounds = smoke ? 1 : 5
const scratch = mkdtempSync(join(tmpdir(), 'locus-otel-bench-'))

const workflow = defineWorkflow({
  name: 'bench-traced',
  tools: { lookup: defineTool({ input: z.object({ id: z.string() }), run: ({ id }) => ({ id, found: true }) }) },
  run: async ({ tool, agent }) => {
    for (let index = 0; index < calls; index += 1) {
      await tool('lookup', { id: `t-${index}` })
      await agent('instant question')
    }
    return { ok: true }
  },
})
const host = createScriptedHost({ rules: [{ steps: [{ text: 'fine', usage: { inputTokens: 10, outputTokens: 2 } }] }] })

let exported = 0
const memory = new InMemorySpanExporter()
const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(memory, { maxQueueSize: 100_000, maxExportBatchSize: 2_048 })] })
const tracer = provider.getTracer('locus-bench')

try {
  const traced = async (options: { runsDir: string } | { store: ReturnType<typeof createMemoryRunStore> }): Promise<void> => {
    const journal = createJournalTracer({ tracer })
    await runWorkflowScript(workflow, { host, ...options, onEvent: (line) => { journal.apply(line) } })
    await provider.forceFlush()
    exported += memory.getFinishedSpans().length
    memory.reset()
  }
  // On disk the run is mostly file-system calls (agent() makes directories), noisy on a shared machine;
  // in a memory store only CPU is measured, so the tracer's share shows plainly.
  const results = await measure(
    [
      { name: 'untraced run, file store', operations: calls * 2, run: () => runWorkflowScript(workflow, { host, runsDir: scratch }) },
      { name: 'traced run, file store', operations: calls * 2, run: () => traced({ runsDir: scratch }) },
      { name: 'untraced run, memory store', operations: calls * 2, run: () => runWorkflowScript(workflow, { host, store: createMemoryRunStore() }) },
      { name: 'traced run, memory store', operations: calls * 2, run: () => traced({ store: createMemoryRunStore() }) },
      // No SDK registered: the API's tracer makes non-recording spans, so this is the tracer's own work.
      {
        name: 'tracer only (no-op SDK), memory store',
        operations: calls * 2,
        run: async () => {
          const journal = createJournalTracer({ tracer: trace.getTracer('locus-bench-noop') })
          await runWorkflowScript(workflow, { host, store: createMemoryRunStore(), onEvent: (line) => { journal.apply(line) } })
        },
      },
    ],
    { rounds, warmupRounds: smoke ? 0 : 1 },
  )
  const title = `@locus/otel: ${calls} tool() + ${calls} agent() calls per run`
  const onDisk = printTable(`${title}, file store`, results.filter((result) => result.name.endsWith('file store')), 'untraced run, file store')
  const inMemory = printTable(`${title}, memory store`, results.filter((result) => result.name.endsWith('memory store')), 'untraced run, memory store')
  if (exported === 0) throw new Error('no span was exported: the traced case measured nothing')
  reportTarget('tracing on vs off, per call, file store', onDisk.get('traced run, file store') ?? Number.NaN, 1.15)
  reportTarget('tracing on vs off, per call, memory store (CPU only)', inMemory.get('traced run, memory store') ?? Number.NaN, 1.15)
} finally {
  await provider.shutdown()
  rmSync(scratch, { recursive: true, force: true })
}
