/**
 * The connection fields of each source kind, as the API's create body names them
 * (README, "Pipes"): the wizard draws a form from these and builds `source.<kind>` from its values.
 * Paths are relative to `source.<kind>`, dotted for nested objects (`credentials.password`).
 */

export type SourceKind = 'objectStorage' | 'kafka' | 'kinesis' | 'postgres';

export interface Field {
  path: string;
  label: string;
  input: 'text' | 'password' | 'number' | 'select' | 'checkbox' | 'textarea';
  options?: readonly string[];
  placeholder?: string;
  help?: string;
  /** Shown only when this returns true for the values so far (an authentication's own fields). */
  when?: (values: Values) => boolean;
}

export type Values = Record<string, string | boolean>;

const is =
  (path: string, ...accepted: string[]) =>
  (values: Values) =>
    accepted.includes(String(values[path] ?? ''));

const awsKeys: Field[] = [
  {
    path: 'accessKey.accessKeyId',
    label: 'Access key id',
    input: 'text',
    when: is('authentication', 'IAM_USER'),
  },
  {
    path: 'accessKey.secretKey',
    label: 'Secret access key',
    input: 'password',
    when: is('authentication', 'IAM_USER'),
  },
  { path: 'iamRole', label: 'IAM role ARN', input: 'text', when: is('authentication', 'IAM_ROLE') },
];

export const KINDS: Record<SourceKind, { title: string; blurb: string; fields: Field[]; defaults: Values }> =
  {
    objectStorage: {
      title: 'Object storage',
      blurb:
        'Files in S3 and S3-compatible stores, GCS, Azure Blob, or the local files directory (file:///…)',
      defaults: { format: 'JSONEachRow', authentication: '' },
      fields: [
        {
          path: 'url',
          label: 'URL',
          input: 'text',
          placeholder: 'file:///weather.ndjson or https://bucket.s3.region.amazonaws.com/path/*.parquet',
          help: 'May hold the wildcards *, ? and **',
          when: (v) => v.authentication !== 'CONNECTION_STRING',
        },
        {
          path: 'format',
          label: 'Format',
          input: 'select',
          options: [
            'JSONEachRow',
            'JSONAsObject',
            'CSV',
            'CSVWithNames',
            'TabSeparated',
            'TabSeparatedWithNames',
            'Parquet',
            'Avro',
          ],
        },
        {
          path: 'compression',
          label: 'Compression',
          input: 'select',
          options: ['', 'auto', 'none', 'gzip', 'brotli', 'xz', 'zstd'],
        },
        {
          path: 'authentication',
          label: 'Authentication',
          input: 'select',
          options: ['', 'IAM_USER', 'IAM_ROLE', 'SERVICE_ACCOUNT', 'CONNECTION_STRING'],
          help: 'None for public files and file:///',
        },
        ...awsKeys,
        {
          path: 'serviceAccountKey',
          label: 'Service account key (base64)',
          input: 'password',
          when: is('authentication', 'SERVICE_ACCOUNT'),
        },
        {
          path: 'connectionString',
          label: 'Connection string',
          input: 'password',
          when: is('authentication', 'CONNECTION_STRING'),
        },
        {
          path: 'azureContainerName',
          label: 'Container',
          input: 'text',
          when: is('authentication', 'CONNECTION_STRING'),
        },
        { path: 'path', label: 'Blob path', input: 'text', when: is('authentication', 'CONNECTION_STRING') },
        { path: 'isContinuous', label: 'Continuous: keep ingesting new files', input: 'checkbox' },
      ],
    },
    kafka: {
      title: 'Kafka',
      blurb: 'Topics of Apache Kafka and compatible brokers (Redpanda, MSK, Confluent, …)',
      defaults: { format: 'JSONEachRow', authentication: 'PLAIN' },
      fields: [
        { path: 'brokers', label: 'Brokers', input: 'text', placeholder: 'host:9092,host2:9092' },
        { path: 'topics', label: 'Topics', input: 'text', placeholder: 'orders' },
        {
          path: 'format',
          label: 'Format',
          input: 'select',
          options: ['JSONEachRow', 'Avro', 'AvroConfluent'],
        },
        {
          path: 'authentication',
          label: 'Authentication',
          input: 'select',
          options: ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'IAM_USER', 'IAM_ROLE', 'MUTUAL_TLS'],
        },
        {
          path: 'credentials.username',
          label: 'User name',
          input: 'text',
          when: is('authentication', 'PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'),
        },
        {
          path: 'credentials.password',
          label: 'Password',
          input: 'password',
          when: is('authentication', 'PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'),
        },
        {
          path: 'credentials.accessKeyId',
          label: 'Access key id',
          input: 'text',
          when: is('authentication', 'IAM_USER'),
        },
        {
          path: 'credentials.secretKey',
          label: 'Secret access key',
          input: 'password',
          when: is('authentication', 'IAM_USER'),
        },
        { path: 'iamRole', label: 'IAM role ARN', input: 'text', when: is('authentication', 'IAM_ROLE') },
        {
          path: 'credentials.certificate',
          label: 'Client certificate (PEM)',
          input: 'textarea',
          when: is('authentication', 'MUTUAL_TLS'),
        },
        {
          path: 'credentials.privateKey',
          label: 'Client private key (PEM)',
          input: 'textarea',
          when: is('authentication', 'MUTUAL_TLS'),
        },
        { path: 'caCertificate', label: 'CA certificate (PEM, optional)', input: 'textarea' },
        {
          path: 'offset.strategy',
          label: 'Start from',
          input: 'select',
          options: ['from_beginning', 'from_latest'],
        },
      ],
    },
    kinesis: {
      title: 'Kinesis',
      blurb: 'An Amazon Kinesis data stream',
      defaults: { format: 'JSONEachRow', authentication: 'IAM_USER', iteratorType: 'TRIM_HORIZON' },
      fields: [
        { path: 'streamName', label: 'Stream', input: 'text' },
        { path: 'region', label: 'Region', input: 'text', placeholder: 'eu-west-1' },
        {
          path: 'format',
          label: 'Format',
          input: 'select',
          options: ['JSONEachRow', 'Avro', 'AvroConfluent'],
        },
        { path: 'iteratorType', label: 'Start from', input: 'select', options: ['TRIM_HORIZON', 'LATEST'] },
        {
          path: 'authentication',
          label: 'Authentication',
          input: 'select',
          options: ['IAM_USER', 'IAM_ROLE'],
        },
        ...awsKeys,
        { path: 'useEnhancedFanOut', label: 'Enhanced fan-out', input: 'checkbox' },
      ],
    },
    postgres: {
      title: 'PostgreSQL',
      blurb: 'Tables of a PostgreSQL database: a snapshot, then every change (logical replication)',
      defaults: { port: '5432', authentication: 'basic' },
      fields: [
        { path: 'host', label: 'Host', input: 'text' },
        { path: 'port', label: 'Port', input: 'number' },
        { path: 'database', label: 'Database', input: 'text' },
        { path: 'credentials.username', label: 'User name', input: 'text' },
        { path: 'credentials.password', label: 'Password', input: 'password' },
        { path: 'caCertificate', label: 'CA certificate (PEM, optional)', input: 'textarea' },
        { path: 'disableTls', label: 'Connect without TLS', input: 'checkbox' },
      ],
    },
  };

/** `source.<kind>` from the form's values: shown fields only, empty ones left out, paths nested. */
export function sourceOf(kind: SourceKind, values: Values): Record<string, unknown> {
  const source: Record<string, unknown> = {};
  for (const field of KINDS[kind].fields) {
    if (field.when && !field.when(values)) continue;
    const value = values[field.path];
    if (value === undefined || value === '' || value === false) continue;
    setPath(source, field.path, field.input === 'number' ? Number(value) : value);
  }
  return source;
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    node[part] = (node[part] as Record<string, unknown> | undefined) ?? {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts[parts.length - 1] as string] = value;
}
