import { randomBytes } from 'node:crypto'
import { closeSync, fstatSync, openSync, readFileSync, renameSync, unlinkSync, writeFileSync, writeSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { type RunOwner, RunOwnedError } from './store-errors.js'

/** The ownership lock's file name, directly in the run directory. Private to the file store. */
export const RUN_LOCK_FILE = 'owner.lock'

/**
 * A lock (or take-over marker) whose content cannot be read is taken to be
 * still being written for this long after it last changed; after that its
 * writer is taken to have died between creating and filling it.
 */
const UNREADABLE_GRACE_MS = 10_000

/** Rounds of create, judge, take over before giving up. Each round either wins, refuses or sees the lock change. */
const ACQUIRE_ROUNDS = 8

/** Take-over generations tried for one stale lock: a generation is only passed over when its taker has died too. */
const TAKEOVER_GENERATIONS = 16

/** A held ownership lock. */
export interface RunLock {
  readonly path: string
  readonly owner: RunOwner
  /** The dead holder whose lock this one replaced: set after a take-over (undefined content when its lock was unreadable). */
  readonly tookOver: { readonly from: RunOwner | undefined } | undefined
  /** Records another execution id in the held lock (atomically: a reader sees the old or the new content). */
  setExecutionId(executionId: string): void
  /** Removes the lock file if it is still this lock. Idempotent. */
  release(): void
}

interface ProcessIdentity {
  readonly pid: number
  readonly hostname: string
  readonly processStart: string | null
  readonly processStartedAt: string
}

let cachedBootId: string | null | undefined

function bootId(): string | null {
  if (cachedBootId === undefined) {
    try {
      cachedBootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
    } catch {
      cachedBootId = null
    }
  }
  return cachedBootId
}

/**
 * What `/proc/<pid>/stat` says about a process (Linux only): its start time in
 * clock ticks since boot, qualified by the boot id, and whether it is a zombie.
 * `undefined` where there is no `/proc`.
 */
function procStat(pid: number): { readonly start: string; readonly zombie: boolean } | undefined {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return undefined
  }
  // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  const state = fields[0]
  const ticks = fields[19]
  if (ticks === undefined || !/^\d+$/.test(ticks)) return undefined
  return { start: `${bootId() ?? 'boot'}:${ticks}`, zombie: state === 'Z' || state === 'X' }
}

let self: ProcessIdentity | undefined

function selfIdentity(): ProcessIdentity {
  self ??= {
    pid: process.pid,
    hostname: hostname(),
    processStart: procStat(process.pid)?.start ?? null,
    processStartedAt: new Date(Date.now() - process.uptime() * 1000).toISOString(),
  }
  return self
}

type Liveness = 'alive' | 'dead' | 'unknown'

/**
 * Whether a recorded process still runs. Only a process on this host can be
 * checked: `kill(pid, 0)` failing with ESRCH means it is gone; a pid that
 * exists but started at another time (Linux `/proc`) was reused by another
 * process, so the recorded one is gone too; a zombie is gone. Elsewhere a
 * live pid is taken at its word. Another host is `unknown`.
 */
function livenessOf(holder: Pick<RunOwner, 'pid' | 'hostname' | 'processStart'>): Liveness {
  if (holder.hostname !== selfIdentity().hostname) return 'unknown'
  try {
    process.kill(holder.pid, 0)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ESRCH') return 'dead'
    // EPERM: the process exists but belongs to another user.
    if (code !== 'EPERM') return 'unknown'
  }
  const now = procStat(holder.pid)
  if (now?.zombie === true) return 'dead'
  if (holder.processStart !== null && now !== undefined && now.start !== holder.processStart) return 'dead'
  return 'alive'
}

function parseOwner(text: string): RunOwner | undefined {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null) return undefined
  const owner = value as Partial<RunOwner>
  const valid =
    typeof owner.pid === 'number' &&
    Number.isSafeInteger(owner.pid) &&
    owner.pid > 0 &&
    typeof owner.hostname === 'string' &&
    typeof owner.token === 'string' &&
    /^[0-9a-f]{8,64}$/.test(owner.token) &&
    typeof owner.executionId === 'string' &&
    typeof owner.runId === 'string' &&
    typeof owner.startedAt === 'string' &&
    (owner.processStart === null || typeof owner.processStart === 'string')
  return valid ? (value as RunOwner) : undefined
}

/** A lock or marker file as read: a key naming this one instance, and its holder when readable. */
interface HeldFile {
  readonly key: string
  readonly owner: RunOwner | undefined
  readonly modifiedMs: number
}

function readHeldFile(path: string): HeldFile | undefined {
  let fd: number
  try {
    fd = openSync(path, 'r')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
  try {
    const stat = fstatSync(fd)
    const owner = parseOwner(readFileSync(fd, 'utf8'))
    return { key: owner?.token ?? `ino${stat.ino}`, owner, modifiedMs: stat.mtimeMs }
  } finally {
    closeSync(fd)
  }
}

function livenessOfFile(file: HeldFile): Liveness {
  if (file.owner !== undefined) return livenessOf(file.owner)
  return Date.now() - file.modifiedMs > UNREADABLE_GRACE_MS ? 'dead' : 'alive'
}

/** Creates `path` with `content` only if it does not exist ('wx'); false when it does. */
function createExclusive(path: string, content: string): boolean {
  let fd: number
  try {
    fd = openSync(path, 'wx')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw error
  }
  try {
    writeSync(fd, content)
  } catch (error) {
    closeSync(fd)
    removeQuietly(path)
    throw error
  }
  closeSync(fd)
  return true
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
}

/**
 * Claims the right to remove one stale lock, named by its key. Only the
 * process that creates a generation's marker (exclusively) may remove it; a
 * later generation is tried only when the earlier marker's holder has died
 * too, so exactly one live process at a time can remove that lock.
 */
function claimTakeover(lockPath: string, key: string, content: string): { readonly generation: number } | 'busy' | 'changed' {
  for (let generation = 1; generation <= TAKEOVER_GENERATIONS; generation += 1) {
    const marker = takeoverMarker(lockPath, key, generation)
    if (createExclusive(marker, content)) return { generation }
    const holder = readHeldFile(marker)
    // Its taker finished and cleared it: the stale lock is gone or going; look again.
    if (holder === undefined) return 'changed'
    if (livenessOfFile(holder) !== 'dead') return 'busy'
  }
  return 'busy'
}

function takeoverMarker(lockPath: string, key: string, generation: number): string {
  return `${lockPath}.takeover-${key}.${generation}`
}

function describeOwner(owner: RunOwner | undefined): string {
  if (owner === undefined) return 'another process (its lock file is being written or cannot be read)'
  return `process ${owner.pid} on ${owner.hostname} (execution ${owner.executionId}, since ${owner.startedAt})`
}

function ownedError(runId: string, lockPath: string, file: HeldFile | undefined, detail?: string): RunOwnedError {
  const owner = file?.owner
  const otherHost = owner !== undefined && owner.hostname !== selfIdentity().hostname
  const message =
    `Run "${runId}" is owned by ${describeOwner(owner)}${detail === undefined ? '' : `; ${detail}`}. ` +
    'Only one execution runs a run at a time: wait for it to end, or stop it; the lock of a process that has died is taken over automatically.' +
    (otherHost ? ` Its owner runs on another host, where its liveness cannot be checked; if it is gone, delete ${lockPath}.` : '')
  return new RunOwnedError(runId, message, { owner, location: lockPath })
}

/**
 * Takes a run's ownership lock: `owner.lock` in the run directory, created
 * exclusively and holding `{ pid, hostname, runId, executionId, startedAt,
 * processStartedAt, processStart, token }`. While its holder lives, every other
 * taker is refused with `RUN_OWNED`. A holder that died (same host and its pid
 * gone, reused by another process, or a zombie) loses the lock to the next
 * taker: exactly one taker wins the take-over (see {@link claimTakeover}) and
 * then creates a fresh lock exclusively like anyone else.
 */
export function acquireRunLock(runDir: string, ids: { readonly runId: string; readonly executionId: string }): RunLock {
  const path = join(runDir, RUN_LOCK_FILE)
  const identity = selfIdentity()
  const owner: RunOwner = {
    pid: identity.pid,
    hostname: identity.hostname,
    runId: ids.runId,
    executionId: ids.executionId,
    startedAt: new Date().toISOString(),
    processStartedAt: identity.processStartedAt,
    processStart: identity.processStart,
    token: randomBytes(16).toString('hex'),
  }
  const content = `${JSON.stringify(owner)}\n`
  let tookOver: RunLock['tookOver']
  for (let round = 0; round < ACQUIRE_ROUNDS; round += 1) {
    if (createExclusive(path, content)) return heldLock(path, owner, tookOver)
    const current = readHeldFile(path)
    // Released between the two steps: try again.
    if (current === undefined) continue
    if (livenessOfFile(current) !== 'dead') throw ownedError(ids.runId, path, current)
    const claim = claimTakeover(path, current.key, content)
    if (claim === 'changed') continue
    if (claim === 'busy') throw ownedError(ids.runId, path, current, 'its process has died and another process is taking the run over')
    try {
      const again = readHeldFile(path)
      if (again !== undefined && again.key === current.key && livenessOfFile(again) === 'dead') {
        removeQuietly(path)
        tookOver = { from: current.owner }
      }
    } finally {
      // This generation's marker, and those of earlier takers that died: the stale lock is gone, nobody needs them.
      for (let generation = claim.generation; generation >= 1; generation -= 1) removeQuietly(takeoverMarker(path, current.key, generation))
    }
  }
  throw ownedError(ids.runId, path, readHeldFile(path), `the lock changed hands ${ACQUIRE_ROUNDS} times while this process tried to take it`)
}

function heldLock(path: string, initial: RunOwner, tookOver: RunLock['tookOver']): RunLock {
  let released = false
  let owner = initial
  return {
    path,
    get owner() {
      return owner
    },
    tookOver,
    setExecutionId(executionId: string) {
      if (released || executionId === owner.executionId) return
      owner = { ...owner, executionId }
      const temporary = `${path}.${owner.token}.tmp`
      writeFileSync(temporary, `${JSON.stringify(owner)}\n`)
      renameSync(temporary, path)
    },
    release() {
      if (released) return
      released = true
      // Remove only this lock: never one a later owner took after this one was (wrongly) judged dead.
      if (readHeldFile(path)?.owner?.token === owner.token) removeQuietly(path)
    },
  }
}
