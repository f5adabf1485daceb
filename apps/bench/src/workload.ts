/**
 * A workload is the same work given to every system: one implementation per
 * system with the same semantics, an expected tally they must all agree on,
 * and a note where a system cannot express the work at all.
 */
import type { Tally } from './tally.js'

/** The systems compared, in the order their rows are printed. */
export const SYSTEMS = ['Locus', 'raw floor', 'Effect', 'LangGraph.js', 'Mastra'] as const
export type SystemName = (typeof SYSTEMS)[number]

/** One way of doing the workload that is timed. */
export interface MeasuredImplementation {
  readonly system: SystemName
  /** The row's name in the tables; unique within the workload. */
  readonly name: string
  /** What a reader must know about what this row does (shown under the table). */
  readonly note?: string
  /** Runs the whole workload once and reports what came out. */
  readonly run: () => Promise<Tally>
}

/** A system that is not timed on this workload, and why. */
export interface UnmeasuredImplementation {
  readonly system: SystemName
  readonly name: string
  readonly reason: string
}

export type Implementation = MeasuredImplementation | UnmeasuredImplementation

/** True for a row that is timed. */
export function isMeasured(implementation: Implementation): implementation is MeasuredImplementation {
  return 'run' in implementation
}

/** Everything needed to run, check and report one workload. */
export interface Workload {
  readonly id: string
  readonly title: string
  /** What is done, in one paragraph of Markdown. */
  readonly description: string
  /** Items one run covers: per-item figures divide by it. */
  readonly items: number
  /** What item the per-item figures are per ("task", "call", "item"). */
  readonly unit: string
  readonly expected: Tally
  /** The Locus row that other rows' ratios are taken against. */
  readonly locusName: string
  readonly implementations: readonly Implementation[]
  /** Prepares what the runs read (for example a recorded run); called once before any run. */
  readonly setup?: () => Promise<void>
  /** Removes what the workload wrote. */
  readonly teardown?: () => void
  /** Said once under the table, for example when the size was reduced. */
  readonly footnote?: string
}
