import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chromiumAvailable, launchChromium } from './chromium.js'
import { tempRunsDir, testServer } from './helpers.js'
import { inspectorRuntime, produceInspectorRuns, stepperGate, until } from './inspector-fixtures.js'

/** docs/images with LOCUS_UPDATE_SCREENSHOTS=1 (how the guide's screenshots are made); a scratch directory otherwise, so a test run leaves the tree clean. */
const UPDATE = process.env.LOCUS_UPDATE_SCREENSHOTS === '1'
const IMAGES = UPDATE ? join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'docs', 'images') : mkdtempSync(join(tmpdir(), 'locus-inspector-shots-'))

describe.skipIf(!chromiumAvailable())('run inspector in headless Chromium', () => {
  let browser: Browser

  beforeAll(async () => {
    browser = await launchChromium()
  })
  afterAll(async () => {
    await browser.close()
    if (!UPDATE) rmSync(IMAGES, { recursive: true, force: true })
  })

  it("updates a live run's page in place as journal lines arrive, and stops following when it ends", async () => {
    const runtime = inspectorRuntime(tempRunsDir())
    const server = await testServer({ runtime })
    const handle = await runtime.start('stepper', { input: { steps: 3 } })
    await until(async () => ((await runtime.get(handle.runId)).latest.view.counts.toolCalls === 1 ? true : undefined), 'the first step to start')
    const page = await browser.newPage()
    await page.goto(`${server.url}/runs/${handle.runId}`)
    expect(await page.locator('#timeline .call-tool').count()).toBe(1)
    await expect.poll(() => page.locator('#live-status').textContent()).toContain('Live')
    // Lines arrive while the page is open: each step's end and the next step's start.
    stepperGate.open()
    await expect.poll(() => page.locator('#timeline .call-tool').count(), { timeout: 10_000 }).toBe(2)
    expect(await page.locator('#journal-lines tr[data-type="tool_end"]').count()).toBe(1)
    stepperGate.open()
    stepperGate.open()
    await handle.done
    await expect.poll(() => page.locator('[data-testid="disposition"]').textContent(), { timeout: 10_000 }).toContain('Completed')
    expect(await page.locator('#timeline .call-tool').count()).toBe(3)
    await expect.poll(() => page.locator('#live-status').textContent()).toContain('The run ended')
    await page.close()
  })

  it('resolves a deferred tool from the page, which completes the run, and writes screenshots at 1280 and 390 px', async () => {
    const runtime = inspectorRuntime(tempRunsDir())
    const server = await testServer({ runtime })
    const runs = await produceInspectorRuns(runtime)
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    await page.goto(`${server.url}/runs/${runs.approval}`)
    const article = page.locator(`[data-deferred-id="${runs.deferredId}"]`)
    await article.locator('textarea[name="result"]').fill('{"approved": true}')
    // Keyboard only: the button is reachable and pressing Enter on it submits.
    await article.locator('form.resolve button').focus()
    await Promise.all([page.waitForURL(/answered=/), page.keyboard.press('Enter')])
    await expect.poll(() => page.locator('[data-testid="disposition"]').textContent(), { timeout: 10_000 }).toContain('Completed')
    expect(await page.locator('form.resolve').count()).toBe(0)
    const result = (await runtime.get(runs.approval)).latest.view.result
    expect(result).toEqual({ ok: true, approval: { approved: true } })

    mkdirSync(IMAGES, { recursive: true })
    await page.goto(`${server.url}/runs/${runs.research}`)
    await page.screenshot({ path: join(IMAGES, 'inspector-run-1280.png'), fullPage: true })
    const narrow = await browser.newPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 1 })
    await narrow.goto(`${server.url}/runs/${runs.capped}`)
    // Readable at 390 px: nothing wider than the viewport but the scrollable journal.
    const overflow = await narrow.evaluate<number>('document.documentElement.scrollWidth')
    expect(overflow).toBeLessThanOrEqual(390)
    await narrow.screenshot({ path: join(IMAGES, 'inspector-run-390.png'), fullPage: true })
    await narrow.goto(`${server.url}/`)
    expect(await narrow.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390)
    await page.goto(`${server.url}/`)
    await page.screenshot({ path: join(IMAGES, 'inspector-runs-1280.png') })
    for (const name of ['inspector-run-1280.png', 'inspector-run-390.png', 'inspector-runs-1280.png']) {
      expect(readFileSync(join(IMAGES, name)).subarray(1, 4).toString('latin1')).toBe('PNG')
    }
    await narrow.close()
    await page.close()
  })
})
