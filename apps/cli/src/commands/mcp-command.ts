import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { createLocusMcpServer } from '@locus/mcp'
import type { CliIo } from '../cli-io.js'
import { createHost, type HostFlags } from '../create-host.js'
import { EXIT_CODES, type ExitCode } from '../exit-codes.js'
import { resolveRunsDir } from '../runs-dir.js'
import { loadWorkflows } from './load-workflows.js'

/** The flags of `locus mcp`. */
export interface McpFlags extends HostFlags {
  readonly workflows?: readonly string[] | undefined
  readonly runsDir?: string | undefined
}

/**
 * Serves the given workflows as MCP tools over stdio, for an MCP client
 * (Claude Desktop, Cursor, ...) that starts `locus mcp` as its server. Stdout
 * belongs to the protocol: nothing else is printed there.
 */
export async function mcpCommand(flags: McpFlags, io: CliIo): Promise<ExitCode> {
  const { workflows, paths } = await loadWorkflows(flags.workflows ?? [], io.cwd)
  const runsDir = resolveRunsDir(flags.runsDir, io)
  const chosen = await createHost(flags, { cwd: io.cwd, env: io.env, workflowPath: paths[0] ?? io.cwd })
  const server = createLocusMcpServer({ workflows, runOptions: { runsDir, ...(chosen.host === undefined ? {} : { host: chosen.host }) } })
  const transport = new StdioServerTransport()
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => {
      resolve()
    }
  })
  await server.connect(transport)
  io.stderr.write(`locus: serving ${workflows.map((workflow) => workflow.name).join(', ')} over MCP (stdio)\n`)
  await closed
  return EXIT_CODES.completed
}
