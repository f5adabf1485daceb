import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { ProtocolError, parseWorkerResponse } from './parse-wire.js'
import type { Action, Trigger } from './wire-schemas.js'
import type { Worker } from './worker.js'

/** Why a transport could not deliver an answer: the worker died or went away (retryable), or answered garbage (terminal). */
export class TransportError extends Error {
  readonly retryable: boolean
  readonly code: 'provider_error' | undefined
  constructor(message: string, retryable: boolean, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause })
    this.name = 'TransportError'
    this.retryable = retryable
    this.code = retryable ? 'provider_error' : undefined
  }
}

/** How the engine reaches workers: send a trigger, get the actions that answer it. */
export interface TriggerTransport {
  /** The actions a worker answered `trigger` with (those naming its id). Rejects with {@link TransportError}. */
  send(trigger: Trigger, options?: { readonly signal?: AbortSignal | undefined }): Promise<Action[]>
  close(): Promise<void>
  /**
   * What a run records (in `run_start.options.workerSettings`) to reach the
   * same worker again on resume: plain JSON, never the environment, which may
   * hold secrets. A transport that cannot be rebuilt from data has none.
   */
  readonly settings?: StdioTransportSettings | undefined
}

/** The recordable part of a stdio transport: how its worker process is started. */
export interface StdioTransportSettings {
  readonly transport: 'stdio'
  readonly command: string
  readonly args: readonly string[]
  readonly cwd?: string | undefined
}

/** A transport to a worker in this process. */
export function createInProcessTransport(worker: Worker): TriggerTransport {
  return {
    async send(trigger) {
      const response = await worker.handle(trigger)
      return response.actions.filter((action) => action.id === trigger.id)
    },
    close: () => Promise.resolve(),
  }
}

/** Options of {@link createStdioTransport}. */
export interface StdioTransportOptions {
  readonly command: string
  readonly args?: readonly string[] | undefined
  readonly cwd?: string | undefined
  readonly env?: Readonly<Record<string, string>> | undefined
}

interface Waiting {
  readonly resolve: (actions: Action[]) => void
  readonly reject: (error: Error) => void
}

/**
 * A transport to a worker in a child process that speaks newline-delimited
 * JSON on stdin and stdout, so a worker can be written in any language: one
 * trigger per line in, one `{ "actions": [...] }` per line out, actions naming
 * their trigger by `id`. The process starts on the first send and again
 * after it exits. A worker that dies while calls are open fails them as
 * retryable `provider_error`; a line that is not a valid answer fails the open
 * calls terminally with the parse error named.
 */
export function createStdioTransport(options: StdioTransportOptions): TriggerTransport {
  const where = [options.command, ...(options.args ?? [])].join(' ')
  let child: ChildProcessWithoutNullStreams | undefined
  const waiting = new Map<string, Waiting>()
  let closed = false

  function failAll(error: TransportError): void {
    for (const [id, entry] of waiting) {
      waiting.delete(id)
      entry.reject(error)
    }
  }

  function start(): ChildProcessWithoutNullStreams {
    if (child !== undefined) return child
    const started = spawn(options.command, options.args === undefined ? [] : [...options.args], {
      cwd: options.cwd,
      env: options.env === undefined ? process.env : { ...process.env, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    child = started
    let stderrTail = ''
    started.stderr.on('data', (chunk: Buffer) => {
      stderrTail = (stderrTail + chunk.toString()).slice(-2000)
    })
    started.stdin.on('error', () => undefined)
    const lines = createInterface({ input: started.stdout, crlfDelay: Number.POSITIVE_INFINITY })
    lines.on('line', (line) => {
      if (line.trim() === '') return
      let actions: Action[]
      try {
        actions = parseWorkerResponse(JSON.parse(line) as unknown).actions
      } catch (error) {
        const reason = ProtocolError.isInstance(error) ? error.message : `not JSON: ${error instanceof Error ? error.message : String(error)}`
        failAll(new TransportError(`the worker ${where} answered a line that is not a valid answer (${reason}); the line was ${JSON.stringify(line.slice(0, 200))}`, false, error))
        return
      }
      const byId = new Map<string, Action[]>()
      for (const action of actions) byId.set(action.id ?? '', [...(byId.get(action.id ?? '') ?? []), action])
      for (const [id, answered] of byId) {
        const entry = waiting.get(id)
        if (entry === undefined) continue
        waiting.delete(id)
        entry.resolve(answered)
      }
    })
    started.on('exit', (code, signal) => {
      if (child === started) child = undefined
      const how = signal === null ? `exited with code ${String(code)}` : `was killed by ${signal}`
      failAll(new TransportError(`the worker ${where} ${how} while calls were open${stderrTail === '' ? '' : `; its last words: ${stderrTail.trim().split('\n').at(-1) ?? ''}`}`, true))
    })
    started.on('error', (error) => {
      if (child === started) child = undefined
      failAll(new TransportError(`could not start the worker ${where}: ${error.message}`, true, error))
    })
    return started
  }

  return {
    settings: { transport: 'stdio', command: options.command, args: [...(options.args ?? [])], ...(options.cwd === undefined ? {} : { cwd: options.cwd }) },
    send(trigger, sendOptions) {
      if (closed) return Promise.reject(new TransportError(`the transport to ${where} is closed`, false))
      return new Promise<Action[]>((resolve, reject) => {
        const signal = sendOptions?.signal
        if (signal?.aborted === true) {
          reject(new TransportError('the call was cancelled before it was sent', false))
          return
        }
        const onAbort = (): void => {
          waiting.delete(trigger.id)
          reject(new TransportError('the call was abandoned (its deadline passed or it was cancelled)', false))
        }
        signal?.addEventListener('abort', onAbort, { once: true })
        waiting.set(trigger.id, {
          resolve: (actions) => {
            signal?.removeEventListener('abort', onAbort)
            resolve(actions)
          },
          reject: (error) => {
            signal?.removeEventListener('abort', onAbort)
            reject(error)
          },
        })
        start().stdin.write(JSON.stringify(trigger) + '\n')
      })
    },
    async close() {
      closed = true
      const running = child
      child = undefined
      failAll(new TransportError(`the transport to ${where} was closed`, false))
      if (running !== undefined) {
        running.stdin.end()
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            running.kill('SIGKILL')
          }, 2000)
          running.once('exit', () => {
            clearTimeout(timer)
            resolve()
          })
          if (running.exitCode !== null || running.signalCode !== null) {
            clearTimeout(timer)
            resolve()
          }
        })
      }
    },
  }
}
