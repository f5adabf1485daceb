import { JsonValueSchema, RunGapSchema, SerializedErrorSchema } from '@locus/journal'
import { AnswerOutcomeSchema, RunDispositionSchema } from '@locus/outcome'
import { z } from 'zod'

/** The schema name of a run's `result.json`. */
export const RUN_RESULT_SCHEMA = 'locus.run-result.v1'

/**
 * The body of an execution's `result.json`: the same facts as its `run_end`
 * line, for a reader who has only the file. `ok` is true exactly when the
 * disposition is `completed`; `answerOutcome`, `gaps` and `caveats` were
 * judged once when the run ended (files written before they existed lack them).
 */
export const RunResultSchema = z
  .object({
    schema: z.literal(RUN_RESULT_SCHEMA),
    runId: z.string().min(1),
    executionId: z.string().min(1),
    workflow: z.string().min(1),
    disposition: RunDispositionSchema,
    ok: z.boolean(),
    result: JsonValueSchema,
    error: SerializedErrorSchema.optional(),
    startedAt: z.iso.datetime({ offset: true }),
    endedAt: z.iso.datetime({ offset: true }),
    answerOutcome: AnswerOutcomeSchema.optional(),
    gaps: z.array(RunGapSchema).optional(),
    caveats: z.array(z.string()).optional(),
  })
  .refine((file) => file.ok === (file.disposition === 'completed'), { error: 'ok must be true exactly when disposition is "completed"', path: ['ok'] })
  .meta({ id: 'RunResult' })

/** A parsed `result.json`. */
export type RunResultFile = z.output<typeof RunResultSchema>
