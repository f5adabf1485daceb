import { Usd, displayUsd } from '@locus/cost'
import { type DeployCheckRun, type LiveAgainCounts, checkDeploy } from '@locus/runtime'
import { CliError } from '../cli-error.js'
import type { CliIo } from '../cli-io.js'
import { EXIT_CODES, type ExitCode } from '../exit-codes.js'
import { openRunStore } from '../open-run-store.js'
import { loadWorkflows } from './load-workflows.js'

/** The flags of `locus check-deploy`. */
export interface CheckDeployFlags {
  readonly workflows?: readonly string[] | undefined
  readonly runsDir?: string | undefined
  /** A `postgres://` URL: check the runs of that PostgreSQL store instead of a runs directory. */
  readonly databaseUrl?: string | undefined
  /** Milliseconds back from now (`--since 7d`, read by `parseDuration`). */
  readonly since?: number | undefined
  readonly all?: boolean | undefined
  readonly json?: boolean | undefined
  /** Runs replayed at once. @default 4 */
  readonly concurrency?: number | undefined
}

function plural(count: number, one: string): string {
  return `${count} ${one}${count === 1 ? '' : 's'}`
}

/**
 * `2 agent calls, 1 tool call, 1 remote tool call and 1 child run would run
 * again (160 input, 50 output tokens recorded, costing $0.0042)`; the
 * dollars only for a priced run, with the requests no price covered counted
 * apart (`costing $0 and 1 request with no price`).
 */
export function describeLiveAgain(live: LiveAgainCounts): string {
  const parts = [plural(live.agent, 'agent call'), plural(live.tool, 'tool call'), plural(live.remoteTool, 'remote tool call'), plural(live.child, 'child run')]
  const listed = `${parts.slice(0, -1).join(', ')} and ${parts.at(-1) ?? ''}`
  const unpriced = live.unpricedRequests > 0 ? ` and ${plural(live.unpricedRequests, 'request')} with no price` : ''
  const dollars = live.usd === null ? '' : `, costing ${displayUsd(new Usd(live.usd))}${unpriced}`
  return `${listed} would run again (${live.inputTokens} input, ${live.outputTokens} output tokens recorded${dollars})`
}

/** One line per run: `<runId>  <workflow>  <standing>  <verdict and cost>`. */
export function describeDeployCheckRun(run: DeployCheckRun): string {
  const detail =
    run.verdict === 'identical'
      ? 'replays identically'
      : run.verdict === 'diverged'
        ? `diverges at ${run.divergence?.ordinal ?? '?'}${run.divergence === undefined || run.divergence.fields.length === 0 ? '' : ` (${run.divergence.fields.join(', ')} changed)`}; ${describeLiveAgain(run.liveAgain)}`
        : run.verdict === 'input-invalid'
          ? `its recorded input no longer fits the workflow: ${(run.issues ?? []).join('; ')}`
          : run.verdict === 'error'
            ? `could not be checked: ${(run.issues ?? []).join('; ')}`
            : 'recorded nothing'
  const notes = [
    ...(run.openDeferrals === undefined ? [] : [`waiting on ${plural(run.openDeferrals, 'deferred tool')}`]),
    ...(run.owner === undefined ? [] : [`owned by worker ${run.owner}`]),
    ...(run.continuable || run.verdict === 'identical' ? [] : ['finished, so it does not block the deploy']),
  ]
  return `${run.runId}  ${run.workflow}  ${run.standing}  ${detail}${notes.length === 0 ? '' : ` [${notes.join('; ')}]`}`
}

/**
 * Replays every run that may still continue (killed, cancelled, waiting on a
 * deferred tool, owned by a worker) against the workflow code on disk, with
 * no host and no tools, and exits 1 when one of them would diverge (0 when
 * none would; 2 for a usage error). `--all` checks finished runs too;
 * `--json` prints the report for CI.
 */
export async function checkDeployCommand(flags: CheckDeployFlags, io: CliIo): Promise<ExitCode> {
  const { workflows } = await loadWorkflows(flags.workflows ?? [], io.cwd)
  const { store, close } = openRunStore(flags, io, { maxConnections: Math.max(2, flags.concurrency ?? 4) })
  let report
  try {
    report = await checkDeploy({
      store,
      workflows,
      ...(flags.since === undefined ? {} : { since: Date.now() - flags.since }),
      ...(flags.all === true ? { all: true } : {}),
      ...(flags.concurrency === undefined ? {} : { concurrency: flags.concurrency }),
    })
  } catch (error) {
    // PostgreSQL's undefined_table: the URL reaches a database the store was never migrated into.
    if (flags.databaseUrl !== undefined && (error as { code?: unknown } | null)?.code === '42P01') {
      throw new CliError('CLI_USAGE', 'The database --database-url names holds no Locus tables: check the URL, or run `locus db migrate` against it first.')
    }
    throw error
  } finally {
    await close()
  }
  if (flags.json === true) {
    io.stdout.write(JSON.stringify(report) + '\n')
  } else {
    if (report.runs.length === 0) io.stdout.write(`No run to check: no ${flags.all === true ? '' : 'unfinished '}run of these workflows.\n`)
    for (const run of report.runs) io.stdout.write(describeDeployCheckRun(run) + '\n')
    const blocking = report.runs.filter((run) => run.continuable && run.verdict !== 'identical' && run.verdict !== 'nothing-recorded').length
    io.stdout.write(
      report.ok
        ? `check-deploy: ok, no run that may continue would diverge (${plural(report.runs.length, 'run')} checked)\n`
        : `check-deploy: ${plural(blocking, 'run')} that may continue would diverge; see above\n`,
    )
  }
  return report.ok ? EXIT_CODES.completed : EXIT_CODES.failed
}
