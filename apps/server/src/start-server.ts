import type { Server } from 'node:http'
import { isIP } from 'node:net'
import { createAdaptorServer } from '@hono/node-server'
import { type DrainReport, type ResumeSuspendedReport, type TimerParking, drainRuns, resumeSuspendedRuns, startTimerParking } from '@locus/runtime'
import type { RunRow } from '@locus/store'
import { ServerOptionsError, parseApiKeys, readApiKeysFile } from './auth.js'
import { buildServer } from './create-server.js'
import type { CreateServerOptions } from './server-options.js'
import { allowedHostsFor, parseAllowedOrigins } from './security.js'

/** Options of {@link startServer}. */
export interface StartServerOptions extends CreateServerOptions {
  /** The port; 0 picks a free one. @default 4477 */
  readonly port?: number | undefined
  /** The address to listen on. Anything but loopback needs API keys. @default '127.0.0.1' */
  readonly host?: string | undefined
  /**
   * Host names clients may address the server by, besides the loopback
   * names and the address it listens on (every interface's address for
   * `0.0.0.0` or `::`): the DNS name of the machine or of a proxy in front
   * of it (`--allow-host`). Any other `Host` answers 403. @default none
   */
  readonly allowedHosts?: readonly string[] | undefined
  /** How long shutdown lets the runs this server started run on before it cancels them. @default 10_000 */
  readonly shutdownGraceMs?: number | undefined
  /**
   * After listening, resume in the background the runs of the store that a
   * stopping server suspended while they waited on deferrals, so their
   * deferrals wait again under the same ids. Turn it off for a runtime that
   * does not execute runs itself (one that queues them for workers). @default true
   */
  readonly resumeSuspended?: boolean | undefined
  /**
   * Parks a run that waits only on `sleep()` timers for this long (it is
   * suspended and holds nothing), and resumes it when its timer is due, also
   * after a restart: the store's summary rows are the timer index. For a
   * runtime that executes its own runs (file or memory store); off when not
   * given. `locus serve` turns it on.
   */
  readonly parkSleepingAfterMs?: number | undefined
  /** Told which suspended runs were resumed at start, and which were left and why. */
  readonly onResumed?: ((report: ResumeSuspendedReport) => void) | undefined
  /** Told how each run this server executed ended at shutdown: suspended, cancelled, or ended on its own. */
  readonly onDrained?: ((report: DrainReport) => void) | undefined
  /**
   * A file of hashed API keys, one `sha256:<hex>:scope+scope` a line (see
   * `readApiKeysFile`), added to `apiKeys`. @default `LOCUS_API_KEYS_FILE` from `env`
   */
  readonly apiKeysFile?: string | undefined
  /** Where `LOCUS_API_KEYS`, `LOCUS_API_KEYS_FILE` and `LOCUS_CALLBACK_SECRET` are read when `apiKeys`, `apiKeysFile` and `callbackSecret` are not given. @default process.env */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined
}

/** A listening server. */
export interface RunningServer {
  /** `http://host:port`, with the port actually bound. */
  readonly url: string
  readonly host: string
  readonly port: number
  /**
   * Shuts down gracefully: refuses new runs (503 `shutting_down`), stops
   * accepting connections, ends event streams and long polls, suspends the
   * runs that wait only on deferrals (no `run_end`; the next server on the
   * store resumes them with the same deferral ids), lets the others run on
   * for `shutdownGraceMs`, then cancels the rest (each journals its
   * `run_end`, so POST /resume continues it) and waits for them, and closes
   * the last connections. Idempotent.
   */
  close(): Promise<void>
}

export const DEFAULT_PORT = 4477
export const DEFAULT_HOST = '127.0.0.1'

/** True for an address only this machine can reach. */
export function isLoopback(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
  if (bare === 'localhost') return true
  if (isIP(bare) === 4) return bare.startsWith('127.')
  if (isIP(bare) === 6) return bare === '::1' || /^::ffff:127\./i.test(bare)
  return false
}

/**
 * Starts the HTTP API on a port with `@hono/node-server`. API keys come from
 * `apiKeys`, else from `LOCUS_API_KEYS`, and from the hashed keys of
 * `apiKeysFile`, else `LOCUS_API_KEYS_FILE`; without any the server listens
 * on loopback only and refuses another host with the reason.
 *
 * @example
 * ```ts
 * const server = await startServer({ runtime, port: 4477 })
 * console.log(`listening on ${server.url}`)
 * process.once('SIGTERM', () => void server.close())
 * ```
 * @throws ServerOptionsError for bad keys, or a non-loopback host without keys
 */
export async function startServer(options: StartServerOptions): Promise<RunningServer> {
  const host = options.host ?? DEFAULT_HOST
  const port = options.port ?? DEFAULT_PORT
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new ServerOptionsError(`port must be a whole number from 0 to 65535, got ${String(port)}.`)
  const env = options.env ?? process.env
  const plainKeys = options.apiKeys ?? env.LOCUS_API_KEYS
  // A bad key is named by where it was given (by position, never by secret).
  parseApiKeys(plainKeys, (index, count) => `${options.apiKeys === undefined ? 'LOCUS_API_KEYS' : 'apiKeys'}: API key ${index + 1} of ${count}`)
  const keysFile = options.apiKeysFile ?? (env.LOCUS_API_KEYS_FILE === '' ? undefined : env.LOCUS_API_KEYS_FILE)
  const apiKeys: string | readonly string[] | undefined =
    keysFile === undefined ? plainKeys : [...(typeof plainKeys === 'string' ? plainKeys.split(',') : (plainKeys ?? [])), ...readApiKeysFile(keysFile)]
  if (parseApiKeys(apiKeys).length === 0 && !isLoopback(host)) {
    throw new ServerOptionsError(
      `Refusing to listen on ${host} without API keys: anyone who can reach it could start, read and cancel runs. ` +
        'Set LOCUS_API_KEYS (e.g. LOCUS_API_KEYS="$(openssl rand -hex 24)") or LOCUS_API_KEYS_FILE, or pass apiKeys, or listen on 127.0.0.1.',
    )
  }
  // Checked before listening, so a bad name stops the start with its reason.
  const allowedHosts = allowedHostsFor(host, options.allowedHosts)
  parseAllowedOrigins(options.allowedOrigins)
  // Created before the server so it watches every run the server tracks; it calls back into the server only later.
  const parking: TimerParking | undefined =
    options.parkSleepingAfterMs === undefined
      ? undefined
      : startTimerParking(options.runtime, {
          parkAfterMs: options.parkSleepingAfterMs,
          onResumed: (handle) => {
            if (!state.shuttingDown) track(handle)
          },
          onError: (runId, error) => {
            console.error(`[locus server] waking run ${runId} after its sleep failed:`, error)
          },
        })
  const callbackSecret = options.callbackSecret ?? (env.LOCUS_CALLBACK_SECRET === '' ? undefined : env.LOCUS_CALLBACK_SECRET)
  const { app, state, track } = buildServer({
    ...options,
    apiKeys,
    callbackSecret,
    allowedHosts,
    onTrack: (handle) => {
      parking?.watch(handle)
      options.onTrack?.(handle)
    },
  })
  const server = createAdaptorServer({ fetch: app.fetch, hostname: host }) as Server
  await new Promise<void>((resolve, reject) => {
    const onError = (error: Error): void => {
      reject(error)
    }
    server.once('error', onError)
    server.listen(port, host, () => {
      server.off('error', onError)
      resolve()
    })
  })
  const address = server.address()
  const boundPort = typeof address === 'object' && address !== null ? address.port : port
  const shownHost = isIP(host) === 6 ? `[${host}]` : host
  let closing: Promise<void> | undefined
  // Runs a previous server suspended on their deferrals wait again here; read one at a time, after listening.
  const resuming =
    options.resumeSuspended === false
      ? Promise.resolve()
      : resumeSuspendedRuns(options.runtime, { signal: state.shutdown.signal, ...(parking === undefined ? {} : { skip: (row: RunRow) => parking.parksLater(row) }) })
          .then(async (report) => {
            // Runs a previous server parked on a timer wake at their due time.
            await parking?.scan()
            for (const handle of report.resumed) track(handle)
            options.onResumed?.(report)
          })
          .catch((error: unknown) => {
            console.error('[locus server] resuming suspended runs failed:', error)
          })

  async function shutdown(): Promise<void> {
    state.shuttingDown = true
    const closed = new Promise<void>((resolve) => {
      server.close(() => {
        resolve()
      })
    })
    state.shutdown.abort()
    server.closeIdleConnections()
    await resuming
    parking?.close()
    const report = await drainRuns(state.runs.values(), { graceMs: options.shutdownGraceMs ?? 10_000, reason: 'the server is shutting down', by: 'server' })
    options.onDrained?.(report)
    // Requests still open now (a response being written) get a moment, then their connections are closed.
    server.closeIdleConnections()
    const forced = setTimeout(() => {
      server.closeAllConnections()
    }, 1_000)
    await closed
    clearTimeout(forced)
  }

  return {
    url: `http://${shownHost}:${boundPort}`,
    host,
    port: boundPort,
    close: () => (closing ??= shutdown()),
  }
}
