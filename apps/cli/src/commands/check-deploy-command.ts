import { checkDeploy } from '@locus/runtime'
import type { CliIo } from '../cli-io.js'
import { EXIT_CODES, type ExitCode } from '../exit-codes.js'
import { resolveRunsDir } from '../runs-dir.js'
import { loadWorkflows } from './load-workflows.js'

/** The flags of `locus check-deploy`. */
export interface CheckDeployFlags {
  readonly workflows?: readonly string[] | undefined
  readonly runsDir?: string | undefined
  /** Milliseconds back from now. */
  readonly since?: number | undefined
  readonly all?: boolean | undefined
  readonly json?: boolean | undefined
}

/**
 * Replays every run that may still continue against the workflow code on
 * disk, with no host and no tools, and exits 1 when one of them would
 * diverge (0 when none would; 2 for a usage error).
 */
export async function checkDeployCommand(flags: CheckDeployFlags, io: CliIo): Promise<ExitCode> {
  const { workflows } = await loadWorkflows(flags.workflows ?? [], io.cwd)
  const report = await checkDeploy({
    runsDir: resolveRunsDir(flags.runsDir, io),
    workflows,
    ...(flags.since === undefined ? {} : { since: Date.now() - flags.since }),
    ...(flags.all === true ? { all: true } : {}),
  })
  if (flags.json === true) {
    io.stdout.write(JSON.stringify(report) + '\n')
  } else {
    if (report.runs.length === 0) io.stdout.write('No run to check: no unfinished run of these workflows.\n')
    for (const run of report.runs) {
      const live = run.liveAgain
      const cost = `${live.agent} agent and ${live.tool} tool calls would run again (${live.inputTokens} input, ${live.outputTokens} output tokens recorded)`
      const detail =
        run.verdict === 'identical'
          ? 'replays identically'
          : run.verdict === 'diverged'
            ? `diverges at ${run.divergence?.ordinal ?? '?'}${run.divergence === undefined || run.divergence.fields.length === 0 ? '' : ` (${run.divergence.fields.join(', ')} changed)`}; ${cost}`
            : run.verdict === 'input-invalid'
              ? `its recorded input no longer fits the workflow: ${(run.issues ?? []).join('; ')}`
              : 'recorded nothing'
      io.stdout.write(`${run.runId}  ${run.workflow}  ${run.standing}  ${detail}\n`)
    }
    io.stdout.write(report.ok ? 'check-deploy: ok, no run that may continue would diverge\n' : 'check-deploy: a run that may continue would diverge; see above\n')
  }
  return report.ok ? EXIT_CODES.completed : EXIT_CODES.failed
}
