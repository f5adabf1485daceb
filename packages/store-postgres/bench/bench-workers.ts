// What the dispatch benches share: worker processes (bench/dispatch-worker.ts), polling, quantiles and table rows.
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { BenchResult } from '@locus/bench-kit'

const fixture = fileURLToPath(new URL('./dispatch-worker.ts', import.meta.url))

/** The worker processes started and not yet exited: a bench kills what is left when it ends. */
export const children = new Set<ChildProcess>()

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((left, right) => left - right)
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN
}

/** A table row of one measured figure in milliseconds. */
export function row(name: string, ms: number): BenchResult {
  return { name, nsPerOp: ms * 1e6, rounds: 1 }
}

/** Starts a worker process on `url` and resolves once it takes jobs; `rateLimits` is the worker's shared limit. */
export async function startWorker(url: string, leaseMs: number, concurrency: number, rateLimits?: readonly unknown[]): Promise<ChildProcess> {
  const args = ['--conditions=@locus/source', '--import', 'tsx', fixture, url, String(leaseMs), String(concurrency), ...(rateLimits === undefined ? [] : [JSON.stringify(rateLimits)])]
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  child.once('exit', () => children.delete(child))
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve()
    })
    child.once('exit', (code) => {
      reject(new Error(`bench worker exited (${String(code)}) before it was ready: ${stderr}`))
    })
  })
  return child
}

/** Stops worker processes cleanly (SIGTERM) and waits for them to exit. */
export async function stopWorkers(workers: ChildProcess[]): Promise<void> {
  await Promise.all(
    workers.splice(0).map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null) {
            resolve()
            return
          }
          child.once('exit', () => {
            resolve()
          })
          child.kill('SIGTERM')
        }),
    ),
  )
}

export async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`dispatch bench: timed out waiting for ${what}`)
    await sleep(5)
  }
}
