import type { Problem } from '../errors.js';
import { asObject } from './rules-util.js';
import type { SourceKind } from './schema/enums.js';

export const SOURCE_RULES: Record<
  SourceKind,
  (config: Record<string, unknown>, path: string, problems: Problem[]) => void
> = {
  kafka: kafkaRules,
  objectStorage: objectStorageRules,
  kinesis: kinesisRules,
  postgres: postgresRules,
};

/** Which credential fields each Kafka authentication takes (README, "How a Kafka pipe runs"). */
const KAFKA_CREDENTIALS: Record<string, string[]> = {
  PLAIN: ['username', 'password'],
  'SCRAM-SHA-256': ['username', 'password'],
  'SCRAM-SHA-512': ['username', 'password'],
  IAM_USER: ['accessKeyId', 'secretKey'],
  IAM_ROLE: [],
  MUTUAL_TLS: ['certificate', 'privateKey'],
};

function kafkaRules(kafka: Record<string, unknown>, path: string, problems: Problem[]): void {
  const authentication = String(kafka.authentication ?? 'PLAIN');
  // Azure Event Hubs speaks Kafka with SASL PLAIN whose password is the namespace connection string.
  const wanted =
    kafka.type === 'azureeventhub' && authentication === 'PLAIN'
      ? ['connectionString']
      : KAFKA_CREDENTIALS[authentication];
  const credentials = asObject(kafka.credentials);
  // A local broker without TLS (plaintext://, SLUICE_ALLOW_PLAINTEXT_KAFKA) may have no SASL either.
  const plaintext =
    typeof kafka.brokers === 'string' &&
    kafka.brokers.split(',').every((broker) => broker.trim().toLowerCase().startsWith('plaintext://'));
  if (wanted && wanted.length > 0) {
    if (!credentials) {
      if (!(plaintext && authentication !== 'MUTUAL_TLS'))
        problems.push({
          path: `${path}.credentials`,
          message: `Required for ${authentication}: give ${wanted.join(' and ')}`,
        });
    } else {
      for (const field of wanted) {
        if (credentials[field] === undefined) {
          problems.push({ path: `${path}.credentials.${field}`, message: `Required for ${authentication}` });
        }
      }
      for (const field of Object.keys(credentials)) {
        if (!wanted.includes(field) && KAFKA_CREDENTIAL_FIELDS.includes(field)) {
          problems.push({
            path: `${path}.credentials.${field}`,
            message: `Not used with ${authentication}: give only ${wanted.join(' and ')}`,
          });
        }
      }
    }
  } else if (wanted && credentials) {
    problems.push({ path: `${path}.credentials`, message: `Not used with ${authentication}: remove it` });
  }
  iamRoleRule(kafka, path, authentication === 'IAM_ROLE', problems);
  const offset = asObject(kafka.offset);
  if (offset) {
    const strategy = offset.strategy ?? (offset.timestamp !== undefined ? 'from_timestamp' : undefined);
    if (strategy === 'from_timestamp' && offset.timestamp === undefined) {
      problems.push({ path: `${path}.offset.timestamp`, message: 'Required with strategy from_timestamp' });
    }
    if (strategy !== 'from_timestamp' && offset.timestamp !== undefined) {
      problems.push({ path: `${path}.offset.timestamp`, message: 'Only used with strategy from_timestamp' });
    }
    if (typeof offset.timestamp === 'string' && !isValidMinute(offset.timestamp)) {
      problems.push({ path: `${path}.offset.timestamp`, message: 'Not a real date and time' });
    }
  }
  const registry = asObject(kafka.schemaRegistry);
  if (registry && typeof registry.url === 'string' && !registry.url.startsWith('https://')) {
    problems.push({ path: `${path}.schemaRegistry.url`, message: 'Must be an https URL' });
  }
  if (kafka.format === 'AvroConfluent' && !registry) {
    problems.push({ path: `${path}.schemaRegistry`, message: 'Required for format AvroConfluent' });
  }
}

const KAFKA_CREDENTIAL_FIELDS = [
  'username',
  'password',
  'accessKeyId',
  'secretKey',
  'connectionString',
  'certificate',
  'privateKey',
];

/** Which object-storage types take which authentication (README, "Pipes": validation). */
const STORAGE_AUTHENTICATION: Record<string, string[]> = {
  IAM_ROLE: ['s3'],
  IAM_USER: ['s3', 'gcs', 'dospaces', 'cloudflarer2', 'ovhobjectstorage'],
  SERVICE_ACCOUNT: ['gcs'],
  CONNECTION_STRING: ['azureblobstorage'],
};

function objectStorageRules(storage: Record<string, unknown>, path: string, problems: Problem[]): void {
  const type = String(storage.type ?? 's3');
  const azure = type === 'azureblobstorage';
  const authentication = storage.authentication ?? (azure ? 'CONNECTION_STRING' : undefined);
  if (typeof authentication === 'string' && STORAGE_AUTHENTICATION[authentication]) {
    const types = STORAGE_AUTHENTICATION[authentication];
    if (!types.includes(type)) {
      problems.push({
        path: `${path}.authentication`,
        message: `${authentication} works with type ${types.join(', ')}, not ${type}`,
      });
    }
  }
  if (azure) {
    for (const field of ['path', 'azureContainerName', 'connectionString']) {
      if (storage[field] === undefined)
        problems.push({ path: `${path}.${field}`, message: 'Required for Azure Blob Storage' });
    }
    const contradiction = azureUrlProblem(storage);
    if (contradiction) problems.push({ path: `${path}.url`, message: contradiction });
  } else {
    if (storage.url === undefined) problems.push({ path: `${path}.url`, message: 'Required' });
    for (const field of ['path', 'azureContainerName', 'connectionString']) {
      if (storage[field] !== undefined)
        problems.push({ path: `${path}.${field}`, message: 'Only for type azureblobstorage' });
    }
  }
  if (typeof storage.url === 'string' && !isStorageUrl(storage.url, azure)) {
    problems.push({
      path: `${path}.url`,
      message: azure ? "Must be the blob's https:// URL" : 'Must be an http(s):// or file:// URL',
    });
  }
  keyRule(storage, path, authentication === 'IAM_USER', 'IAM_USER', problems);
  iamRoleRule(storage, path, authentication === 'IAM_ROLE', problems);
  if (authentication === 'SERVICE_ACCOUNT' && storage.serviceAccountKey === undefined) {
    problems.push({
      path: `${path}.serviceAccountKey`,
      message: 'Required for SERVICE_ACCOUNT: give the base64 key file',
    });
  }
  if (authentication !== 'SERVICE_ACCOUNT' && storage.serviceAccountKey !== undefined) {
    problems.push({
      path: `${path}.serviceAccountKey`,
      message: 'Only used with authentication SERVICE_ACCOUNT',
    });
  }
  if (storage.queueUrl !== undefined) {
    if (storage.isContinuous !== true)
      problems.push({ path: `${path}.queueUrl`, message: 'Needs isContinuous: true' });
    if (authentication === undefined) {
      problems.push({
        path: `${path}.queueUrl`,
        message: 'Needs non-public authentication (IAM_ROLE or IAM_USER)',
      });
    }
  }
  if (storage.skipInitialLoad !== undefined && storage.queueUrl === undefined) {
    problems.push({ path: `${path}.skipInitialLoad`, message: 'Only used with queueUrl' });
  }
  if (storage.skipInitialLoad !== undefined && storage.startAfter !== undefined) {
    problems.push({
      path: `${path}.startAfter`,
      message: 'Give either skipInitialLoad or startAfter, not both',
    });
  }
  if (storage.delimiter !== undefined && !String(storage.format ?? '').startsWith('CSV')) {
    problems.push({ path: `${path}.delimiter`, message: 'Only used with the CSV formats' });
  }
}

/**
 * The cloud CLI sends an Azure blob's URL beside `azureContainerName` and `path`: accepted when it
 * names the same container and path (`https://<account>.blob.core.windows.net/<container>/<path>`,
 * or the emulator's `http://<host>/<account>/<container>/<path>`), refused when it contradicts
 * them. Its host is held against the connection string's by the create checks.
 */
function azureUrlProblem(storage: Record<string, unknown>): string | undefined {
  const { url, azureContainerName: container, path } = storage;
  if (typeof url !== 'string' || typeof container !== 'string' || typeof path !== 'string') return;
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) return;
  const named = decodeURIComponent(new URL(url).pathname).replace(/^\/+/, '');
  const wanted = `${container}/${path.replace(/^\/+/, '')}`;
  if (named === wanted || named.split('/').slice(1).join('/') === wanted) return;
  return `names /${named}, but azureContainerName and path say /${wanted}: make them name the same blobs, or leave url out`;
}

function kinesisRules(kinesis: Record<string, unknown>, path: string, problems: Problem[]): void {
  const authentication = kinesis.authentication ?? (kinesis.iamRole !== undefined ? 'IAM_ROLE' : 'IAM_USER');
  keyRule(kinesis, path, authentication === 'IAM_USER', 'IAM_USER', problems);
  iamRoleRule(kinesis, path, authentication === 'IAM_ROLE', problems);
  const atTimestamp = kinesis.iteratorType === 'AT_TIMESTAMP';
  if (atTimestamp && kinesis.timestamp === undefined) {
    problems.push({ path: `${path}.timestamp`, message: 'Required with iteratorType AT_TIMESTAMP' });
  }
  const written = kinesis.timestamp;
  if (
    typeof written === 'string' &&
    Number.isNaN(Date.parse(written.endsWith('Z') ? written : `${written}Z`))
  ) {
    problems.push({
      path: `${path}.timestamp`,
      message: `${written} is not a date: write YYYY-MM-DDThh:mm (UTC)`,
    });
  }
  if (!atTimestamp && kinesis.timestamp !== undefined) {
    problems.push({ path: `${path}.timestamp`, message: 'Only used with iteratorType AT_TIMESTAMP' });
  }
}

function postgresRules(postgres: Record<string, unknown>, path: string, problems: Problem[]): void {
  const authentication = postgres.authentication ?? 'basic';
  if (authentication === 'basic' && postgres.credentials === undefined) {
    problems.push({
      path: `${path}.credentials`,
      message: 'Required for basic authentication: give username and password',
    });
  }
  iamRoleRule(postgres, path, authentication === 'IAM_ROLE', problems);
  const settings = asObject(postgres.settings);
  if (settings?.replicationSlotName !== undefined && settings.replicationMode !== 'cdc_only') {
    problems.push({
      path: `${path}.settings.replicationSlotName`,
      message: 'Only used with replicationMode cdc_only',
    });
  }
  const mappings = Array.isArray(postgres.tableMappings) ? postgres.tableMappings : [];
  tableMappingRules(mappings, `${path}.tableMappings`, problems);
}

export function tableMappingRules(mappings: unknown[], path: string, problems: Problem[]): void {
  const targets = new Map<string, number>();
  mappings.forEach((entry, index) => {
    const mapping = asObject(entry);
    if (!mapping) return;
    const at = `${path}[${index}]`;
    if (typeof mapping.targetTable === 'string') {
      const first = targets.get(mapping.targetTable);
      if (first !== undefined) {
        problems.push({
          path: `${at}.targetTable`,
          message: `Already used by ${path}[${first}]: target tables must be unique`,
        });
      } else {
        targets.set(mapping.targetTable, index);
      }
    }
    const custom = mapping.useCustomSortingKey === true;
    const keys = Array.isArray(mapping.sortingKeys) ? mapping.sortingKeys : undefined;
    if (custom && (!keys || keys.length === 0)) {
      problems.push({
        path: `${at}.sortingKeys`,
        message: 'Required with useCustomSortingKey: give at least one column',
      });
    }
    if (!custom && keys !== undefined) {
      problems.push({ path: `${at}.sortingKeys`, message: 'Only used with useCustomSortingKey: true' });
    }
  });
}

function keyRule(
  config: Record<string, unknown>,
  path: string,
  needed: boolean,
  auth: string,
  problems: Problem[],
) {
  if (needed && config.accessKey === undefined) {
    problems.push({
      path: `${path}.accessKey`,
      message: `Required for ${auth}: give accessKeyId and secretKey`,
    });
  }
  if (!needed && config.accessKey !== undefined) {
    problems.push({ path: `${path}.accessKey`, message: `Only used with authentication ${auth}` });
  }
}

function iamRoleRule(config: Record<string, unknown>, path: string, needed: boolean, problems: Problem[]) {
  if (needed && config.iamRole === undefined) {
    problems.push({ path: `${path}.iamRole`, message: 'Required for IAM_ROLE: give the role to assume' });
  }
  if (!needed && config.iamRole !== undefined) {
    problems.push({ path: `${path}.iamRole`, message: 'Only used with authentication IAM_ROLE' });
  }
}

/** An http(s) URL (an Azure blob's, or any store's), or a `file://` one for every type but Azure. */
function isStorageUrl(text: string, azure: boolean): boolean {
  if (!URL.canParse(text)) return false;
  return (azure ? ['http:', 'https:'] : ['http:', 'https:', 'file:']).includes(new URL(text).protocol);
}

function isValidMinute(text: string): boolean {
  const date = new Date(`${text}:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(text);
}
