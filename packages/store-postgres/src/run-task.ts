/** The graphile-worker task that executes (or resumes) one run. */
export const RUN_TASK = 'locus_run'

/**
 * SQL that queues the run's job again (`$1` the task, `$2` the run id): a job
 * still queued keeps its place, and a job locked by a worker that is handing
 * the run over gets a fresh one behind it.
 */
export const REQUEUE_SQL = `select graphile_worker.add_job($1, json_build_object('runId', $2::text), job_key := $2::text, job_key_mode := 'preserve_run_at')`

/**
 * SQL that queues the job waking a parked run when one of its `sleep()`
 * timers is due (`$1` the task, `$2` the run id, `$3` the timer id, `$4`
 * its dueAt): one job per timer, keyed `<runId>:timer:<timerId>`, so it
 * neither displaces nor is displaced by the run's own job (an answer or a
 * cancel queues that one at once, and whichever comes first wakes the run).
 */
export const TIMER_JOB_SQL = `select graphile_worker.add_job($1, json_build_object('runId', $2::text, 'timerId', $3::text), job_key := $2::text || ':timer:' || $3::text, run_at := $4::timestamptz, job_key_mode := 'replace')`
