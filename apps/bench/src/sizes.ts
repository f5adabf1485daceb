/**
 * How big each workload is: the sizes the comparison is specified at, the
 * sizes it runs at by default, and the 1% sizes of the smoke run and the CI
 * agreement test.
 */

/** A setting of the comparison (an environment variable) that cannot be used. */
export class CompareSettingError extends Error {
  readonly code = 'BENCH_SETTING_INVALID'
  /** The environment variable at fault. */
  readonly setting: string

  constructor(setting: string, message: string) {
    super(message)
    this.name = 'CompareSettingError'
    this.setting = setting
  }
}

export interface CompareSizes {
  readonly fanOutTasks: number
  readonly journaledCalls: number
  readonly pipelineItems: number
  readonly resumeCalls: number
}

/** The sizes the comparison is specified at. */
export const REQUESTED_SIZES: CompareSizes = { fanOutTasks: 10_000, journaledCalls: 10_000, pipelineItems: 1_000, resumeCalls: 100_000 }

/**
 * Recording 100,000 calls writes 100,000 call directories and LangGraph runs
 * 100,000 checkpointed steps, about 5 minutes of setup and teardown on the
 * two-core machine; the default resume size keeps the whole comparison well
 * within its 10-minute budget when the machine is shared.
 */
export const DEFAULT_RESUME_CALLS = 10_000

/** One hundredth of each requested size, at least one item each. */
export function smokeSizes(): CompareSizes {
  const scale = (size: number): number => Math.max(1, Math.round(size / 100))
  return {
    fanOutTasks: scale(REQUESTED_SIZES.fanOutTasks),
    journaledCalls: scale(REQUESTED_SIZES.journaledCalls),
    pipelineItems: scale(REQUESTED_SIZES.pipelineItems),
    resumeCalls: scale(REQUESTED_SIZES.resumeCalls),
  }
}

/**
 * The sizes of a full run: the requested ones, except resume, which is
 * `LOCUS_BENCH_RESUME_CALLS` when set and {@link DEFAULT_RESUME_CALLS} otherwise.
 */
export function fullSizes(environment: NodeJS.ProcessEnv = process.env): CompareSizes {
  const override = environment.LOCUS_BENCH_RESUME_CALLS
  let resumeCalls = DEFAULT_RESUME_CALLS
  if (override !== undefined && override !== '') {
    const parsed = Number(override)
    if (!Number.isInteger(parsed) || parsed < 1) {
      throw new CompareSettingError('LOCUS_BENCH_RESUME_CALLS', `LOCUS_BENCH_RESUME_CALLS must be a whole number of calls >= 1, got "${override}". Unset it to use ${DEFAULT_RESUME_CALLS}.`)
    }
    resumeCalls = parsed
  }
  return { ...REQUESTED_SIZES, resumeCalls }
}
