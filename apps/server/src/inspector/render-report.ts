import type { DayReport, FullOutcomeReport } from '@locus/partial'
import { type SafeHtml, html } from './html.js'

// The outcome report as charts: server-rendered SVG, drawn from the same
// figures as `locus report --json`, each chart with a table of exactly those
// figures beside it (the table is what a screen reader reads; the SVG is
// `aria-describedby` it). No script, no external asset: the page's CSP holds.

/** Outcome colours, chosen to stay apart for common colour blindness; each bar also carries its words in a `<title>`. */
const OUTCOME_LOOK = [
  { key: 'complete', label: 'complete', fill: '#1a7f37' },
  { key: 'partial', label: 'partial', fill: '#bf8700' },
  { key: 'cannotAnswer', label: 'cannot_answer', fill: '#8250df' },
  { key: 'failed', label: 'failed', fill: '#b42318' },
] as const satisfies readonly { key: keyof DayReport; label: string; fill: string }[]

const WIDTH = 640
const HEIGHT = 220
const PAD = { left: 48, right: 12, top: 12, bottom: 40 }
const number = new Intl.NumberFormat('en-US')

/** A length for a drawing only: amounts in tables and labels stay the exact decimal strings. */
const approx = (usd: string): number => Number(usd)

function scale(max: number, span: number): (value: number) => number {
  return (value) => (max <= 0 ? 0 : (value / max) * span)
}

function figure(id: string, title: string, chart: SafeHtml, table: SafeHtml, empty: boolean): SafeHtml {
  return html`<section class="report-part" id="${id}" aria-labelledby="${id}-h" data-testid="${id}">
<h2 id="${id}-h">${title}</h2>
${empty ? html`<p class="note">Nothing recorded in this window.</p>` : html`<div class="chart-pair"><figure class="chart">${chart}</figure><div class="scroll">${table}</div></div>`}
</section>`
}

function svg(id: string, title: string, description: string, body: SafeHtml[]): SafeHtml {
  return html`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="100%" role="img" aria-labelledby="${id}-t" aria-describedby="${id}-table" data-testid="${id}-svg"><title id="${id}-t">${title}</title><desc>${description}</desc>
<line x1="${PAD.left}" y1="${HEIGHT - PAD.bottom}" x2="${WIDTH - PAD.right}" y2="${HEIGHT - PAD.bottom}" stroke="#57606a"/>${body}</svg>`
}

function legend(): SafeHtml {
  return html`<ul class="legend">${OUTCOME_LOOK.map((look) => html`<li><svg width="12" height="12" aria-hidden="true"><rect width="12" height="12" fill="${look.fill}"/></svg> ${look.label}</li>`)}</ul>`
}

/** The outcome mix per day: a stacked bar per day. */
function outcomeMix(days: readonly DayReport[]): SafeHtml {
  const totals = days.map((day) => day.complete + day.partial + day.cannotAnswer + day.failed)
  const max = Math.max(0, ...totals)
  const plotH = HEIGHT - PAD.top - PAD.bottom
  const y = scale(max, plotH)
  const slot = (WIDTH - PAD.left - PAD.right) / Math.max(1, days.length)
  const bars = days.map((day, index) => {
    let top = HEIGHT - PAD.bottom
    const x = PAD.left + index * slot + slot * 0.15
    const width = slot * 0.7
    const parts = OUTCOME_LOOK.map((look) => {
      const count = day[look.key]
      const height = y(count)
      top -= height
      return count === 0 ? html`` : html`<rect x="${x.toFixed(1)}" y="${top.toFixed(1)}" width="${width.toFixed(1)}" height="${height.toFixed(1)}" fill="${look.fill}" data-outcome="${look.label}" data-day="${day.day}"><title>${day.day}: ${number.format(count)} ${look.label}</title></rect>`
    })
    return html`<g>${parts}${days.length <= 14 || index % Math.ceil(days.length / 14) === 0 ? html`<text x="${(x + width / 2).toFixed(1)}" y="${HEIGHT - PAD.bottom + 14}" font-size="10" text-anchor="middle">${day.day.slice(5)}</text>` : ''}</g>`
  })
  const chart = html`${svg('mix', 'Outcome mix per day', `Runs per UTC day, stacked by answer outcome; the most in one day is ${number.format(max)}.`, [html`<text x="${PAD.left - 6}" y="${PAD.top + 8}" font-size="10" text-anchor="end">${number.format(max)}</text>`, ...bars])}${legend()}`
  const table = html`<table id="mix-table" data-testid="mix-table"><caption>Runs per day by answer outcome</caption><thead><tr><th scope="col">Day (UTC)</th>${OUTCOME_LOOK.map((look) => html`<th scope="col">${look.label}</th>`)}</tr></thead><tbody>${days.map((day) => html`<tr><th scope="row">${day.day}</th>${OUTCOME_LOOK.map((look) => html`<td>${number.format(day[look.key])}</td>`)}</tr>`)}</tbody></table>`
  return figure('mix', 'Outcome mix per day', chart, table, days.length === 0)
}

/** Horizontal bars, one per row, with the exact figure written at the bar's end. */
function horizontalBars(id: string, title: string, description: string, rows: readonly { label: string; value: number; text: string; secondary?: number }[]): SafeHtml {
  const rowH = 22
  const height = Math.max(HEIGHT, PAD.top + rows.length * rowH + PAD.bottom)
  const labelW = 170
  const span = WIDTH - labelW - PAD.right - 90
  const x = scale(Math.max(0, ...rows.map((row) => row.value)), span)
  return html`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${WIDTH} ${height}" width="100%" role="img" aria-labelledby="${id}-t" aria-describedby="${id}-table" data-testid="${id}-svg"><title id="${id}-t">${title}</title><desc>${description}</desc>${rows.map(
    (row, index) => html`<g><text x="${labelW - 6}" y="${PAD.top + index * rowH + 14}" font-size="11" text-anchor="end">${row.label}</text><rect x="${labelW}" y="${PAD.top + index * rowH + 3}" width="${Math.max(row.value > 0 ? 1 : 0, x(row.value)).toFixed(1)}" height="14" fill="#0550ae" data-label="${row.label}"><title>${row.label}: ${row.text}</title></rect>${row.secondary === undefined || row.secondary === 0 ? '' : html`<rect x="${labelW}" y="${PAD.top + index * rowH + 3}" width="${Math.max(1, x(row.secondary)).toFixed(1)}" height="14" fill="#b42318" fill-opacity="0.85"><title>${row.label}: ${number.format(row.secondary)} blocking</title></rect>`}<text x="${(labelW + Math.max(1, x(row.value)) + 6).toFixed(1)}" y="${PAD.top + index * rowH + 14}" font-size="11">${row.text}</text></g>`,
  )}</svg>`
}

function gapsPerTool(report: FullOutcomeReport): SafeHtml {
  const tools = report.gaps.tools
  const chart = horizontalBars(
    'gaps',
    'Gaps per tool',
    'Gaps per tool, worst first; the darker red part of each bar is the blocking (required) gaps.',
    tools.map((tool) => ({ label: tool.tool, value: tool.gaps, text: `${number.format(tool.gaps)} (${number.format(tool.blocking)} blocking)`, secondary: tool.blocking })),
  )
  const lost = report.cost.tools
  const table = html`<table id="gaps-table" data-testid="gaps-table"><caption>Gaps per tool</caption><thead><tr><th scope="col">Tool</th><th scope="col">Gaps</th><th scope="col">Blocking</th></tr></thead><tbody>${tools.map((tool) => html`<tr><th scope="row">${tool.tool}</th><td>${number.format(tool.gaps)}</td><td>${number.format(tool.blocking)}</td></tr>`)}</tbody></table>
${lost.length === 0 ? '' : html`<table data-testid="lost-table"><caption>Dollars lost to each tool’s blocking gaps (cannot_answer runs that tool alone stopped)</caption><thead><tr><th scope="col">Tool</th><th scope="col">Runs stopped</th><th scope="col">Lost</th></tr></thead><tbody>${lost.map((tool) => html`<tr><th scope="row">${tool.tool}</th><td>${number.format(tool.runs)}</td><td>$${tool.usd}</td></tr>`)}</tbody></table>`}
${report.cost.unattributedLostUsd === '0.000000' ? '' : html`<p class="note">$${report.cost.unattributedLostUsd} more went to cannot_answer runs no single tool stopped.</p>`}`
  return figure('gaps', 'Gaps per tool', chart, table, tools.length === 0)
}

function dollarsPerOutcome(report: FullOutcomeReport): SafeHtml {
  const rows = report.cost.outcomes
  const chart = horizontalBars(
    'dollars',
    'Dollars per answer outcome',
    'What the priced runs of each answer outcome cost, in dollars.',
    rows.map((row) => ({ label: row.outcome, value: approx(row.usd), text: `$${row.usd}` })),
  )
  const table = html`<table id="dollars-table" data-testid="dollars-table"><caption>Dollars per answer outcome</caption><thead><tr><th scope="col">Outcome</th><th scope="col">Runs</th><th scope="col">Priced runs</th><th scope="col">Cost</th><th scope="col">Retry overhead</th></tr></thead><tbody>${rows.map((row) => html`<tr data-outcome="${row.outcome}"><th scope="row">${row.outcome}</th><td>${number.format(row.runs)}</td><td>${number.format(row.pricedRuns)}</td><td>$${row.usd}</td><td>$${row.retryOverheadUsd}</td></tr>`)}</tbody><tfoot><tr><th scope="row">total</th><td>${number.format(rows.reduce((sum, row) => sum + row.runs, 0))}</td><td>${number.format(rows.reduce((sum, row) => sum + row.pricedRuns, 0))}</td><td data-testid="total-usd">$${report.cost.usd}</td><td data-testid="total-overhead">$${report.cost.retryOverheadUsd}</td></tr></tfoot></table>
${report.cost.unpricedRuns === 0 ? '' : html`<p class="note">${number.format(report.cost.unpricedRuns)} run${report.cost.unpricedRuns === 1 ? ' was' : 's were'} recorded without a cost (not priced: <code>locus run --prices</code>); ${report.cost.unpricedRuns === 1 ? 'it is' : 'they are'} not in these sums, never counted as $0.</p>`}`
  return figure('dollars', 'Dollars per answer outcome', chart, table, rows.every((row) => row.runs === 0))
}

/** Retry overhead over time: the day's cost as a light bar, its retry overhead as the dark part of it. */
function overheadOverTime(days: readonly DayReport[]): SafeHtml {
  const max = Math.max(0, ...days.map((day) => approx(day.usd)))
  const plotH = HEIGHT - PAD.top - PAD.bottom
  const y = scale(max, plotH)
  const slot = (WIDTH - PAD.left - PAD.right) / Math.max(1, days.length)
  const bars = days.map((day, index) => {
    const x = PAD.left + index * slot + slot * 0.15
    const width = slot * 0.7
    const total = y(approx(day.usd))
    const overhead = y(approx(day.retryOverheadUsd))
    const base = HEIGHT - PAD.bottom
    return html`<g><rect x="${x.toFixed(1)}" y="${(base - total).toFixed(1)}" width="${width.toFixed(1)}" height="${total.toFixed(1)}" fill="#9ecbff"><title>${day.day}: $${day.usd} spent</title></rect><rect x="${x.toFixed(1)}" y="${(base - overhead).toFixed(1)}" width="${width.toFixed(1)}" height="${overhead.toFixed(1)}" fill="#b42318" data-day="${day.day}"><title>${day.day}: $${day.retryOverheadUsd} of it retry overhead</title></rect>${days.length <= 14 || index % Math.ceil(days.length / 14) === 0 ? html`<text x="${(x + width / 2).toFixed(1)}" y="${base + 14}" font-size="10" text-anchor="middle">${day.day.slice(5)}</text>` : ''}</g>`
  })
  const chart = html`${svg('overhead', 'Retry overhead over time', 'Dollars spent per UTC day (light) and, of them, the retry overhead (dark red): attempts that were thrown away.', bars)}<ul class="legend"><li><svg width="12" height="12" aria-hidden="true"><rect width="12" height="12" fill="#9ecbff"/></svg> spent</li><li><svg width="12" height="12" aria-hidden="true"><rect width="12" height="12" fill="#b42318"/></svg> retry overhead</li></ul>`
  const table = html`<table id="overhead-table" data-testid="overhead-table"><caption>Cost and retry overhead per day</caption><thead><tr><th scope="col">Day (UTC)</th><th scope="col">Cost</th><th scope="col">Retry overhead</th></tr></thead><tbody>${days.map((day) => html`<tr><th scope="row">${day.day}</th><td>$${day.usd}</td><td>$${day.retryOverheadUsd}</td></tr>`)}</tbody></table>`
  return figure('overhead', 'Retry overhead over time', chart, table, days.length === 0)
}

/** Choices of the window, in days. */
export const REPORT_WINDOWS = [7, 30, 90] as const

/** The body of the /report page. */
export function renderReportBody(report: FullOutcomeReport, windowDays: number, where: string): SafeHtml {
  const o = report.outcomes
  return html`<h1>Outcome report</h1>
<p>Runs since <time datetime="${report.since}">${report.since.slice(0, 16).replace('T', ' ')} UTC</time>, from ${where}: ${number.format(o.total)} runs, ${number.format(o.complete)} complete, ${number.format(o.partial)} partial, ${number.format(o.cannotAnswer)} cannot_answer, ${number.format(o.failed)} failed; $${report.cost.usd} spent, $${report.cost.retryOverheadUsd} of it on retries.</p>
<nav class="toc" aria-label="Report window">${REPORT_WINDOWS.map((days) => (days === windowDays ? html`<strong aria-current="page">last ${days} days</strong>` : html`<a href="/report?days=${days}">last ${days} days</a>`))}</nav>
${outcomeMix(report.days)}
${gapsPerTool(report)}
${dollarsPerOutcome(report)}
${overheadOverTime(report.days)}`
}
