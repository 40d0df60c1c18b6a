import { randomUUID } from 'node:crypto';
import { stat } from 'node:fs/promises';
import type { Logger } from 'pino';
import {
  createTableSql,
  describeTable,
  type Engine,
  ensureDatabase,
  literal,
  settingsClause,
  type TableSpec,
  tableEngine,
} from '../../engine/index.js';
import { privateHostProblem } from '../../net/index.js';
import type { Batch, Store } from '../../store/index.js';
import type { PipeConfig } from '../model.js';
import { storageCredentials, withoutCredentials } from '../sources/object-storage/credentials.js';
import { type Credentials, listFiles, type SourceFile } from '../sources/object-storage/listing.js';
import { type Location, locationHost, sourceLocation } from '../sources/object-storage/location.js';
import { ensureErrorTable, errorTableName, explainSkippedRows, readSkippedRows } from './bad-records.js';
import { asBadFile, completeBatch, type Destination, type FileInserter, STAGING_DATABASE } from './batch.js';
import { PermanentError } from './errors.js';
import { insertPlan, OBJECT_STORAGE_VIRTUAL_COLUMNS, POSITIONAL_FORMATS } from './insert-plan.js';
import { sleep } from './sleep.js';
import { tableFunction } from './table-function.js';

export interface WorkerContext {
  pipeId: string;
  config: PipeConfig;
  /** The service's engine: confined, it reaches nothing outside the service. */
  engine: Engine;
  /** Reads the source's files into the service's scratch directory (EngineRegistry.sourceReader). */
  sourceReader: Engine;
  store: Store;
  localFilesDir: string;
  logger: Logger;
  signal: AbortSignal;
  /** Pipes may read from private, loopback and link-local addresses. */
  allowPrivateSources: boolean;
  /** The pipe's organization (an assumed role's external id). */
  organizationId: string;
  /** Takes the pipe's secrets out of a text (engine errors may quote their input). */
  redact(text: string): string;
  /** Moves the pipe to a state when it is in one of `from`; false when it was not. */
  setState(to: 'Running' | 'Completed', reason: string, from: string[]): Promise<boolean>;
}

/** The largest file a pipe reads (reference/pipes.md: "Files over 10 GB are skipped with an error"). */
export const MAX_FILE_BYTES = 10 * 1024 ** 3;
const DEFAULTS = { maxFileCount: 1000, maxInsertBytes: 1024 ** 3, pollingMs: 30_000, concurrency: 4 };

/**
 * One object-storage pipe: lists files after its claim cursor in lexical order and ingests them a
 * batch at a time, exactly once (batch.ts), with up to `scaling.replicas` batches in flight, each
 * in a worker slot with staging tables of its own. The engine fetches, decompresses and parses each
 * file itself and skips the rows it cannot read, which go to the error table with their reason.
 */
export async function runObjectStoragePipe(context: WorkerContext): Promise<void> {
  const { config, engine, store, pipeId, signal } = context;
  const source = config.source.objectStorage;
  if (!source) throw new PermanentError('the pipe has no objectStorage source');
  checkSupported(source);
  // First, so a failure of anything below is recorded where the status shows it (lastError).
  await store.repos.progress.ensure(pipeId, source.startAfter ?? null);
  const location = sourceLocation(source, context.localFilesDir);
  // Checked again at every start: a name may resolve elsewhere than it did at create.
  const host = context.allowPrivateSources ? undefined : locationHost(location);
  const privateHost = host ? await privateHostProblem(host, 'SLUICE_ALLOW_PRIVATE_SOURCES') : undefined;
  if (privateHost) throw new PermanentError(privateHost);
  const destination = await prepareDestination(engine, config);
  const insert = fileInserter(context, location, source);
  const settings = config.settings;
  const limits = {
    replicas: config.scaling.replicas ?? 1,
    maxFileCount: settings.object_storage_max_file_count ?? DEFAULTS.maxFileCount,
    maxInsertBytes: settings.object_storage_max_insert_bytes ?? DEFAULTS.maxInsertBytes,
    concurrency: settings.object_storage_concurrency ?? (config.scaling.concurrency || DEFAULTS.concurrency),
  };
  const slots = new Slots();
  const run = (batch: Batch) =>
    slots.run(batch.slot, () =>
      completeBatch({ engine, store }, destination, batch, insert, limits.concurrency),
    );
  try {
    // Batches claimed before a stop or a crash finish first, in their own slots.
    for (const batch of await store.repos.progress.openBatches(pipeId)) run(batch);
    await context.setState('Running', 'ingesting', ['Provisioning', 'Degraded', 'Running', 'Resync']);
    while (!signal.aborted) {
      // A pipe deleted under a running worker (a race with a PATCH) stops claiming work.
      if (!(await store.repos.pipes.getById(pipeId))) return;
      let claimed = false;
      for (let slot = slots.free(limits.replicas); slot !== undefined; slot = slots.free(limits.replicas)) {
        const batch = await claimNext(context, location, source, slot, limits);
        if (!batch) break;
        run(batch);
        claimed = true;
      }
      if (slots.busy()) {
        await slots.next();
        continue;
      }
      if (claimed) continue;
      if (!source.isContinuous) {
        await context.setState('Completed', 'every file ingested', ['Running']);
        return;
      }
      await sleep(settings.object_storage_polling_interval_ms ?? DEFAULTS.pollingMs, signal);
    }
  } finally {
    // No batch may outlive its worker: a restarted worker would run it twice at once.
    await slots.settle();
  }
}

/** Lists after the claim cursor and claims the next batch for a slot, or undefined when none. */
async function claimNext(
  context: WorkerContext,
  location: Location,
  source: ObjectStorageConfig,
  slot: number,
  limits: { maxFileCount: number; maxInsertBytes: number },
): Promise<Batch | undefined> {
  const { store, pipeId } = context;
  const progress = await store.repos.progress.get(pipeId);
  const files = await listFiles(location, {
    startAfter: progress?.lastKey ?? undefined,
    limit: limits.maxFileCount,
    credentials: await storageCredentials(source, context.organizationId),
  });
  if (files.length === 0) {
    await store.repos.progress.setFilesPending(pipeId, 0);
    return undefined;
  }
  const batch = takeBatch(files, limits.maxInsertBytes).map(({ key, size }) => ({ key, size }));
  // Files over 10 GB are set aside with an error, as the hosted service does.
  const skipped = batch
    .filter((file) => file.size > MAX_FILE_BYTES)
    .map((file) => ({ key: file.key, error: 'files over 10 GB are not supported yet' }));
  const claimed = await store.transaction((repos) => repos.progress.claim(pipeId, slot, batch, skipped));
  // Pending: found and not claimed; claimed files are counted from their open batch (the status).
  await store.repos.progress.setFilesPending(pipeId, files.length - batch.length);
  await store.repos.progress.recordError(pipeId, null);
  return claimed;
}

/** The worker slots of a pipe: which run a batch, and the first failure among them. */
class Slots {
  private readonly running = new Map<number, Promise<void>>();
  private failure: unknown;

  run(slot: number, work: () => Promise<void>): void {
    const done = work()
      .catch((error) => {
        this.failure ??= error;
      })
      .finally(() => this.running.delete(slot));
    this.running.set(slot, done);
  }

  /** The lowest slot below `count` that runs nothing, or undefined when all are busy. */
  free(count: number): number | undefined {
    this.rethrow();
    for (let slot = 0; slot < count; slot += 1) if (!this.running.has(slot)) return slot;
    return undefined;
  }

  busy(): boolean {
    return this.running.size > 0;
  }

  /** Waits for any slot to finish; throws the first failure of any. */
  async next(): Promise<void> {
    await Promise.race(this.running.values());
    this.rethrow();
  }

  async settle(): Promise<void> {
    await Promise.allSettled(this.running.values());
  }

  private rethrow(): void {
    if (this.failure !== undefined) throw this.failure;
  }
}

type ObjectStorageConfig = NonNullable<PipeConfig['source']['objectStorage']>;

/**
 * How the engine reads a pipe's files: the table function of a key in any format, and the mapped
 * SELECT over it. Shared by ingestion and by the create-time sample check.
 */
export function fileReader(
  config: PipeConfig,
  location: Location,
  source: ObjectStorageConfig,
  credentials: Credentials | undefined,
) {
  const plan = insertPlan(config.fieldMappings, config.destination.columns ?? [], {
    positional: POSITIONAL_FORMATS.includes(source.format),
    virtualColumns: OBJECT_STORAGE_VIRTUAL_COLUMNS,
    wholeRecord: source.format === 'JSONAsObject',
  });
  const read = (key: string, format: string, structure: string) =>
    tableFunction(location, key, { format, structure, compression: source.compression }, credentials);
  return {
    plan,
    read,
    settings: engineSettings(config, source.format, source.delimiter),
    select: (key: string) => `SELECT ${plan.selectList} FROM ${read(key, source.format, plan.structure)}`,
    namedSelect: (key: string) =>
      `SELECT ${plan.namedSelectList} FROM ${read(key, source.format, plan.structure)}`,
  };
}

/**
 * Reads one file into a table, isolating bad rows. The service's engine may reach nothing outside
 * the service (README, "Security"), so the source reader fetches, decompresses, parses and maps the
 * file with its table functions into a Native file in the service's scratch directory, and the
 * service's engine loads that file (FROM INFILE, read by chDB's client side) into the stage.
 */
function fileInserter(context: WorkerContext, location: Location, source: ObjectStorageConfig): FileInserter {
  const { config, engine, sourceReader, pipeId } = context;
  return async (into, file, index) => {
    // Asked per file: assumed-role credentials are renewed before they expire.
    const credentials = await storageCredentials(source, context.organizationId);
    const reader = fileReader(config, location, source, credentials);
    const { plan, read, settings: base } = reader;
    const name = `${pipeId}-${index}-${randomUUID()}`;
    // Uncompressed: compressing costs more time than the disk it saves (bench/object-storage.ts).
    const [rows, errors] = [`${name}.native`, `${name}.errors.csv`];
    try {
      await sourceReader.execute(
        `INSERT INTO FUNCTION file(${literal(engine.scratchPath(rows))}, 'Native') ${reader.namedSelect(file.key)}`,
        {
          settings: {
            ...base,
            input_format_allow_errors_ratio: 1,
            input_format_record_errors_file_path: engine.scratchPath(errors),
          },
        },
      );
      // A file without a single record leaves no file behind.
      if (await exists(engine.scratchPath(rows))) {
        // Read as the source is (pread, blocks of bounded size), so memory stays flat for any size.
        const blocks = settingsClause({
          min_insert_block_size_bytes: base.min_insert_block_size_bytes,
          storage_file_read_method: base.storage_file_read_method,
        });
        await engine.execute(
          `INSERT INTO ${into} ${plan.columnList} FROM INFILE ${literal(engine.scratchPath(rows))}${blocks} FORMAT Native`,
        );
      }
      const skipped = await readSkippedRows(sourceReader, engine.scratchPath(errors));
      if (skipped.length === 0) return [];
      return await explainSkippedRows(sourceReader, skipped, {
        source: file.key,
        linesFrom: read(file.key, 'LineAsString', 'line String'),
        headerLines: source.format.endsWith('WithNames') ? 1 : 0,
        parseOne: (raw) =>
          `SELECT * FROM format(${source.format}, ${literal(plan.structure)}, ${literal(raw)})${settingsClause(base)}`,
      });
    } catch (error) {
      throw asBadFile(error, file.key, (text) => withoutCredentials(context.redact(text), credentials));
    } finally {
      await Promise.all([engine.removeScratch(rows), engine.removeScratch(errors)]);
    }
  };
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

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

async function prepareDestination(engine: Engine, config: PipeConfig): Promise<Destination> {
  const { destination } = config;
  const database = destination.database ?? 'default';
  const table = destination.table ?? '';
  await ensureDatabase(engine, database);
  const spec = managedTableSpec(destination);
  if (spec) {
    await engine.execute(createTableSql(spec, { ifNotExists: true }));
  } else if (!(await describeTable(engine, database, table))) {
    throw new PermanentError(`the destination table ${database}.${table} does not exist`);
  }
  await ensureErrorTable(engine, database, table);
  await ensureDatabase(engine, STAGING_DATABASE);
  const staged = (await tableEngine(engine, database, table)) !== 'Null';
  return { database, table, errorTable: errorTableName(table), staged };
}

function checkSupported(source: ObjectStorageConfig): void {
  const unsupported = unsupportedObjectStorage(source);
  if (unsupported) throw new PermanentError(unsupported.message);
}

/** Options accepted by the API whose ingestion is not built yet (README, "What works today"). */
export function unsupportedObjectStorage(
  source: ObjectStorageConfig,
): { field: string; message: string } | undefined {
  if (source.queueUrl !== undefined)
    return { field: 'queueUrl', message: 'queueUrl (event notifications) is not supported yet' };
  if (source.authentication === 'SERVICE_ACCOUNT') {
    return { field: 'authentication', message: 'SERVICE_ACCOUNT authentication is not supported yet' };
  }
  return undefined;
}

function engineSettings(config: PipeConfig, format: string, delimiter: string | undefined) {
  const s = config.settings;
  return {
    // Bounded memory whatever the file size (bench/memory.ts): blocks are written as they reach
    // 16 MB, and local files are read with pread, not mapped into the engine's memory.
    min_insert_block_size_bytes: 16 * 1024 * 1024,
    storage_file_read_method: 'pread',
    ...(s.engine_max_threads ? { max_threads: s.engine_max_threads } : {}),
    ...(s.engine_max_insert_threads ? { max_insert_threads: s.engine_max_insert_threads } : {}),
    ...(s.engine_min_insert_block_size_bytes
      ? { min_insert_block_size_bytes: s.engine_min_insert_block_size_bytes }
      : {}),
    ...(s.engine_max_download_threads ? { max_download_threads: s.engine_max_download_threads } : {}),
    ...(delimiter && format.startsWith('CSV') ? { format_csv_delimiter: delimiter } : {}),
    input_format_skip_unknown_fields: 1,
    input_format_with_names_use_header: 1,
    date_time_input_format: 'best_effort',
  };
}

/** Files in order while they fit the byte budget; always at least one. */
function takeBatch(files: SourceFile[], maxBytes: number): SourceFile[] {
  const batch: SourceFile[] = [];
  let bytes = 0;
  for (const file of files) {
    if (batch.length > 0 && bytes + file.size > maxBytes) break;
    batch.push(file);
    bytes += file.size;
  }
  return batch;
}
