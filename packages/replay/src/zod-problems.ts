import type { z } from 'zod'
import type { ReplayFieldProblem } from './replay-errors.js'

/** Turns zod issues into problems that name their field by dotted path (`root` when the value itself is wrong). */
export function zodProblems(error: z.ZodError, root: string, prefix = ''): ReplayFieldProblem[] {
  return error.issues.map((issue) => {
    const path = issue.path.map(String).join('.')
    const field = path.length === 0 ? root : `${prefix}${path}`
    return { field, message: issue.message }
  })
}
