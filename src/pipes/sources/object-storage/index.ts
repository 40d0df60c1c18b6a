import type { SourceConnector } from '../contract.js';
import { objectStorageProblems } from './checks.js';
import { OBJECT_STORAGE_VIRTUAL_COLUMNS, openObjectStorage } from './reader.js';

/** S3 and S3-compatible stores, GCS, Azure Blob, one http(s) file, and `file://` local files. */
export const objectStorageConnector: SourceConnector = {
  kind: 'objectStorage',
  virtualColumns: OBJECT_STORAGE_VIRTUAL_COLUMNS,
  createProblems: objectStorageProblems,
  open: openObjectStorage,
};

export { discoverObjectStorage } from './discover.js';
export { LocationError } from './location.js';
