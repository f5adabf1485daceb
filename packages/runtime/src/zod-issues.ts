import type { z } from 'zod'

/** Formats zod issues as `field.path: message` lines that name what is wrong. */
export function describeZodIssues(error: z.ZodError, root: string): string[] {
  return error.issues.map((issue) => {
    const path = issue.path.length === 0 ? root : `${root}.${issue.path.map(String).join('.')}`
    return `${path}: ${issue.message}`
  })
}
