// The inspector's /report page in headless Chromium (issue #32): `locus serve` draws the outcome report as SVG charts whose tables hold `locus report --json`'s figures.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { type Browser, chromium } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runLocus, settle, startLocus, waitForOutput } from './helpers.js'
import { pricedProject, recordPricedRuns } from './report-fixtures.js'

/** Debian's `chromium` package; never a downloaded browser. `LOCUS_CHROMIUM` points elsewhere. */
const CHROMIUM_PATH = process.env.LOCUS_CHROMIUM ?? '/usr/bin/chromium'
const available = existsSync(CHROMIUM_PATH)
if (!available && process.env.LOCUS_REQUIRE_CHROMIUM === '1') throw new Error(`Chromium is not at ${CHROMIUM_PATH}: install Debian's package (apt-get install -y chromium) or set LOCUS_CHROMIUM.`)

/** A table row as the page script reads it (the CLI's tsconfig has no DOM lib). */
interface Row {
  querySelectorAll(selector: string): ArrayLike<{ readonly textContent: string | null }>
}

interface ReportJson {
  cost: { outcomes: { outcome: string; runs: number; pricedRuns: number; usd: string; retryOverheadUsd: string }[]; tools: { tool: string; runs: number; usd: string }[]; usd: string }
  gaps: { tools: { tool: string; gaps: number; blocking: number }[] }
  days: { day: string; complete: number; partial: number; cannotAnswer: number; failed: number; usd: string; retryOverheadUsd: string }[]
}

describe.skipIf(!available)('the /report page in headless Chromium', () => {
  let browser: Browser
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] })
  })
  afterAll(async () => {
    await browser.close()
  })

  it('renders the four SVG charts, and its tables hold the same figures as locus report --json', async () => {
    const dir = await pricedProject()
    await recordPricedRuns(dir)
    const report = JSON.parse((await runLocus(['report', '--runs-dir', 'runs', '--json', '--since', '7d'], { cwd: dir })).stdout) as ReportJson
    const server = startLocus(['serve', '--workflows', join(dir, 'answer.mts'), '--runs-dir', 'runs', '--port', '0', '--model-host', 'none'], { cwd: dir })
    const ended = settle(server)
    try {
      const url = (await waitForOutput(server, /at (http:\/\/\S+)/))[1] ?? ''
      const page = await browser.newPage()
      const refused: string[] = []
      const requested: string[] = []
      page.on('console', (message) => {
        if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) refused.push(message.text())
      })
      // The browser asks for /favicon.ico by itself; every other request is the page's.
      page.on('request', (request) => {
        if (!request.url().endsWith('/favicon.ico')) requested.push(request.url())
      })
      const response = await page.goto(`${url}/report?days=7`)
      expect(response?.status()).toBe(200)
      // Every chart is drawn: an SVG with a box on the page and bars in it.
      for (const id of ['mix', 'gaps', 'dollars', 'overhead']) {
        const chart = page.locator(`[data-testid="${id}-svg"]`)
        const box = await chart.boundingBox()
        expect(box?.width ?? 0).toBeGreaterThan(100)
        expect(box?.height ?? 0).toBeGreaterThan(50)
        expect(await chart.locator('rect').count()).toBeGreaterThan(0)
        const table = await chart.getAttribute('aria-describedby')
        expect(await page.locator(`#${table ?? 'none'}`).count()).toBe(1)
      }
      const rows = (selector: string): Promise<string[][]> =>
        page.locator(`${selector} tbody tr`).evaluateAll((trs: readonly Row[]) => trs.map((tr) => Array.from(tr.querySelectorAll('th, td'), (cell) => (cell.textContent ?? '').trim())))
      expect(await rows('[data-testid="dollars-table"]')).toEqual(report.cost.outcomes.map((row) => [row.outcome, String(row.runs), String(row.pricedRuns), `$${row.usd}`, `$${row.retryOverheadUsd}`]))
      expect(await page.locator('[data-testid="total-usd"]').textContent()).toBe(`$${report.cost.usd}`)
      expect(await rows('[data-testid="gaps-table"]')).toEqual(report.gaps.tools.map((tool) => [tool.tool, String(tool.gaps), String(tool.blocking)]))
      expect(await rows('[data-testid="lost-table"]')).toEqual(report.cost.tools.map((tool) => [tool.tool, String(tool.runs), `$${tool.usd}`]))
      expect(await rows('[data-testid="mix-table"]')).toEqual(report.days.map((day) => [day.day, String(day.complete), String(day.partial), String(day.cannotAnswer), String(day.failed)]))
      expect(await rows('[data-testid="overhead-table"]')).toEqual(report.days.map((day) => [day.day, `$${day.usd}`, `$${day.retryOverheadUsd}`]))
      // No script and no external asset: the page was the only request, and the CSP refused nothing.
      expect(requested).toEqual([`${url}/report?days=7`])
      expect(refused).toEqual([])
      await page.close()
    } finally {
      server.kill('SIGTERM')
      await ended
    }
  })
})
