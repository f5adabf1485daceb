import { StoreOptionsError } from './store-errors.js'

/** A call id as it may appear in a key: one segment, no separators. */
const CALL_ID = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/

function callPrefix(callId: string): string {
  if (typeof callId !== 'string' || !CALL_ID.test(callId)) {
    throw new StoreOptionsError(`Invalid call id ${JSON.stringify(callId)} for an artifact key: a call id is letters, digits, ".", "_" and "-" (as agent_start's callId shows it).`)
  }
  return `calls/${callId}`
}

/**
 * The keys of the artifacts an execution writes, relative to the execution.
 * Every adapter stores them by these keys; the file store keeps each at the
 * same relative path on disk, so its layout is the one runs were always
 * written in. Nothing outside a store needs a path: it asks for a key.
 *
 * @example
 * ```ts
 * const text = await store.readArtifact({ runId, executionId: runId }, ARTIFACT_KEYS.result)
 * const envelope = await store.readArtifact(ref, ARTIFACT_KEYS.callEnvelope('call-2-a1'))
 * ```
 */
export const ARTIFACT_KEYS = {
  /** The execution's `result.json` (`RunResultSchema`). */
  result: 'result.json',
  /** The outputs README rendered at the end of the execution. */
  outputsReadme: 'outputs/README.md',
  /** Where everything of one call attempt goes: the prefix of its transcript and result keys. */
  call: callPrefix,
  /** The prefix under which a host writes a call attempt's transcript artifacts (`artifacts.write(name, text)`). */
  callTranscript: (callId: string): string => `${callPrefix(callId)}/transcript`,
  /** The prefix of a call attempt's result artifacts. */
  callResult: (callId: string): string => `${callPrefix(callId)}/result`,
  /** A call attempt's transcript as the runtime writes it. */
  callTranscriptFile: (callId: string): string => `${callPrefix(callId)}/transcript/transcript.json`,
  /** A call attempt's result envelope (`locus.agent.run-result.v2`). */
  callEnvelope: (callId: string): string => `${callPrefix(callId)}/result/result.json`,
} as const

/**
 * Where a person finds an artifact, for messages only: the execution's
 * `location` as its store reports it, followed by the artifact's key (a path
 * on the file store, a readable name on the others). Never parsed.
 *
 * @example
 * ```ts
 * artifactLocation('/repo/.locus-pi/runs/run-1', ARTIFACT_KEYS.outputsReadme)
 * // '/repo/.locus-pi/runs/run-1/outputs/README.md'
 * ```
 */
export function artifactLocation(location: string, key: string): string {
  return `${location}/${key}`
}
