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
