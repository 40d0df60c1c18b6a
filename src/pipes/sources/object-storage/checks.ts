import type { Problem } from '../../../errors.js';
import { privateHostProblem } from '../../../net/index.js';
import type { PipeConfig } from '../../model.js';
import type { CheckContext } from '../contract.js';
import type { SourceReader } from '../ports.js';
import { storageCredentials, withoutCredentials } from './credentials.js';
import { listFiles, type SourceFile } from './listing.js';
import {
  azureUrlHostProblem,
  type Location,
  LocationError,
  locationHost,
  sourceLocation,
} from './location.js';
import { fileReader, unsupportedObjectStorage } from './reader.js';

const LIST_TIMEOUT_MS = 15_000;

/**
 * The location can be listed or read (README, "Pipes": connectivity failures are 400s), an
 * unsupported option is named, a one-off pipe has files to read, and with validateSamples the first
 * records of the first file parse as the pipe maps them.
 */
export async function objectStorageProblems(config: PipeConfig, context: CheckContext): Promise<Problem[]> {
  const storage = config.source.objectStorage;
  if (!storage) return [];
  const problems: Problem[] = [];
  const unsupported = unsupportedObjectStorage(storage);
  if (unsupported)
    return [{ path: `source.objectStorage.${unsupported.field}`, message: unsupported.message }];
  let location: Location;
  let first: SourceFile | undefined;
  try {
    location = sourceLocation(storage, context.localFilesDir);
    const contradiction = azureUrlHostProblem(storage.url, location);
    if (contradiction) return [{ path: 'source.objectStorage.url', message: contradiction }];
    const host = context.allowPrivateSources ? undefined : locationHost(location);
    const problem = host ? await privateHostProblem(host, 'SLUICE_ALLOW_PRIVATE_SOURCES') : undefined;
    if (problem) return [...problems, { path: 'source.objectStorage.url', message: problem }];
    [first] = await withTimeout(
      listFiles(location, {
        limit: 1,
        credentials: await storageCredentials(storage, context.organizationId),
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
  if (context.validateSamples) {
    const problem = await sampleProblem(
      config,
      context.sourceReader,
      location,
      storage,
      first,
      context.organizationId,
    );
    if (problem) problems.push(problem);
  }
  return problems;
}

const SAMPLE_RECORDS = 10;

/**
 * validateSamples: the first records of the first matching file, parsed with the declared format
 * and mapped as the pipe will map them; any failure names the file, the record and the reason.
 */
async function sampleProblem(
  config: PipeConfig,
  engine: SourceReader,
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
