import { type Static, Type as T } from '@sinclair/typebox';
import { NonEmpty, Secret, StrictObject, StringEnum } from '../../../schema/index.js';
import { AccessKey } from '../aws/index.js';

/** Allowed values, from the hosted service's API and Terraform provider (README, "Pipes"). */
export const OBJECT_STORAGE_TYPES = [
  's3',
  'gcs',
  'dospaces',
  'azureblobstorage',
  'cloudflarer2',
  'ovhobjectstorage',
] as const;
export const OBJECT_STORAGE_FORMATS = [
  'JSONEachRow',
  'JSONAsObject',
  'CSV',
  'CSVWithNames',
  'TabSeparated',
  'TabSeparatedWithNames',
  'Parquet',
  'Avro',
] as const;
export const COMPRESSIONS = ['none', 'gzip', 'gz', 'brotli', 'br', 'xz', 'LZMA', 'zstd', 'auto'] as const;
export const OBJECT_STORAGE_AUTHENTICATIONS = [
  'IAM_ROLE',
  'IAM_USER',
  'SERVICE_ACCOUNT',
  'CONNECTION_STRING',
] as const;

export const ObjectStorageSource = StrictObject({
  type: T.Optional(StringEnum(OBJECT_STORAGE_TYPES, { default: 's3' })),
  format: StringEnum(OBJECT_STORAGE_FORMATS),
  url: T.Optional(NonEmpty({ description: 'URL of the files; may contain the wildcards *, ? and **' })),
  delimiter: T.Optional(T.String({ minLength: 1, maxLength: 1 })),
  compression: T.Optional(StringEnum(COMPRESSIONS)),
  isContinuous: T.Optional(T.Boolean()),
  queueUrl: T.Optional(T.String({ format: 'uri' })),
  authentication: T.Optional(StringEnum(OBJECT_STORAGE_AUTHENTICATIONS)),
  iamRole: T.Optional(NonEmpty()),
  connectionString: T.Optional(
    Secret(NonEmpty({ description: 'Secret (Azure): stored encrypted, never returned' })),
  ),
  path: T.Optional(NonEmpty({ description: 'Azure blob path; may contain wildcards' })),
  azureContainerName: T.Optional(NonEmpty()),
  accessKey: T.Optional(AccessKey),
  serviceAccountKey: T.Optional(
    Secret(NonEmpty({ description: 'Secret (gcs, base64): stored encrypted, never returned' })),
  ),
  skipInitialLoad: T.Optional(T.Boolean()),
  startAfter: T.Optional(NonEmpty({ description: 'Ingest only keys lexically after this one' })),
});
export type ObjectStorageConfig = Static<typeof ObjectStorageSource>;

/**
 * Fields Terraform sends back on every update although they cannot change (README, "Pipes"), each
 * with the value the hosted service assumes when a pipe was created without it.
 */
export const OBJECT_STORAGE_IMMUTABLE = {
  type: 's3',
  format: undefined,
  url: undefined,
  isContinuous: false,
  skipInitialLoad: false,
  startAfter: undefined,
  path: undefined,
  azureContainerName: undefined,
};

/** PATCH: the authentication and its secrets, and the immutable fields as Terraform sends them. */
export const ObjectStoragePatch = T.Partial(
  T.Pick(ObjectStorageSource, [
    'authentication',
    'iamRole',
    'accessKey',
    'connectionString',
    'serviceAccountKey',
    ...(Object.keys(OBJECT_STORAGE_IMMUTABLE) as (keyof typeof OBJECT_STORAGE_IMMUTABLE)[]),
  ]),
  { additionalProperties: false, minProperties: 1 },
);
