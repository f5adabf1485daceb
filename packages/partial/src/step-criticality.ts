// The vocabulary lives in @locus/outcome so the journal can name it too; re-exported here for plans.
export { STEP_CRITICALITIES, StepCriticalitySchema } from '@locus/outcome'
export type { StepCriticality } from '@locus/outcome'
