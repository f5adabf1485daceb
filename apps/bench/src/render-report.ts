/**
 * Renders docs/benchmarks.md from one comparison run: the machine, the
 * package versions, the targets, and a table per workload.
 */
import { formatNs } from '@locus/bench-kit'
import type { MachineInfo, PackageVersion } from './machine.js'
import type { ResultRow, WorkloadResult } from './run-workload.js'
import type { Tally } from './tally.js'
import type { TargetOutcome } from './targets.js'

export interface ReportInput {
  readonly generatedAt: Date
  readonly machine: MachineInfo
  readonly versions: readonly PackageVersion[]
  readonly results: readonly WorkloadResult[]
  readonly targets: readonly TargetOutcome[]
  readonly totalSeconds: number
}

function formatBytes(bytes: number | undefined): string {
  if (bytes === undefined || Number.isNaN(bytes)) return 'n/a'
  if (bytes < 0) return '< 0.1 MB'
  const megabytes = bytes / 1024 / 1024
  return megabytes < 0.1 ? '< 0.1 MB' : `${megabytes.toFixed(1)} MB`
}

function formatRatio(ratio: number | undefined): string {
  if (ratio === undefined || Number.isNaN(ratio)) return 'n/a'
  return ratio >= 10 ? `${ratio.toFixed(0)}x` : `${ratio.toFixed(2)}x`
}

function escapeCell(text: string): string {
  return text.replaceAll('|', '\\|')
}

function describeTally(tally: Tally): string {
  const parts = [`${tally.succeeded.toLocaleString('en-US')} succeeded`, `${tally.failed.toLocaleString('en-US')} failed`, `${tally.retries.toLocaleString('en-US')} retries`]
  if (tally.checksum !== 0) parts.push(`value checksum ${tally.checksum.toLocaleString('en-US')}`)
  if (tally.failures.length > 0) {
    const stages = [...new Set(tally.failures.map((failure) => failure.stage))].join(', ')
    const shown = tally.failures.slice(0, 5).map((failure) => `#${failure.index}`).join(', ')
    parts.push(`failed items ${shown}${tally.failures.length > 5 ? ', …' : ''} each at stage ${stages}`)
  }
  return parts.join(', ')
}

function agreementCell(row: ResultRow): string {
  if (row.agreement === undefined) return ''
  return row.agreement.differences.length === 0 ? 'yes' : `**no**: ${escapeCell(row.agreement.differences.join('; '))}`
}

function renderWorkload(result: WorkloadResult, position: number): string[] {
  const { workload } = result
  const lines = [`## ${position}. ${workload.title}`, '', workload.description, '']
  lines.push(`Every row must report: ${describeTally(workload.expected)}.`, '')
  lines.push(`| System | Implementation | per ${workload.unit} (median) | peak heap | vs Locus | results agree |`)
  lines.push('| --- | --- | ---: | ---: | ---: | --- |')
  for (const row of result.rows) {
    if (row.notMeasured !== undefined) {
      lines.push(`| ${row.system} | — | ${escapeCell(row.notMeasured)} | | | |`)
      continue
    }
    const isLocus = row.name === workload.locusName
    const name = isLocus ? `**${row.name}**` : row.name
    const ratio = isLocus ? '1.00x (baseline)' : formatRatio(row.ratioToLocus)
    lines.push(`| ${row.system} | ${name} | ${formatNs(row.nsPerItem ?? Number.NaN)} | ${formatBytes(row.peakHeapBytes)} | ${ratio} | ${agreementCell(row)} |`)
  }
  lines.push('')
  lines.push(
    `${result.rounds} timed rounds per row after ${result.warmupRounds === 0 ? 'the agreement run, which is also the warm-up' : `the agreement run and ${result.warmupRounds} more warm-up round(s)`}; rows interleaved round by round. "vs Locus" divides a row's median by the **bold** row's: above 1 is slower than Locus.`,
    '',
  )
  for (const row of result.rows) {
    if (row.note !== undefined) lines.push(`- **${row.name}**: ${row.note}`)
  }
  if (workload.footnote !== undefined) lines.push('', workload.footnote)
  lines.push('')
  return lines
}

/** A target's measure as its table shows it: a ratio, or a peak heap in MiB. */
export function formatMeasure(target: TargetOutcome): string {
  if (target.metric !== 'peak-heap-mib') return formatRatio(target.ratio)
  return Number.isNaN(target.ratio) ? 'n/a (heap not measured)' : `${target.ratio.toFixed(1)} MiB`
}

function renderTargets(targets: readonly TargetOutcome[]): string[] {
  const lines = ['## Targets', '', 'Each target is a ratio of two medians measured in the same process run, so background load on the machine hits both sides alike; the peak heap target is the heap a row reached, measured in the same run.', '']
  lines.push('| Target | Measured | Verdict |', '| --- | ---: | --- |')
  for (const target of targets) {
    const sign = target.comparison === 'at-most' ? '<=' : '>='
    const verdict = target.met === undefined ? 'context only' : target.met ? '**met**' : '**missed**'
    const unit = target.metric === 'peak-heap-mib' ? ' MiB' : 'x'
    const goal = target.limit === undefined ? '' : ` (target ${sign} ${target.limit}${unit})`
    lines.push(`| ${escapeCell(target.label)}${goal} | ${formatMeasure(target)} | ${verdict} |`)
  }
  lines.push('')
  const missed = targets.filter((target) => target.met === false)
  if (missed.length === 0) {
    lines.push('Every target was met in this run.', '')
  } else {
    lines.push('### Why a target was missed, and what would close it', '')
    for (const target of missed) lines.push(`- **${target.label}** (${formatMeasure(target)}): ${target.explanation}`)
    lines.push('')
  }
  const context = targets.filter((target) => target.met === undefined)
  if (context.length > 0) {
    lines.push('Context lines, not targets:', '')
    for (const target of context) lines.push(`- **${target.label}** (${formatRatio(target.ratio)}): ${target.explanation}`)
    lines.push('')
  }
  return lines
}

/** The whole Markdown page. */
export function renderReport(input: ReportInput): string {
  const { machine } = input
  const lines: string[] = [
    '# Benchmarks: Locus beside the alternatives',
    '',
    '<!-- Generated by `pnpm bench:compare` (apps/bench/src/compare.ts). Do not edit by hand: change the generator and run it again. -->',
    '',
    'The same four workloads, each written once per system with the same semantics, measured in one process run on one machine. ' +
      'Before anything is timed, every implementation runs once and must report the same successes, failures and retries ' +
      '(and, for the pipeline, the same failed items at the same stages) as every other; a row that disagrees says so in its table.',
    '',
    'The systems: **Locus** (this repository); the **raw floor**, written by hand with `Promise.allSettled`, `p-limit`, a retry loop and `fs.writeSync` with batched fsync; ' +
      '**Effect** (3.x everywhere, and 4.1 beside it in the fan-out); **LangGraph.js**; and **Mastra**, which is listed but not measured because it needs Node 22. ' +
      'Where a system cannot express a workload, its row says so instead of timing something else.',
    '',
    '## Run it yourself',
    '',
    '```sh',
    'pnpm bench:compare                              # all workloads, writes this page (a few minutes)',
    'LOCUS_BENCH_SMOKE=1 pnpm bench:compare          # every workload at 1% size, one round, prints only',
    'LOCUS_BENCH_RESUME_CALLS=100000 pnpm bench:compare   # resume at the full 100,000 calls',
    '```',
    '',
    'The CI test `apps/bench/test/agreement.test.ts` runs every workload at 1% of its size for every system and checks that they agree; it times nothing.',
    '',
    '## This run',
    '',
    `- Generated: ${input.generatedAt.toISOString()}, in ${(input.totalSeconds / 60).toFixed(1)} minutes`,
    `- CPU: ${machine.cpuModel} × ${machine.cpuCount}`,
    `- Memory: ${(machine.totalMemoryBytes / 1024 ** 3).toFixed(1)} GiB`,
    `- Node: ${machine.node} on ${machine.os}`,
    `- One-minute load average at the start: ${machine.loadAverage.toFixed(2)} (the machine is shared; ratios matter more than absolute figures)`,
    '',
    '| Package | Version |',
    '| --- | --- |',
    ...input.versions.map((version) => `| ${version.name} | ${version.version} |`),
    '| @mastra/core | not installed (needs Node >= 22.13) |',
    '',
    ...renderTargets(input.targets),
  ]
  input.results.forEach((result, index) => lines.push(...renderWorkload(result, index + 1)))
  lines.push(
    '## How the figures are taken',
    '',
    '- **Per item**: each round runs the whole workload once per row, rows interleaved (A, B, C, A, B, C, …) by `@locus/bench-kit`, and the median round is divided by the number of items.',
    '- **Peak heap**: one extra run per row after a forced garbage collection; the highest `used_heap_size` seen (every 32nd call of the shared work functions, every 5 ms by a timer, and once when the run has settled) minus the heap after that collection. It includes garbage not yet collected, as a real process would.',
    '- **The same work**: every row calls the same tool functions, which count their own calls; retries are counted by each system\'s own means where it has one (attempt records, journal lines, `tapError`), else as tool calls minus items.',
    '- **Not timed**: recording the run that the resume workload resumes, and building graphs or workflows once per workload.',
    '',
  )
  return lines.join('\n')
}
