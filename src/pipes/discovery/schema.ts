import { type Static, Type as T } from '@sinclair/typebox';
import { StrictObject } from '../../schema/index.js';
import { PostgresSource } from '../sources/index.js';

// `POST .../pipes/schemaDiscovery` takes one source of a kind that offers discovery
// (schema/kinds.ts `SchemaDiscoveryBody`, built from the kinds a Sluice runs).

export const SchemaDiscoveryResult = T.Object({
  fields: T.Array(
    T.Object({
      name: T.String(),
      type: T.String({ description: 'The engine type inferred from the first records' }),
      optional: T.Boolean({ description: 'Missing or null in some record' }),
    }),
  ),
  meta: T.Record(T.String(), T.String(), { description: 'What was read: format, records, file, ...' }),
  records: T.Array(T.Record(T.String(), T.Unknown()), {
    description:
      "Sluice's addition: the first records (at most 10) as the engine reads them with these types; empty for PostgreSQL",
  }),
});

/** The connection fields of a postgres source: no table mappings, no settings. */
export const PostgresConnectionSchema = T.Omit(PostgresSource, ['tableMappings', 'settings'], {
  additionalProperties: false,
});

/** `POST .../pipes/postgresTables` (an addition): a PostgreSQL server to list the tables of. */
export const PostgresTablesBody = StrictObject({
  source: StrictObject({ postgres: PostgresConnectionSchema }),
});
export type PostgresTablesBody = Static<typeof PostgresTablesBody>;

const TableProblem = T.Object({
  message: T.String(),
  replicationModes: T.Array(T.String(), { description: 'The replication modes a pipe meets it in' }),
});

export const PostgresTablesResult = T.Object({
  server: T.Object({ version: T.String(), walLevel: T.String(), mayReplicate: T.Boolean() }),
  problems: T.Array(TableProblem),
  tables: T.Array(
    T.Object({
      schema: T.String(),
      table: T.String(),
      partitioned: T.Boolean(),
      partitions: T.Array(T.String()),
      estimatedRows: T.Union([T.Number(), T.Null()]),
      columns: T.Array(
        T.Object({
          name: T.String(),
          type: T.String({ description: 'The PostgreSQL type (pg_type name; arrays as element[])' }),
          clickhouseType: T.String({ description: 'The type a pipe gives its target column' }),
          nullable: T.Boolean(),
        }),
      ),
      primaryKey: T.Array(T.String()),
      replicaIdentity: T.String({ description: 'default, full, index or nothing' }),
      replicaIdentityIndex: T.Array(T.String()),
      problems: T.Array(TableProblem),
    }),
  ),
  truncated: T.Boolean(),
});

/**
 * `PATCH .../pipesCdcScaling`, as the hosted service bounds it: CPU in whole cores (1 to 32) and
 * memory in multiples of 4 GiB (4 to 128), four GiB per core.
 */
export const CdcScalingBody = StrictObject(
  {
    replicaCpuMillicores: T.Optional(
      T.Integer({ minimum: 1000, maximum: 32000, description: 'Whole cores: a multiple of 1000' }),
    ),
    replicaMemoryGb: T.Optional(
      T.Number({ minimum: 4, maximum: 128, description: 'A multiple of 4, four GiB per core' }),
    ),
  },
  { minProperties: 1 },
);
export type CdcScalingBody = Static<typeof CdcScalingBody>;

export const CdcScalingResult = T.Object({
  replicaCpuMillicores: T.Integer(),
  replicaMemoryGb: T.Number(),
});
export type CdcScaling = Static<typeof CdcScalingResult>;
