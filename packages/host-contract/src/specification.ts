import { HOST_SPECIFICATION_VERSION } from './agent-host.js'

function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : value === null ? 'null' : typeof value
}

/**
 * What keeps `value` from being an {@link AgentHost} a runtime of this
 * contract may call, as one sentence naming the field and the fix; `undefined`
 * when it is one. A host must have `openSession()`, and a `specificationVersion`
 * that is absent or `'v1'`.
 *
 * @example
 * ```ts
 * hostSpecificationProblem({ name: 'x', specificationVersion: 'v2', openSession() {} })
 * // 'host "x" implements host contract "v2", but this runtime implements "v1": ...'
 * ```
 */
export function hostSpecificationProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || typeof (value as { openSession?: unknown }).openSession !== 'function') {
    return 'host must be an AgentHost (an object with openSession())'
  }
  const { name, specificationVersion } = value as { name?: unknown; specificationVersion?: unknown }
  if (specificationVersion === undefined || specificationVersion === HOST_SPECIFICATION_VERSION) return undefined
  const which = typeof name === 'string' ? `host "${name}"` : 'the host'
  return (
    `${which} implements host contract ${describe(specificationVersion)}, but this runtime implements "${HOST_SPECIFICATION_VERSION}": ` +
    `use a host built for "${HOST_SPECIFICATION_VERSION}" or a runtime that supports ${describe(specificationVersion)}`
  )
}
