import { randomUUID } from 'node:crypto';
import { allDone } from '../../concurrency.js';
import {
  countRows,
  createTableSql,
  describeTable,
  EngineError,
  ensureDatabase,
  expressionProblem,
  type Queryable,
  tableName,
  typeProblems,
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
  const destination =
    !connector || !writesItsOwnTables(connector) ? destinationProblems(config, engine) : Promise.resolve([]);
  if (!connector) return destination;
  // Samples are read only into a destination that passed its own checks; without them, the
  // source is checked (listed, reached) beside the destination.
  if (context.validateSamples) {
    problems.push(...(await destination));
    const validateSamples = problems.length === 0;
    return [...problems, ...(await connector.createProblems(config, { ...context, validateSamples }))];
  }
  const [inDestination, inSource] = await allDone([
    destination,
    connector.createProblems(config, { ...context, validateSamples: false }),
  ]);
  return [...inDestination, ...inSource];
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
  const definition = destination.tableDefinition;
  const columns = destination.columns ?? [];
  // Read-only statements, asked side by side (a create waits for them all, and the engine runs up
  // to four of Sluice's statements at once, README "How a pipe runs"): the columns' types in one
  // (typeProblems), each expression in one of its own.
  const expressions = (['partitionBy', 'primaryKey'] as const).flatMap((field) => {
    const text = definition?.[field];
    return text ? [{ path: `destination.tableDefinition.${field}`, text }] : [];
  });
  const [types, ofExpressions] = await allDone([
    typeProblems(
      engine,
      columns.map((column) => column.type),
      CHECKS_AT_ONCE,
    ),
    Promise.all(expressions.map(({ text }) => expressionProblem(engine, text))),
  ]);
  const problems = [
    ...types.map((message, index) => ({ path: `destination.columns[${index}].type`, message })),
    ...expressions.map(({ path }, index) => ({ path, message: ofExpressions[index] })),
  ].filter((p): p is Problem => p.message !== undefined);
  if (problems.length > 0) return problems;
  const table = tableProblem(destination, engine);
  return table ? [await table].filter((p): p is Problem => p !== undefined) : [];
}

/** Definition checks asked at once: the engine runs up to four of Sluice's statements at once. */
const CHECKS_AT_ONCE = 4;

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
