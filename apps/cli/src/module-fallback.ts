import { register } from 'node:module'

/**
 * The packages a workflow file may import without installing them itself:
 * when its own project cannot resolve them, `locus` lends its copies.
 */
export const LENT_PACKAGES = ['@locus/runtime', '@locus/partial', '@locus/outcome', '@locus/journal', 'zod'] as const

// Runs in Node's loader thread, so it is plain JavaScript handed over as a data: URL.
const FALLBACK_HOOKS = `
let fallbackParent
let lent = []
export async function initialize(data) {
  fallbackParent = data.fallbackParent
  lent = data.lent
}
function isLent(specifier) {
  return lent.some((name) => specifier === name || specifier.startsWith(name + '/'))
}
export async function resolve(specifier, context, nextResolve) {
  try {
    return await nextResolve(specifier, context)
  } catch (error) {
    if (error && error.code === 'ERR_MODULE_NOT_FOUND' && isLent(specifier) && context.parentURL !== fallbackParent) {
      return nextResolve(specifier, { ...context, parentURL: fallbackParent })
    }
    throw error
  }
}
`

let registered = false

/**
 * Lets ES-module workflow files import {@link LENT_PACKAGES} even where their
 * own directory has no `node_modules` (a file made by `locus init` in a fresh
 * folder, say): a resolution that fails is retried from the CLI's own
 * location. Resolution that succeeds is never changed. Idempotent.
 */
export function registerModuleFallback(): void {
  if (registered) return
  registered = true
  register(`data:text/javascript,${encodeURIComponent(FALLBACK_HOOKS)}`, {
    parentURL: import.meta.url,
    data: { fallbackParent: import.meta.url, lent: [...LENT_PACKAGES] },
  })
}
