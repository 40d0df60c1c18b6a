import { allDone } from '../../concurrency.js';
import {
  createTableSql,
  describeTable,
  type Engine,
  ensureDatabase,
  type TableSpec,
} from '../../engine/index.js';
import type { PipeConfig } from '../model.js';
import { ensureErrorTable, errorTableName, PermanentError } from '../records/index.js';
import type { WrittenTable } from '../sources/index.js';
import { type Destination, STAGING_DATABASE, stageSuffixOf } from './stages.js';

/** The table a managed destination defines, or undefined when Sluice does not manage it. */
export function managedTableSpec(destination: Partial<PipeConfig['destination']>): TableSpec | undefined {
  const definition = destination.tableDefinition;
  if (destination.managedTable === false || !definition) return undefined;
  return {
    database: destination.database ?? 'default',
    table: destination.table ?? '',
    columns: destination.columns ?? [],
    engine: definition.engine,
    ...(definition.sortingKey ? { sortingKey: definition.sortingKey } : {}),
    ...(definition.partitionBy ? { partitionBy: definition.partitionBy } : {}),
    ...(definition.primaryKey ? { primaryKey: definition.primaryKey } : {}),
  };
}

/**
 * The tables a pipe writes, each with its error table, and the staging database, made when
 * missing: the source's own tables when it writes several (a database pipe), else the pipe's one
 * destination.
 */
export async function prepareDestinations(
  engine: Engine,
  config: PipeConfig,
  tables: readonly WrittenTable[] | undefined,
): Promise<Destination[]> {
  if (!tables) {
    // Apart, side by side: the first batch's stages wait for both.
    const [, destination] = await allDone([
      ensureDatabase(engine, STAGING_DATABASE),
      prepareDestination(engine, config),
    ]);
    return [destination];
  }
  await ensureDatabase(engine, STAGING_DATABASE);
  const destinations: Destination[] = [];
  for (const spec of tables) {
    await ensureDatabase(engine, spec.database);
    await engine.execute(createTableSql(spec, { ifNotExists: true }));
    destinations.push(
      await besideErrors(engine, spec.database, spec.table, stageSuffixOf(spec.table), spec.errorsOf),
    );
  }
  return destinations;
}

/** The destination, its error table and the staging database, made when missing. */
async function prepareDestination(engine: Engine, config: PipeConfig): Promise<Destination> {
  const { destination } = config;
  const database = destination.database ?? 'default';
  const table = destination.table ?? '';
  await ensureDatabase(engine, database);
  const spec = managedTableSpec(destination);
  if (spec) {
    await engine.execute(createTableSql(spec, { ifNotExists: true }));
  } else if (!(await describeTable(engine, database, table))) {
    throw new PermanentError(
      'SLUICE_ERR_DESTINATION_MISSING',
      `the destination table ${database}.${table} does not exist`,
    );
  }
  return besideErrors(engine, database, table, '');
}

async function besideErrors(
  engine: Engine,
  database: string,
  table: string,
  stageSuffix: string,
  errorsOf = table,
) {
  await ensureErrorTable(engine, database, errorsOf);
  return { database, table, errorTable: errorTableName(errorsOf), stageSuffix };
}
