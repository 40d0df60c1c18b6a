import type { DiscoveryContext, DiscoverySource, SchemaDiscovery } from '../discovery.js';
import { DiscoveryProblem, discoveryConfig, inferredField, throwIfProblems } from '../discovery.js';
import { describe, previewRecords, unreadableRecords } from '../messages/index.js';
import { objectStorageProblems } from './checks.js';
import { storageCredentials, withoutCredentials } from './credentials.js';
import { type Credentials, listFiles } from './listing.js';
import { type Location, sourceLocation } from './location.js';
import { OBJECT_STORAGE_VIRTUAL_COLUMNS } from './reader.js';
import { tableFunction } from './table-function.js';

const PATH = 'source.objectStorage';
/** The first records of the first file that the engine reads to infer the fields. */
const SAMPLE_RECORDS = 1000;
const TIMEOUT_MS = 30_000;

type ObjectStorageSource = NonNullable<DiscoverySource['objectStorage']>;

/**
 * The fields of the first file that the location matches, as the engine's own schema inference
 * reads its first records: the location and credentials are checked as at create (checks.ts), then
 * the source reader (the engine that fetches a pipe's files) describes the file in its format.
 */
export async function discoverObjectStorage(
  source: DiscoverySource,
  context: DiscoveryContext,
): Promise<SchemaDiscovery> {
  throwIfProblems(
    await objectStorageProblems(discoveryConfig(source), { ...context, validateSamples: false }),
  );
  const storage = source.objectStorage as ObjectStorageSource;
  const location = sourceLocation(storage, context.localFilesDir);
  const credentials = await storageCredentials(storage, context.organizationId);
  const [first] = await listFiles(location, { limit: 1, credentials });
  if (!first) {
    throw new DiscoveryProblem({
      path: storage.url === undefined ? `${PATH}.path` : `${PATH}.url`,
      message: `${storage.url ?? storage.path ?? 'the location'} matches no file yet: add one first, or write destination.columns by hand`,
    });
  }
  const read = (format: string, structure: string) =>
    tableFunction(location, first.key, { format, structure, compression: storage.compression }, credentials);
  try {
    const settings = {
      ...formatSettings(storage),
      input_format_max_rows_to_read_for_schema_inference: SAMPLE_RECORDS,
      max_execution_time: TIMEOUT_MS / 1000,
    };
    const described = await describe(context.sourceReader, read(storage.format, 'auto'), settings);
    const records = await previewRecords(context.sourceReader, read(storage.format, 'auto'), settings);
    const missing = await keysMissingSomewhere(context, storage, location, first.key, credentials);
    return {
      fields: described.map((column) => inferredField(column.name, column.type, missing.has(column.name))),
      records,
      meta: {
        format: storage.format,
        file: first.key,
        virtualColumns: OBJECT_STORAGE_VIRTUAL_COLUMNS.join(', '),
      },
    };
  } catch (error) {
    const problem = unreadableRecords(error, `${PATH}.format`, storage.format);
    if (problem instanceof DiscoveryProblem) {
      const message = withoutCredentials(problem.problem.message, credentials);
      throw new DiscoveryProblem({ ...problem.problem, message: `${first.key}: ${message}` });
    }
    // The engine may quote the table function, keys and all: what is logged of it names none.
    if (problem instanceof Error) {
      problem.message = withoutCredentials(problem.message, credentials);
      problem.stack = problem.stack && withoutCredentials(problem.stack, credentials);
    }
    throw problem;
  }
}

/** What the engine needs to read the format as a pipe reads it: the CSV delimiter, headers by name. */
function formatSettings(storage: ObjectStorageSource): Record<string, string | number> {
  return {
    ...(storage.delimiter && storage.format.startsWith('CSV')
      ? { format_csv_delimiter: storage.delimiter }
      : {}),
    input_format_with_names_use_header: 1,
  };
}

/**
 * The keys of a JSONEachRow file that some of its first records lack (those fields are optional
 * whatever their type); other formats say nullability in their schema (Parquet, Avro) or have
 * every field in every record (CSV, TabSeparated).
 */
async function keysMissingSomewhere(
  context: DiscoveryContext,
  storage: ObjectStorageSource,
  location: Location,
  key: string,
  credentials: Credentials | undefined,
): Promise<Set<string>> {
  if (storage.format !== 'JSONEachRow') return new Set();
  const lines = tableFunction(
    location,
    key,
    { format: 'LineAsString', structure: 'line String', compression: storage.compression },
    credentials,
  );
  const first = `(SELECT line FROM ${lines} WHERE isValidJSON(line) LIMIT ${SAMPLE_RECORDS})`;
  const settings = { max_threads: 1, max_execution_time: TIMEOUT_MS / 1000 };
  const records = await context.sourceReader.query(`SELECT count() AS n FROM ${first}`, { settings });
  const counts = await context.sourceReader.query(
    `SELECT key, count() AS n FROM (SELECT arrayJoin(JSONExtractKeys(line)) AS key FROM ${first}) GROUP BY key`,
    { settings },
  );
  const total = Number(records.rows[0]?.n ?? 0);
  return new Set(counts.rows.filter((row) => Number(row.n) < total).map((row) => String(row.key)));
}
