import type { Db } from './db.js';

interface Migration {
  version: number;
  name: string;
  sql: string;
}

/**
 * Versioned migrations, applied in order at start. Never edit a released migration: add a new one.
 * Timestamps are written by the application (millisecond precision, as the API returns them).
 */
export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'identity and pipes',
    sql: `
      create table organizations (
        id uuid primary key,
        name text not null unique,
        operator boolean not null default false,
        created_at timestamptz not null
      );
      create table services (
        id uuid primary key,
        organization_id uuid not null references organizations(id) on delete cascade,
        name text not null,
        kind text not null,
        connection jsonb not null default '{}'::jsonb,
        connection_secrets text,
        created_at timestamptz not null,
        unique (organization_id, name)
      );
      create table api_keys (
        id text primary key,
        organization_id uuid not null references organizations(id) on delete cascade,
        name text not null,
        role text not null,
        secret_hash text not null,
        created_at timestamptz not null,
        revoked_at timestamptz
      );
      create index api_keys_organization on api_keys (organization_id, created_at);
      create table teams (
        id uuid primary key,
        organization_id uuid not null references organizations(id) on delete cascade,
        name text not null,
        created_at timestamptz not null,
        unique (organization_id, name)
      );
      create table users (
        id uuid primary key,
        team_id uuid not null references teams(id) on delete cascade,
        name text not null,
        created_at timestamptz not null,
        unique (team_id, name)
      );
      create table access_tokens (
        id uuid primary key,
        user_id uuid not null references users(id) on delete cascade,
        name text not null,
        digest text not null unique,
        created_at timestamptz not null,
        revoked_at timestamptz
      );
      create table pipes (
        id uuid primary key,
        organization_id uuid not null references organizations(id) on delete cascade,
        service_id uuid not null references services(id) on delete cascade,
        name text not null,
        source_kind text not null,
        state text not null,
        state_reason text,
        config jsonb not null,
        secrets text,
        created_at timestamptz not null,
        updated_at timestamptz not null
      );
      create index pipes_service on pipes (service_id, created_at);
      create table pipe_state_transitions (
        id bigserial primary key,
        pipe_id uuid not null references pipes(id) on delete cascade,
        from_state text,
        to_state text not null,
        reason text,
        at timestamptz not null
      );
      create index pipe_state_transitions_pipe on pipe_state_transitions (pipe_id, id);
    `,
  },
  {
    version: 2,
    name: 'store metadata',
    sql: 'create table sluice_meta (name text primary key, value text not null);',
  },
  {
    version: 3,
    name: 'pipe progress and checkpoints',
    sql: `
      create table pipe_progress (
        pipe_id uuid primary key references pipes(id) on delete cascade,
        last_key text,
        files_done bigint not null default 0,
        files_pending bigint not null default 0,
        rows_written bigint not null default 0,
        bytes_written bigint not null default 0,
        bad_records bigint not null default 0,
        last_insert_at timestamptz,
        last_error text,
        last_error_at timestamptz,
        updated_at timestamptz not null
      );
      create table pipe_batches (
        pipe_id uuid not null references pipes(id) on delete cascade,
        seq bigint not null,
        slot integer not null,
        files jsonb not null,
        skipped jsonb not null default '[]'::jsonb,
        staged boolean not null default false,
        rows bigint not null default 0,
        bad_records bigint not null default 0,
        primary key (pipe_id, seq)
      );
    `,
  },
  {
    version: 4,
    name: 'alerts area: webhooks, sources, dashboards, alerts',
    sql: `
      create table webhooks (
        id text primary key,
        team_id uuid not null references teams(id) on delete cascade,
        name text not null,
        url text not null,
        description text,
        body text,
        secrets text,
        created_at timestamptz not null,
        updated_at timestamptz not null
      );
      create index webhooks_team on webhooks (team_id, created_at);
      create table alert_sources (
        id text primary key,
        team_id uuid not null references teams(id) on delete cascade,
        name text not null,
        kind text not null,
        service_id uuid not null references services(id) on delete cascade,
        database_name text not null,
        table_name text not null,
        timestamp_expression text not null,
        created_at timestamptz not null,
        updated_at timestamptz not null
      );
      create index alert_sources_team on alert_sources (team_id, created_at);
      create table dashboards (
        id text primary key,
        team_id uuid not null references teams(id) on delete cascade,
        name text not null,
        tags jsonb not null,
        tiles jsonb not null,
        created_at timestamptz not null,
        updated_at timestamptz not null
      );
      create index dashboards_team on dashboards (team_id, created_at);
      create table alerts (
        id text primary key,
        team_id uuid not null references teams(id) on delete cascade,
        name text,
        message text,
        threshold double precision not null,
        threshold_max double precision,
        interval text not null,
        threshold_type text not null,
        source text not null,
        state text not null,
        dashboard_id text not null references dashboards(id) on delete cascade,
        tile_id text not null,
        webhook_id text not null references webhooks(id),
        silenced jsonb,
        created_at timestamptz not null,
        updated_at timestamptz not null
      );
      create index alerts_team on alerts (team_id, created_at);
      create index alerts_dashboard on alerts (dashboard_id, tile_id);
      create index alerts_webhook on alerts (webhook_id);
    `,
  },
  {
    version: 5,
    name: 'alert evaluation: windows and history',
    sql: `
      alter table alerts add column evaluated_until timestamptz;
      create table alert_history (
        id bigserial primary key,
        alert_id text not null references alerts(id) on delete cascade,
        window_start timestamptz not null,
        window_end timestamptz not null,
        group_key text,
        state text,
        value double precision,
        threshold double precision not null,
        error text,
        created_at timestamptz not null
      );
      create index alert_history_alert on alert_history (alert_id, window_start);
      create index alert_history_created on alert_history (created_at);
    `,
  },
  {
    version: 6,
    name: 'alert notifications: outbox',
    sql: `
      alter table alerts add column last_notified_at timestamptz;
      create table alert_outbox (
        id bigserial primary key,
        alert_id text not null references alerts(id) on delete cascade,
        team_id uuid not null,
        webhook_id text not null,
        idempotency_key text not null unique,
        variables jsonb not null,
        attempts integer not null default 0,
        next_attempt_at timestamptz not null,
        delivered_at timestamptz,
        failed_at timestamptz,
        last_error text,
        created_at timestamptz not null
      );
      create index alert_outbox_due on alert_outbox (next_attempt_at) where delivered_at is null and failed_at is null;
    `,
  },
  {
    version: 7,
    name: 'alert history: one row per failing window, with its attempts',
    sql: `
      alter table alert_history add column attempts integer not null default 1;
    `,
  },
  {
    version: 8,
    name: 'pipe progress for every source kind: a batch claims a range, a pipe keeps a cursor',
    sql: `
      alter table pipe_batches rename column files to range;
      update pipe_batches set range = jsonb_build_object('files', range);
      alter table pipe_batches add column files_count bigint not null default 0;
      alter table pipe_batches add column bytes bigint not null default 0;
      update pipe_batches b set files_count = jsonb_array_length(b.range->'files'),
        bytes = coalesce((select sum((f->>'size')::bigint) from jsonb_array_elements(b.range->'files') f), 0);
      alter table pipe_progress add column cursor jsonb;
      update pipe_progress set cursor = to_jsonb(last_key) where last_key is not null;
      alter table pipe_progress drop column last_key;
    `,
  },
  {
    version: 9,
    name: 'what a deleted pipe still holds at its source, kept until it is given back',
    sql: `
      create table source_cleanups (
        pipe_id uuid primary key,
        pipe jsonb not null,
        attempts integer not null default 0,
        next_attempt_at timestamptz not null,
        last_error text,
        created_at timestamptz not null
      );
      create index source_cleanups_due on source_cleanups (next_attempt_at);
    `,
  },
  {
    version: 10,
    name: 'the resources given to the database pipes of a service (pipesCdcScaling)',
    sql: `
      create table cdc_scaling (
        service_id uuid primary key references services(id) on delete cascade,
        replica_cpu_millicores integer not null,
        replica_memory_gb double precision not null,
        updated_at timestamptz not null
      );
    `,
  },
  {
    version: 11,
    name: "the code of a pipe's last error (lastErrorCode)",
    // Errors recorded before keep a null code: which condition they were is not known.
    sql: 'alter table pipe_progress add column last_error_code text;',
  },
  {
    version: 12,
    name: "the code of an alert window's failed evaluation (history's errorCode)",
    // Failures recorded before keep a null code: which condition they were is not known.
    sql: 'alter table alert_history add column error_code text;',
  },
  {
    version: 13,
    name: 'browser sign-in sessions of the console (issue 38)',
    // The cookie's value is never stored, only its keyed digest (as access tokens' digests).
    sql: `
      create table console_sessions (
        id uuid primary key,
        digest text not null unique,
        key_id text not null references api_keys(id) on delete cascade,
        team_id uuid references teams(id) on delete cascade,
        user_id uuid references users(id) on delete cascade,
        token_id uuid references access_tokens(id) on delete cascade,
        created_at timestamptz not null,
        expires_at timestamptz not null,
        signed_out_at timestamptz
      );
      create index console_sessions_expiry on console_sessions (expires_at);
    `,
  },
  {
    version: 14,
    name: "room in alerts' pages for each tick's update of their state (issue 39)",
    // Every tick rewrites each alert's state and evaluated_until. With room left in the page the new
    // version stays there without touching the four indexes (a HOT update): a tick's update of
    // 20,000 alerts in PGlite took 1.7-2.2 s with full pages and 0.5-0.6 s with 60% fill. Pages
    // written before keep their fill until their rows move on a later update.
    sql: 'alter table alerts set (fillfactor = 60);',
  },
  {
    version: 15,
    name: 'alert history without a foreign-key check per row (issue 39)',
    // A foreign key checks each inserted row by locking its alert (a query and a tuple write per
    // row): a quarter of writing a tick's 20,000 history rows in PGlite. The history is written
    // only for alerts present (EvaluationRepo.addHistory filters in the insert itself), and a
    // trigger deletes an alert's history with it, as the cascade did, alerts deleted by their
    // team's or dashboard's cascade included.
    sql: `
      alter table alert_history drop constraint if exists alert_history_alert_id_fkey;
      create function alert_history_follow_delete() returns trigger language plpgsql as $$
      begin
        delete from alert_history where alert_id = old.id;
        return old;
      end $$;
      create trigger alert_history_follows after delete on alerts
        for each row execute function alert_history_follow_delete();
    `,
  },
  {
    version: 16,
    name: 'alert history pruned along its ids (issue 39)',
    // The index on created_at served only the prune each tick, and cost every history row an
    // index entry: 7-14% of writing a tick's rows in PGlite. The prune walks the primary key
    // from the oldest row instead (EvaluationRepo.pruneHistory).
    sql: 'drop index if exists alert_history_created;',
  },
  {
    version: 17,
    name: "a batch's insert into a destination with views began",
    // A destination with materialized views (or Null) gets its staged batch by an insert, which a
    // stop in its midst leaves in an unknown state: the next run inserts the batch again and says
    // so (src/pipes/runtime/batch.ts).
    sql: 'alter table pipe_batches add column inserting boolean not null default false;',
  },
];

// Any constant works; it keeps two nodes starting together from migrating at once.
const MIGRATION_LOCK = 7_305_112;

export async function migrate(db: Db): Promise<number[]> {
  await db.query(
    'create table if not exists sluice_migrations (version integer primary key, name text not null, applied_at timestamptz not null)',
  );
  return db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    const rows = await tx.query<{ version: number }>('select version from sluice_migrations');
    const applied = new Set(rows.map((row) => row.version));
    const done: number[] = [];
    for (const migration of MIGRATIONS) {
      if (applied.has(migration.version)) continue;
      await tx.exec(migration.sql);
      await tx.query('insert into sluice_migrations (version, name, applied_at) values ($1, $2, $3)', [
        migration.version,
        migration.name,
        new Date(),
      ]);
      done.push(migration.version);
    }
    return done;
  });
}
