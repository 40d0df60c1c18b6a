import { randomUUID } from 'node:crypto';
import {
  countRows,
  createTableSql,
  describeTable,
  EngineError,
  ensureDatabase,
  expressionProblem,
  type Queryable,
  tableName,
  typeProblem,
} from '../../engine/index.js';
import type { Problem } from '../../errors.js';
import { mappingsOf, type PipeConfig } from '../model.js';
import { type CheckContext, type SourceConnector, writesItsOwnTables } from '../sources/index.js';
import { managedTableSpec } from './destination.js';

/**
 * What create checks beyond the rules, against the real engine and source: the destination table
 * is usable (a managed table must not already hold rows; an unmanaged one must exist with every
 * mapped column), and the source's connector checks the source itself (README, "Pipes":
 * connectivity failures are 400s).
 */
export async function createProblems(
  config: PipeConfig,
  context: CheckContext,
  /** The connector of the pipe's kind (sources/kind.ts). */
  connector: SourceConnector | undefined,
): Promise<Problem[]> {
  const engine = context.target;
  const problems = await definitionProblems(config.destination, engine);
  if (problems.length > 0) return problems;
  // A source that names its own tables (writesItsOwnTables) checks them itself.
  if (!connector || !writesItsOwnTables(connector))
    problems.push(...(await destinationProblems(config, engine)));
  if (!connector) return problems;
  // Samples are read only into a destination that passed its own checks.
  const validateSamples = context.validateSamples && problems.length === 0;
  return [...problems, ...(await connector.createProblems(config, { ...context, validateSamples }))];
}

/**
 * Column types and the table's expressions are read by the service's engine before anything is
 * stored: each type must be one data type, each expression one expression (statement.ts), so what
 * is later put into a CREATE TABLE cannot end it or add a statement of its own.
 */
export async function definitionProblems(
  destination: Partial<PipeConfig['destination']>,
  engine: Queryable,
): Promise<Problem[]> {
  const problems: Problem[] = [];
  for (const [index, column] of (destination.columns ?? []).entries()) {
    const problem = await typeProblem(engine, column.type);
    if (problem) problems.push({ path: `destination.columns[${index}].type`, message: problem });
  }
  const definition = destination.tableDefinition;
  for (const field of ['partitionBy', 'primaryKey'] as const) {
    const text = definition?.[field];
    const problem = text ? await expressionProblem(engine, text) : undefined;
    if (problem) problems.push({ path: `destination.tableDefinition.${field}`, message: problem });
  }
  if (problems.length > 0) return problems;
  const table = tableProblem(destination, engine);
  return table ? [await table].filter((p): p is Problem => p !== undefined) : [];
}

/** Where a table is made to be checked, apart from the users' databases. */
const CHECK_DATABASE = '_sluice_check';

/**
 * The managed table, made for real in a scratch database and dropped again: what only the whole
 * definition can show (a sorting key of a type that cannot be sorted, a partition expression
 * over a column that does not exist) is a 400 now rather than a pipe failing later.
 */
function tableProblem(
  destination: Partial<PipeConfig['destination']>,
  engine: Queryable,
): Promise<Problem | undefined> | undefined {
  const spec = managedTableSpec(destination);
  if (!spec || spec.columns.length === 0) return undefined;
  const name = `check_${randomUUID().replace(/-/g, '')}`;
  const scratch = { ...spec, database: CHECK_DATABASE, table: name };
  return (async () => {
    await ensureDatabase(engine, CHECK_DATABASE);
    try {
      await engine.execute(createTableSql(scratch));
      return undefined;
    } catch (error) {
      if (!(error instanceof EngineError) || error.code === undefined) throw error;
      const message = error.message.split(`${CHECK_DATABASE}.${name}`).join('the table');
      return {
        path: 'destination.tableDefinition',
        message: `the engine cannot make this table: ${message}`,
      };
    } finally {
      await engine.execute(`DROP TABLE IF EXISTS ${tableName(CHECK_DATABASE, name)}`);
    }
  })();
}

async function destinationProblems(config: PipeConfig, engine: Queryable): Promise<Problem[]> {
  const database = config.destination.database ?? 'default';
  const table = config.destination.table ?? '';
  const columns = await describeTable(engine, database, table);
  if (config.destination.managedTable !== false) {
    if (columns && (await countRows(engine, database, table)) > 0) {
      return [
        {
          path: 'destination.table',
          message: `${database}.${table} already exists and holds rows: pick another name, or set managedTable: false to write into it`,
        },
      ];
    }
    return [];
  }
  if (!columns) {
    return [
      {
        path: 'destination.table',
        message: `${database}.${table} does not exist: create it, or set managedTable: true`,
      },
    ];
  }
  const existing = new Set(columns.map((column) => column.name));
  return mappingsOf(config)
    .map((mapping, index) => ({ mapping, index }))
    .filter(({ mapping }) => !existing.has(mapping.destinationField))
    .map(({ mapping, index }) => ({
      // Mappings Sluice made from the columns are named by the column the user wrote.
      path:
        config.fieldMappings.length > 0
          ? `fieldMappings[${index}].destinationField`
          : `destination.columns[${index}].name`,
      message: `${database}.${table} has no column "${mapping.destinationField}"`,
    }));
}
