import { countRows, describeTable, type Engine } from '../../engine/index.js';
import type { Problem } from '../../errors.js';
import type { PipeConfig } from '../model.js';
import { listFiles } from '../sources/object-storage/listing.js';
import { LocationError, resolveLocation } from '../sources/object-storage/location.js';
import { unsupportedObjectStorage } from './object-storage-worker.js';

const LIST_TIMEOUT_MS = 15_000;

/**
 * What create checks beyond the rules, against the real source and engine: the location can be
 * listed or read (reference/pipes.md: connectivity failures are 400s), an unsupported option is
 * named, and the destination table is usable (issue #3: a managed table must not already hold
 * rows; an unmanaged one must exist with every mapped column).
 */
export async function createProblems(
  config: PipeConfig,
  engine: Engine,
  localFilesDir: string,
): Promise<Problem[]> {
  const problems: Problem[] = [];
  const storage = config.source.objectStorage;
  if (storage) {
    const unsupported = unsupportedObjectStorage(storage);
    if (unsupported)
      return [{ path: `source.objectStorage.${unsupported.field}`, message: unsupported.message }];
    try {
      const location = resolveLocation(storage.url ?? '', {
        localFilesDir,
        hasKeys: storage.accessKey !== undefined,
      });
      await withTimeout(listFiles(location, { limit: 1, credentials: storage.accessKey }), LIST_TIMEOUT_MS);
    } catch (error) {
      const reason =
        error instanceof LocationError ? error.message : `cannot list or read the files: ${describe(error)}`;
      problems.push({ path: 'source.objectStorage.url', message: reason });
    }
  }
  if (config.source.postgres === undefined) problems.push(...(await destinationProblems(config, engine)));
  return problems;
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
  if (
    named.name === 'AccessDenied' ||
    named.name === 'InvalidAccessKeyId' ||
    named.name === 'SignatureDoesNotMatch'
  ) {
    return `access denied (${named.name})`;
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
