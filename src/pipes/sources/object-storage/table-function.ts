import { literal } from '../../../engine/index.js';
import type { Credentials } from './listing.js';
import { type Location, objectUrl } from './location.js';

/** The engine's names for the compressions a pipe may declare. */
const COMPRESSION: Record<string, string> = {
  none: 'none',
  gzip: 'gzip',
  gz: 'gzip',
  brotli: 'br',
  br: 'br',
  xz: 'xz',
  LZMA: 'xz',
  zstd: 'zstd',
  auto: 'auto',
};

/**
 * The table function through which the engine itself fetches, decompresses and parses one file
 * (3x handing it bytes, 10x parsing in JavaScript: docs/architecture.md). The text carries
 * credentials: it is never logged.
 */
export function tableFunction(
  location: Location,
  key: string,
  read: { format: string; structure: string; compression?: string | undefined },
  credentials: Credentials | undefined,
): string {
  const url = literal(objectUrl(location, key));
  const format = literal(read.format);
  const structure = literal(read.structure);
  const compression = literal(COMPRESSION[read.compression ?? 'auto'] ?? 'auto');
  switch (location.kind) {
    case 'file':
      return `file(${url}, ${format}, ${structure}, ${compression})`;
    case 'http':
      return `url(${url}, ${format}, ${structure})`;
    case 'azure':
      return `azureBlobStorage(${literal(location.connectionString)}, ${literal(location.container)}, ${literal(key)}, ${format}, ${compression}, ${structure})`;
    case 's3': {
      const auth = credentials
        ? [
            credentials.accessKeyId,
            credentials.secretKey,
            ...(credentials.sessionToken ? [credentials.sessionToken] : []),
          ]
            .map(literal)
            .join(', ')
        : 'NOSIGN';
      return `s3(${url}, ${auth}, ${format}, ${structure}, ${compression})`;
    }
  }
}
