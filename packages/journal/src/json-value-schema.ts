import type { JsonValue } from '@locus/outcome'
import { z } from 'zod'

/**
 * Any JSON value: what a workflow's input, options and result are once they
 * have crossed the JSON boundary.
 */
export const JsonValueSchema: z.ZodType<JsonValue> = z.json().meta({ id: 'JsonValue' })
