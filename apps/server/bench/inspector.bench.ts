// The run inspector: server-side render time of a run with 10,000 calls
// (target under 200 ms, HTML under 2 MB), against a floor measured in the same
// run (reading the execution's journal lines from the store, which every
// render must do); and the time for a live page in headless Chromium to show
// a new journal line (target under 100 ms on loopback), against the time its
// EventSource takes to receive the line.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { measure, printTable, reportTarget } from '@locus/bench-kit'
import { createRuntime, createScriptedHost, defineTool, defineWorkflow } from '@locus/runtime'
import { z } from 'zod'
import { createServer, startServer } from '../src/index.js'
import { page as pageHtml } from '../src/inspector/layout.js'
import { renderRunBody } from '../src/inspector/render-run.js'
import { readExecutionModel } from '../src/inspector/run-model.js'
import { CHROMIUM_PATH, chromiumAvailable, launchChromium } from '../test/chromium.js'
import { inspectorRuntime, stepperGate, until } from '../test/inspector-fixtures.js'

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const groups = smoke ? 5 : 100
const perGroup = smoke ? 20 : 100
const calls = groups * perGroup
const rounds = smoke ? 1 : 5
const liveSteps = smoke ? 3 : 20
const scratch = mkdtempSync(join(tmpdir(), 'locus-inspector-bench-'))

// A run of `groups` parallel() fan-outs of `perGroup` tool calls each, one in ten failing.
const fanOut = defineWorkflow({
  name: 'fan-out',
  tools: {
    lookup: defineTool({
      input: z.object({ index: z.number() }),
      run: ({ index }: { index: number }) => {
        if (index % 10 === 9) throw Object.assign(new Error(`source ${index} is down`), { retryable: false })
        return { index }
      },
    }),
  },
  run: async ({ tool, parallel }) => {
    for (let group = 0; group < groups; group += 1) {
      await parallel(
        Array.from({ length: perGroup }, (_, index) => async () => {
          try {
            return await tool('lookup', { index })
          } catch {
            return { index, down: true }
          }
        }),
        { label: `batch ${group}` },
      )
    }
    return { ok: true }
  },
})

const runtime = createRuntime({ workflows: [fanOut], host: createScriptedHost({ rules: [{ steps: [{ text: 'ok' }] }] }), runsDir: scratch })
const handle = await runtime.start('fan-out', { durability: 'none' })
await handle.done
const app = createServer({ runtime })
const infos = await runtime.store.listExecutions(handle.runId)
const root = infos[0]
if (root === undefined) throw new Error('the fan-out run has no execution')

const model = await readExecutionModel(runtime.store, root)
const renderOnly = (): string =>
  pageHtml(
    { title: 'bench' },
    renderRunBody({ runId: handle.runId, model, executions: [], status: 'completed', pending: [], replays: [], csrf: 'x', eventsUrl: undefined, page: 0, journalType: undefined, journalPage: 0, execution: undefined }),
  )
let size = 0
const renderResults = await measure(
  [
    { name: 'render only (journal already read)', run: renderOnly },
    {
      name: 'floor: read the journal',
      run: async () => {
        const lines: unknown[] = []
        for await (const line of runtime.store.readLines(root)) lines.push(line)
      },
    },
    {
      // A new server each time, so nothing is cached: read from the store, fold, render.
      name: 'GET /runs/{id}, first request (read, fold, render)',
      run: async () => {
        const response = await createServer({ runtime }).request(`/runs/${handle.runId}`)
        size = (await response.arrayBuffer()).byteLength
      },
    },
    {
      // The same server again: an ended execution's folded model is kept, so only the render is left.
      name: 'GET /runs/{id}, again (model kept)',
      run: async () => {
        await (await app.request(`/runs/${handle.runId}`)).arrayBuffer()
      },
    },
  ],
  { rounds, warmupRounds: smoke ? 0 : 1 },
)
const ratios = printTable(`@locus/server inspector: one run with ${calls} tool calls in ${groups} parallel() groups`, renderResults, 'floor: read the journal')
const render = renderResults.find((result) => result.name.startsWith('GET /runs/{id}, first'))
const again = renderResults.find((result) => result.name.startsWith('GET /runs/{id}, again'))
console.log(`first request vs floor: ${(ratios.get('GET /runs/{id}, first request (read, fold, render)') ?? Number.NaN).toFixed(2)}x; page size ${(size / 1024).toFixed(0)} KiB`)
const renderStep = renderResults.find((result) => result.name.startsWith('render only'))
reportTarget(`render of a ${calls}-call run (journal already read)`, (renderStep?.nsPerOp ?? Number.NaN) / 1e6, 200, ' ms')
reportTarget(`first request for a ${calls}-call run (read from the store, fold, render)`, (render?.nsPerOp ?? Number.NaN) / 1e6, 200, ' ms')
reportTarget(`later requests for the ended ${calls}-call run (model kept)`, (again?.nsPerOp ?? Number.NaN) / 1e6, 200, ' ms')
reportTarget(`HTML of a ${calls}-call run`, size / (1024 * 1024), 2, ' MiB')

if (!chromiumAvailable()) {
  console.log(`live page latency: skipped (no Chromium at ${CHROMIUM_PATH})`)
} else {
  const liveRuntime = inspectorRuntime(join(scratch, 'live'))
  const server = await startServer({ runtime: liveRuntime, port: 0, env: {}, onError: () => undefined })
  const browser = await launchChromium()
  const live = await liveRuntime.start('stepper', { input: { steps: liveSteps + 1 } })
  await until(async () => ((await liveRuntime.get(live.runId)).latest.view.counts.toolCalls === 1 ? true : undefined), 'the first step')
  // The bench injects its own probes, which the page's Content-Security-Policy would refuse; timing is the same either way.
  const page = await browser.newPage({ bypassCSP: true })
  await page.goto(`${server.url}/runs/${live.runId}`)
  // The page records when its EventSource received each line and when the DOM showed it.
  await page.evaluate(`(() => {
    window.__received = []
    window.__shown = []
    const observer = new MutationObserver(() => {
      const count = document.querySelectorAll('#timeline .call-tool').length
      if (window.__shown.length < count - 1) window.__shown.push(performance.timeOrigin + performance.now())
    })
    observer.observe(document.querySelector('main'), { childList: true, subtree: true })
    const source = new EventSource(document.querySelector('main').getAttribute('data-events'))
    source.addEventListener('tool_start', () => window.__received.push(performance.timeOrigin + performance.now()))
  })()`)
  const received: number[] = []
  const shown: number[] = []
  for (let step = 0; step < liveSteps; step += 1) {
    const opened = Date.now()
    stepperGate.open()
    await page.waitForFunction(`window.__shown.length >= ${step + 1} && window.__received.length >= ${step + 1}`)
    const times = await page.evaluate<[number, number]>(`[window.__received[${step}], window.__shown[${step}]]`)
    received.push(times[0] - opened)
    shown.push(times[1] - opened)
  }
  stepperGate.open()
  await live.done
  await browser.close()
  await server.close()
  const median = (values: number[]): number => [...values].sort((left, right) => left - right)[Math.floor(values.length / 2)] ?? Number.NaN
  console.log(`\n@locus/server inspector: live page, ${liveSteps} new tool calls on loopback (median from the line's write)`)
  console.log(`floor: EventSource receives the line  ${median(received).toFixed(1)} ms`)
  console.log(`page shows the new call              ${median(shown).toFixed(1)} ms  ${(median(shown) / Math.max(median(received), 0.1)).toFixed(2)}x`)
  reportTarget('live page shows a new journal line', median(shown), 100, ' ms')
}
rmSync(scratch, { recursive: true, force: true })
