// The bare-Hono floors of the server benchmark: the same framework and adapter
// as @locus/server (Hono on @hono/node-server) with none of Locus in the
// request path, so a ratio against them is what Locus's own work costs.
// - `broadcastFloor`: an SSE route that keeps every open stream in a set and
//   writes each line to all of them, the least any SSE broadcast does.
// - `nodeBroadcastFloor`: the same with no framework at all, node:http writing
//   one pre-encoded frame to every open response: what the machine's loopback
//   TCP and Node's sockets cost by themselves.
// - `jsonFloor`: a GET route that answers a body fixed in advance.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { createAdaptorServer } from '@hono/node-server'
import { Hono } from 'hono'
import { type SSEStreamingApi, streamSSE } from 'hono/streaming'

export interface FloorServer {
  readonly url: string
  close(): Promise<void>
}

async function listen(app: Hono): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createAdaptorServer({ fetch: app.fetch })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${String(port)}`,
    close: () =>
      new Promise<void>((resolve) => {
        ;(server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.()
        server.close(() => {
          resolve()
        })
      }),
  }
}

/** A bare SSE broadcast: `send(data)` writes one `log` event to every open stream; `end()` closes them all. */
export async function broadcastFloor(): Promise<FloorServer & { readonly streams: () => number; send(id: number, data: string): Promise<void>; end(): void }> {
  const open = new Set<SSEStreamingApi>()
  let finish: () => void = () => undefined
  const finished = new Promise<void>((resolve) => {
    finish = resolve
  })
  const app = new Hono()
  app.get('/events', (c) =>
    streamSSE(c, async (stream) => {
      open.add(stream)
      await finished
      open.delete(stream)
    }),
  )
  const served = await listen(app)
  return {
    ...served,
    streams: () => open.size,
    async send(id, data) {
      await Promise.all([...open].map((stream) => stream.writeSSE({ id: String(id), event: 'log', data })))
    },
    end() {
      finish()
    },
  }
}

/** A bare GET route answering `body` (JSON) as it is. */
export async function jsonFloor(body: string): Promise<FloorServer> {
  const app = new Hono()
  app.get('/v1/runs/:id', (c) => c.body(body, 200, { 'content-type': 'application/json' }))
  return listen(app)
}

/** A broadcast with no framework: `send` writes one encoded `log` event to every open node:http response; `end()` ends them all. */
export async function nodeBroadcastFloor(): Promise<FloorServer & { send(id: number, data: string): void; end(): void }> {
  const open = new Set<http.ServerResponse>()
  const encoder = new TextEncoder()
  const server = http.createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' })
    response.flushHeaders()
    open.add(response)
    response.on('close', () => open.delete(response))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${String(port)}`,
    send(id, data) {
      const frame = encoder.encode(`id: ${String(id)}\nevent: log\ndata: ${data}\n\n`)
      for (const response of open) response.write(frame)
    },
    end() {
      for (const response of open) response.end()
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => {
          resolve()
        })
      }),
  }
}
