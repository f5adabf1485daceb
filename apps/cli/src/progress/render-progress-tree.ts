import type { ProgressCallNode, ProgressGroupNode, ProgressNode, ProgressStatus, ProgressTree } from '@locus/journal'
import { formatDuration } from '../format-duration.js'
import type { Style } from '../style.js'

/** Children of one group shown before the completed ones fold into a count. */
const SHOWN_CHILDREN = 8

const GLYPHS: Readonly<Record<ProgressStatus, string>> = {
  running: '•',
  completed: '✔',
  failed: '✖',
  retrying: '↻',
  cancelled: '■',
}

function glyph(status: ProgressStatus, style: Style): string {
  const text = GLYPHS[status]
  if (status === 'completed') return style.green(text)
  if (status === 'failed') return style.red(text)
  if (status === 'retrying' || status === 'cancelled') return style.yellow(text)
  return style.cyan(text)
}

function elapsed(node: { readonly startedAt: number; readonly endedAt: number | undefined }, now: number): string {
  return formatDuration((node.endedAt ?? now) - node.startedAt)
}

function callLine(node: ProgressCallNode, now: number, style: Style, tokens: ReadonlyMap<string, number> | undefined): string {
  const where = node.ordinal === undefined ? '' : ` ${style.dim(node.ordinal)}`
  const label = node.label === undefined ? '' : ` "${node.label}"`
  const attempt = node.attempts > 1 || node.attempt > 1 ? `  attempt ${node.attempt}/${node.attempts}` : ''
  const detail = node.detail === undefined ? '' : `  ${node.status === 'retrying' ? style.yellow(`retrying after ${node.detail}`) : style.red(node.detail)}`
  const replayed = node.replayed ? style.dim('  replayed') : ''
  // While the model streams, the tokens so far; never journaled, only shown.
  const streamed = tokens?.get(node.id)
  const progress = node.status === 'running' && streamed !== undefined ? style.dim(`  ${streamed} tokens`) : ''
  return `${glyph(node.status, style)} ${node.kind} ${node.name}${where}${label}${attempt}  ${style.dim(elapsed(node, now))}${progress}${detail}${replayed}`
}

function groupLine(node: ProgressGroupNode, now: number, style: Style): string {
  const label = node.label === undefined ? '' : ` "${node.label}"`
  let counts: string
  if (node.endedAt === undefined) {
    // While it runs, count its calls; slots settle only at the barrier.
    const statuses = node.children.map((child) => child.status)
    const running = statuses.filter((status) => status === 'running' || status === 'retrying').length
    const done = statuses.filter((status) => status === 'completed').length
    const failed = statuses.filter((status) => status === 'failed').length
    counts = `${node.total} slot${node.total === 1 ? '' : 's'}: ${running} running, ${done} done${failed > 0 ? `, ${style.red(`${failed} failed`)}` : ''}`
  } else {
    counts = `${node.completed}/${node.total} completed${node.failed > 0 ? `, ${style.red(`${node.failed} failed`)}` : ''}`
  }
  return `${glyph(node.status, style)} ${node.groupKind} ${node.id}${label}  ${counts}  ${style.dim(elapsed(node, now))}`
}

/** What every node of one rendering shares. */
interface RenderPass {
  readonly now: number
  readonly style: Style
  readonly tokens: ReadonlyMap<string, number> | undefined
  readonly out: string[]
}

function renderNode(node: ProgressNode, depth: number, pass: RenderPass): void {
  const { now, style, out } = pass
  const indent = '  '.repeat(depth)
  if (node.kind !== 'group') {
    out.push(indent + callLine(node, now, style, pass.tokens))
    return
  }
  out.push(indent + groupLine(node, now, style))
  let hidden = 0
  const showAll = node.children.length <= SHOWN_CHILDREN
  for (const child of node.children) {
    if (!showAll && child.kind !== 'group' && child.status === 'completed') {
      hidden += 1
      continue
    }
    renderNode(child, depth + 1, pass)
  }
  if (hidden > 0) out.push(`${indent}  ${style.green(GLYPHS.completed)} ${style.dim(`${hidden} more completed`)}`)
}

/**
 * Renders a progress tree (`progressTree` of @locus/journal) as lines: the
 * run, then its groups and calls indented beneath, each with its status,
 * attempt n of m and elapsed time. Within a big group, completed calls fold
 * into one count so the tree fits a screen; past `maxLines` the rest is counted.
 */
export function renderProgressTree(
  tree: ProgressTree,
  options: { readonly now: number; readonly style: Style; readonly maxLines?: number; readonly tokens?: ReadonlyMap<string, number> | undefined },
): string[] {
  const { now, style } = options
  const state = tree.disposition ?? 'running'
  const header = `${style.bold(tree.workflow ?? 'workflow')}  ${state}  ${style.dim(tree.startedAt === undefined ? '' : formatDuration((tree.endedAt ?? now) - tree.startedAt))}`
  const out = [header]
  const pass: RenderPass = { now, style, tokens: options.tokens, out }
  for (const node of tree.roots) renderNode(node, 1, pass)
  const maxLines = options.maxLines ?? Number.POSITIVE_INFINITY
  if (out.length > maxLines && maxLines >= 2) {
    const kept = out.slice(0, maxLines - 1)
    kept.push(style.dim(`  ... ${out.length - kept.length} more lines`))
    return kept
  }
  return out
}
