import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { closeMcpToolSources, createLocusMcpServer } from '@locus/mcp'
import { type RunHandle, createRuntime, drainRuns, resumeSuspendedRuns } from '@locus/runtime'
import type { CliIo } from '../cli-io.js'
import { createHost, type HostFlags } from '../create-host.js'
import { EXIT_CODES, type ExitCode } from '../exit-codes.js'
import { plural } from '../format-summary.js'
import { loadPrices } from '../load-prices.js'
import { resolveRunsDir } from '../runs-dir.js'
import { loadWorkflows } from './load-workflows.js'
import { DEFAULT_SHUTDOWN_GRACE_MS } from './serve-command.js'

/** The flags of `locus mcp`. */
export interface McpFlags extends HostFlags {
  readonly workflows?: readonly string[] | undefined
  readonly runsDir?: string | undefined
  /** `--shutdown-grace`: how long working runs may go on when the server ends, in ms. @default 10_000 */
  readonly shutdownGrace?: number | undefined
  /** `--prices <file>`: prices per model over the shipped catalogue, as `locus run` takes them. */
  readonly prices?: string | undefined
}

/**
 * Serves the given workflows as MCP tools over stdio, for an MCP client
 * (Claude Desktop, Cursor, ...) that starts `locus mcp` as its server. Stdout
 * belongs to the protocol: nothing else is printed there.
 *
 * It ends when the client closes stdin or the process gets SIGTERM or Ctrl-C,
 * the way `locus serve` does: runs waiting only on deferrals are suspended
 * (the next `locus mcp` or `locus serve` on the runs directory resumes them,
 * their deferrals open under the same ids), the others get the grace period
 * and are then cancelled with their `run_end`. Stderr says how each ended.
 */
export async function mcpCommand(flags: McpFlags, io: CliIo): Promise<ExitCode> {
  const { workflows, paths } = await loadWorkflows(flags.workflows ?? [], io.cwd)
  const runsDir = resolveRunsDir(flags.runsDir, io)
  const chosen = await createHost(flags, { cwd: io.cwd, env: io.env, workflowPath: paths[0] ?? io.cwd })
  // Priced like `locus run`: the shipped catalogue, with --prices over it; each tool result carries its run's cost.
  const prices = await loadPrices(flags.prices, io.cwd)
  const runtime = createRuntime({ workflows, runsDir, ...(chosen.host === undefined ? {} : { host: chosen.host }), defaults: { prices } })
  const runs = new Set<RunHandle>()
  const track = (handle: RunHandle): void => {
    runs.add(handle)
    void handle.done.catch(() => undefined).finally(() => runs.delete(handle))
  }
  const server = createLocusMcpServer({ runtime, workflows, onRun: track })
  const transport = new StdioServerTransport()
  let end: (why: string) => void = () => undefined
  const ended = new Promise<string>((resolve) => {
    end = resolve
  })
  transport.onclose = () => {
    end('the MCP client closed the connection')
  }
  // The stdio transport does not notice the end of stdin: a client that goes away must still end the server.
  process.stdin.once('end', () => {
    end('the MCP client closed stdin')
  })
  const stopOnInterrupt = io.onInterrupt(() => {
    end('interrupted')
  })
  const onTerm = (): void => {
    end('SIGTERM')
  }
  process.once('SIGTERM', onTerm)
  await server.connect(transport)
  io.stderr.write(`locus: serving ${workflows.map((workflow) => workflow.name).join(', ')} over MCP (stdio)\n`)
  const shutdown = new AbortController()
  // Runs a previous server suspended on their deferrals wait again here.
  const resuming = resumeSuspendedRuns(runtime, { signal: shutdown.signal })
    .then((report) => {
      for (const handle of report.resumed) track(handle)
      if (report.resumed.length > 0) io.stderr.write(`locus: resumed ${plural(report.resumed.length, 'suspended run')}: ${report.resumed.map((handle) => handle.runId).join(', ')}\n`)
      for (const skipped of report.skipped) io.stderr.write(`locus: warning: suspended run ${skipped.runId} was not resumed: ${skipped.reason}\n`)
    })
    .catch((error: unknown) => {
      io.stderr.write(`locus: warning: suspended runs were not resumed: ${error instanceof Error ? error.message : String(error)}\n`)
    })
  const why = await ended
  stopOnInterrupt()
  process.off('SIGTERM', onTerm)
  shutdown.abort()
  await resuming
  io.stderr.write(`locus: stopping (${why})\n`)
  // Drained before the MCP server closes: closing it aborts every call in flight, which would cancel runs that only wait.
  const report = await drainRuns(runs, { graceMs: flags.shutdownGrace ?? DEFAULT_SHUTDOWN_GRACE_MS, reason: `locus mcp is stopping: ${why}` })
  if (report.suspended.length > 0) io.stderr.write(`locus: suspended ${plural(report.suspended.length, 'run')} waiting on deferrals, which stay open; the next locus mcp or locus serve on this runs directory resumes them: ${report.suspended.join(', ')}\n`)
  if (report.cancelled.length > 0) io.stderr.write(`locus: cancelled ${plural(report.cancelled.length, 'run')} still working after the grace period; locus resume continues them: ${report.cancelled.join(', ')}\n`)
  await server.close().catch(() => undefined)
  await closeMcpToolSources()
  return EXIT_CODES.completed
}
