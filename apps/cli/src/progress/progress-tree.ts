import type { JournalLine } from '@locus/journal'

/** Where a node of the progress tree stands. */
export type ProgressStatus = 'running' | 'completed' | 'failed' | 'retrying' | 'cancelled'

/** A `parallel()` or `pipeline()` group in the progress tree. */
export interface GroupNode {
  readonly kind: 'group'
  readonly id: string
  readonly groupKind: 'parallel' | 'pipeline'
  readonly label: string | undefined
  readonly total: number
  status: ProgressStatus
  completed: number
  failed: number
  readonly startedAt: number
  endedAt: number | undefined
  /** Keys of child nodes, in the order they appeared. */
  readonly children: string[]
}

/** One logical agent or tool call in the progress tree; its attempts update it in place. */
export interface CallNode {
  readonly kind: 'agent' | 'tool'
  readonly id: string
  /** The agent role or tool name. */
  readonly name: string
  readonly ordinal: string | undefined
  readonly label: string | undefined
  attempt: number
  attempts: number
  status: ProgressStatus
  /** The failure cause, or the retry boundary's cause. */
  detail: string | undefined
  replayed: boolean
  readonly startedAt: number
  endedAt: number | undefined
}

/** A node of the tree. */
export type ProgressNode = GroupNode | CallNode

/**
 * The live state of a run folded from its journal lines: groups with their
 * calls, each call's attempt n of m and status, and the retry boundaries in
 * the order they happened. Pure: feed it lines, read it, render it.
 */
export class ProgressTree {
  workflow: string | undefined
  startedAt: number | undefined
  endedAt: number | undefined
  disposition: string | undefined
  readonly nodes = new Map<string, ProgressNode>()
  /** Keys of the top-level nodes, in order. */
  readonly roots: string[] = []
  /** `[workflow:retry]` messages, oldest first. */
  readonly retryBoundaries: string[] = []

  private attach(key: string, groupId: string | undefined): void {
    const parent = groupId === undefined ? undefined : this.nodes.get(`group:${groupId}`)
    if (parent?.kind === 'group') parent.children.push(key)
    else this.roots.push(key)
  }

  private call(key: string): CallNode | undefined {
    const node = this.nodes.get(key)
    return node?.kind === 'group' ? undefined : node
  }

  /** Folds one journal line into the tree. Unknown and irrelevant lines are ignored. */
  apply(line: JournalLine): void {
    const at = Date.parse(line.ts)
    switch (line.type) {
      case 'run_start':
        this.workflow = line.workflow
        this.startedAt = at
        return
      case 'run_end':
        this.endedAt = at
        this.disposition = line.disposition
        for (const node of this.nodes.values()) {
          if (node.status === 'running' || node.status === 'retrying') {
            node.status = line.disposition === 'cancelled' ? 'cancelled' : node.status
            node.endedAt ??= at
          }
        }
        return
      case 'group_start': {
        const key = `group:${line.groupId}`
        if (this.nodes.has(key)) return
        this.nodes.set(key, { kind: 'group', id: line.groupId, groupKind: line.groupKind, label: line.label, total: line.total, status: 'running', completed: 0, failed: 0, startedAt: at, endedAt: undefined, children: [] })
        this.attach(key, line.parentGroupId)
        return
      }
      case 'group_end': {
        const node = this.nodes.get(`group:${line.groupId}`)
        if (node?.kind !== 'group') return
        node.status = line.outcome === 'completed' ? 'completed' : line.outcome === 'cancelled' ? 'cancelled' : 'failed'
        node.completed = line.completed
        node.failed = line.failed
        node.endedAt = at
        return
      }
      case 'agent_start': {
        const key = `agent:${line.logicalCallId}`
        const existing = this.call(key)
        if (existing === undefined) {
          this.nodes.set(key, { kind: 'agent', id: line.logicalCallId, name: line.agent, ordinal: line.ordinal, label: line.label, attempt: line.attempt, attempts: line.attempts, status: 'running', detail: undefined, replayed: false, startedAt: at, endedAt: undefined })
          this.attach(key, line.groupId)
        } else {
          existing.attempt = line.attempt
          existing.status = 'running'
          existing.endedAt = undefined
        }
        return
      }
      case 'agent_end': {
        const node = this.call(`agent:${line.logicalCallId}`)
        if (node === undefined) return
        node.status = line.status === 'completed' ? 'completed' : 'failed'
        node.detail = line.failureCause
        node.replayed = line.replayed === true
        node.endedAt = at
        return
      }
      case 'error': {
        if (line.logicalCallId === undefined) return
        const node = this.call(`agent:${line.logicalCallId}`)
        if (node === undefined) return
        node.status = 'failed'
        node.detail = line.failureCause ?? 'threw'
        node.endedAt = at
        return
      }
      case 'retry': {
        this.retryBoundaries.push(line.message)
        const node = line.kind === 'agent' ? this.call(`agent:${line.logicalCallId ?? ''}`) : this.call(`tool:${line.callId ?? ''}`)
        if (node === undefined) return
        node.status = 'retrying'
        node.detail = line.cause
        node.endedAt = undefined
        return
      }
      case 'tool_start': {
        const key = `tool:${line.toolCallId}`
        const existing = this.call(key)
        if (existing === undefined) {
          this.nodes.set(key, { kind: 'tool', id: line.toolCallId, name: line.tool, ordinal: line.toolCallId.replace(/^tool-/, ''), label: line.label, attempt: line.attempt, attempts: line.maxAttempts, status: 'running', detail: undefined, replayed: false, startedAt: at, endedAt: undefined })
          this.attach(key, line.groupId)
        } else {
          existing.attempt = line.attempt
          existing.status = 'running'
        }
        return
      }
      case 'tool_end': {
        const node = this.call(`tool:${line.toolCallId}`)
        if (node === undefined) return
        node.status = line.status === 'completed' ? 'completed' : 'failed'
        node.detail = line.status === 'completed' ? undefined : (line.failure?.code ?? line.status)
        node.endedAt = at
        return
      }
      default:
        return
    }
  }
}
