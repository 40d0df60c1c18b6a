import { randomUUID } from 'node:crypto';
import {
  countRows,
  createTableSql,
  describeTable,
  type Engine,
  EngineError,
  ensureDatabase,
  expressionProblem,
  tableName,
  typeProblem,
} from '../../engine/index.js';
import type { Problem } from '../../errors.js';
import { privateHostProblem } from '../../net/index.js';
import type { PipeConfig } from '../model.js';
import { storageCredentials, withoutCredentials } from '../sources/object-storage/credentials.js';
import { listFiles, type SourceFile } from '../sources/object-storage/listing.js';
import {
  type Location,
  LocationError,
  locationHost,
  sourceLocation,
} from '../sources/object-storage/location.js';
import { fileReader, managedTableSpec, unsupportedObjectStorage } from './object-storage-worker.js';

const LIST_TIMEOUT_MS = 15_000;

/**
 * What create checks beyond the rules, against the real source and engine: the location can be
 * listed or read (reference/pipes.md: connectivity failures are 400s), an unsupported option is
 * named, and the destination table is usable (issue #3: a managed table must not already hold
 * rows; an unmanaged one must exist with every mapped column).
 */
export async function createProblems(
  config: PipeConfig,
  engines: { service: Engine; sourceReader: Engine },
  options: {
    localFilesDir: string;
    validateSamples: boolean;
    allowPrivateSources: boolean;
    organizationId: string;
  },
): Promise<Problem[]> {
  const engine = engines.service;
  const problems = await definitionProblems(config.destination, engine);
  if (problems.length > 0) return problems;
  if (config.source.postgres === undefined) problems.push(...(await destinationProblems(config, engine)));
  const storage = config.source.objectStorage;
  if (!storage) return problems;
  const unsupported = unsupportedObjectStorage(storage);
  if (unsupported)
    return [{ path: `source.objectStorage.${unsupported.field}`, message: unsupported.message }];
  let location: Location;
  let first: SourceFile | undefined;
  try {
    location = sourceLocation(storage, options.localFilesDir);
    const host = options.allowPrivateSources ? undefined : locationHost(location);
    const problem = host ? await privateHostProblem(host, 'SLUICE_ALLOW_PRIVATE_SOURCES') : undefined;
    if (problem) return [...problems, { path: 'source.objectStorage.url', message: problem }];
    [first] = await withTimeout(
      listFiles(location, {
        limit: 1,
        credentials: await storageCredentials(storage, options.organizationId),
      }),
      LIST_TIMEOUT_MS,
    );
  } catch (error) {
    const reason =
      error instanceof LocationError ? error.message : `cannot list or read the files: ${describe(error)}`;
    return [...problems, { path: 'source.objectStorage.url', message: reason }];
  }
  // A one-off pipe on nothing would only ever report that it ingested every file of none.
  if (!first && storage.isContinuous !== true) {
    return [
      ...problems,
      {
        path: storage.url === undefined ? 'source.objectStorage.path' : 'source.objectStorage.url',
        message: `${storage.url ?? storage.path ?? 'the location'} matches no file: a one-off pipe needs files to ingest (use isContinuous: true to wait for them)`,
      },
    ];
  }
  if (options.validateSamples && problems.length === 0) {
    const problem = await sampleProblem(
      config,
      engines.sourceReader,
      location,
      storage,
      first,
      options.organizationId,
    );
    if (problem) problems.push(problem);
  }
  return problems;
}

const SAMPLE_RECORDS = 10;

/**
 * Column types and the table's expressions are read by the service's engine before anything is
 * stored: each type must be one data type, each expression one expression (statement.ts), so what
 * is later put into a CREATE TABLE cannot end it or add a statement of its own.
 */
export async function definitionProblems(
  destination: Partial<PipeConfig['destination']>,
  engine: Engine,
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
  engine: Engine,
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

/**
 * validateSamples: the first records of the first matching file, parsed with the declared format
 * and mapped as the pipe will map them; any failure names the file, the record and the reason.
 */
async function sampleProblem(
  config: PipeConfig,
  engine: Engine,
  location: Location,
  storage: NonNullable<PipeConfig['source']['objectStorage']>,
  first: SourceFile | undefined,
  organizationId: string,
): Promise<Problem | undefined> {
  const path = 'source.validateSamples';
  if (!first) return { path, message: 'no file matches the URL yet, so there is no sample to validate' };
  const credentials = await storageCredentials(storage, organizationId);
  const reader = fileReader(config, location, storage, credentials);
  try {
    const result = await engine.query(`${reader.select(first.key)} LIMIT ${SAMPLE_RECORDS}`, {
      // Parse only the sample: one thread, blocks of the sample's size.
      settings: {
        ...reader.settings,
        max_threads: 1,
        input_format_parallel_parsing: 0,
        max_block_size: SAMPLE_RECORDS,
      },
      timeoutMs: LIST_TIMEOUT_MS,
    });
    if (result.rows.length === 0) return { path, message: `${first.key} holds no records to validate` };
    return undefined;
  } catch (error) {
    const message = withoutCredentials(error instanceof Error ? error.message : String(error), credentials);
    const record = /\(at row (\d+)\)/.exec(message)?.[1];
    const reason = message.replace(/\s*:\s*While executing[\s\S]*$/, '').replace(/[\s:]*\(at row \d+\)/, '');
    return { path, message: `${first.key}${record ? `, record ${record}` : ''}: ${reason}` };
  }
}

async function destinationProblems(config: PipeConfig, engine: Engine): Promise<Problem[]> {
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
  return config.fieldMappings
    .map((mapping, index) => ({ mapping, index }))
    .filter(({ mapping }) => !existing.has(mapping.destinationField))
    .map(({ mapping, index }) => ({
      path: `fieldMappings[${index}].destinationField`,
      message: `${database}.${table} has no column "${mapping.destinationField}"`,
    }));
}

function describe(error: unknown): string {
  const named = error as {
    name?: string;
    message?: string;
    Code?: string;
    $metadata?: { httpStatusCode?: number };
  };
  if (named.name === 'NoSuchBucket') return 'the bucket does not exist';
  if ((error as { code?: string }).code === 'ContainerNotFound') return 'the container does not exist';
  const code = (error as { code?: string }).code;
  if (code === 'AuthenticationFailed' || (error as { statusCode?: number }).statusCode === 403) {
    return `access denied (${code ?? '403'})`;
  }
  if (
    named.name === 'AccessDenied' ||
    named.name === 'InvalidAccessKeyId' ||
    named.name === 'SignatureDoesNotMatch'
  ) {
    return `access denied (${named.name}${named.message ? `: ${named.message}` : ''})`;
  }
  const cause = (error as { code?: string }).code ?? (error as { cause?: { code?: string } }).cause?.code;
  if (cause === 'ENOTFOUND' || cause === 'EAI_AGAIN') return 'the host is unknown';
  if (cause === 'ECONNREFUSED') return 'the connection was refused';
  return named.message ?? String(error);
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
