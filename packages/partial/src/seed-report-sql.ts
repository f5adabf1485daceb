/**
 * The two report queries exactly as the specification writes them, for
 * PostgreSQL, with their fixed 30-day window measured by the database clock.
 * The PostgreSQL store runs them as they are for the default window.
 */
export const SEED_OUTCOME_REPORT_SQL = `select
  count(*) filter (where outcome = 'complete')      as complete,
  count(*) filter (where outcome = 'partial')       as partial,
  count(*) filter (where outcome = 'cannot_answer') as cannot_answer,
  count(*) filter (where outcome = 'failed')        as failed,
  round(avg(correct::int) filter (where outcome = 'complete'), 2) as correct_complete,
  round(avg(correct::int) filter (where outcome = 'partial'), 2)  as correct_partial
  from runs
 where started_at > now() - interval '30 days';`

/** See {@link SEED_OUTCOME_REPORT_SQL}: the gaps-per-tool query, verbatim. */
export const SEED_GAPS_REPORT_SQL = `select tool, count(*) as gaps,
       count(*) filter (where criticality = 'required') as blocking
  from run_gaps
 where created_at > now() - interval '30 days'
 group by 1 order by blocking desc, gaps desc;`

const SEED_WINDOW = "now() - interval '30 days'"

/**
 * The seed query with its window turned into the parameter `$1` and nothing
 * else changed, for a report over a chosen `since`.
 */
export function withSinceParameter(seedSql: string): string {
  if (seedSql.split(SEED_WINDOW).length !== 2) throw new Error(`expected exactly one "${SEED_WINDOW}" in the query`)
  return seedSql.replace(SEED_WINDOW, '$1')
}
