import type { RunDisposition } from '@locus/outcome'
import type { AgentCallView, CallView, ChildCallView, GroupView, RunView, ToolCallView } from './run-view.js'

/** Where a node of the progress tree stands. */
export type ProgressStatus = 'running' | 'completed' | 'failed' | 'retrying' | 'cancelled'

/** One logical agent or tool call, or child workflow spawn, in the progress tree, as its latest attempt leaves it. */
export interface ProgressCallNode {
  readonly kind: 'agent' | 'tool' | 'child'
  /** `logicalCallId` of an agent call, `toolCallId` of a tool call, `childCallId` of a spawn. */
  readonly id: string
  /** The agent role, tool name or spawned workflow. */
  readonly name: string
  readonly ordinal: string | undefined
  readonly label: string | undefined
  /** The number of the latest attempt (1-based). */
  readonly attempt: number
  /** How many attempts the call may make. */
  readonly attempts: number
  /** The attempts that really started: every one beyond the first is a retry. */
  readonly attemptsStarted: number
  readonly status: ProgressStatus
  /** The failure cause of the latest attempt, or the retry boundary's cause while it waits to retry. */
  readonly detail: string | undefined
  /** Answered from a recording (resume or replay). */
  readonly replayed: boolean
  /** Epoch milliseconds of the first attempt's start. */
  readonly startedAt: number
  /** Epoch milliseconds of the latest attempt's end; `undefined` while it runs or waits to retry. */
  readonly endedAt: number | undefined
}

/** A `parallel()` or `pipeline()` group in the progress tree, with its calls and nested groups. */
export interface ProgressGroupNode {
  readonly kind: 'group'
  readonly id: string
  readonly groupKind: 'parallel' | 'pipeline'
  readonly label: string | undefined
  /** Slots of the group. */
  readonly total: number
  readonly status: ProgressStatus
  /** Slots that completed and failed, once the group ended (0 before). */
  readonly completed: number
  readonly failed: number
  readonly startedAt: number
  readonly endedAt: number | undefined
  /** Calls and nested groups, in the order they started. */
  readonly children: readonly ProgressNode[]
}

/** A node of the tree. */
export type ProgressNode = ProgressGroupNode | ProgressCallNode

/** A run as a live progress tree shows it: groups with their calls, each call's attempt n of m and status. */
export interface ProgressTree {
  readonly workflow: string | undefined
  /** Epoch milliseconds of `run_start` and `run_end`. */
  readonly startedAt: number | undefined
  readonly endedAt: number | undefined
  readonly disposition: RunDisposition | undefined
  /** Top-level calls and groups, in the order they started. */
  readonly roots: readonly ProgressNode[]
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

function callNode(call: CallView): Mutable<ProgressCallNode> | undefined {
  const first = call.attempts[0]
  const last = call.attempts.at(-1)
  if (first === undefined || last === undefined) return undefined
  const lastRetry = call.retries.at(-1)
  const base = {
    kind: call.kind,
    id: call.id,
    name: call.name,
    ordinal: call.kind === 'agent' ? call.ordinal : (call.ordinal ?? call.id.replace(/^tool-/, '')),
    label: call.label,
    attempt: last.attempt,
    attemptsStarted: call.attempts.length,
    replayed: last.end?.replayed === true,
  }
  const startedAt = Date.parse(first.start?.ts ?? first.end?.ts ?? '')
  const agentDetail = (agent: AgentCallView): string | undefined => {
    const attempt = agent.attempts.at(-1)
    if (attempt?.status === 'threw') return attempt.error?.failureCause ?? 'threw'
    return attempt?.end?.failureCause ?? attempt?.error?.failureCause
  }
  const toolDetail = (tool: ToolCallView): string | undefined => {
    const end = tool.attempts.at(-1)?.end
    return end === undefined || end.status === 'completed' ? undefined : (end.failure?.code ?? end.status)
  }
  const attempts = call.kind === 'agent' ? (call.attempts.at(-1)?.attempts ?? 1) : call.maxAttempts
  if (lastRetry !== undefined && lastRetry.seq > last.firstSeq) {
    // Between a discarded attempt and the next one: waiting to retry.
    return { ...base, attempts, status: 'retrying', detail: lastRetry.cause, startedAt, endedAt: undefined }
  }
  if (last.status === 'running') return { ...base, attempts, status: 'running', detail: undefined, startedAt, endedAt: undefined }
  const terminal = call.kind === 'agent' ? (call.attempts.at(-1)?.end ?? call.attempts.at(-1)?.error) : call.attempts.at(-1)?.end
  const endedAt = terminal === undefined ? undefined : Date.parse(terminal.ts)
  if (last.status === 'completed') return { ...base, attempts, status: 'completed', detail: undefined, startedAt, endedAt }
  return { ...base, attempts, status: 'failed', detail: call.kind === 'agent' ? agentDetail(call) : toolDetail(call), startedAt, endedAt }
}

function childNode(call: ChildCallView): Mutable<ProgressCallNode> | undefined {
  const first = call.attempts[0]
  const last = call.attempts.at(-1)
  if (first === undefined || last === undefined) return undefined
  const lastRetry = call.retries.at(-1)
  const base = {
    kind: 'child' as const,
    id: call.id,
    name: call.workflow,
    ordinal: call.ordinal,
    label: call.label,
    attempt: last.attempt,
    attempts: call.maxAttempts,
    attemptsStarted: call.attempts.length,
    replayed: last.end?.replayed === true,
    startedAt: Date.parse(first.start?.ts ?? first.end?.ts ?? ''),
  }
  if (lastRetry !== undefined && lastRetry.seq > last.firstSeq) return { ...base, status: 'retrying', detail: lastRetry.cause, endedAt: undefined }
  const end = last.end
  if (end === undefined) return { ...base, status: 'running', detail: undefined, endedAt: undefined }
  const endedAt = Date.parse(end.ts)
  if (end.status === 'completed') return { ...base, status: 'completed', detail: undefined, endedAt }
  return { ...base, status: 'failed', detail: end.disposition ?? end.status, endedAt }
}

function groupNode(group: GroupView): Mutable<ProgressGroupNode> | undefined {
  const start = group.start
  if (start === undefined) return undefined
  const end = group.end
  return {
    kind: 'group',
    id: group.groupId,
    groupKind: start.groupKind,
    label: start.label,
    total: start.total,
    status: end === undefined ? 'running' : end.outcome === 'completed' ? 'completed' : end.outcome === 'cancelled' ? 'cancelled' : 'failed',
    completed: end?.completed ?? 0,
    failed: end?.failed ?? 0,
    startedAt: Date.parse(start.ts),
    endedAt: end === undefined ? undefined : Date.parse(end.ts),
    children: [],
  }
}

/**
 * The progress tree of a run as its {@link RunView} stands: groups with
 * their calls and nested groups beneath, each call with its latest attempt
 * (attempt n of m), status, failure or retry cause and times. Built from the
 * view, so the tree counts the calls, attempts and retries `locus show` and
 * the outputs README count. Pure: call it again after more lines are applied.
 *
 * Give it a view made with `createRunView({ keep: 'all' })`: the default
 * view lets go of calls that completed at their first attempt.
 *
 * @example
 * ```ts
 * const view = createRunView({ keep: 'all' })
 * for (const line of lines) view.apply(line)
 * const tree = progressTree(view)
 * tree.roots.map((node) => `${node.kind} ${node.status}`)
 * ```
 */
export function progressTree(view: RunView): ProgressTree {
  const runEnd = view.runEnd
  const cancelledAt = runEnd === undefined ? undefined : Date.parse(runEnd.ts)
  const groups = new Map<string, { node: Mutable<ProgressGroupNode>; seq: number; parent: string | undefined }>()
  for (const group of view.groups()) {
    const node = groupNode(group)
    if (node !== undefined && group.start !== undefined) groups.set(group.groupId, { node, seq: group.start.seq, parent: group.start.parentGroupId })
  }
  // Every node with the seq of its first line and the group it hangs under.
  const placed: { node: Mutable<ProgressNode>; seq: number; parent: string | undefined }[] = [...groups.values()]
  for (const call of view.calls()) {
    const node = callNode(call)
    if (node !== undefined) placed.push({ node, seq: call.firstSeq, parent: call.groupId })
  }
  for (const child of view.children()) {
    const node = childNode(child)
    if (node !== undefined) placed.push({ node, seq: child.firstSeq, parent: child.groupId })
  }
  placed.sort((left, right) => left.seq - right.seq)
  const roots: ProgressNode[] = []
  for (const entry of placed) {
    const node = entry.node
    // A run that ended leaves nothing running: what was still running when it was cancelled is cancelled.
    if (runEnd !== undefined && (node.status === 'running' || node.status === 'retrying')) {
      if (runEnd.disposition === 'cancelled') node.status = 'cancelled'
      node.endedAt ??= cancelledAt
    }
    const parent = entry.parent === undefined ? undefined : groups.get(entry.parent)
    if (parent !== undefined && parent.node !== node) (parent.node.children as ProgressNode[]).push(node)
    else roots.push(node)
  }
  return {
    workflow: view.workflow,
    startedAt: view.runStart === undefined ? undefined : Date.parse(view.runStart.ts),
    endedAt: cancelledAt,
    disposition: view.disposition,
    roots,
  }
}
