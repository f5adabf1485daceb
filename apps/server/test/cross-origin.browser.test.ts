// A page on another loopback origin tries to drive a no-key server, as the
// issue's attack did: fetch in no-cors mode with text/plain bodies, and form
// posts (text/plain and urlencoded), to start a run, answer a deferral and
// cancel a run. Nothing may change on the server, and every request must be
// refused with a 4xx. no-cors hides statuses from the page, so the server's
// own log hook (onResponse) records them.
import { type Server, createServer as createHttpServer } from 'node:http'
import type { JournalLine } from '@locus/journal'
import { createRuntime, createScriptedHost, defineDeferredTool, defineWorkflow } from '@locus/runtime'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import type { RequestLogEntry } from '../src/index.js'
import { chromiumAvailable, launchChromium } from './chromium.js'
import { onCleanup, tempRunsDir, testServer } from './helpers.js'
import { until } from './inspector-fixtures.js'

const payment = defineWorkflow({
  name: 'payment',
  input: z.object({ amount: z.number() }),
  tools: { approve: defineDeferredTool({ input: z.object({ amount: z.number() }), output: z.object({ approved: z.boolean() }) }) },
  run: async ({ input, tool }) => ({ ok: true, approval: await tool('approve', { amount: input.amount }) }),
})
const hangs = defineWorkflow({ name: 'hangs', run: async ({ agent }) => ({ ok: true, answer: (await agent('hang')).answer }) })

/** Every line of every execution of every run, by run and execution. */
async function everything(runtime: ReturnType<typeof createRuntime>): Promise<Record<string, JournalLine[]>> {
  const all: Record<string, JournalLine[]> = {}
  for (const info of (await runtime.list()).rows) {
    for (const execution of await runtime.store.listExecutions(info.runId)) {
      const lines: JournalLine[] = []
      for await (const line of runtime.store.readLines(execution)) lines.push(line)
      all[`${info.runId}/${execution.executionId}`] = lines
    }
  }
  return all
}

/** The attacker's page: each attempt in turn, form posts into hidden frames so the page stays. */
function attackPage(target: string, paths: { start: string; resolve: string; inspectorResolve: string; cancel: string }): string {
  return `<!doctype html><html><body><script>
const target = ${JSON.stringify(target)};
const paths = ${JSON.stringify(paths)};
async function run() {
  const plain = { 'content-type': 'text/plain' };
  const attempts = [
    fetch(target + paths.start, { method: 'POST', mode: 'no-cors', headers: plain, body: '{"input":{"amount":100000}}' }),
    fetch(target + paths.resolve, { method: 'POST', mode: 'no-cors', headers: plain, body: '{"result":{"approved":true}}' }),
    fetch(target + paths.cancel, { method: 'POST', mode: 'no-cors' }),
    fetch(target + paths.cancel, { method: 'POST', mode: 'no-cors', headers: plain, body: '{}' }),
    fetch(target + paths.start, { method: 'POST', mode: 'no-cors', body: new Blob(['{"input":{"amount":1}}']) }),
  ];
  await Promise.allSettled(attempts);
  const forms = [
    [paths.start, 'text/plain', { '{"input":{"amount":100000},"x":"': '"}' }],
    [paths.resolve, 'text/plain', { '{"result":{"approved":true},"x":"': '"}' }],
    [paths.cancel, 'application/x-www-form-urlencoded', { reason: 'x' }],
    [paths.inspectorResolve, 'application/x-www-form-urlencoded', { result: '{"approved":true}' }],
  ];
  forms.forEach(([path, enctype, fields], index) => {
    const frame = document.createElement('iframe');
    frame.name = 'sink' + index;
    document.body.appendChild(frame);
    const form = document.createElement('form');
    form.method = 'POST';
    form.enctype = enctype;
    form.action = target + path;
    form.target = frame.name;
    for (const [name, value] of Object.entries(fields)) {
      const input = document.createElement('input');
      input.type = 'hidden';
      input.name = name;
      input.value = value;
      form.appendChild(input);
    }
    document.body.appendChild(form);
    form.submit();
  });
  document.title = 'sent';
}
run();
</script></body></html>`
}

describe.skipIf(!chromiumAvailable())('a page on another origin cannot drive a no-key server (headless Chromium)', () => {
  let browser: Browser

  beforeAll(async () => {
    browser = await launchChromium()
  })
  afterAll(async () => {
    await browser.close()
  })

  it('starts no run, answers no deferral and cancels nothing, and every attempt got a 4xx', async () => {
    const runtime = createRuntime({ workflows: [payment, hangs], host: createScriptedHost({ rules: [{ match: { prompt: 'hang' }, steps: [{ hang: true }] }] }), runsDir: tempRunsDir() })
    const log: RequestLogEntry[] = []
    const server = await testServer({ runtime, onResponse: (entry) => log.push(entry) })
    const waiting = await runtime.start('payment', { input: { amount: 100_000 } })
    const deferral = await until(async () => (await runtime.pendingDeferrals(waiting.runId))[0], 'the payment deferral')
    const running = await runtime.start('hangs')
    await until(async () => ((await runtime.get(running.runId)).latest.view.counts.agentAttempts === 1 ? true : undefined), 'the hanging agent call')
    const before = await everything(runtime)

    // The attacker: a second loopback origin (another port), serving the page.
    const paths = {
      start: '/v1/workflows/payment/runs',
      resolve: `/v1/runs/${waiting.runId}/deferred/${deferral.deferredId}/resolve`,
      inspectorResolve: `/runs/${waiting.runId}/deferred/${deferral.deferredId}/resolve`,
      cancel: `/v1/runs/${running.runId}/cancel`,
    }
    const page = attackPage(server.url, paths)
    const attacker: Server = createHttpServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      response.end(page)
    })
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve))
    onCleanup(
      () =>
        new Promise<void>((resolve) => {
          attacker.close(() => {
            resolve()
          })
        }),
    )
    const address = attacker.address()
    const attackerUrl = `http://localhost:${typeof address === 'object' && address !== null ? address.port : 0}/`

    const tab = await browser.newPage()
    await tab.goto(attackerUrl)
    await expect.poll(() => tab.title(), { timeout: 10_000 }).toBe('sent')
    // 5 fetches and 4 form posts reach the server (a preflight never happens: these are all "simple" requests).
    const attempts = () => log.filter((entry) => entry.method === 'POST')
    await expect.poll(() => attempts().length, { timeout: 10_000 }).toBe(9)
    await tab.close()

    const statuses = attempts().map((entry) => `${entry.path} ${entry.status} ${entry.error?.code ?? ''}`)
    for (const entry of attempts()) expect(entry.status, statuses.join('\n')).toBeGreaterThanOrEqual(400)
    for (const entry of attempts()) expect(entry.status, statuses.join('\n')).toBeLessThan(500)
    // The Origin check is what stops them: the page's origin is not the server's.
    expect(attempts().every((entry) => entry.error?.code === 'forbidden'), statuses.join('\n')).toBe(true)

    // Nothing changed: the same runs, the same lines; the deferral is still open and the run still going.
    runtime.live(waiting.runId)?.flush()
    runtime.live(running.runId)?.flush()
    expect(await everything(runtime)).toEqual(before)
    expect((await runtime.pendingDeferrals(waiting.runId)).map((open) => open.deferredId)).toEqual([deferral.deferredId])
    expect(runtime.live(running.runId)).toBeDefined()
    running.cancel('test over')
    waiting.cancel('test over')
    await Promise.allSettled([running.done, waiting.done])
  })
})
