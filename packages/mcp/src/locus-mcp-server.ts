import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { CallToolRequestSchema, type CallToolResult, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import type { JournalLine, RunEndLine } from '@locus/journal'
import { type RunOptions, type RunSummary, type WorkflowDefinition, readStoredRun, startWorkflowRun } from '@locus/runtime'
import { RunNotFoundError, createFileRunStore, type RunStore } from '@locus/store'
import { z } from 'zod'

/** Options of {@link createLocusMcpServer}. */
export interface LocusMcpServerOptions {
  /** The workflows offered as tools, each under its name. */
  readonly workflows: readonly WorkflowDefinition[]
  /** How each run is started: host, runs directory, budgets... (`input`, `signal` and `onEvent` are the server's). */
  readonly runOptions?: Omit<RunOptions, 'input' | 'signal' | 'onEvent'> | undefined
  /** Where `locus_run_status` and `locus_run_result` read runs. @default the file store of `runOptions.runsDir` */
  readonly store?: RunStore | undefined
  /** The server's name and version as MCP clients see them. */
  readonly name?: string | undefined
  readonly version?: string | undefined
}

const RUN_ID_INPUT = { type: 'object', properties: { runId: { type: 'string', description: 'The id a workflow tool returned.' } }, required: ['runId'], additionalProperties: false } as const
const RunIdArgs = z.object({ runId: z.string().min(1) })

/** What every tool result of a run carries as structured content. */
function structured(summary: Pick<RunSummary, 'runId' | 'standing' | 'answerOutcome' | 'gaps' | 'caveats' | 'result' | 'error'>): Record<string, unknown> {
  return {
    runId: summary.runId,
    disposition: summary.standing,
    answerOutcome: summary.answerOutcome ?? null,
    gaps: summary.gaps,
    caveats: summary.caveats,
    result: summary.result,
    ...(summary.error === undefined ? {} : { error: summary.error }),
  }
}

/** Failed, cancelled, unfinished and partial runs are errors to an MCP client: never a success it may summarise. */
function isFailure(summary: Pick<RunSummary, 'standing' | 'answerOutcome'>): boolean {
  return summary.standing !== 'completed' || (summary.answerOutcome !== undefined && summary.answerOutcome !== 'complete')
}

function render(summary: Pick<RunSummary, 'runId' | 'standing' | 'answerOutcome' | 'gaps' | 'caveats' | 'result' | 'error'>): string {
  const lines = [`Run ${summary.runId}: ${summary.standing}${summary.answerOutcome === undefined ? '' : `, answer ${summary.answerOutcome}`}.`]
  if (summary.error !== undefined) lines.push(`Error: ${summary.error}`)
  for (const gap of summary.gaps) lines.push(`Gap: ${gap.tool} (${gap.criticality})${gap.reason === undefined ? '' : `: ${gap.reason}`}`)
  for (const caveat of summary.caveats) lines.push(`Caveat: ${caveat}`)
  lines.push(`Result: ${JSON.stringify(summary.result)}`)
  return lines.join('\n')
}

function toolResult(summary: Pick<RunSummary, 'runId' | 'standing' | 'answerOutcome' | 'gaps' | 'caveats' | 'result' | 'error'>): CallToolResult {
  return { content: [{ type: 'text', text: render(summary) }], structuredContent: structured(summary), isError: isFailure(summary) }
}

function errorResult(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true }
}

function progressOf(line: JournalLine): string | undefined {
  switch (line.type) {
    case 'agent_start':
      return `agent ${line.agent} attempt ${line.attempt}/${line.attempts} started`
    case 'agent_end':
      return `agent ${line.agent} attempt ${line.attempt}/${line.attempts} ${line.status}${line.failureCause === undefined ? '' : ` (${line.failureCause})`}`
    case 'tool_start':
      return `tool ${line.tool} attempt ${line.attempt} started`
    case 'tool_end':
      return `tool ${line.tool} attempt ${line.attempt} ${line.status}`
    default:
      return undefined
  }
}

/**
 * Locus as an MCP server: each workflow is a tool whose input schema is its
 * zod input as JSON Schema. Calling one runs the workflow, sends a progress
 * notification as each agent and tool attempt starts and ends (when the
 * client asked for progress), and answers with the result as structured
 * content plus a text rendering. A failed, cancelled or partial run answers
 * `isError: true`, with its disposition, answer outcome, gaps and caveats as
 * structured fields, never folded into prose. A client's cancellation
 * cancels the run. `locus_run_status` and `locus_run_result` read any run
 * by id.
 *
 * Connect it to a transport: `await server.connect(new StdioServerTransport())`.
 */
// The low-level Server: each workflow's input schema is already JSON Schema (from its own zod),
// which McpServer.registerTool would want as a zod shape of the SDK's zod version.
// eslint-disable-next-line @typescript-eslint/no-deprecated -- see above
export function createLocusMcpServer(options: LocusMcpServerOptions): Server {
  const byName = new Map(options.workflows.map((workflow) => [workflow.name, workflow]))
  const store = options.store ?? createFileRunStore(options.runOptions?.runsDir ?? `${options.runOptions?.cwd ?? process.cwd()}/.locus-pi/runs`)
  // eslint-disable-next-line @typescript-eslint/no-deprecated -- see createLocusMcpServer
  const server = new Server({ name: options.name ?? 'locus', version: options.version ?? '0.0.0' }, { capabilities: { tools: {} } })

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      ...options.workflows.map((workflow) => ({
        name: workflow.name,
        description: workflow.description ?? `Runs the Locus workflow "${workflow.name}".`,
        inputSchema: (workflow.input === undefined ? { type: 'object' } : z.toJSONSchema(workflow.input, { io: 'input', unrepresentable: 'any' })) as { type: 'object' },
      })),
      { name: 'locus_run_status', description: 'How a Locus run stands: disposition, answer outcome, counts, gaps and caveats.', inputSchema: RUN_ID_INPUT },
      { name: 'locus_run_result', description: 'The result of a finished Locus run, with its gaps and caveats.', inputSchema: RUN_ID_INPUT },
    ],
  }))

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const { name, arguments: args } = request.params
    if (name === 'locus_run_status' || name === 'locus_run_result') {
      const parsed = RunIdArgs.safeParse(args)
      if (!parsed.success) return errorResult(`${name} needs { "runId": "<id>" }: ${parsed.error.issues.map((issue) => issue.message).join('; ')}`)
      try {
        const summary = (await readStoredRun(store, parsed.data.runId)).latest.summary
        if (name === 'locus_run_result' && summary.standing === 'unfinished') {
          return { content: [{ type: 'text', text: `Run ${summary.runId} has not finished; ask again later.` }], structuredContent: structured(summary), isError: true }
        }
        const result = toolResult(summary)
        return name === 'locus_run_status'
          ? { ...result, structuredContent: { ...structured(summary), agentCalls: summary.agentCalls, toolCalls: summary.toolCalls, retries: summary.retries } }
          : result
      } catch (error) {
        if (RunNotFoundError.isInstance(error)) return errorResult(error.message)
        throw error
      }
    }
    const workflow = byName.get(name)
    if (workflow === undefined) return errorResult(`No tool "${name}". The tools are: ${[...byName.keys(), 'locus_run_status', 'locus_run_result'].join(', ')}.`)
    const progressToken = request.params._meta?.progressToken
    let progress = 0
    let end: RunEndLine | undefined
    let handle
    try {
      handle = startWorkflowRun(workflow, {
        ...options.runOptions,
        input: args,
        signal: extra.signal,
        onEvent: (line) => {
          if (line.type === 'run_end') end = line
          const message = progressToken === undefined ? undefined : progressOf(line)
          if (message !== undefined && progressToken !== undefined) {
            progress += 1
            void extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress, message } }).catch(() => undefined)
          }
        },
      })
    } catch (error) {
      return errorResult(error instanceof Error ? error.message : String(error))
    }
    const run = await handle.done
    return toolResult({
      runId: run.runId,
      standing: run.disposition,
      ...(end?.answerOutcome === undefined ? {} : { answerOutcome: end.answerOutcome }),
      gaps: (end?.gaps ?? []).map((gap) => ({ tool: gap.tool, criticality: gap.criticality, ...(gap.reason === undefined ? {} : { reason: gap.reason }) })),
      caveats: end?.caveats ?? [],
      result: run.result,
      error: run.error?.message,
    })
  })
  return server
}
