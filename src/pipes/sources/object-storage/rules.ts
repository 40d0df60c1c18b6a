import type { Problem } from '../../../errors.js';
import type { FieldMappingConfig } from '../../schema/index.js';
import { iamRoleRule, keyRule } from '../aws/index.js';
import type { ObjectStorageConfig } from './config.js';

/** Which object-storage types take which authentication (README, "Pipes": validation). */
const STORAGE_AUTHENTICATION: Record<string, string[]> = {
  IAM_ROLE: ['s3'],
  IAM_USER: ['s3', 'gcs', 'dospaces', 'cloudflarer2', 'ovhobjectstorage'],
  SERVICE_ACCOUNT: ['gcs'],
  CONNECTION_STRING: ['azureblobstorage'],
};

const AZURE_FIELDS = ['path', 'azureContainerName', 'connectionString'] as const;

export function objectStorageRules(storage: ObjectStorageConfig, path: string, problems: Problem[]): void {
  const type = storage.type ?? 's3';
  const azure = type === 'azureblobstorage';
  const authentication = storage.authentication ?? (azure ? 'CONNECTION_STRING' : undefined);
  const types = authentication && STORAGE_AUTHENTICATION[authentication];
  if (authentication && types && !types.includes(type)) {
    problems.push({
      path: `${path}.authentication`,
      message: `${authentication} works with type ${types.join(', ')}, not ${type}`,
    });
  }
  if (azure) {
    for (const field of AZURE_FIELDS) {
      if (storage[field] === undefined)
        problems.push({ path: `${path}.${field}`, message: 'Required for Azure Blob Storage' });
    }
    const contradiction = azureUrlProblem(storage);
    if (contradiction) problems.push({ path: `${path}.url`, message: contradiction });
  } else {
    if (storage.url === undefined) problems.push({ path: `${path}.url`, message: 'Required' });
    for (const field of AZURE_FIELDS) {
      if (storage[field] !== undefined)
        problems.push({ path: `${path}.${field}`, message: 'Only for type azureblobstorage' });
    }
  }
  if (storage.url !== undefined && !isStorageUrl(storage.url, azure)) {
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
  if (storage.delimiter !== undefined && !storage.format.startsWith('CSV')) {
    problems.push({ path: `${path}.delimiter`, message: 'Only used with the CSV formats' });
  }
}

/**
 * The cloud CLI sends an Azure blob's URL beside `azureContainerName` and `path`: accepted when it
 * names the same container and path (`https://<account>.blob.core.windows.net/<container>/<path>`,
 * or the emulator's `http://<host>/<account>/<container>/<path>`), refused when it contradicts
 * them. Its host is held against the connection string's by the create checks.
 */
function azureUrlProblem(storage: ObjectStorageConfig): string | undefined {
  const { url, azureContainerName: container, path } = storage;
  if (url === undefined || container === undefined || path === undefined) return;
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) return;
  const named = decodeURIComponent(new URL(url).pathname).replace(/^\/+/, '');
  const wanted = `${container}/${path.replace(/^\/+/, '')}`;
  if (named === wanted || named.split('/').slice(1).join('/') === wanted) return;
  return `names /${named}, but azureContainerName and path say /${wanted}: make them name the same blobs, or leave url out`;
}

/** An http(s) URL (an Azure blob's, or any store's), or a `file://` one for every type but Azure. */
function isStorageUrl(text: string, azure: boolean): boolean {
  if (!URL.canParse(text)) return false;
  return (azure ? ['http:', 'https:'] : ['http:', 'https:', 'file:']).includes(new URL(text).protocol);
}

const VIRTUAL_FIELDS = ['_path', '_file', '_size', '_time'];

/** Field mappings as the file format names fields: by position without a header, one JSON value whole. */
export function objectStorageMappingRules(
  storage: ObjectStorageConfig,
  mappings: FieldMappingConfig[] | undefined,
  problems: Problem[],
): void {
  if (storage.format === 'JSONAsObject') wholeRecordRule(mappings, problems);
  if (storage.format === 'CSV' || storage.format === 'TabSeparated') {
    positionalRule(mappings, storage.format, problems);
  }
}

/** Files without a header name their fields by position, c1, c2, ... (as the engine does). */
function positionalRule(mappings: FieldMappingConfig[] | undefined, format: string, problems: Problem[]) {
  if (!mappings) {
    problems.push({
      path: 'fieldMappings',
      message: `Required for ${format}: a file without a header names its fields c1, c2, ... by position; map them to the columns`,
    });
    return;
  }
  mappings.forEach(({ sourceField: field }, index) => {
    if (!VIRTUAL_FIELDS.includes(field) && !/^c[1-9]\d{0,3}$/.test(field)) {
      problems.push({
        path: `fieldMappings[${index}].sourceField`,
        message: `${format} without a header names fields by position: use c1, c2, ... (or ${format}WithNames for a header row)`,
      });
    }
  });
}

/** JSONAsObject reads each record as one JSON value: every mapping takes that one source field. */
function wholeRecordRule(mappings: FieldMappingConfig[] | undefined, problems: Problem[]): void {
  const fields = new Set(
    (mappings ?? []).map((mapping) => mapping.sourceField).filter((field) => !VIRTUAL_FIELDS.includes(field)),
  );
  if (fields.size > 1) {
    problems.push({
      path: 'fieldMappings',
      message: `JSONAsObject reads each record as one JSON value: map it from one sourceField (for example "json"), not ${[...fields].join(', ')}`,
    });
  }
}
