/** The part of Node's `ServerResponse` {@link writeSse} uses. */
export interface SseSink {
  writeHead(status: number, headers: Record<string, string>): unknown
  write(chunk: Uint8Array | string): boolean
  end(): unknown
  destroy(): unknown
  once(event: 'drain' | 'close', listener: () => void): unknown
  off(event: 'drain' | 'close', listener: () => void): unknown
  readonly destroyed: boolean
}

/** What {@link writeSse} needs. */
export interface SseWriteOptions {
  /** The frames to send, whole, one `write` each; an empty one is skipped. Returned when the stream ends. */
  readonly pieces: AsyncIterator<Uint8Array | string>
  /** A comment line this often keeps proxies from closing an idle stream. */
  readonly heartbeatMs: number
  /** Sent as the stream's `retry:` field: how long a client waits before reconnecting. */
  readonly retryMs: number
  /** How long a frame may wait for the socket to drain before the client is dropped; without it, as long as it takes. */
  readonly drainTimeoutMs?: number | undefined
  /** Ends the stream (the server shuts down). */
  readonly signal: AbortSignal
  /** Called once when the stream ends, for any reason. */
  readonly onClose: () => void
  /** Told about a client dropped for falling behind. */
  readonly onDrop?: (() => void) | undefined
  /** Told about an error reading the frames; the stream then ends. */
  readonly onError: (error: unknown) => void
}

/**
 * Opens an event stream on `sink`: the status and headers, the `retry:`
 * field, and a heartbeat comment every `heartbeatMs` while `isClosed()` says
 * no and the client is there. Returns the heartbeat's timer, to clear at the end.
 */
export function openSse(sink: SseSink, headers: Record<string, string>, timing: { readonly retryMs: number; readonly heartbeatMs: number }, isClosed: () => boolean): ReturnType<typeof setInterval> {
  sink.writeHead(200, headers)
  sink.write(`retry: ${String(timing.retryMs)}\n\n`)
  const heartbeat = setInterval(() => {
    if (!isClosed() && !sink.destroyed) sink.write(': heartbeat\n\n')
  }, timing.heartbeatMs)
  heartbeat.unref()
  return heartbeat
}

/**
 * A server-sent event stream written straight to a Node response
 * (`c.env.outgoing` under @hono/node-server) instead of through a
 * `ReadableStream` body: each frame is one `write`, with no stream reader in
 * between, which counts when one frame goes to a thousand subscribers. A
 * heartbeat comment goes every `heartbeatMs`. After a `write` the socket did
 * not take, the next frame waits for `drain`; with `drainTimeoutMs`, a client
 * that takes nothing for that long has fallen behind and is dropped (the
 * connection is destroyed, so its buffer goes too) and resumes from the last
 * `id:` it read. The journal's event stream and a run's token stream both
 * write through here.
 */
export function writeSse(sink: SseSink, headers: Record<string, string>, options: SseWriteOptions): void {
  // Read through a function, so that a check after an await sees a close made meanwhile.
  const state = { closed: false }
  const isClosed = (): boolean => state.closed
  const gone = (): boolean => sink.destroyed
  let wake: ((drained: boolean) => void) | undefined
  const close = (): void => {
    if (state.closed) return
    state.closed = true
    clearInterval(heartbeat)
    options.signal.removeEventListener('abort', onAbort)
    sink.off('close', onClientGone)
    wake?.(false)
    // Unsubscribes a live feed; wakes and ends a store tail.
    void options.pieces.return?.().catch(() => undefined)
    options.onClose()
  }
  const onClientGone = (): void => {
    close()
  }
  const onAbort = (): void => {
    close()
    sink.end()
  }
  const heartbeat = openSse(sink, headers, options, isClosed)
  sink.once('close', onClientGone)
  if (options.signal.aborted) {
    onAbort()
    return
  }
  options.signal.addEventListener('abort', onAbort, { once: true })
  void (async () => {
    for (;;) {
      let next: IteratorResult<Uint8Array | string>
      try {
        next = await options.pieces.next()
      } catch (error) {
        if (!isClosed()) options.onError(error)
        break
      }
      if (isClosed() || next.done === true || gone()) break
      if (next.value.length === 0) continue
      if (sink.write(next.value) || gone()) continue
      const drained = await new Promise<boolean>((resolve) => {
        const onDrain = (): void => {
          clearTimeout(timer)
          resolve(true)
        }
        const timer = options.drainTimeoutMs === undefined ? undefined : setTimeout(() => {
          sink.off('drain', onDrain)
          resolve(false)
        }, options.drainTimeoutMs)
        wake = (value) => {
          clearTimeout(timer)
          sink.off('drain', onDrain)
          resolve(value)
        }
        sink.once('drain', onDrain)
      })
      wake = undefined
      if (!drained && !isClosed()) {
        options.onDrop?.()
        close()
        sink.destroy()
        return
      }
    }
    if (!isClosed()) {
      close()
      sink.end()
    }
  })()
}

/** The part of Node's `ServerResponse` a pushed stream uses: {@link SseSink} and how much it holds unsent. */
export interface PushSink extends SseSink {
  readonly writableLength: number
  removeHeader?(name: string): void
}

/** What {@link openPushedSse} needs. */
export interface PushedSseOptions {
  readonly heartbeatMs: number
  readonly retryMs: number
  /** Ends the stream (the server is shutting down). */
  readonly signal: AbortSignal
  /** Called once when the stream ends, for any reason. */
  readonly onClose: () => void
  /** Told about a client dropped for falling behind. */
  readonly onDrop?: (() => void) | undefined
}

/** An open pushed event stream: what its source writes through. */
export interface PushedSse {
  /** Writes a frame (an empty one is skipped); false when the socket did not take it all, or the stream is closed. */
  write(frame: Uint8Array | string): boolean
  /** Ends the stream: the client has everything. */
  end(): void
  /** Disconnects a client that fell behind; its buffer goes with it, and it resumes with `Last-Event-ID`. */
  drop(): void
  readonly closed: boolean
  /** Called once when the stream closes, before `onClose` (a source unsubscribes here). */
  onClosing(listener: () => void): void
}

/**
 * Opens an event stream that a source pushes frames into as they come (a
 * run's line feed, a token feed), with no iterator, promise or stream reader
 * per client in between: the status and headers, `retry:`, heartbeats, and
 * the end when the client goes away or the server shuts down. Without
 * Content-Length or chunked framing the body runs to the connection's close,
 * as an event stream does anyway: each frame is one plain socket write, with
 * no chunk header and trailer around it and no cork (about a tenth of the
 * server's CPU per delivery at a thousand subscribers, as the server bench
 * measured it). Backpressure is the source's to bound: the writer never
 * waits for a reader.
 */
export function openPushedSse(sink: PushSink, headers: Record<string, string>, options: PushedSseOptions): PushedSse {
  // Read through an object, so that a check after the source subscribed sees a close made inside it.
  const state: { closed: boolean; closing: (() => void) | undefined } = { closed: false, closing: undefined }
  const close = (): void => {
    if (state.closed) return
    state.closed = true
    clearInterval(heartbeat)
    options.signal.removeEventListener('abort', end)
    sink.off('close', close)
    state.closing?.()
    options.onClose()
  }
  function end(): void {
    if (state.closed) return
    close()
    sink.end()
  }
  const drop = (): void => {
    if (state.closed) return
    options.onDrop?.()
    close()
    sink.destroy()
  }
  sink.removeHeader?.('transfer-encoding')
  sink.removeHeader?.('content-length')
  const heartbeat = openSse(sink, { ...headers, Connection: 'close' }, options, () => state.closed)
  sink.once('close', close)
  if (options.signal.aborted) end()
  else options.signal.addEventListener('abort', end, { once: true })
  return {
    write(frame) {
      if (state.closed || frame.length === 0) return !state.closed
      if (sink.destroyed) {
        close()
        return false
      }
      return sink.write(frame)
    },
    end,
    drop,
    get closed() {
      return state.closed
    },
    onClosing(listener) {
      // A stream that closed before the source subscribed unsubscribes it at once.
      if (state.closed) listener()
      else state.closing = listener
    },
  }
}

