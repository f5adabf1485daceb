import type { FailureStatus } from '@locus/outcome'

/** Object shapes that `classifyOutcome` always fails; a slot holding one never succeeds. */
export type ReturnedFailureShape = { readonly ok: false } | { readonly partial: true } | { readonly status: FailureStatus }

/**
 * What a successful slot can hold: the type a branch or stage returns, minus
 * the union members that are always a returned failure. `{ ok: false }` or
 * `{ status: 'blocked' }` members never reach a success array or the next
 * pipeline stage, so their types do not either.
 *
 * @example
 * ```ts
 * type T = SuccessValue<{ id: string } | { status: 'blocked'; summary: string }> // { id: string }
 * ```
 */
export type SuccessValue<T> = Exclude<T, ReturnedFailureShape>
