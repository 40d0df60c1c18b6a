import { fragmentProblem } from '../engine/index.js';
import type { Problem } from '../errors.js';
import { SOURCE_KINDS, type SourceKind } from './schema/enums.js';

/**
 * The rules of reference/pipes.md that a JSON schema cannot express. They run on any body, even one
 * the schema rejected, so a client learns of every problem in one round trip; each check therefore
 * reads its input defensively.
 */
export function pipeRuleProblems(body: unknown): Problem[] {
  const problems: Problem[] = [];
  const pipe = asObject(body);
  if (!pipe) return problems;
  const source = asObject(pipe.source);
  const kinds = source ? SOURCE_KINDS.filter((kind) => source[kind] !== undefined) : [];
  if (source && kinds.length === 0) {
    problems.push({
      path: 'source',
      message: `Required: give one source kind, one of ${SOURCE_KINDS.join(', ')}`,
    });
  } else if (kinds.length > 1) {
    problems.push({ path: 'source', message: `Give exactly one source kind, got ${kinds.join(' and ')}` });
  }
  const kind = kinds.length === 1 ? kinds[0] : undefined;
  const config = kind && source ? asObject(source[kind]) : undefined;
  if (kind && config) SOURCE_RULES[kind](config, `source.${kind}`, problems);
  if (kind === 'postgres') databaseDestinationRules(pipe, problems);
  else tableDestinationRules(pipe, problems);
  settingsRules(pipe, kind, problems);
  if (kind === 'objectStorage' && config?.format === 'JSONAsObject') wholeRecordRule(pipe, problems);
  if (kind === 'objectStorage' && (config?.format === 'CSV' || config?.format === 'TabSeparated')) {
    positionalRule(pipe, String(config.format), problems);
  }
  return problems;
}

const VIRTUAL_FIELDS = ['_path', '_file', '_size', '_time'];

/** Files without a header name their fields by position, c1, c2, ... (as the engine does). */
function positionalRule(pipe: Record<string, unknown>, format: string, problems: Problem[]): void {
  const mappings = Array.isArray(pipe.fieldMappings) ? pipe.fieldMappings : undefined;
  if (!mappings) {
    problems.push({
      path: 'fieldMappings',
      message: `Required for ${format}: a file without a header names its fields c1, c2, ... by position; map them to the columns`,
    });
    return;
  }
  mappings.forEach((entry, index) => {
    const field = asObject(entry)?.sourceField;
    if (typeof field === 'string' && !VIRTUAL_FIELDS.includes(field) && !/^c[1-9]\d{0,3}$/.test(field)) {
      problems.push({
        path: `fieldMappings[${index}].sourceField`,
        message: `${format} without a header names fields by position: use c1, c2, ... (or ${format}WithNames for a header row)`,
      });
    }
  });
}

/** JSONAsObject reads each record as one JSON value: every mapping takes that one source field. */
function wholeRecordRule(pipe: Record<string, unknown>, problems: Problem[]): void {
  const virtual = VIRTUAL_FIELDS;
  const fields = new Set(
    (Array.isArray(pipe.fieldMappings) ? pipe.fieldMappings : [])
      .map((mapping) => asObject(mapping)?.sourceField)
      .filter((field): field is string => typeof field === 'string' && !virtual.includes(field)),
  );
  if (fields.size > 1) {
    problems.push({
      path: 'fieldMappings',
      message: `JSONAsObject reads each record as one JSON value: map it from one sourceField (for example "json"), not ${[...fields].join(', ')}`,
    });
  }
}

const SOURCE_RULES: Record<
  SourceKind,
  (config: Record<string, unknown>, path: string, problems: Problem[]) => void
> = {
  kafka: kafkaRules,
  objectStorage: objectStorageRules,
  kinesis: kinesisRules,
  postgres: postgresRules,
};

/** Which credential fields each Kafka authentication takes (reference: "credentials variants"). */
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
  if (wanted && wanted.length > 0) {
    if (!credentials) {
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

/** Which object-storage types take which authentication (reference/pipes.md, issue #3). */
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
    if (storage.url !== undefined) {
      problems.push({
        path: `${path}.url`,
        message: 'Azure Blob Storage uses path, azureContainerName and connectionString, not url',
      });
    }
  } else {
    if (storage.url === undefined) problems.push({ path: `${path}.url`, message: 'Required' });
    for (const field of ['path', 'azureContainerName', 'connectionString']) {
      if (storage[field] !== undefined)
        problems.push({ path: `${path}.${field}`, message: 'Only for type azureblobstorage' });
    }
  }
  if (typeof storage.url === 'string' && !isStorageUrl(storage.url)) {
    problems.push({ path: `${path}.url`, message: 'Must be an http(s):// or file:// URL' });
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

function kinesisRules(kinesis: Record<string, unknown>, path: string, problems: Problem[]): void {
  const authentication = kinesis.authentication ?? (kinesis.iamRole !== undefined ? 'IAM_ROLE' : 'IAM_USER');
  keyRule(kinesis, path, authentication === 'IAM_USER', 'IAM_USER', problems);
  iamRoleRule(kinesis, path, authentication === 'IAM_ROLE', problems);
  const atTimestamp = kinesis.iteratorType === 'AT_TIMESTAMP';
  if (atTimestamp && kinesis.timestamp === undefined) {
    problems.push({ path: `${path}.timestamp`, message: 'Required with iteratorType AT_TIMESTAMP' });
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

/** A database pipe takes its targets from tableMappings (reference: "Validation rules"). */
function databaseDestinationRules(pipe: Record<string, unknown>, problems: Problem[]): void {
  const destination = asObject(pipe.destination);
  for (const field of ['table', 'columns', 'managedTable', 'tableDefinition']) {
    if (destination?.[field] !== undefined) {
      problems.push({
        path: `destination.${field}`,
        message: 'Not used by a postgres pipe: its tables come from source.postgres.tableMappings',
      });
    }
  }
  if (Array.isArray(pipe.fieldMappings) && pipe.fieldMappings.length > 0) {
    problems.push({
      path: 'fieldMappings',
      message: 'Not used by a postgres pipe: leave columns out with tableMappings[].excludedColumns',
    });
  }
}

function tableDestinationRules(pipe: Record<string, unknown>, problems: Problem[]): void {
  const destination = asObject(pipe.destination);
  if (!destination) return;
  if (destination.table === undefined) problems.push({ path: 'destination.table', message: 'Required' });
  const columns = Array.isArray(destination.columns) ? destination.columns.map(asObject) : undefined;
  if (columns === undefined)
    problems.push({ path: 'destination.columns', message: 'Required: list the columns of the table' });
  const names = (columns ?? []).map((column) => (typeof column?.name === 'string' ? column.name : undefined));
  names.forEach((name, index) => {
    if (name !== undefined && names.indexOf(name) !== index) {
      problems.push({
        path: `destination.columns[${index}].name`,
        message: `Column "${name}" is listed twice`,
      });
    }
  });
  const known = new Set(names.filter((name): name is string => name !== undefined));
  const managed = destination.managedTable ?? true;
  if (managed === true && destination.tableDefinition === undefined) {
    problems.push({
      path: 'destination.tableDefinition',
      message: 'Required for a managed table: give at least engine.type',
    });
  }
  if (managed === false && destination.tableDefinition !== undefined) {
    problems.push({ path: 'destination.tableDefinition', message: 'Only used with managedTable: true' });
  }
  tableDefinitionRules(asObject(destination.tableDefinition), known, problems);
  expressionRules(destination, columns, problems);
  if (columns !== undefined) fieldMappingRules(pipe.fieldMappings, known, problems);
}

/**
 * Column types and PARTITION BY / PRIMARY KEY expressions go into the engine's SQL as written: each
 * must be one expression, with nothing that could end it early or reach outside the service.
 */
function expressionRules(
  destination: Record<string, unknown>,
  columns: (Record<string, unknown> | undefined)[] | undefined,
  problems: Problem[],
): void {
  const check = (value: unknown, path: string) => {
    const problem = typeof value === 'string' ? fragmentProblem(value) : undefined;
    if (problem) problems.push({ path, message: `Not usable: ${problem}` });
  };
  (columns ?? []).forEach((column, index) => {
    check(column?.type, `destination.columns[${index}].type`);
  });
  const definition = asObject(destination.tableDefinition);
  check(definition?.partitionBy, 'destination.tableDefinition.partitionBy');
  check(definition?.primaryKey, 'destination.tableDefinition.primaryKey');
}

function tableDefinitionRules(
  definition: Record<string, unknown> | undefined,
  columns: Set<string>,
  problems: Problem[],
) {
  if (!definition) return;
  const path = 'destination.tableDefinition';
  const engine = asObject(definition.engine);
  const type = engine?.type;
  const sortingKey = Array.isArray(definition.sortingKey) ? definition.sortingKey : [];
  if (type === 'ReplacingMergeTree') {
    if (engine?.versionColumnId === undefined) {
      problems.push({ path: `${path}.engine.versionColumnId`, message: 'Required for ReplacingMergeTree' });
    }
    if (sortingKey.length === 0) {
      problems.push({
        path: `${path}.sortingKey`,
        message: 'Required for ReplacingMergeTree: give at least one column',
      });
    }
  } else if (engine?.versionColumnId !== undefined) {
    problems.push({ path: `${path}.engine.versionColumnId`, message: 'Only used with ReplacingMergeTree' });
  }
  if (type !== 'SummingMergeTree' && engine?.columnIds !== undefined) {
    problems.push({ path: `${path}.engine.columnIds`, message: 'Only used with SummingMergeTree' });
  }
  const mustExist = (value: unknown, at: string) => {
    if (typeof value === 'string' && !columns.has(value)) {
      problems.push({ path: at, message: `No destination column is named "${value}"` });
    }
  };
  mustExist(engine?.versionColumnId, `${path}.engine.versionColumnId`);
  if (Array.isArray(engine?.columnIds)) {
    engine.columnIds.forEach((id, i) => {
      mustExist(id, `${path}.engine.columnIds[${i}]`);
    });
  }
  sortingKey.forEach((key, i) => {
    mustExist(key, `${path}.sortingKey[${i}]`);
  });
}

/** Every destination column appears once as a destinationField, and only columns do. */
function fieldMappingRules(mappings: unknown, columns: Set<string>, problems: Problem[]): void {
  if (!Array.isArray(mappings)) return; // absent: mapped by equal names
  const mapped = new Map<string, number>();
  mappings.forEach((entry, index) => {
    const target = asObject(entry)?.destinationField;
    if (typeof target !== 'string') return;
    const at = `fieldMappings[${index}].destinationField`;
    if (!columns.has(target)) {
      problems.push({ path: at, message: `No destination column is named "${target}"` });
    } else if (mapped.has(target)) {
      problems.push({
        path: at,
        message: `Column "${target}" is already mapped by fieldMappings[${mapped.get(target)}]`,
      });
    } else {
      mapped.set(target, index);
    }
  });
  for (const column of columns) {
    if (!mapped.has(column)) {
      problems.push({
        path: 'fieldMappings',
        message: `Destination column "${column}" has no mapping: every column must be mapped`,
      });
    }
  }
}

function settingsRules(
  pipe: Record<string, unknown>,
  kind: SourceKind | undefined,
  problems: Problem[],
): void {
  const scaling = asObject(pipe.scaling);
  if (kind && kind !== 'objectStorage' && scaling?.concurrency !== undefined) {
    problems.push({ path: 'scaling.concurrency', message: 'Only used by object-storage pipes' });
  }
  problems.push(...settingsKindProblems(pipe.settings, kind, 'settings'));
}

/** object_storage_* settings only make sense on an object-storage pipe. */
export function settingsKindProblems(value: unknown, kind: SourceKind | undefined, path: string): Problem[] {
  const settings = asObject(value);
  if (!settings || !kind || kind === 'objectStorage') return [];
  return Object.keys(settings)
    .filter((name) => name.startsWith('object_storage_'))
    .map((name) => ({ path: `${path}.${name}`, message: 'Only used by object-storage pipes' }));
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

function isStorageUrl(text: string): boolean {
  try {
    return ['http:', 'https:', 'file:'].includes(new URL(text).protocol);
  } catch {
    return false;
  }
}

function isValidMinute(text: string): boolean {
  const date = new Date(`${text}:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(text);
}

export function asObject(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
