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

/** Options of {@link TriggerTransport.send}. */
export interface SendOptions {
  /** Abandons the attempt (its deadline passed or it was cancelled): the send rejects at once. */
  readonly signal?: AbortSignal | undefined
  /**
   * Called when a worker still answers a trigger after its send was
   * abandoned, with the actions it answered (their ids put back to the
   * trigger's). The answer is otherwise ignored: it never settles another
   * attempt. Journal it as late here.
   */
  readonly onLateAnswer?: ((actions: Action[]) => void) | undefined
}

/**
 * The id a worker sees for one send: the call's id and a suffix unique to the
 * transport (`call-1~1`, `call-1~2`, ...). Every attempt of a call reuses the
 * call's id, and call ids are unique within a run only: without the suffix a
 * late answer to attempt 1 would settle attempt 2. Kept within the wire's
 * 256-character limit.
 */
export function attemptTriggerId(callId: string, sequence: number): string {
  const suffix = `~${sequence.toString(36)}`
  return `${callId.slice(0, 256 - suffix.length)}${suffix}`
}

/** How many abandoned triggers a transport remembers, to recognise a late answer to one. */
export const LATE_ANSWER_MEMORY = 1000

/** How the engine reaches workers: send a trigger, get the actions that answer it. */
export interface TriggerTransport {
  /** The actions a worker answered `trigger` with (those naming its id). Rejects with {@link TransportError}. */
  send(trigger: Trigger, options?: SendOptions): Promise<Action[]>
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
  /** The id the engine gave the trigger, put back on the answer. */
  readonly callId: string
  readonly onLateAnswer: ((actions: Action[]) => void) | undefined
  readonly resolve: (actions: Action[]) => void
  readonly reject: (error: Error) => void
}

/**
 * A transport to a worker in a child process that speaks newline-delimited
 * JSON on stdin and stdout, so a worker can be written in any language: one
 * trigger per line in, one `{ "actions": [...] }` per line out, actions naming
 * their trigger by `id`. Each send's trigger carries an id of its own (the
 * call's id and a suffix, see {@link attemptTriggerId}), which the answer
 * must echo: an answer to an attempt already abandoned goes to its
 * `onLateAnswer` and never settles a later attempt. The process starts on
 * the first send and again after it exits. A worker that dies while calls
 * are open fails them as retryable `provider_error`; a line that is not a
 * valid answer fails the open calls terminally with the parse error named.
 */
export function createStdioTransport(options: StdioTransportOptions): TriggerTransport {
  const where = [options.command, ...(options.args ?? [])].join(' ')
  let child: ChildProcessWithoutNullStreams | undefined
  /** Open sends, by the id their worker sees. */
  const waiting = new Map<string, Waiting>()
  /** Abandoned sends the running worker may still answer, by the id it saw; oldest first. */
  const abandoned = new Map<string, Waiting>()
  let closed = false
  let sent = 0

  function abandon(id: string, entry: Waiting): void {
    waiting.delete(id)
    if (entry.onLateAnswer === undefined) return
    abandoned.set(id, entry)
    for (const oldest of abandoned.keys()) {
      if (abandoned.size <= LATE_ANSWER_MEMORY) break
      abandoned.delete(oldest)
    }
  }

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
        if (entry !== undefined) {
          waiting.delete(id)
          entry.resolve(answered.map((action) => ({ ...action, id: entry.callId })))
          continue
        }
        const late = abandoned.get(id)
        if (late === undefined) continue
        abandoned.delete(id)
        try {
          late.onLateAnswer?.(answered.map((action) => ({ ...action, id: late.callId })))
        } catch {
          // The attempt was given up on; a hook that throws has no caller left to tell.
        }
      }
    })
    started.on('exit', (code, signal) => {
      if (child === started) child = undefined
      // A worker process that is gone cannot answer what it was sent.
      abandoned.clear()
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
        sent += 1
        const wired = { ...trigger, id: attemptTriggerId(trigger.id, sent) }
        const onAbort = (): void => {
          abandon(wired.id, entry)
          reject(new TransportError('the call was abandoned (its deadline passed or it was cancelled)', false))
        }
        signal?.addEventListener('abort', onAbort, { once: true })
        const entry: Waiting = {
          callId: trigger.id,
          onLateAnswer: sendOptions?.onLateAnswer,
          resolve: (actions) => {
            signal?.removeEventListener('abort', onAbort)
            resolve(actions)
          },
          reject: (error) => {
            signal?.removeEventListener('abort', onAbort)
            reject(error)
          },
        }
        waiting.set(wired.id, entry)
        start().stdin.write(JSON.stringify(wired) + '\n')
      })
    },
    async close() {
      closed = true
      const running = child
      child = undefined
      abandoned.clear()
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
