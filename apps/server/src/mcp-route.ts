import { randomUUID } from 'node:crypto'
import { createLocusMcpServer } from '@locus/mcp'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import type { Context } from 'hono'
import { clientMessage } from './redact.js'
import type { RouteContext } from './route-context.js'
import type { Env } from './server-options.js'

/** One MCP session: its transport, and the key that opened it (no other key may use it). */
interface McpSession {
  readonly transport: WebStandardStreamableHTTPServerTransport
  readonly principal: string
}

/** A JSON-RPC error as the streamable HTTP transport answers one, for the cases this route decides itself. */
function rpcError(c: Context<Env>, status: 400 | 404, message: string): Response {
  return c.json({ jsonrpc: '2.0', error: { code: status === 404 ? -32001 : -32000, message }, id: null }, status)
}

/**
 * `/mcp`: the server's workflows as MCP tools over the streamable HTTP
 * transport, the same server `locus mcp` offers over stdio, on the server's
 * runtime (runs started here show in `/v1/runs`, and shutdown waits for
 * them). It takes the API's bearer keys: a key needs `runs:start` and
 * `runs:read`, and `locus_resolve_deferred` is offered only to a key that
 * also has `deferred:resolve`. Each session belongs to the key that opened it.
 */
export function mountMcpRoute(routes: RouteContext): void {
  const { app, guard, runtime, state } = routes
  const sessions = new Map<string, McpSession>()

  state.shutdown.signal.addEventListener(
    'abort',
    () => {
      for (const session of sessions.values()) void session.transport.close().catch(routes.report)
      sessions.clear()
    },
    { once: true },
  )

  /** Whether the request's key may also answer deferrals. */
  async function mayResolve(c: Context<Env>): Promise<boolean> {
    try {
      await guard('deferred:resolve')(c, () => Promise.resolve())
      return true
    } catch {
      return false
    }
  }

  async function open(c: Context<Env>): Promise<Response> {
    routes.refuseWhenShuttingDown()
    const principal = c.get('principal')
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => {
        sessions.set(sessionId, { transport, principal })
      },
      onsessionclosed: (sessionId) => {
        sessions.delete(sessionId)
      },
    })
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId)
    }
    const server = createLocusMcpServer({ runtime, resolveDeferred: await mayResolve(c), onRun: routes.track, name: 'locus-serve', redactMessage: clientMessage })
    await server.connect(transport)
    return transport.handleRequest(await buffered(c))
  }

  /**
   * The request with its body read whole, after the key was checked: the
   * transport would answer a body over the limit as a JSON-RPC parse error,
   * where the API answers 413.
   */
  async function buffered(c: Context<Env>): Promise<Request> {
    if (c.req.raw.body === null) return c.req.raw
    const bytes = await c.req.raw.arrayBuffer()
    return new Request(c.req.raw, { body: bytes })
  }

  app.all('/mcp', guard('runs:start'), guard('runs:read'), async (c) => {
    const sessionId = c.req.header('mcp-session-id')
    if (sessionId === undefined) {
      if (c.req.method !== 'POST') return rpcError(c, 400, 'Start a session first: POST an initialize request to /mcp, then send its Mcp-Session-Id header.')
      return open(c)
    }
    const session = sessions.get(sessionId)
    // Another key's session answers like an unknown one: a session id is no credential.
    if (session?.principal !== c.get('principal')) return rpcError(c, 404, `No MCP session ${sessionId} for this key; initialize a new one.`)
    return session.transport.handleRequest(await buffered(c))
  })
}
