import { readdir, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import { CodedError } from '../../../errors.js';
import type { AwsKeys } from '../aws/index.js';
import type { Location } from './location.js';

/** One file to ingest: its key (path relative to the location), size and modification time. */
export interface SourceFile {
  key: string;
  size: number;
  modified: Date;
}

/** An access key, or an assumed role's temporary keys (with their session token). */
export type Credentials = AwsKeys;

/**
 * Globs `*`, `?` and `**` only, as the hosted service (no `{a,b}` alternation), with the engine's
 * and the storage providers' meaning rather than a shell's: `*` and `?` stay within one path
 * segment, `**` matches across `/` wherever it stands (`logs/**.ndjson` matches
 * `logs/2026/11/01/x.ndjson`), and `**` followed by `/` may also match no directory at all.
 */
export function globMatcher(pattern: string): (key: string) => boolean {
  let matcher = matchers.get(pattern);
  if (!matcher) {
    // Each poll of each pipe lists with its pattern: compiled once, not once a poll.
    if (matchers.size >= MAX_MATCHERS) matchers.clear();
    matcher = compiledGlob(pattern);
    matchers.set(pattern, matcher);
  }
  return matcher;
}

const MAX_MATCHERS = 10_000;
const matchers = new Map<string, (key: string) => boolean>();

function compiledGlob(pattern: string): (key: string) => boolean {
  if (!/[*?]/.test(pattern)) return (key) => key === pattern;
  const source = pattern
    .split(/(\*\*\/|\*\*|\*|\?)/)
    .map((part) => GLOB_PARTS[part] ?? part.replace(/[.+^${}()|[\]\\]/g, '\\$&'))
    .join('');
  const regex = new RegExp(`^${source}$`, 's');
  return (key) => regex.test(key);
}

const GLOB_PARTS: Record<string, string> = { '**/': '(?:.*/)?', '**': '.*', '*': '[^/]*', '?': '[^/]' };

/** The longest fixed prefix of a glob: what to ask the store to list. */
export function globPrefix(pattern: string): string {
  const wildcard = pattern.search(/[*?]/);
  return wildcard < 0 ? pattern : pattern.slice(0, wildcard);
}

// The AWS and Azure SDKs load on first use (tens of megabytes each): a node that lists neither
// store never holds them (the idle footprint, `npm run bench -- memory`).
async function s3Client(
  location: Extract<Location, { kind: 's3' }>,
  credentials?: Credentials,
): Promise<{
  client: S3Client;
  ListObjectsV2Command: typeof import('@aws-sdk/client-s3').ListObjectsV2Command;
}> {
  const { S3Client, ListObjectsV2Command } = await import('@aws-sdk/client-s3');
  const client = new S3Client({
    endpoint: location.endpoint,
    region: location.region === 'auto' ? 'us-east-1' : location.region,
    forcePathStyle: location.pathStyle,
    credentials: credentials
      ? {
          accessKeyId: credentials.accessKeyId,
          secretAccessKey: credentials.secretKey,
          ...(credentials.sessionToken ? { sessionToken: credentials.sessionToken } : {}),
        }
      : { accessKeyId: '', secretAccessKey: '' },
    // Public buckets: send unsigned requests.
    ...(credentials ? {} : { signer: { sign: async (request: unknown) => request } as never }),
    maxAttempts: 3,
  });
  return { client, ListObjectsV2Command };
}

/**
 * Files of the location in lexical key order, after `startAfter` when given, at most `limit`.
 * Listing is paged; only keys that match the glob are kept.
 */
export async function listFiles(location: Location, options: ListOptions): Promise<SourceFile[]> {
  switch (location.kind) {
    case 'http': {
      if (options.startAfter !== undefined && options.startAfter >= location.url) return [];
      // Not followed: where a redirect leads was never judged by the private-address rule, and
      // the engine that reads the file follows none either (max_http_get_redirects is 0).
      const response = await fetch(location.url, { method: 'HEAD', redirect: 'manual' });
      if (response.status >= 300 && response.status < 400) {
        throw new CodedError(
          'SLUICE_ERR_SOURCE_CONFIG',
          `${location.url} redirects (${response.status} to ${response.headers.get('location') ?? 'an address it does not name'}); Sluice follows no redirect: give the address the file is at`,
        );
      }
      if (!response.ok)
        throw new CodedError('SLUICE_ERR_SOURCE', `HEAD ${location.url} answered ${response.status}`);
      const modified = response.headers.get('last-modified');
      return [
        {
          key: location.url,
          size: Number(response.headers.get('content-length') ?? 0),
          modified: modified ? new Date(modified) : new Date(0),
        },
      ];
    }
    case 'file':
      return listLocalFiles(location.root, location.pattern, options);
    case 's3':
      return listS3(location, options);
    case 'azure':
      return listAzure(location, options);
  }
}

/** Azure lists in lexical order too, but has no start-after: pages are filtered instead. */
async function listAzure(
  location: Extract<Location, { kind: 'azure' }>,
  options: ListOptions,
): Promise<SourceFile[]> {
  const { BlobServiceClient } = await import('@azure/storage-blob');
  const container = BlobServiceClient.fromConnectionString(location.connectionString, {
    retryOptions: { maxTries: 3, retryDelayInMs: 200, maxRetryDelayInMs: 2000 },
  }).getContainerClient(location.container);
  const matches = globMatcher(location.pattern);
  const files: SourceFile[] = [];
  const pages = container
    .listBlobsFlat({ prefix: globPrefix(location.pattern) })
    .byPage({ maxPageSize: options.pageSize ?? 1000 });
  for await (const page of pages) {
    for (const blob of page.segment.blobItems) {
      if (!matches(blob.name)) continue;
      if (options.startAfter !== undefined && blob.name <= options.startAfter) continue;
      files.push({
        key: blob.name,
        size: blob.properties.contentLength ?? 0,
        modified: blob.properties.lastModified,
      });
      if (files.length >= options.limit) return files;
    }
  }
  return files;
}

export interface ListOptions {
  startAfter?: string | undefined;
  limit: number;
  credentials?: Credentials | undefined;
  /** Keys per listing request (the store's maximum, 1000, unless a test wants many pages). */
  pageSize?: number;
}

async function listS3(
  location: Extract<Location, { kind: 's3' }>,
  options: ListOptions,
): Promise<SourceFile[]> {
  const { client, ListObjectsV2Command } = await s3Client(location, options.credentials);
  const matches = globMatcher(location.pattern);
  const prefix = globPrefix(location.pattern);
  const files: SourceFile[] = [];
  let token: string | undefined;
  try {
    do {
      const page = await client.send(
        new ListObjectsV2Command({
          Bucket: location.bucket,
          Prefix: prefix,
          MaxKeys: options.pageSize ?? 1000,
          ...(token
            ? { ContinuationToken: token }
            : options.startAfter
              ? { StartAfter: options.startAfter }
              : {}),
        }),
      );
      for (const object of page.Contents ?? []) {
        if (!object.Key || !matches(object.Key)) continue;
        if (options.startAfter !== undefined && object.Key <= options.startAfter) continue;
        files.push({ key: object.Key, size: object.Size ?? 0, modified: object.LastModified ?? new Date(0) });
        if (files.length >= options.limit) return files;
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  } finally {
    client.destroy();
  }
  return files;
}

/**
 * Where each local files directory really is. The directory is the server's own (its
 * configuration, the same for the whole process), so it is resolved once: a realpath is most of
 * what an idle `file://` pipe's poll costs (bench/idle-pipes.ts). What lies under it is resolved
 * at every listing, as a user may make links there at any time.
 */
const realRoots = new Map<string, string>();

async function realRootOf(root: string): Promise<string> {
  const known = realRoots.get(root);
  if (known !== undefined) return known;
  const resolved = await realpath(root);
  realRoots.set(root, resolved);
  return resolved;
}

async function staysInside(root: string, relativeDir: string): Promise<boolean> {
  // The root itself: nothing of the pattern to resolve.
  if (relativeDir === '') return true;
  try {
    const realRoot = await realRootOf(root);
    const realDir = await realpath(join(root, relativeDir));
    return realDir === realRoot || realDir.startsWith(`${realRoot}/`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return true; // nothing there to list
    throw error;
  }
}

async function listLocalFiles(
  root: string,
  pattern: string,
  options: { startAfter?: string | undefined; limit: number },
): Promise<SourceFile[]> {
  const matches = globMatcher(pattern);
  const prefix = globPrefix(pattern);
  const start = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/')) : '';
  const keys: string[] = [];
  const walk = async (relativeDir: string): Promise<void> => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = await readdir(join(root, relativeDir), { withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    for (const entry of entries) {
      const key = relativeDir ? `${relativeDir}/${entry.name}` : entry.name;
      // Symbolic links are not followed: they could lead out of the local files directory.
      if (entry.isDirectory()) await walk(key);
      else if (entry.isFile() && matches(key)) keys.push(key);
    }
  };
  // The fixed part of the pattern is a directory path as written: were any part of it a symbolic
  // link, it could lead out of the local files directory.
  if (!(await staysInside(root, start))) return [];
  await walk(start);
  keys.sort();
  const after = options.startAfter;
  const selected = keys.filter((key) => after === undefined || key > after).slice(0, options.limit);
  return Promise.all(
    selected.map(async (key) => {
      const info = await stat(join(root, key));
      return { key, size: info.size, modified: info.mtime };
    }),
  );
}
