import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { CallError, type RetryPolicy } from '@locus/retry'
import type { ToolCallContext, ToolDefinition } from '@locus/runtime'
import { z } from 'zod'

/** Where an MCP server is: a command to start (stdio) or a URL (streamable HTTP). */
export type McpServerSpec =
  | { readonly command: string; readonly args?: readonly string[]; readonly env?: Readonly<Record<string, string>>; readonly cwd?: string }
  | { readonly url: string; readonly headers?: Readonly<Record<string, string>> }

/** Options of {@link mcpTools}. */
export interface McpToolsOptions {
  /** The seed-001 policy every tool of this server gets. @default no retry, no timeout */
  readonly retry?: RetryPolicy | undefined
  /** Offer only these tools. @default every tool the server lists */
  readonly only?: readonly string[] | undefined
  /** Put before each tool's name, to keep two servers' tools apart. @default '' */
  readonly prefix?: string | undefined
  /** Name the client gives the server. @default 'locus' */
  readonly clientName?: string | undefined
}

/** The tools of one MCP server, ready for a workflow's `tools`, and how to let the server go. */
export interface McpToolSource {
  readonly tools: Readonly<Record<string, ToolDefinition>>
  /** Closes the connection (and stops a stdio server). A later call of one of its tools connects again. */
  close(): Promise<void>
}

// One set per process, even when the workflow file and the process that runs it load two copies of this package.
const OPEN_SOURCES = Symbol.for('@locus/mcp/open-tool-sources')

function openSources(): Set<McpToolSource> {
  const existing = Reflect.get(globalThis, OPEN_SOURCES) as Set<McpToolSource> | undefined
  if (existing !== undefined) return existing
  const created = new Set<McpToolSource>()
  Reflect.set(globalThis, OPEN_SOURCES, created)
  return created
}

/**
 * Closes every MCP tool source of this process that holds a connection,
 * stopping the stdio servers it started, and says how many it closed. A
 * workflow file opens its sources at import, where nothing else can close
 * them: `locus run`, `resume` and `replay` call this once their run has
 * ended, so a stdio server does not keep the process alive. A tool called
 * later connects again.
 */
export async function closeMcpToolSources(): Promise<number> {
  const sources = [...openSources()]
  await Promise.all(sources.map((source) => source.close().catch(() => undefined)))
  return sources.length
}

function transportOf(spec: McpServerSpec): Transport {
  if ('url' in spec) {
    return new StreamableHTTPClientTransport(new URL(spec.url), spec.headers === undefined ? undefined : { requestInit: { headers: { ...spec.headers } } })
  }
  return new StdioClientTransport({
    command: spec.command,
    args: spec.args === undefined ? [] : [...spec.args],
    ...(spec.env === undefined ? {} : { env: { ...(process.env as Record<string, string>), ...spec.env } }),
    ...(spec.cwd === undefined ? {} : { cwd: spec.cwd }),
    stderr: 'ignore',
  })
}

function describeSpec(spec: McpServerSpec): string {
  return 'url' in spec ? spec.url : [spec.command, ...(spec.args ?? [])].join(' ')
}

function textOf(content: unknown): string {
  if (!Array.isArray(content)) return ''
  return content
    .map((part: unknown) => (typeof part === 'object' && part !== null && (part as { type?: unknown }).type === 'text' ? String((part as { text?: unknown }).text) : ''))
    .filter((text) => text.length > 0)
    .join('\n')
}

/**
 * Connects to an MCP server and offers its tools to a workflow: to `tool()`
 * and to every agent, each under the policy given here (by default the
 * seed's: no retry, no timeout). Every attempt is journaled and replays on
 * resume like any tool call.
 *
 * - A result with `isError: true` is a terminal tool failure (the seed's
 *   `tool.error` without `retryable`).
 * - A server that cannot be reached or dies during a call is a retryable
 *   `provider_error`; the next attempt starts (or reconnects to) it again.
 *
 * @example
 * ```ts
 * const files = await mcpTools({ command: 'npx', args: ['@modelcontextprotocol/server-filesystem', '.'] })
 * export default defineWorkflow({ name: 'notes', tools: { ...files.tools }, run: async ({ tool }) => tool('read_file', { path: 'a.md' }) })
 * ```
 */
export async function mcpTools(spec: McpServerSpec, options: McpToolsOptions = {}): Promise<McpToolSource> {
  const where = describeSpec(spec)
  let connection: Promise<Client> | undefined
  const tools: Record<string, ToolDefinition> = {}
  const source: McpToolSource = {
    tools,
    async close() {
      openSources().delete(source)
      const open = connection
      connection = undefined
      const client = await open?.catch(() => undefined)
      await client?.close()
    },
  }

  function connect(): Promise<Client> {
    openSources().add(source)
    if (connection !== undefined) return connection
    const current: Promise<Client> = (async () => {
      const client = new Client({ name: options.clientName ?? 'locus', version: '1.0.0' })
      const transport = transportOf(spec)
      transport.onclose = () => {
        // The server went away: the next call starts it again (a newer connection is left alone).
        if (connection === current) connection = undefined
      }
      await client.connect(transport)
      return client
    })()
    connection = current
    current.catch(() => {
      if (connection === current) connection = undefined
    })
    return current
  }

  let listed
  try {
    listed = await (await connect()).listTools()
  } catch (error) {
    throw new CallError(`could not list the tools of the MCP server ${where}: ${error instanceof Error ? error.message : String(error)}`, {
      retryable: true,
      code: 'provider_error',
      cause: error,
    })
  }
  for (const tool of listed.tools) {
    if (options.only !== undefined && !options.only.includes(tool.name)) continue
    let input: z.ZodType
    try {
      input = z.fromJSONSchema(tool.inputSchema as never)
    } catch {
      // A schema zod cannot read: the server still validates what it gets.
      input = z.record(z.string(), z.unknown())
    }
    tools[`${options.prefix ?? ''}${tool.name}`] = {
      ...(tool.description === undefined ? {} : { description: tool.description }),
      input,
      ...(options.retry === undefined ? {} : { retry: options.retry }),
      run: async (args: unknown, call: ToolCallContext) => {
        let client: Client
        let result
        try {
          client = await connect()
          result = await client.callTool({ name: tool.name, arguments: (args ?? {}) as Record<string, unknown> }, undefined, { signal: call.signal, timeout: 2 ** 31 - 1 })
        } catch (error) {
          if (call.signal.aborted) throw error
          throw new CallError(`the MCP server ${where} failed during ${tool.name}: ${error instanceof Error ? error.message : String(error)}`, {
            retryable: true,
            code: 'provider_error',
            cause: error,
          })
        }
        if (result.isError === true) {
          throw new CallError(textOf(result.content) || `${tool.name} returned an error`, { retryable: false })
        }
        return result.structuredContent ?? { content: result.content }
      },
    }
  }
  return source
}
