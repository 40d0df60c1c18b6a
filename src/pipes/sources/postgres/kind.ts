import { BadRequestError, type Problem, ValidationError } from '../../../errors.js';
import { canModifyTableMappings, type PipeState } from '../../state.js';
import type {
  ChecksChanges,
  CleansUpOnDelete,
  ExplainsRunFailure,
  ReportsIdleStatus,
  ReportsStatus,
  SharesCdcCapacity,
  SourceConnector,
  WritesItsOwnTables,
} from '../contract.js';
import type { SourceKind } from '../kind.js';
import { discoverPostgres } from './catalog/index.js';
import { changedPostgresProblems, postgresProblems, postgresRunFailure } from './checks/index.js';
import {
  FIXED_POSTGRES_SETTINGS,
  FIXED_SETTING_DEFAULTS,
  POSTGRES_IMMUTABLE,
  POSTGRES_SERVER_FIELDS,
  PostgresPatch,
  PostgresSource,
  type TableMappingConfig,
} from './config.js';
import { postgresRules, tableMappingRules } from './rules.js';
import { dropOwned, idleStatus, PostgresRun } from './run/index.js';
import type { PostgresSource as StoredPostgresSource } from './session/index.js';
import { postgresStatusShape } from './status-shape.js';

/** PostgreSQL: a parallel snapshot, then logical replication (README, "How a PostgreSQL pipe runs"). */
export const postgresConnector: SourceConnector &
  ChecksChanges &
  CleansUpOnDelete &
  ReportsIdleStatus &
  ExplainsRunFailure &
  ReportsStatus &
  WritesItsOwnTables &
  SharesCdcCapacity = {
  kind: 'postgres',
  virtualColumns: [],
  createProblems: postgresProblems,
  changedProblems: changedPostgresProblems,
  open: (context) => PostgresRun.open(context),
  async deleted(config, context) {
    const source = config.source.postgres as StoredPostgresSource;
    const mode = source.settings?.replicationMode ?? 'cdc';
    if (mode !== 'snapshot') await dropOwned(source, context);
  },
  idleStatus,
  runFailure: postgresRunFailure,
  statusShape: postgresStatusShape,
  // Its tables are its table mappings, checked by postgresProblems.
  writesItsOwnTables: true,
  sharesCdcCapacity: true,
};

/** Postgres settings defaults seen on the hosted service (README, "Pipes": the defaults filled in). */
const POSTGRES_SETTINGS_DEFAULTS = {
  syncIntervalSeconds: 60,
  pullBatchSize: 100000,
  snapshotNumRowsPerPartition: 100000,
  initialLoadParallelism: 4,
  snapshotNumberOfParallelTables: 1,
  replicationMode: 'cdc',
} as const;

export const postgresKind: SourceKind<typeof PostgresSource, 'postgres'> = {
  name: 'postgres',
  label: 'postgres',
  config: PostgresSource,
  patch: PostgresPatch,
  immutableFields: {
    ...Object.fromEntries(Object.entries(POSTGRES_IMMUTABLE).map(([field, assumed]) => [field, { assumed }])),
    ...Object.fromEntries(
      Object.entries(FIXED_POSTGRES_SETTINGS).map(([field, why]) => [
        `settings.${field}`,
        { assumed: FIXED_SETTING_DEFAULTS[field], why },
      ]),
    ),
  },
  applyPatch(postgres, changes, pipe) {
    const { tableMappingsToAdd, tableMappingsToRemove, settings, ...fields } = changes;
    const moved = POSTGRES_SERVER_FIELDS.filter((f) => f in fields && fields[f] !== postgres[f]);
    if (moved.length > 0) requirePaused(pipe.state, moved.join(', '));
    Object.assign(postgres, fields);
    if (settings !== undefined) postgres.settings = { ...postgres.settings, ...(settings as object) };
    if (tableMappingsToAdd !== undefined || tableMappingsToRemove !== undefined) {
      requirePaused(pipe.state, 'table mappings');
      postgres.tableMappings = changeTableMappings(
        postgres.tableMappings,
        (tableMappingsToAdd ?? []) as TableMappingConfig[],
        (tableMappingsToRemove ?? []) as TableMappingConfig[],
      );
    }
  },
  applyDefaults(postgres) {
    postgres.type ??= 'postgres';
    postgres.settings = { ...POSTGRES_SETTINGS_DEFAULTS, ...postgres.settings };
    for (const mapping of postgres.tableMappings) mapping.sourceSchemaName ??= 'public';
  },
  rules: postgresRules,
  writesTablesItNames: { field: 'tableMappings', leaveColumnsOut: 'tableMappings[].excludedColumns' },
  resyncs: true,
  connector: postgresConnector,
  discover: discoverPostgres,
};

/**
 * A change a running PostgreSQL pipe cannot take. The words "must be paused to edit" are what the
 * hosted service answers and its Terraform provider looks for: it pauses the pipe and tries again.
 */
function requirePaused(state: string, what: string): void {
  if (canModifyTableMappings(state as PipeState)) return;
  throw new BadRequestError(
    'SLUICE_ERR_PIPE_IMMUTABLE',
    `PostgreSQL pipe must be paused to edit ${what}: it is ${state}; stop it first, then edit, then start it`,
  );
}

function changeTableMappings(
  current: TableMappingConfig[],
  add: TableMappingConfig[],
  remove: TableMappingConfig[],
): TableMappingConfig[] {
  const problems: Problem[] = [];
  const same = (a: TableMappingConfig, b: TableMappingConfig) =>
    (a.sourceSchemaName ?? 'public') === (b.sourceSchemaName ?? 'public') &&
    a.sourceTable === b.sourceTable &&
    a.targetTable === b.targetTable;
  const kept = current.filter((mapping) => !remove.some((r) => same(mapping, r)));
  remove.forEach((r, index) => {
    if (!current.some((mapping) => same(mapping, r))) {
      problems.push({
        path: `source.postgres.tableMappingsToRemove[${index}]`,
        message: `This pipe has no mapping of ${r.sourceSchemaName ?? 'public'}.${r.sourceTable} to ${r.targetTable}`,
      });
    }
  });
  const added = add.map((mapping) => ({
    ...mapping,
    sourceSchemaName: mapping.sourceSchemaName ?? 'public',
  }));
  const result = [...kept, ...added];
  tableMappingRules(result, 'source.postgres.tableMappings', problems);
  if (result.length === 0) {
    problems.push({
      path: 'source.postgres.tableMappingsToRemove',
      message: 'A pipe needs at least one table mapping',
    });
  }
  if (problems.length > 0) throw new ValidationError(problems);
  return result;
}
