/** One versioned, idempotent step of the store's schema. */
export interface StoreMigration {
  readonly version: number
  readonly name: string
  /** SQL with `$schema` where the schema name goes. */
  readonly sql: string
}

/**
 * The schema, in order. A migration is never edited once released: a change
 * is a new version. Tables carry a `locus_` prefix so they share a database
 * (and a schema) with the outcome metrics of `@locus/partial`.
 */
export const STORE_MIGRATIONS: readonly StoreMigration[] = [
  {
    version: 1,
    name: 'runs, executions, journal lines and artifacts',
    sql: `
      create table $schema.locus_runs (
        run_id text primary key,
        created_at timestamptz not null default clock_timestamp(),
        status text not null default 'running' check (status in ('running', 'completed', 'failed', 'cancelled')),
        updated_at timestamptz not null default clock_timestamp()
      );
      create index locus_runs_created_at on $schema.locus_runs (created_at desc, run_id desc);
      create table $schema.locus_executions (
        run_id text not null references $schema.locus_runs (run_id) on delete cascade,
        execution_id text not null,
        kind text not null check (kind in ('root', 'resume', 'replay', 'child')),
        position bigint generated always as identity,
        created_at timestamptz not null default clock_timestamp(),
        primary key (run_id, execution_id)
      );
      create table $schema.locus_journal (
        run_id text not null,
        execution_id text not null,
        seq bigint not null,
        line jsonb not null,
        primary key (run_id, execution_id, seq),
        foreign key (run_id, execution_id) references $schema.locus_executions (run_id, execution_id) on delete cascade
      );
      create table $schema.locus_artifacts (
        run_id text not null,
        execution_id text not null,
        key text not null,
        content text not null,
        updated_at timestamptz not null default clock_timestamp(),
        primary key (run_id, execution_id, key),
        foreign key (run_id, execution_id) references $schema.locus_executions (run_id, execution_id) on delete cascade
      );
    `,
  },
  {
    version: 2,
    name: 'run leases with epoch fencing, and a cancel request on the run row',
    sql: `
      create table if not exists $schema.locus_leases (
        run_id text primary key,
        owner text,
        epoch bigint not null default 0,
        expires_at timestamptz not null default '-infinity',
        updated_at timestamptz not null default clock_timestamp()
      );
      create index if not exists locus_leases_expires_at on $schema.locus_leases (expires_at) where owner is not null;
      alter table $schema.locus_runs add column if not exists cancel_requested_at timestamptz;
    `,
  },
  {
    version: 3,
    name: 'live workers, and the workflow and input of a queued run',
    sql: `
      create table if not exists $schema.locus_workers (
        worker_id text primary key,
        expires_at timestamptz not null
      );
      alter table $schema.locus_runs add column if not exists workflow text;
      alter table $schema.locus_runs add column if not exists input jsonb;
    `,
  },
  {
    version: 4,
    name: 'answers to deferrals, kept for whichever worker holds the run next',
    sql: `
      create table if not exists $schema.locus_deferred_answers (
        run_id text not null references $schema.locus_runs (run_id) on delete cascade,
        deferred_id text not null,
        answer text not null,
        answered_at timestamptz not null default clock_timestamp(),
        primary key (run_id, deferred_id)
      );
    `,
  },
  {
    version: 5,
    name: "a run's 'waiting' status: parked by its worker until a deferral is answered",
    sql: `
      alter table $schema.locus_runs drop constraint if exists locus_runs_status_check;
      alter table $schema.locus_runs add constraint locus_runs_status_check check (status in ('running', 'waiting', 'completed', 'failed', 'cancelled'));
    `,
  },
  {
    version: 6,
    name: 'the budgets a queued run was given, over the worker defaults',
    sql: `
      alter table $schema.locus_runs add column if not exists budgets jsonb;
    `,
  },
  {
    version: 7,
    name: 'idempotency keys, kept for their window so a restarted server answers a repeat with the same run',
    sql: `
      create table if not exists $schema.locus_idempotency_keys (
        key text primary key,
        fingerprint text not null,
        run_id text not null,
        expires_at_ms bigint not null
      );
      create index if not exists locus_idempotency_keys_expires_at on $schema.locus_idempotency_keys (expires_at_ms);
    `,
  },
  {
    version: 8,
    name: 'who asked for a cancel and why, for the worker to journal as run_cancel_requested',
    sql: `
      alter table $schema.locus_runs add column if not exists cancel_reason text;
      alter table $schema.locus_runs add column if not exists cancel_by text;
    `,
  },
  {
    version: 9,
    name: 'schedules, one row per slot (unique per schedule, so a slot fires once across every process), and slots asked for by hand',
    sql: `
      create table if not exists $schema.locus_schedules (
        schedule_id text primary key,
        definition jsonb not null,
        paused boolean not null,
        registered_at timestamptz not null
      );
      create table if not exists $schema.locus_schedule_slots (
        schedule_id text not null,
        slot text not null,
        outcome text not null check (outcome in ('started', 'skipped-overlap', 'missed', 'paused', 'failed-to-start')),
        source text not null default 'schedule' check (source in ('schedule', 'trigger', 'backfill')),
        record jsonb not null,
        unique (schedule_id, slot)
      );
      create index if not exists locus_schedule_slots_scheduled on $schema.locus_schedule_slots (schedule_id, slot desc) where source = 'schedule';
      create table if not exists $schema.locus_schedule_requests (
        schedule_id text not null,
        slot text not null,
        source text not null check (source in ('trigger', 'backfill')),
        primary key (schedule_id, slot, source)
      );
    `,
  },
  {
    version: 10,
    name: 'flow control: the concurrency keys of a run, its priority and turn, fair lanes, and shared rate-limit buckets',
    sql: `
      alter table $schema.locus_runs add column if not exists priority smallint not null default 0;
      alter table $schema.locus_runs add column if not exists flow_rank double precision;
      alter table $schema.locus_runs add column if not exists queued_reason text;
      alter table $schema.locus_runs add column if not exists admitted_at timestamptz;
      create table if not exists $schema.locus_run_keys (
        run_id text not null references $schema.locus_runs (run_id) on delete cascade,
        key text not null,
        lim integer check (lim is null or lim > 0),
        lane boolean not null default false,
        primary key (run_id, key)
      );
      create index if not exists locus_run_keys_key on $schema.locus_run_keys (key, lane);
      create table if not exists $schema.locus_flow_lanes (
        key text primary key,
        last_rank double precision not null default 0
      );
      create table if not exists $schema.locus_flow_clock (
        id boolean primary key default true check (id),
        virtual_time double precision not null default 0
      );
      insert into $schema.locus_flow_clock (id, virtual_time) values (true, 0) on conflict do nothing;
      create table if not exists $schema.locus_rate_buckets (
        name text primary key,
        window_start_ms bigint not null default 0,
        requests integer not null default 0,
        tokens bigint not null default 0,
        closed_until_ms bigint not null default 0
      );
    `,
  },
  {
    version: 11,
    name: "runs' token streams: each LLM request's deltas at a gap-free offset per run, pruned apart from the journal",
    sql: `
      create table if not exists $schema.locus_streams (
        run_id text primary key references $schema.locus_runs (run_id) on delete cascade,
        next_offset bigint not null default 0,
        first_kept bigint not null default 0,
        ended_at_ms bigint
      );
      create index if not exists locus_streams_ended_at on $schema.locus_streams (ended_at_ms) where ended_at_ms is not null;
      create table if not exists $schema.locus_stream_records (
        run_id text not null references $schema.locus_streams (run_id) on delete cascade,
        stream_offset bigint not null,
        record jsonb not null,
        primary key (run_id, stream_offset)
      );
    `,
  },
  {
    version: 13,
    name: 'a summary row per run, so listings read rows and never a journal line',
    sql: `
      alter table $schema.locus_runs add column if not exists summary jsonb;
      alter table $schema.locus_runs add column if not exists summary_version bigint;
      create index if not exists locus_runs_summary_listing on $schema.locus_runs ((coalesce(summary->>'workflow', workflow)), created_at desc, run_id desc);
    `,
  },
  {
    version: 14,
    name: 'shared rate limits: each limited LLM request of the last minute, for every worker on the database (a sliding minute, not a fixed one)',
    sql: `
      create table if not exists $schema.locus_rate_requests (
        id bigserial primary key,
        limit_name text not null,
        started_ms double precision not null,
        tokens bigint not null default 0
      );
      create index if not exists locus_rate_requests_window on $schema.locus_rate_requests (limit_name, started_ms);
    `,
  },
]

/** The NOTIFY channel of token streams; payloads are `<runId>:<next offset>` only. */
export const STREAM_CHANNEL = 'locus_stream'

/** The NOTIFY channel; payloads are `<runId>:<seq>` only, and readers fetch the lines. */
export const JOURNAL_CHANNEL = 'locus_journal'

/** The NOTIFY channel of kept deferral answers, signals and updates; payloads are the run id only, and readers fetch the answers. */
export const ANSWER_CHANNEL = 'locus_answers'
