import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { CallToolRequestSchema, type CallToolResult, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js'
import type { JournalLine, RunEndLine } from '@locus/journal'
import { type DeferredAnswer, type RunHandle, type RunOptions, type RunSummary, type Runtime, type WorkflowDefinition, createRuntime, readStoredRun, resolveRunsDir } from '@locus/runtime'
import { RunNotFoundError, type RunStore } from '@locus/store'
import { z } from 'zod'

/** Options of {@link createLocusMcpServer}: a runtime to share, or workflows and how to run them. */
export interface LocusMcpServerOptions {
  /**
   * The runtime runs start in, shared with whoever else uses it (`locus serve`
   * passes its own, so runs started over MCP show in the HTTP API too).
   * Without it the server makes one from `workflows` and `runOptions`.
   */
  readonly runtime?: Runtime | undefined
  /** The workflows offered as tools, each under its name. @default every workflow of `runtime` */
  readonly workflows?: readonly WorkflowDefinition[] | undefined
  /** Without `runtime`: how each run is started: host, runs directory, budgets... (`input`, `signal` and `onEvent` are the server's). */
  readonly runOptions?: Omit<RunOptions, 'input' | 'signal' | 'onEvent'> | undefined
  /** Where `locus_run_status` and `locus_run_result` read runs. @default the runtime's store */
  readonly store?: RunStore | undefined
  /** Offer `locus_resolve_deferred`; `/mcp` turns it off for a key without the `deferred:resolve` scope. @default true */
  readonly resolveDeferred?: boolean | undefined
  /** Told about each run a tool call starts, e.g. so a server's shutdown waits for it. */
  readonly onRun?: ((handle: RunHandle) => void) | undefined
  /**
   * Rewrites each error message before it leaves in a tool result (a run's
   * `error`, a refused call's text): `/mcp` of `locus serve` takes file
   * system paths and command-line advice out of them. @default the message as it is
   */
  readonly redactMessage?: ((message: string) => string) | undefined
  /** The server's name and version as MCP clients see them. */
  readonly name?: string | undefined
  readonly version?: string | undefined
}

const RUN_ID_INPUT = { type: 'object', properties: { runId: { type: 'string', description: 'The id a workflow tool returned.' } }, required: ['runId'], additionalProperties: false } as const
const RunIdArgs = z.object({ runId: z.string().min(1) })
const UpdateArgs = z.object({ runId: z.string().min(1), input: z.unknown().optional() })
const RESOLVE_INPUT = {
  type: 'object',
  properties: {
    runId: { type: 'string', description: 'The run that waits.' },
    deferredId: { type: 'string', description: 'The deferral to answer, as the progress message or locus_run_status names it.' },
    result: { description: "Resolve the deferral with this result (checked against the tool's output schema)." },
    error: { type: 'string', description: 'Reject the deferral with this error instead.' },
    retryable: { type: 'boolean', description: 'With error: whether the call may be retried. Default false.' },
    code: { type: 'string', description: 'With error: the seed error code, e.g. refused.' },
  },
  required: ['runId', 'deferredId'],
  additionalProperties: false,
} as const
const ResolveArgs = z
  .object({
    runId: z.string().min(1),
    deferredId: z.string().min(1),
    result: z.unknown().optional(),
    error: z.string().min(1).optional(),
    retryable: z.boolean().optional(),
    code: z.string().min(1).optional(),
  })
  .refine((args) => (args.result === undefined) !== (args.error === undefined), { error: 'give exactly one of "result" (to resolve) or "error" (to reject)' })
/** How long an answer waits, after the run ended, for the feed to deliver the last progress lines. */
const FEED_GRACE_MS = 2_000
const RUN_TOOLS = ['locus_run_status', 'locus_run_result', 'locus_resolve_deferred'] as const

/** What a tool result tells of a run: its summary's fields, `cost` among them when the run was priced. */
type RunFields = Pick<RunSummary, 'runId' | 'standing' | 'answerOutcome' | 'gaps' | 'caveats' | 'result' | 'error'> & { readonly cost?: RunSummary['cost'] }

/**
 * What every tool result of a run carries as structured content. `cost` is
 * the run's cost as `GET /v1/runs/{id}` gives it (`usd`, `retryOverheadUsd`,
 * `unpricedRequests`, `table`), or null when the run was not priced.
 */
function structuredOf(summary: RunFields): Record<string, unknown> {
  return {
    runId: summary.runId,
    disposition: summary.standing,
    answerOutcome: summary.answerOutcome ?? null,
    gaps: summary.gaps,
    caveats: summary.caveats,
    result: summary.result,
    cost: summary.cost === undefined ? null : { ...summary.cost },
    ...(summary.error === undefined ? {} : { error: summary.error }),
  }
}

/** Failed, cancelled, unfinished and partial runs are errors to an MCP client: never a success it may summarise. */
function isFailure(summary: Pick<RunSummary, 'standing' | 'answerOutcome'>): boolean {
  return summary.standing !== 'completed' || (summary.answerOutcome !== undefined && summary.answerOutcome !== 'complete')
}

function render(summary: RunFields): string {
  const lines = [`Run ${summary.runId}: ${summary.standing}${summary.answerOutcome === undefined ? '' : `, answer ${summary.answerOutcome}`}.`]
  if (summary.error !== undefined) lines.push(`Error: ${summary.error}`)
  for (const gap of summary.gaps) lines.push(`Gap: ${gap.tool} (${gap.criticality})${gap.reason === undefined ? '' : `: ${gap.reason}`}`)
  for (const caveat of summary.caveats) lines.push(`Caveat: ${caveat}`)
  if (summary.cost !== undefined) {
    const unpriced = summary.cost.unpricedRequests
    lines.push(`Cost: $${summary.cost.usd} for LLM requests${unpriced === 0 ? '' : ` (${unpriced} ${unpriced === 1 ? 'request' : 'requests'} to unpriced models not counted)`}`)
  }
  lines.push(`Result: ${JSON.stringify(summary.result)}`)
  return lines.join('\n')
}

function summaryResult(summary: RunFields): CallToolResult {
  return { content: [{ type: 'text', text: render(summary) }], structuredContent: structuredOf(summary), isError: isFailure(summary) }
}

function plainErrorResult(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true }
}

function progressOf(line: JournalLine): string | undefined {
  switch (line.type) {
    case 'agent_start':
      return `agent ${line.agent} attempt ${line.attempt}/${line.attempts} started`
    case 'agent_end':
      return `agent ${line.agent} attempt ${line.attempt}/${line.attempts} ${line.status}${line.failureCause === undefined ? '' : ` (${line.failureCause})`}`
    case 'error':
      // An agent attempt that threw ends with an error line, not agent_end: it ended all the same.
      if (line.agent === undefined || line.attempt === undefined || line.attempts === undefined) return undefined
      return `agent ${line.agent} attempt ${line.attempt}/${line.attempts} threw${line.failureCause === undefined ? '' : ` (${line.failureCause})`}`
    case 'tool_start':
      return `tool ${line.tool} attempt ${line.attempt} started`
    case 'tool_end':
      return `tool ${line.tool} attempt ${line.attempt} ${line.status}`
    case 'deferred_open':
      return `tool ${line.tool} waits for an answer: run ${line.runId}, deferral ${line.deferredId}; answer it with locus_resolve_deferred`
    case 'deferred_settled':
      return `deferral ${line.deferredId} ${line.outcome}`
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
 * by id; `locus_resolve_deferred` answers a deferred tool a run waits on.
 *
 * Connect it to a transport: `await server.connect(new StdioServerTransport())`.
 */
// The low-level Server: each workflow's input schema is already JSON Schema (from its own zod),
// which McpServer.registerTool would want as a zod shape of the SDK's zod version.
// eslint-disable-next-line @typescript-eslint/no-deprecated -- see above
export function createLocusMcpServer(options: LocusMcpServerOptions): Server {
  const redact = options.redactMessage ?? ((message: string) => message)
  const errorResult = (message: string): CallToolResult => plainErrorResult(redact(message))
  const toolResult = (summary: RunFields): CallToolResult =>
    summaryResult(summary.error === undefined ? summary : { ...summary, error: redact(summary.error) })
  const structured = (summary: RunFields): Record<string, unknown> =>
    structuredOf(summary.error === undefined ? summary : { ...summary, error: redact(summary.error) })
  /** The store's message names its directory and a CLI command; a client gets the run id. */
  const notFound = (error: RunNotFoundError): CallToolResult => plainErrorResult(`No run "${error.runId}".`)
  const runtime = options.runtime ?? ownRuntime(options)
  const workflows = options.workflows ?? [...runtime.workflows.values()]
  const byName = new Map(workflows.map((workflow) => [workflow.name, workflow]))
  const store = options.store ?? runtime.store
  const offerResolve = options.resolveDeferred !== false
  const runTools = RUN_TOOLS.filter((name) => offerResolve || name !== 'locus_resolve_deferred')
  // One tool per declared update (`<workflow>__update__<name>`), offered where answering deferrals is: the same scope as sending messages.
  const updateTools = new Map<string, { readonly workflow: string; readonly name: string; readonly inputSchema: unknown }>()
  if (offerResolve) {
    for (const workflow of workflows) {
      for (const [name, declaration] of Object.entries(workflow.updates ?? {})) {
        updateTools.set(`${workflow.name}__update__${name}`, { workflow: workflow.name, name, inputSchema: z.toJSONSchema(declaration.input, { io: 'input', unrepresentable: 'any' }) })
      }
    }
  }
  // eslint-disable-next-line @typescript-eslint/no-deprecated -- see createLocusMcpServer
  const server = new Server({ name: options.name ?? 'locus', version: options.version ?? '0.0.0' }, { capabilities: { tools: {} } })

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      ...workflows.map((workflow) => ({
        name: workflow.name,
        description: workflow.description ?? `Runs the Locus workflow "${workflow.name}".`,
        inputSchema: (workflow.input === undefined ? { type: 'object' } : z.toJSONSchema(workflow.input, { io: 'input', unrepresentable: 'any' })) as { type: 'object' },
      })),
      { name: 'locus_run_status', description: 'How a Locus run stands: disposition, answer outcome, counts, gaps, caveats and the deferrals it waits on.', inputSchema: RUN_ID_INPUT },
      { name: 'locus_run_result', description: 'The result of a finished Locus run, with its gaps and caveats.', inputSchema: RUN_ID_INPUT },
      ...[...updateTools].map(([tool, update]) => ({
        name: tool,
        description: `Sends update "${update.name}" to a running run of the Locus workflow "${update.workflow}" and answers its handler's result.`,
        inputSchema: { type: 'object' as const, properties: { runId: { type: 'string' }, input: update.inputSchema }, required: ['runId'] },
      })),
      ...(offerResolve
        ? [
            {
              name: 'locus_resolve_deferred',
              description: 'Answers a deferred tool a Locus run waits on: "result" resolves it, "error" rejects it. An answer is final.',
              inputSchema: RESOLVE_INPUT,
            },
          ]
        : []),
    ],
  }))

  async function runTool(name: 'locus_run_status' | 'locus_run_result', args: unknown): Promise<CallToolResult> {
    const parsed = RunIdArgs.safeParse(args)
    if (!parsed.success) return errorResult(`${name} needs { "runId": "<id>" }: ${parsed.error.issues.map((issue) => issue.message).join('; ')}`)
    const { runId } = parsed.data
    try {
      runtime.live(runId)?.flush()
      const summary = (await readStoredRun(store, runId)).summary
      if (name === 'locus_run_result' && summary.standing === 'unfinished') {
        return { content: [{ type: 'text', text: `Run ${summary.runId} has not finished; ask again later.` }], structuredContent: structured(summary), isError: true }
      }
      const result = toolResult(summary)
      if (name === 'locus_run_result') return result
      const deferred = summary.standing === 'unfinished' ? await runtime.pendingDeferrals(runId) : []
      const text = [result.content[0]?.type === 'text' ? result.content[0].text : '', ...deferred.map((open) => `Waits: deferral ${open.deferredId} of tool ${open.tool}`)].join('\n')
      return {
        ...result,
        content: [{ type: 'text', text }],
        structuredContent: { ...structured(summary), agentCalls: summary.agentCalls, toolCalls: summary.toolCalls, retries: summary.retries, deferred },
      }
    } catch (error) {
      if (RunNotFoundError.isInstance(error)) return notFound(error)
      throw error
    }
  }

  async function resolveTool(args: unknown): Promise<CallToolResult> {
    const parsed = ResolveArgs.safeParse(args)
    if (!parsed.success) {
      return errorResult(
        `locus_resolve_deferred needs { "runId", "deferredId" } and either "result" or "error": ${parsed.error.issues.map((issue) => `${issue.path.join('.') || 'arguments'}: ${issue.message}`).join('; ')}`,
      )
    }
    const { runId, deferredId } = parsed.data
    const answer: DeferredAnswer =
      parsed.data.error === undefined
        ? { kind: 'resolved', result: JSON.parse(JSON.stringify(parsed.data.result ?? null)) as never }
        : { kind: 'rejected', error: parsed.data.error, retryable: parsed.data.retryable === true, ...(parsed.data.code === undefined ? {} : { code: parsed.data.code }) }
    try {
      runtime.live(runId)?.flush()
      await readStoredRun(store, runId)
    } catch (error) {
      if (RunNotFoundError.isInstance(error)) return notFound(error)
      throw error
    }
    const outcome = await runtime.answerDeferred(runId, deferredId, answer)
    if (outcome.ok) {
      return { content: [{ type: 'text', text: `Deferral ${deferredId} of run ${runId}: ${outcome.status}.` }], structuredContent: { runId, deferredId, status: outcome.status } }
    }
    if (outcome.status === 'invalid') {
      return {
        content: [{ type: 'text', text: `The result does not fit the tool's output schema; deferral ${deferredId} stays open: ${outcome.issues.join('; ')}` }],
        structuredContent: { runId, deferredId, status: outcome.status, issues: [...outcome.issues] },
        isError: true,
      }
    }
    return { content: [{ type: 'text', text: outcome.message }], structuredContent: { runId, deferredId, status: outcome.status }, isError: true }
  }

  async function updateTool(update: { readonly workflow: string; readonly name: string }, args: unknown): Promise<CallToolResult> {
    const parsed = UpdateArgs.safeParse(args)
    if (!parsed.success) return errorResult(`This tool needs { "runId": "<id>", "input": ... }: ${parsed.error.issues.map((issue) => issue.message).join('; ')}`)
    const { runId } = parsed.data
    let workflow: string | undefined
    try {
      workflow = (await readStoredRun(store, runId)).view.workflow
    } catch (error) {
      if (RunNotFoundError.isInstance(error)) return notFound(error)
      throw error
    }
    if (workflow !== update.workflow) return errorResult(`Run ${runId} is a run of "${workflow ?? '(unknown)'}", not of "${update.workflow}".`)
    const outcome = await runtime.update(runId, update.name, JSON.parse(JSON.stringify(parsed.data.input ?? null)) as unknown, { from: 'mcp', via: 'api' })
    const base = { runId, name: update.name, status: outcome.status, ...('updateId' in outcome ? { updateId: outcome.updateId } : {}) }
    switch (outcome.status) {
      case 'completed':
        return { content: [{ type: 'text', text: JSON.stringify(outcome.result) }], structuredContent: { ...base, result: outcome.result } }
      case 'accepted':
        return { content: [{ type: 'text', text: `Update ${outcome.updateId} accepted; its handler has not finished yet.` }], structuredContent: base }
      case 'invalid':
      case 'rejected':
        return { content: [{ type: 'text', text: `Update refused, nothing journaled: ${outcome.issues.join('; ')}` }], structuredContent: { ...base, issues: [...outcome.issues] }, isError: true }
      case 'failed':
        return { content: [{ type: 'text', text: `Update failed: ${redact(outcome.error)}` }], structuredContent: { ...base, error: redact(outcome.error) }, isError: true }
      default:
        return { content: [{ type: 'text', text: outcome.message }], structuredContent: base, isError: true }
    }
  }

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const { name, arguments: args } = request.params
    if (name === 'locus_run_status' || name === 'locus_run_result') return runTool(name, args)
    const update = updateTools.get(name)
    if (update !== undefined) return updateTool(update, args)
    if (name === 'locus_resolve_deferred' && offerResolve) return resolveTool(args)
    const workflow = byName.get(name)
    // An unknown tool is a protocol error (invalid params), not a tool's failed result.
    if (workflow === undefined) throw new McpError(ErrorCode.InvalidParams, `No tool "${name}". The tools are: ${[...byName.keys(), ...updateTools.keys(), ...runTools].join(', ')}.`)
    const progressToken = request.params._meta?.progressToken
    let progress = 0
    let handle
    try {
      handle = await runtime.start(workflow, { input: args })
    } catch (error) {
      return errorResult(error instanceof Error ? error.message : String(error))
    }
    const started = handle
    options.onRun?.(handle)
    const cancel = (): void => {
      // Journaled as run_cancel_requested by `mcp`.
      started.cancel(String(extra.signal.reason ?? 'the MCP client cancelled the call'), 'mcp')
    }
    if (extra.signal.aborted) cancel()
    else extra.signal.addEventListener('abort', cancel, { once: true })
    let end: RunEndLine | undefined
    let sawEnd: () => void = () => undefined
    const ended = new Promise<void>((resolve) => {
      sawEnd = resolve
    })
    // The feed delivers every line in order, the history first; the progress of a quick run still arrives before its answer.
    const unsubscribe = handle.subscribe((line) => {
      if (line.type === 'run_end') {
        end = line
        sawEnd()
      }
      const message = progressToken === undefined ? undefined : progressOf(line)
      if (message !== undefined && progressToken !== undefined) {
        progress += 1
        void extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress, message } }).catch(() => undefined)
      }
    })
    let run
    try {
      run = await handle.done
      await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, FEED_GRACE_MS).unref())])
    } finally {
      unsubscribe()
      extra.signal.removeEventListener('abort', cancel)
    }
    // The run_end line holds what locus_run_status reads later: disposition, answer outcome, gaps and caveats.
    if (end === undefined) return toolResult((await runtime.get(handle.runId)).summary)
    // What the run cost is added up over its journal (children and retries included), which run_end does not carry.
    const { cost } = (await runtime.get(handle.runId)).summary
    return toolResult({
      ...(cost === undefined ? {} : { cost }),
      runId: run.runId,
      standing: end.disposition,
      ...(end.answerOutcome === undefined ? {} : { answerOutcome: end.answerOutcome }),
      gaps: (end.gaps ?? []).map((gap) => ({ tool: gap.tool, criticality: gap.criticality, ...(gap.reason === undefined ? {} : { reason: gap.reason }) })),
      caveats: end.caveats ?? [],
      result: run.result,
      error: run.error?.message,
    })
  })
  return server
}

function ownRuntime(options: LocusMcpServerOptions): Runtime {
  const { host, runsDir, cwd, runId: _runId, ...defaults } = options.runOptions ?? {}
  return createRuntime({
    workflows: options.workflows ?? [],
    ...(host === undefined ? {} : { host }),
    runsDir: resolveRunsDir({ ...(runsDir === undefined ? {} : { runsDir }), ...(cwd === undefined ? {} : { cwd }) }),
    defaults: { ...defaults, ...(cwd === undefined ? {} : { cwd }) },
  })
}
