import { CliError } from './cli-error.js'

/** System error codes that mean the storage, not the command, failed; with what each means. */
const STORAGE_ERRNO: Readonly<Record<string, string>> = {
  ENOSPC: 'no space left on the device',
  EDQUOT: 'the disk quota is exceeded',
  EROFS: 'the file system is read-only',
  EIO: 'an input/output error from the device',
}

interface SystemErrorLike {
  readonly code: string
  readonly path?: unknown
  readonly syscall?: unknown
}

/** The first system error of a storage kind in `error` and its causes. */
function storageCauseOf(error: unknown): SystemErrorLike | undefined {
  let current: unknown = error
  for (let depth = 0; depth < 10 && typeof current === 'object' && current !== null; depth += 1) {
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string' && Object.hasOwn(STORAGE_ERRNO, code)) return current as SystemErrorLike
    current = (current as { cause?: unknown }).cause
  }
  return undefined
}

/**
 * A storage failure (a full disk, a quota, a read-only or failing device)
 * anywhere in a thrown error's causes, as a `STORAGE_FAILED` error that names
 * the file and the system code: exit 2, since the environment is the
 * caller's to fix, and never the 1 that means a failed run or a diverged
 * replay. `undefined` for any other error.
 */
export function asStorageError(error: unknown): CliError | undefined {
  const cause = storageCauseOf(error)
  if (cause === undefined) return undefined
  const file = typeof cause.path === 'string' ? cause.path : undefined
  const what = `${cause.code} (${STORAGE_ERRNO[cause.code] ?? 'a storage error'})`
  const advice =
    cause.code === 'ENOSPC' || cause.code === 'EDQUOT'
      ? 'Free some space (or pass --runs-dir on another disk) and run the command again'
      : 'Fix the storage (or pass --runs-dir elsewhere) and run the command again'
  return new CliError(
    'STORAGE_FAILED',
    `Cannot write ${file ?? 'to the runs directory'}: ${what}. ${advice}; what was recorded before stays as it was.`,
    { cause: error },
  )
}
