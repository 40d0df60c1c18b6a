import { randomUUID } from 'node:crypto';
import { mapLimited } from '../../../concurrency.js';
import { literal, settingsClause } from '../../../engine/index.js';
import { privateHostProblem } from '../../../net/index.js';
import { mappingsOf, type PipeConfig } from '../../model.js';
import {
  asUnreadablePart,
  copyable,
  EngineFirst,
  explainSkippedRows,
  type InsertPlan,
  insertPlan,
  PermanentError,
  POSITIONAL_FORMATS,
  type RangeRead,
  ReadAgainError,
  rangeRead,
  readSettings,
} from '../../records/index.js';
import type { Claim, Json, NoStagesAhead, RunContext, SourceRun } from '../contract.js';
import type { BatchSink } from '../ports.js';
import { storageCredentials, withoutCredentials } from './credentials.js';
import { type Credentials, listFiles, type SourceFile } from './listing.js';
import { type Location, locationHost, sourceLocation } from './location.js';
import { tableFunction } from './table-function.js';

/** Columns every object-storage read offers besides the file's own fields (README, "How an object-storage pipe runs"). */
export const OBJECT_STORAGE_VIRTUAL_COLUMNS = ['_path', '_file', '_size', '_time'] as const;

/** The largest file a pipe reads (README, "How an object-storage pipe runs": files over 10 GB are skipped with an error). */
export const MAX_FILE_BYTES = 10 * 1024 ** 3;
const DEFAULTS = { maxFileCount: 1000, maxInsertBytes: 1024 ** 3, pollingMs: 30_000, concurrency: 4 };

/** A batch's range: the files it reads, in key order. */
interface FileRange {
  files: FileOfRange[];
}

type FileOfRange = { key: string; size: number };

/**
 * Object storage as a source: files in lexical key order after the cursor (the last key claimed),
 * a batch of files at a time; the engine fetches, decompresses and parses each file itself and
 * skips the rows it cannot read, which go to the error table with their reason.
 */
export async function openObjectStorage(context: RunContext): Promise<SourceRun> {
  const { config, progress } = context;
  const source = config.source.objectStorage;
  if (!source) throw new PermanentError('SLUICE_ERR_SOURCE_CONFIG', 'the pipe has no objectStorage source');
  checkSupported(source);
  const location = sourceLocation(source, context.localFilesDir);
  // Checked again at every start: a name may resolve elsewhere than it did at create.
  const host = context.allowPrivateSources ? undefined : locationHost(location);
  const privateHost = host ? await privateHostProblem(host, 'SLUICE_ALLOW_PRIVATE_SOURCES') : undefined;
  if (privateHost) throw new PermanentError('SLUICE_ERR_PRIVATE_ADDRESS', privateHost);
  const settings = config.settings;
  const limits = {
    maxFileCount: settings.object_storage_max_file_count ?? DEFAULTS.maxFileCount,
    maxInsertBytes: settings.object_storage_max_insert_bytes ?? DEFAULTS.maxInsertBytes,
    concurrency: settings.object_storage_concurrency ?? (config.scaling.concurrency || DEFAULTS.concurrency),
  };
  const insert = fileInserter(context, location, source);
  const engineFirst = new EngineFirst(context.logger, 'files');
  const run: SourceRun & NoStagesAhead = {
    firstCursor: source.startAfter ?? null,
    pollMs: settings.object_storage_polling_interval_ms ?? DEFAULTS.pollingMs,
    noStagesAhead: true,
    async next(cursor) {
      const claim = await nextFiles(context, location, source, cursor, limits);
      if (claim) return claim;
      await progress.setFilesPending(0);
      return source.isContinuous ? 'idle' : 'complete';
    },
    async read(batch, sink) {
      const { files } = batch.range as unknown as FileRange;
      const readable = files.filter((file) => !batch.skipped.some((s) => s.key === file.key));
      const copies = engineFirst.take();
      try {
        return rangeRead(
          await mapLimited(readable, limits.concurrency, (file, index) => insert(sink, file, index, copies)),
        );
      } catch (error) {
        if (error instanceof ReadAgainError) engineFirst.refused(error, `${batch.pipeId}#${batch.seq}`);
        throw error;
      }
    },
    close: async () => {},
  };
  return run;
}

/** Lists after the cursor and claims the next files, or undefined when none. */
async function nextFiles(
  context: RunContext,
  location: Location,
  source: ObjectStorageConfig,
  cursor: Json | null,
  limits: { maxFileCount: number; maxInsertBytes: number },
): Promise<Claim | undefined> {
  const { progress } = context;
  const files = await listFiles(location, {
    startAfter: typeof cursor === 'string' ? cursor : undefined,
    limit: limits.maxFileCount,
    credentials: await storageCredentials(source, context.organizationId),
  });
  if (files.length === 0) return undefined;
  const batch = takeBatch(files, limits.maxInsertBytes).map(({ key, size }) => ({ key, size }));
  // Pending: found and not claimed; claimed files are counted from their open batch (the status).
  await progress.setFilesPending(files.length - batch.length);
  await progress.report(null);
  return {
    range: { files: batch },
    files: batch.length,
    bytes: batch.reduce((sum, file) => sum + file.size, 0),
    // Files over 10 GB are set aside with an error, as the hosted service does.
    skipped: batch
      .filter((file) => file.size > MAX_FILE_BYTES)
      .map((file) => ({ key: file.key, error: 'files over 10 GB are not supported yet' })),
    cursor: batch[batch.length - 1]?.key ?? null,
  };
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
  const plan = insertPlan(mappingsOf(config), config.destination.columns ?? [], {
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

/** Reads one file into the batch's sink through the source reader, isolating bad rows. */
function fileInserter(context: RunContext, location: Location, source: ObjectStorageConfig) {
  const { config, sourceReader, pipeId } = context;
  return async (sink: BatchSink, file: FileOfRange, index: number, copies: boolean): Promise<RangeRead> => {
    // Asked per file: assumed-role credentials are renewed before they expire.
    const credentials = await storageCredentials(source, context.organizationId);
    const reader = fileReader(config, location, source, credentials);
    const { plan, read, settings } = reader;
    const name = `${pipeId}-${index}-${randomUUID()}`;
    try {
      if (copies && copiedByEngine(source, plan, file)) {
        const { rows } = await copyIntoEngine(sink, {
          name,
          file,
          plan,
          settings: copySettings(config, settings),
          read,
        });
        return { rows, badRecords: [] };
      }
      const { rows, skipped } = await sink.load({
        name,
        from: read(file.key, source.format, plan.structure),
        plan,
        settings,
      });
      if (skipped.length === 0) return { rows, badRecords: [] };
      const badRecords = await explainSkippedRows(sourceReader, skipped, {
        source: file.key,
        linesFrom: read(file.key, 'LineAsString', 'line String'),
        headerLines: source.format.endsWith('WithNames') ? 1 : 0,
        parseOne: (raw) =>
          `SELECT * FROM format(${source.format}, ${literal(plan.structure)}, ${literal(raw)})${settingsClause(settings)}`,
      });
      return { rows, badRecords };
    } catch (error) {
      throw asUnreadablePart(error, file.key, (text) =>
        withoutCredentials(context.redact(text), credentials),
      );
    }
  };
}

/**
 * Whether the service's engine loads a copy of the file itself (records/copy-load.ts): a format
 * whose reader wants the whole file (Parquet), every column a field of the same name and type
 * (no virtual column, rename or cast), and a file small enough to copy.
 */
function copiedByEngine(source: ObjectStorageConfig, plan: InsertPlan, file: FileOfRange): boolean {
  return source.format === 'Parquet' && plan.textIsTarget === true && copyable(file.size);
}

/**
 * The blocks a copy's load writes: at least 64 MB unless the pipe says otherwise. Parquet's
 * parts come in blocks of its row groups, which bound the load's memory; squashed only to the
 * 16 MB of readSettings, 10M rows made 21 parts instead of 9, and merging them took more CPU
 * than the load (1.81 CPU-s for the load and 0.5 after it, against 2.34 and 1.3).
 */
function copySettings(config: PipeConfig, settings: Record<string, string | number>) {
  if (config.settings.engine_min_insert_block_size_bytes) return settings;
  return { ...settings, min_insert_block_size_bytes: 64 * 1024 * 1024 };
}

/** The copy's load (BatchSink.loadCopy); a copy the engine refused is read again through the source reader. */
function copyIntoEngine(
  sink: BatchSink,
  load: {
    name: string;
    file: FileOfRange;
    plan: InsertPlan;
    settings: Record<string, string | number>;
    read: (key: string, format: string, structure: string) => string;
  },
): Promise<{ rows: number }> {
  const { file, plan } = load;
  return sink.loadCopy({
    name: load.name,
    key: file.key,
    from: load.read(file.key, 'RawBLOB', 'raw String'),
    bytes: file.size,
    format: 'Parquet',
    columnList: plan.columnList,
    settings: load.settings,
  });
}

function checkSupported(source: ObjectStorageConfig): void {
  const unsupported = unsupportedObjectStorage(source);
  if (unsupported) throw new PermanentError('SLUICE_ERR_UNSUPPORTED', unsupported.message);
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
    ...readSettings(s),
    ...(s.engine_max_download_threads ? { max_download_threads: s.engine_max_download_threads } : {}),
    ...(delimiter && format.startsWith('CSV') ? { format_csv_delimiter: delimiter } : {}),
    input_format_with_names_use_header: 1,
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
