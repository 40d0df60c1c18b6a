import type { Queryable } from './db.js';

/** A pipe as stored: the public configuration as JSON, the secrets sealed apart from it. */
export interface PipeRow {
  id: string;
  organizationId: string;
  serviceId: string;
  name: string;
  sourceKind: string;
  state: string;
  stateReason: string | null;
  config: Record<string, unknown>;
  /** AES-GCM sealed JSON of the secrets taken out of `config`; null when the pipe has none. */
  secrets: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface StateTransition {
  fromState: string | null;
  toState: string;
  reason: string | null;
  at: Date;
}

/** A pipe to create and its first state transition (PipesRepo.insertMany). */
export interface NewPipe {
  pipe: PipeRow;
  first: StateTransition;
}

const PIPE_COLUMNS = `id, organization_id, service_id, name, source_kind, state, state_reason, config, secrets,
  created_at, updated_at`;

/**
 * Pipe rows as one array a column (as evaluation-repo.ts writes alert history): the statement's
 * text is the same whatever the number of rows.
 */
const PIPE_ARRAYS = `select * from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[],
    $7::text[], $8::jsonb[], $9::text[], $10::timestamptz[], $11::timestamptz[]) as p(${PIPE_COLUMNS})`;

/** `rows` as one array a column: `columns(rows)[c][r]` is `rows[r][c]`. */
function columns(rows: readonly unknown[][]): unknown[][] {
  return (rows[0] ?? []).map((_, column) => rows.map((row) => row[column]));
}

/** A pipe's values in the order of PIPE_COLUMNS. */
function pipeValues(pipe: PipeRow): unknown[] {
  return [
    pipe.id,
    pipe.organizationId,
    pipe.serviceId,
    pipe.name,
    pipe.sourceKind,
    pipe.state,
    pipe.stateReason,
    JSON.stringify(pipe.config),
    pipe.secrets,
    pipe.createdAt,
    pipe.updatedAt,
  ];
}

const PIPE = `id, organization_id as "organizationId", service_id as "serviceId", name, source_kind as "sourceKind",
  state, state_reason as "stateReason", config, secrets, created_at as "createdAt", updated_at as "updatedAt"`;

export class PipesRepo {
  constructor(private readonly db: Queryable) {}

  /**
   * A new pipe and its first state transition in one statement: a lone create costs PGlite one
   * parse, plan and round trip instead of two. The transition's foreign key is checked at the
   * statement's end, after the pipe row exists.
   */
  async insert(pipe: PipeRow, first: StateTransition): Promise<void> {
    const values = pipeValues(pipe);
    await this.db.query(
      `with created as (
         insert into pipes (${PIPE_COLUMNS})
           values ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11)
         returning id)
       insert into pipe_state_transitions (pipe_id, from_state, to_state, reason, at)
         select id, $12, $13, $14, $15 from created`,
      [...values, first.fromState, first.toState, first.reason, first.at],
    );
  }

  /**
   * New pipes, each with its first state transition: two statements for a group commit's creates
   * (src/store/group-commit.ts) instead of one each. Each statement costs PGlite more than the
   * rows in it (bench/api.ts); two took it less than one statement that inserts both tables
   * through a common table expression. One create alone is `insert`.
   */
  async insertMany(creates: readonly NewPipe[]): Promise<void> {
    const [only] = creates;
    if (creates.length <= 1) return only && this.insert(only.pipe, only.first);
    await this.db.query(
      `insert into pipes (${PIPE_COLUMNS}) ${PIPE_ARRAYS}`,
      columns(creates.map(({ pipe }) => pipeValues(pipe))),
    );
    await this.db.query(
      `insert into pipe_state_transitions (pipe_id, from_state, to_state, reason, at)
         select * from unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::timestamptz[])`,
      columns(
        creates.map(({ pipe, first }) => [pipe.id, first.fromState, first.toState, first.reason, first.at]),
      ),
    );
  }

  async list(serviceId: string): Promise<PipeRow[]> {
    return this.db.query<PipeRow>(`select ${PIPE} from pipes where service_id = $1 order by created_at, id`, [
      serviceId,
    ]);
  }

  async get(
    serviceId: string,
    id: string,
    options: { forUpdate?: boolean } = {},
  ): Promise<PipeRow | undefined> {
    const lock = options.forUpdate ? ' for update' : '';
    const rows = await this.db.query<PipeRow>(
      `select ${PIPE} from pipes where service_id = $1 and id = $2${lock}`,
      [serviceId, id],
    );
    return rows[0];
  }

  async getById(id: string, options: { forUpdate?: boolean } = {}): Promise<PipeRow | undefined> {
    const lock = options.forUpdate ? ' for update' : '';
    return (await this.db.query<PipeRow>(`select ${PIPE} from pipes where id = $1${lock}`, [id]))[0];
  }

  /** Which of `ids` name no pipe any more (deleted, perhaps by another node). */
  async missing(ids: readonly string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.query<{ id: string }>(
      `select asked.id::text as id from unnest($1::uuid[]) as asked(id)
        where not exists (select 1 from pipes where pipes.id = asked.id)`,
      [ids],
    );
    return rows.map((row) => row.id);
  }

  async idsInStates(states: readonly string[], kinds?: readonly string[]): Promise<string[]> {
    const rows = await this.db.query<{ id: string }>(
      `select id from pipes where state = any($1::text[]) and ($2::text[] is null or source_kind = any($2::text[]))
        order by created_at`,
      [states, kinds ?? null],
    );
    return rows.map((row) => row.id);
  }

  /** Writes the whole mutable part of a pipe (name, configuration, secrets, state). */
  async update(pipe: PipeRow): Promise<void> {
    await this.db.query(
      `update pipes set name = $2, state = $3, state_reason = $4, config = $5::jsonb, secrets = $6, updated_at = $7
        where id = $1`,
      [
        pipe.id,
        pipe.name,
        pipe.state,
        pipe.stateReason,
        JSON.stringify(pipe.config),
        pipe.secrets,
        pipe.updatedAt,
      ],
    );
  }

  async delete(id: string): Promise<void> {
    await this.db.query('delete from pipes where id = $1', [id]);
  }

  async recordTransition(pipeId: string, transition: StateTransition): Promise<void> {
    await this.db.query(
      'insert into pipe_state_transitions (pipe_id, from_state, to_state, reason, at) values ($1, $2, $3, $4, $5)',
      [pipeId, transition.fromState, transition.toState, transition.reason, transition.at],
    );
  }

  async transitions(pipeId: string): Promise<StateTransition[]> {
    return this.db.query<StateTransition>(
      `select from_state as "fromState", to_state as "toState", reason, at
         from pipe_state_transitions where pipe_id = $1 order by id`,
      [pipeId],
    );
  }
}
