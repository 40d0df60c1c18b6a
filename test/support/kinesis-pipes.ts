import { KINESIS_CREDENTIALS } from './kinesis.js';

// Helpers of the Kinesis pipe tests: pipe bodies as a user writes them.

/** Kinesis's virtual columns and the column types they are documented to fill (README). */
export const KINESIS_VIRTUAL_COLUMNS = {
  _key: 'String',
  _timestamp: 'DateTime64(3)',
  _stream: 'String',
  _shard_id: 'String',
  _sequence_number: 'String',
  _raw_message: 'String',
};

/**
 * A Kinesis pipe into `kinesis.<table>` with columns id UInt64 and name String, plus extra
 * mappings; the source's fields override the defaults (TRIM_HORIZON, an access key).
 */
export function kinesisBody(
  table: string,
  kinesis: Record<string, unknown>,
  extra: {
    columns?: { name: string; type: string }[];
    mappings?: Record<string, string>;
    /** Into a table the test made itself (managedTable false). */
    unmanaged?: boolean;
    replicas?: number;
    validateSamples?: boolean;
  } = {},
) {
  const mappings = { id: 'id', name: 'name', ...(extra.mappings ?? {}) };
  return {
    name: table,
    source: {
      kinesis: {
        region: 'us-east-1',
        format: 'JSONEachRow',
        iteratorType: 'TRIM_HORIZON',
        authentication: 'IAM_USER',
        accessKey: {
          accessKeyId: KINESIS_CREDENTIALS.accessKeyId,
          secretKey: KINESIS_CREDENTIALS.secretAccessKey,
        },
        ...kinesis,
      },
      ...(extra.validateSamples ? { validateSamples: true } : {}),
    },
    destination: {
      database: 'kinesis',
      table,
      ...(extra.unmanaged
        ? { managedTable: false }
        : { tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['id'] } }),
      columns: [{ name: 'id', type: 'UInt64' }, { name: 'name', type: 'String' }, ...(extra.columns ?? [])],
    },
    fieldMappings: Object.entries(mappings).map(([destinationField, sourceField]) => ({
      sourceField,
      destinationField,
    })),
    scaling: { replicas: extra.replicas ?? 1 },
    settings: { streaming_max_insert_wait_ms: 500 },
  };
}

/** Records `{"id": i, "name": "n<i>"}` for i in [from, from + count), each with key `k<i>`. */
export function records(from: number, count: number) {
  return Array.from({ length: count }, (_, n) => {
    const i = from + n;
    return { key: `k${i}`, data: JSON.stringify({ id: i, name: `n${i}` }) };
  });
}
