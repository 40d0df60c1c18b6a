import type { SourceConnector } from '../contract.js';
import type { SourceKind } from '../kind.js';
import { objectStorageProblems } from './checks.js';
import { OBJECT_STORAGE_IMMUTABLE, ObjectStoragePatch, ObjectStorageSource } from './config.js';
import { discoverObjectStorage } from './discover.js';
import { OBJECT_STORAGE_VIRTUAL_COLUMNS, openObjectStorage } from './reader.js';
import { objectStorageMappingRules, objectStorageRules } from './rules.js';

/** S3 and S3-compatible stores, GCS, Azure Blob, one http(s) file, and `file://` local files. */
export const objectStorageConnector: SourceConnector = {
  kind: 'objectStorage',
  virtualColumns: OBJECT_STORAGE_VIRTUAL_COLUMNS,
  createProblems: objectStorageProblems,
  open: openObjectStorage,
};

export const objectStorageKind: SourceKind<typeof ObjectStorageSource, 'objectStorage'> = {
  name: 'objectStorage',
  label: 'object-storage',
  config: ObjectStorageSource,
  patch: ObjectStoragePatch,
  immutableFields: Object.fromEntries(
    Object.entries(OBJECT_STORAGE_IMMUTABLE).map(([field, assumed]) => [field, { assumed }]),
  ),
  applyDefaults() {},
  rules: objectStorageRules,
  mappingRules: objectStorageMappingRules,
  settingsPrefix: 'object_storage_',
  scalingConcurrency: true,
  connector: objectStorageConnector,
  discover: discoverObjectStorage,
};
