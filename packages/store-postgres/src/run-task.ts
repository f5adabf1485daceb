/** The graphile-worker task that executes (or resumes) one run. */
export const RUN_TASK = 'locus_run'

/**
 * SQL that queues the run's job again (`$1` the task, `$2` the run id): a job
 * still queued keeps its place, and a job locked by a worker that is handing
 * the run over gets a fresh one behind it.
 */
export const REQUEUE_SQL = `select graphile_worker.add_job($1, json_build_object('runId', $2::text), job_key := $2::text, job_key_mode := 'preserve_run_at')`
