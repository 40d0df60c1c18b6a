import type { Logger } from 'pino';
import {
  countRows,
  createTableSql,
  describeTable,
  type Engine,
  ensureDatabase,
  literal,
  tableEngine,
  tableName,
} from '../../engine/index.js';
import type { PendingBatch, Store } from '../../store/index.js';
import type { PipeConfig } from '../model.js';
import { type Credentials, listFiles, type SourceFile } from '../sources/object-storage/listing.js';
import { resolveLocation } from '../sources/object-storage/location.js';
import { PermanentError } from './errors.js';
import { insertPlan, OBJECT_STORAGE_VIRTUAL_COLUMNS, POSITIONAL_FORMATS } from './insert-plan.js';
import { tableFunction } from './table-function.js';

export interface WorkerContext {
  pipeId: string;
  config: PipeConfig;
  engine: Engine;
  store: Store;
  localFilesDir: string;
  logger: Logger;
  signal: AbortSignal;
  /** Moves the pipe to a state when it is in one of `from`; false when it was not. */
  setState(to: 'Running' | 'Completed', reason: string, from: string[]): Promise<boolean>;
}

const DEFAULTS = { maxFileCount: 1000, maxInsertBytes: 1024 ** 3, pollingMs: 30_000, concurrency: 4 };
/** Staging tables live apart from the user's databases. */
export const STAGING_DATABASE = '_sluice_staging';

/**
 * One object-storage pipe: lists files after its cursor in lexical order and ingests them a batch
 * at a time with exactly-once (DESIGN.md, "Checkpoints"): the batch is recorded as pending, the
 * engine reads the files into a staging table of the same definition, the batch is marked staged,
 * the staged partitions are moved into the destination (a move is atomic per partition and never
 * repeats: what moved is gone from the stage), and the cursor moves past the batch. A crash at any
 * point either re-reads an unstaged batch into an emptied stage or finishes moving a staged one.
 */
export async function runObjectStoragePipe(context: WorkerContext): Promise<void> {
  const { config, engine, store, pipeId, signal } = context;
  const source = config.source.objectStorage;
  if (!source) throw new PermanentError('the pipe has no objectStorage source');
  checkSupported(source);
  const location = resolveLocation(source.url ?? '', {
    localFilesDir: context.localFilesDir,
    hasKeys: source.accessKey !== undefined,
  });
  const credentials: Credentials | undefined = source.accessKey;
  const target = await prepareDestination(engine, config);
  const stage = target.engine === 'Null' ? undefined : await prepareStage(engine, pipeId, target);
  const plan = insertPlan(config.fieldMappings, config.destination.columns ?? [], {
    positional: POSITIONAL_FORMATS.includes(source.format),
    virtualColumns: OBJECT_STORAGE_VIRTUAL_COLUMNS,
  });
  const settings = config.settings;
  const limits = {
    maxFileCount: settings.object_storage_max_file_count ?? DEFAULTS.maxFileCount,
    maxInsertBytes: settings.object_storage_max_insert_bytes ?? DEFAULTS.maxInsertBytes,
    concurrency: settings.object_storage_concurrency ?? (config.scaling.concurrency || DEFAULTS.concurrency),
  };
  const insertInto = (into: string, file: SourceFile) => {
    const from = tableFunction(
      location,
      file.key,
      { format: source.format, structure: plan.structure, compression: source.compression },
      credentials,
    );
    return engine.execute(`INSERT INTO ${into} ${plan.columnList} SELECT ${plan.selectList} FROM ${from}`, {
      settings: engineSettings(config, source.format, source.delimiter),
    });
  };

  let progress = await store.repos.progress.ensure(pipeId, source.startAfter ?? null);
  if (progress.pending) await finishPending(context, target, stage, progress.pending, insertInto);
  await context.setState('Running', 'ingesting', ['Provisioning', 'Degraded', 'Running', 'Resync']);
  while (!signal.aborted) {
    progress = (await store.repos.progress.get(pipeId)) ?? progress;
    const files = await listFiles(location, {
      startAfter: progress.lastKey ?? undefined,
      limit: limits.maxFileCount,
      credentials,
    });
    await store.repos.progress.setFilesPending(pipeId, files.length);
    if (files.length === 0) {
      if (!source.isContinuous) {
        await context.setState('Completed', 'every file ingested', ['Running']);
        return;
      }
      await sleep(settings.object_storage_polling_interval_ms ?? DEFAULTS.pollingMs, signal);
      continue;
    }
    const batch = takeBatch(files, limits.maxInsertBytes);
    await finishPending(
      context,
      target,
      stage,
      { files: batch.map(({ key, size }) => ({ key, size })), staged: false },
      insertInto,
      limits.concurrency,
    );
    await store.repos.progress.recordError(pipeId, null);
  }
}

interface Target {
  database: string;
  table: string;
  engine: string;
}

async function finishPending(
  context: WorkerContext,
  target: Target,
  stage: string | undefined,
  pending: PendingBatch,
  insertInto: (into: string, file: SourceFile) => Promise<void>,
  concurrency = 1,
): Promise<void> {
  const { engine, store, pipeId } = context;
  let batch = pending;
  if (!batch.staged) {
    await store.repos.progress.setPending(pipeId, batch);
    const into = stage ?? tableName(target.database, target.table);
    if (stage) await engine.execute(`TRUNCATE TABLE ${stage}`);
    await runLimited(batch.files, concurrency, (file) =>
      insertInto(into, { ...file, modified: new Date(0) }),
    );
    const rows = stage ? await countRows(engine, STAGING_DATABASE, stageTableName(pipeId)) : 0;
    batch = { ...batch, staged: true, rows };
    await store.repos.progress.setPending(pipeId, batch);
  }
  if (stage) await moveStaged(engine, pipeId, target);
  await store.repos.progress.commit(pipeId, batch, new Date());
}

/** Moves every staged partition into the destination; what moved is gone from the stage. */
async function moveStaged(engine: Engine, pipeId: string, target: Target): Promise<void> {
  const stageTable = stageTableName(pipeId);
  const parts = await engine.query(
    `SELECT DISTINCT partition_id FROM system.parts WHERE database = ${literal(STAGING_DATABASE)} AND table = ${literal(stageTable)} AND active`,
  );
  for (const row of parts.rows) {
    await engine.execute(
      `ALTER TABLE ${tableName(STAGING_DATABASE, stageTable)} MOVE PARTITION ID ${literal(String(row.partition_id))} TO TABLE ${tableName(target.database, target.table)}`,
    );
  }
}

export function stageTableName(pipeId: string): string {
  return `stage_${pipeId.replace(/-/g, '')}`;
}

async function prepareDestination(engine: Engine, config: PipeConfig): Promise<Target> {
  const { destination } = config;
  const database = destination.database ?? 'default';
  const table = destination.table ?? '';
  await ensureDatabase(engine, database);
  if (destination.managedTable !== false && destination.tableDefinition) {
    const definition = destination.tableDefinition;
    await engine.execute(
      createTableSql(
        {
          database,
          table,
          columns: destination.columns ?? [],
          engine: definition.engine,
          ...(definition.sortingKey ? { sortingKey: definition.sortingKey } : {}),
          ...(definition.partitionBy ? { partitionBy: definition.partitionBy } : {}),
          ...(definition.primaryKey ? { primaryKey: definition.primaryKey } : {}),
        },
        { ifNotExists: true },
      ),
    );
  } else if (!(await describeTable(engine, database, table))) {
    throw new PermanentError(`the destination table ${database}.${table} does not exist`);
  }
  return { database, table, engine: (await tableEngine(engine, database, table)) ?? 'MergeTree' };
}

async function prepareStage(engine: Engine, pipeId: string, target: Target): Promise<string> {
  await ensureDatabase(engine, STAGING_DATABASE);
  const stage = tableName(STAGING_DATABASE, stageTableName(pipeId));
  await engine.execute(`CREATE TABLE IF NOT EXISTS ${stage} AS ${tableName(target.database, target.table)}`);
  return stage;
}

function checkSupported(source: ObjectStorageConfig): void {
  const unsupported = unsupportedObjectStorage(source);
  if (unsupported) throw new PermanentError(unsupported.message);
}

type ObjectStorageConfig = NonNullable<PipeConfig['source']['objectStorage']>;

/** Options accepted by the API whose ingestion is not built yet (README, "What works today"). */
export function unsupportedObjectStorage(
  source: ObjectStorageConfig,
): { field: string; message: string } | undefined {
  if (source.type === 'azureblobstorage')
    return { field: 'type', message: 'Azure Blob Storage pipes are not supported yet' };
  if (source.queueUrl !== undefined)
    return { field: 'queueUrl', message: 'queueUrl (event notifications) is not supported yet' };
  if (source.authentication === 'SERVICE_ACCOUNT') {
    return { field: 'authentication', message: 'SERVICE_ACCOUNT authentication is not supported yet' };
  }
  if (source.authentication === 'IAM_ROLE') {
    return { field: 'authentication', message: 'IAM_ROLE authentication is not supported yet' };
  }
  return undefined;
}

function engineSettings(config: PipeConfig, format: string, delimiter: string | undefined) {
  const s = config.settings;
  return {
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

async function runLimited<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await work(item);
    }
  });
  await Promise.all(lanes);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
