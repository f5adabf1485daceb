import {
  type CallView,
  type ChildCallView,
  type DeferralView,
  type GroupView,
  type JournalLine,
  type LlmAttemptLine,
  type RunView,
  createRunView,
} from '@locus/journal'
import { type RunResultFile, RunResultSchema } from '@locus/runtime'
import { ARTIFACT_KEYS, type ExecutionInfo, type RunStore } from '@locus/store'

/** One deferral of an execution: its opening line and, once answered, how it settled (the run view's fold). */
export type DeferralModel = DeferralView

/** One execution as the inspector reads it: every line, folded with every call kept. */
export interface ExecutionModel {
  readonly info: ExecutionInfo
  readonly view: RunView
  readonly lines: readonly JournalLine[]
  readonly resultFile: RunResultFile | undefined
  /** `llm_attempt` lines by the agent attempt (`callId`) they belong to. */
  readonly llm: ReadonlyMap<string, LlmAttemptLine[]>
  /** Tool calls a child agent made, by the agent attempt (`callId`) that made them. */
  readonly toolsOfAttempt: ReadonlyMap<string, CallView[]>
  /** Deferrals by the tool call (`toolCallId`) that opened them. */
  readonly deferralsOfTool: ReadonlyMap<string, DeferralModel[]>
  readonly deferrals: readonly DeferralModel[]
}

/** Reads one execution's journal and result file into an {@link ExecutionModel}. */
export async function readExecutionModel(store: RunStore, info: ExecutionInfo): Promise<ExecutionModel> {
  return foldInto(store, info, createRunView({ keep: 'all' }), [], new Map())
}

/**
 * The model of `earlier`'s execution as it stands now: only the lines written
 * after the ones `earlier` folded are read, and applied to its view, so a
 * live execution's page costs what it gained since the last one, not its
 * whole journal. `earlier` is superseded: its view and lines move on with
 * the new model (a render that still holds it shows newer lines, never
 * fewer).
 */
export async function refreshExecutionModel(store: RunStore, earlier: ExecutionModel): Promise<ExecutionModel> {
  return foldInto(store, earlier.info, earlier.view, earlier.lines as JournalLine[], earlier.llm as Map<string, LlmAttemptLine[]>)
}

async function foldInto(store: RunStore, info: ExecutionInfo, view: RunView, lines: JournalLine[], llm: Map<string, LlmAttemptLine[]>): Promise<ExecutionModel> {
  for await (const line of store.readLines(info, { afterSeq: view.lastSeq })) {
    view.apply(line)
    lines.push(line)
    if (line.type === 'llm_attempt') {
      const list = llm.get(line.callId)
      if (list === undefined) llm.set(line.callId, [line])
      else list.push(line)
    }
  }
  let resultFile: RunResultFile | undefined
  const text = await store.readArtifact(info, ARTIFACT_KEYS.result)
  if (text !== undefined) {
    try {
      const parsed = RunResultSchema.safeParse(JSON.parse(text))
      if (parsed.success) resultFile = parsed.data
    } catch {
      // Being written: the journal tells the story.
    }
  }
  const toolsOfAttempt = new Map<string, CallView[]>()
  for (const call of view.calls()) {
    if (call.kind !== 'tool' || call.parentCallId === undefined) continue
    const list = toolsOfAttempt.get(call.parentCallId)
    if (list === undefined) toolsOfAttempt.set(call.parentCallId, [call])
    else list.push(call)
  }
  const deferrals = [...view.deferrals().values()]
  const deferralsOfTool = new Map<string, DeferralModel[]>()
  for (const deferral of deferrals) {
    const list = deferralsOfTool.get(deferral.open.toolCallId)
    if (list === undefined) deferralsOfTool.set(deferral.open.toolCallId, [deferral])
    else list.push(deferral)
  }
  return { info, view, lines, resultFile, llm, toolsOfAttempt, deferralsOfTool, deferrals }
}

/** A node of the timeline: a call, a spawned child workflow, or a group with its slots. */
export type TimelineNode =
  | { readonly kind: 'call'; readonly seq: number; readonly call: CallView }
  | { readonly kind: 'child'; readonly seq: number; readonly child: ChildCallView }
  | { readonly kind: 'group'; readonly seq: number; readonly group: GroupView; readonly slots: readonly SlotModel[] }

/** How one slot of a group stands. Three looks: completed, failed, not dispatched; and two while it runs. */
export type SlotState = 'completed' | 'failed' | 'not-dispatched' | 'running' | 'waiting'

export interface SlotModel {
  readonly index: number
  readonly state: SlotState
  readonly nodes: readonly TimelineNode[]
}

/** The slot index of `id` (an ordinal or a nested group id) directly under group `groupId`: `1[2].1` is slot 2 of group `1`. */
export function slotIndexOf(id: string, groupId: string): number | undefined {
  const prefix = `${groupId}[`
  if (!id.startsWith(prefix)) return undefined
  const close = id.indexOf(']', prefix.length)
  if (close < 0) return undefined
  const index = Number(id.slice(prefix.length, close))
  return Number.isInteger(index) && index >= 0 ? index : undefined
}

function outcomeOk(node: TimelineNode, view: RunView): boolean | undefined {
  if (node.kind === 'call') {
    const outcome = view.outcomeOf(node.call)
    return outcome === 'unfinished' ? undefined : outcome === 'completed'
  }
  if (node.kind === 'child') {
    const last = node.child.attempts.at(-1)
    return last === undefined || last.status === 'running' ? undefined : last.status === 'completed'
  }
  const end = node.group.end
  return end === undefined ? undefined : end.outcome === 'completed'
}

/**
 * The run's timeline: top-level calls, spawns and groups in the order they
 * started; each group with every slot in order. A slot with no recorded call
 * was failed before its call started or never dispatched; groups dispatch in
 * input order, so the last `notDispatched` of those are the undispatched ones.
 */
export function buildTimeline(model: ExecutionModel): TimelineNode[] {
  const view = model.view
  const groups = view.groups()
  const byGroup = new Map<string | undefined, TimelineNode[]>()
  const add = (groupId: string | undefined, node: TimelineNode): void => {
    const list = byGroup.get(groupId)
    if (list === undefined) byGroup.set(groupId, [node])
    else list.push(node)
  }
  const known = new Set(groups.map((group) => group.groupId))
  for (const call of view.calls()) {
    if (call.kind === 'tool' && call.parentCallId !== undefined) continue
    add(call.groupId !== undefined && known.has(call.groupId) ? call.groupId : undefined, { kind: 'call', seq: call.firstSeq, call })
  }
  for (const child of view.children()) add(child.groupId !== undefined && known.has(child.groupId) ? child.groupId : undefined, { kind: 'child', seq: child.firstSeq, child })
  const groupNodes = new Map<string, TimelineNode[]>()
  const build = (group: GroupView): TimelineNode & { kind: 'group' } => {
    const members = [...(byGroup.get(group.groupId) ?? []), ...(groupNodes.get(group.groupId) ?? [])].sort((left, right) => left.seq - right.seq)
    const total = group.start?.total ?? group.end?.total ?? 0
    const slotNodes: TimelineNode[][] = Array.from({ length: total }, () => [])
    for (const node of members) {
      const id = node.kind === 'call' ? node.call.kind === 'agent' ? node.call.ordinal : node.call.ordinal : node.kind === 'child' ? node.child.ordinal : node.group.groupId
      const index = id === undefined ? undefined : slotIndexOf(id, group.groupId)
      if (index !== undefined && index < total) slotNodes[index]?.push(node)
    }
    const end = group.end
    const empty = slotNodes.map((nodes, index) => (nodes.length === 0 ? index : -1)).filter((index) => index >= 0)
    const notDispatched = new Set(end === undefined ? [] : empty.slice(Math.max(0, empty.length - end.notDispatched)))
    // The journal counts failed slots but does not name them: a slot may catch its call's failure. Slots
    // with a failed call take the failures first, in order; what is left falls on dispatched slots that
    // recorded no call (failed before their first line).
    let failures = end?.failed ?? 0
    const states: SlotState[] = slotNodes.map((nodes) => {
      if (nodes.length === 0) return 'waiting'
      const results = nodes.map((node) => outcomeOk(node, view))
      if (end === undefined) return results.some((result) => result === undefined) ? 'running' : results.every((result) => result === true) ? 'completed' : 'failed'
      if (results.every((result) => result === true) || failures === 0) return 'completed'
      failures -= 1
      return 'failed'
    })
    const slots = slotNodes.map((nodes, index): SlotModel => {
      if (nodes.length > 0 || end === undefined) return { index, state: states[index] ?? 'waiting', nodes }
      if (notDispatched.has(index)) return { index, state: 'not-dispatched', nodes }
      if (failures > 0) {
        failures -= 1
        return { index, state: 'failed', nodes }
      }
      return { index, state: 'completed', nodes }
    })
    return { kind: 'group', seq: group.start?.seq ?? group.end?.seq ?? 0, group, slots }
  }
  // Nested groups first (deepest ids are longest), so each parent finds its children built.
  const ordered = [...groups].sort((left, right) => right.groupId.length - left.groupId.length)
  const roots: TimelineNode[] = [...(byGroup.get(undefined) ?? [])]
  for (const group of ordered) {
    const node = build(group)
    const parent = group.start?.parentGroupId
    if (parent !== undefined && known.has(parent)) {
      const list = groupNodes.get(parent)
      if (list === undefined) groupNodes.set(parent, [node])
      else list.push(node)
    } else roots.push(node)
  }
  return roots.sort((left, right) => left.seq - right.seq)
}

/** Calls in a node, for paging. */
export function countCalls(node: TimelineNode): number {
  if (node.kind !== 'group') return 1
  let count = 0
  for (const slot of node.slots) for (const inner of slot.nodes) count += countCalls(inner)
  return count
}

