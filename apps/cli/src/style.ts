import type { OutputStream } from './cli-io.js'

/** Terminal styling that switches itself off on a pipe or under `NO_COLOR`. */
export interface Style {
  readonly enabled: boolean
  bold(text: string): string
  dim(text: string): string
  green(text: string): string
  red(text: string): string
  yellow(text: string): string
  cyan(text: string): string
}

const wrap = (enabled: boolean, open: number, close: number) => (text: string) => (enabled ? `\u001b[${open}m${text}\u001b[${close}m` : text)

/**
 * Colours for a stream: on only when it is a terminal and neither `NO_COLOR`
 * nor `TERM=dumb` is set (https://no-color.org).
 */
export function styleFor(stream: OutputStream, env: Readonly<Record<string, string | undefined>>): Style {
  const enabled = stream.isTTY === true && (env.NO_COLOR === undefined || env.NO_COLOR === '') && env.TERM !== 'dumb'
  return {
    enabled,
    bold: wrap(enabled, 1, 22),
    dim: wrap(enabled, 2, 22),
    green: wrap(enabled, 32, 39),
    red: wrap(enabled, 31, 39),
    yellow: wrap(enabled, 33, 39),
    cyan: wrap(enabled, 36, 39),
  }
}

/** The same text with ANSI escape sequences removed: what a reader sees, for measuring width. */
export function stripAnsi(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '')
}
