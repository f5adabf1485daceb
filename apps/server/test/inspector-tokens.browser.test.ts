// The inspector shows an LLM call's tokens as they stream (issue #35), read
// from the store's token stream, and keeps them across a restart of the
// server: the page's text stays, and the stream resumes from its last offset
// on the restarted server, so the text goes on without a gap or a repeat.
import { type AgentHost, createRuntime, defineWorkflow } from '@locus/runtime'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startServer } from '../src/index.js'
import { chromiumAvailable, launchChromium } from './chromium.js'
import { tempRunsDir } from './helpers.js'
import { createGate } from './inspector-fixtures.js'

const FIRST = ['alpha ', 'bravo ', 'charlie ', 'delta ']
const SECOND = ['echo ', 'foxtrot ', 'golf ', 'hotel']

/** A host whose one request streams FIRST, waits for the gate, then streams SECOND. */
function gatedHost(gate: ReturnType<typeof createGate>): AgentHost {
  return {
    name: 'gated',
    specificationVersion: 'v1',
    openSession: () => ({
      transcript: () => [],
      async prompt(_text, options) {
        for (const piece of FIRST) options.onText?.({ kind: 'delta', llmAttempt: 1, text: piece })
        await gate.wait()
        for (const piece of SECOND) options.onText?.({ kind: 'delta', llmAttempt: 1, text: piece })
        options.onText?.({ kind: 'end', llmAttempt: 1 })
        return { text: [...FIRST, ...SECOND].join(''), stopReason: 'end' }
      },
    }),
  }
}

const talker = defineWorkflow({ name: 'talker', run: async ({ agent }) => ({ ok: true, answer: (await agent('talk')).answer }) })

describe.skipIf(!chromiumAvailable())('inspector tokens in headless Chromium', () => {
  let browser: Browser
  beforeAll(async () => {
    browser = await launchChromium()
  })
  afterAll(async () => {
    await browser.close()
  })

  it("shows a call's tokens live, and keeps them (and goes on) across a server restart", async () => {
    const runsDir = tempRunsDir()
    const gate = createGate()
    // The run executes here; the servers only read the runs directory, as a `locus serve` beside a `locus run` does.
    const executing = createRuntime({ workflows: [talker], runsDir, host: gatedHost(gate) })
    const reader = () => createRuntime({ workflows: [talker], runsDir })
    let server = await startServer({ runtime: reader(), port: 0, env: {}, shutdownGraceMs: 100, sseRetryMs: 100, onError: () => undefined })
    const port = Number(new URL(server.url).port)
    try {
      const handle = await executing.start('talker')
      const page = await browser.newPage()
      await page.goto(`${server.url}/runs/${handle.runId}`)
      const text = page.locator('[data-testid="token-call"] .token-text')
      await expect.poll(() => page.locator('#tokens').isVisible(), { timeout: 10_000 }).toBe(true)
      await expect.poll(() => text.textContent(), { timeout: 10_000 }).toBe(FIRST.join(''))

      await server.close()
      server = await startServer({ runtime: reader(), port, env: {}, shutdownGraceMs: 100, sseRetryMs: 100, onError: () => undefined })
      // The text already shown stays while the server is away and back.
      expect(await text.textContent()).toBe(FIRST.join(''))
      // A page opened afresh on the restarted server reads the same text from the store.
      const again = await browser.newPage()
      await again.goto(`${server.url}/runs/${handle.runId}`)
      const againText = again.locator('[data-testid="token-call"] .token-text')
      await expect.poll(() => againText.textContent(), { timeout: 10_000 }).toBe(FIRST.join(''))
      gate.open()
      await expect.poll(() => text.textContent(), { timeout: 15_000 }).toBe([...FIRST, ...SECOND].join(''))
      await expect.poll(() => againText.textContent(), { timeout: 15_000 }).toBe([...FIRST, ...SECOND].join(''))
      expect(await page.locator('[data-testid="token-call"]').count()).toBe(1)
      expect(await page.locator('[data-testid="token-call"].discarded').count()).toBe(0)
      expect((await handle.done).result).toMatchObject({ ok: true, answer: [...FIRST, ...SECOND].join('') })
      await page.close()
      await again.close()
    } finally {
      await server.close()
    }
  }, 60_000)
})
