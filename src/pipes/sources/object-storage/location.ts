import { isAbsolute, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PermanentError } from '../../records/index.js';

/** Where an object-storage pipe's files are, resolved from its `url`. */
export type Location =
  | { kind: 's3'; endpoint: string; region: string; bucket: string; pattern: string; pathStyle: boolean }
  | { kind: 'http'; url: string }
  | { kind: 'file'; root: string; pattern: string }
  | { kind: 'azure'; connectionString: string; container: string; pattern: string };

/** A URL or path that cannot name a location: retrying will not make it one. */
export class LocationError extends PermanentError {
  constructor(message: string) {
    super('SLUICE_ERR_SOURCE_CONFIG', message);
  }
}

const WILDCARD = /[*?]/;

/**
 * Resolves a pipe URL. S3 and S3-compatible providers in their own URL forms (virtual-hosted and
 * path style), any other http(s) URL with wildcards as a path-style S3-compatible endpoint
 * (`http://host:port/bucket/key-glob`, as MinIO users write it), an http(s) URL without wildcards
 * and without keys as one public file, and `file://` inside the local files directory.
 */
export function resolveLocation(url: string, options: { localFilesDir: string; hasKeys: boolean }): Location {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new LocationError(`not a URL: ${url}`);
  }
  if (parsed.protocol === 'file:') return fileLocation(parsed, options.localFilesDir);
  const path = rawPath(url);
  // One public file: no keys, no provider host, and no wildcard (a `?` that starts a query string
  // with parameters, as in `data.csv?sig=...`, is no wildcard).
  const globby = path.includes('*') || (path.includes('?') && !/\?[^/]*=/.test(path));
  if (!globby && !options.hasKeys && !isKnownS3Host(parsed.hostname)) {
    return { kind: 'http', url };
  }
  return s3Location(parsed, path);
}

/**
 * The path of an http(s) URL as written: `?` is a glob here, not the start of a query string, so
 * the URL parser's pathname (which stops at `?`) would lose it.
 */
function rawPath(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2);
  if (start < 0) return '/';
  return decodeURI(url.slice(start));
}

function isKnownS3Host(host: string): boolean {
  return /(^|\.)amazonaws\.com$|(^|\.)googleapis\.com$|digitaloceanspaces\.com$|r2\.cloudflarestorage\.com$|cloud\.ovh\.net$/.test(
    host,
  );
}

function s3Location(url: URL, path: string): Location {
  const host = url.hostname;
  const key = path.replace(/^\//, '');
  const origin = `${url.protocol}//${url.host}`;
  const virtual = (bucket: string, endpoint: string, region: string): Location => ({
    kind: 's3',
    endpoint,
    region,
    bucket,
    pattern: key,
    pathStyle: false,
  });
  let match = /^(.+)\.s3[.-]([a-z0-9-]+)\.amazonaws\.com$/.exec(host);
  if (match?.[1] && match[2] && match[2] !== 'amazonaws') {
    return virtual(match[1], `https://s3.${match[2]}.amazonaws.com`, match[2]);
  }
  match = /^(.+)\.s3\.amazonaws\.com$/.exec(host);
  if (match?.[1]) return virtual(match[1], 'https://s3.amazonaws.com', 'us-east-1');
  match = /^(.+)\.storage\.googleapis\.com$/.exec(host);
  if (match?.[1]) return virtual(match[1], 'https://storage.googleapis.com', 'auto');
  match = /^(.+)\.([a-z0-9-]+)\.digitaloceanspaces\.com$/.exec(host);
  if (match?.[1] && match[2])
    return virtual(match[1], `https://${match[2]}.digitaloceanspaces.com`, match[2]);
  match = /^(.+)\.s3\.([a-z0-9-]+)\.(io\.)?cloud\.ovh\.net$/.exec(host);
  if (match?.[1] && match[2])
    return virtual(match[1], `https://s3.${match[2]}.${match[3] ?? ''}cloud.ovh.net`, match[2]);
  // Path style: https://s3.<region>.amazonaws.com/bucket/key, storage.googleapis.com/bucket/key,
  // <account>.r2.cloudflarestorage.com/bucket/key, or any S3-compatible endpoint.
  const slash = key.indexOf('/');
  const bucket = slash < 0 ? key : key.slice(0, slash);
  if (!bucket || WILDCARD.test(bucket)) {
    throw new LocationError(
      'the URL names no bucket: write http(s)://host/bucket/path/*.ext or a provider URL',
    );
  }
  const region =
    /^s3[.-]([a-z0-9-]+)\.amazonaws\.com$/.exec(host)?.[1] ??
    (host.endsWith('amazonaws.com') ? 'us-east-1' : 'auto');
  return {
    kind: 's3',
    endpoint: origin,
    region,
    bucket,
    pattern: slash < 0 ? '' : key.slice(slash + 1),
    pathStyle: true,
  };
}

function fileLocation(url: URL, localFilesDir: string): Location {
  const root = resolve(localFilesDir);
  // file:///abs/path is taken relative to the local files directory when it is not inside it, so
  // file:///data.ndjson and file://<files dir>/data.ndjson both mean the same file.
  let raw: string;
  try {
    raw = fileURLToPath(url);
  } catch (error) {
    throw new LocationError(`not a usable file:// URL: ${(error as Error).message}`);
  }
  const candidate = raw.startsWith(root + sep) || raw === root ? raw : resolve(root, `.${raw}`);
  const inside = relative(root, candidate);
  if (inside.startsWith('..') || isAbsolute(inside)) {
    throw new LocationError(`file:// URLs must stay inside the local files directory (${root})`);
  }
  return { kind: 'file', root, pattern: inside.split(sep).join('/') };
}

/** The source's files: Azure by path, container and connection string; every other type by URL. */
export function sourceLocation(
  source: {
    type?: string;
    url?: string;
    path?: string;
    azureContainerName?: string;
    connectionString?: string;
    accessKey?: unknown;
  },
  localFilesDir: string,
): Location {
  if (source.type === 'azureblobstorage') {
    return {
      kind: 'azure',
      connectionString: source.connectionString ?? '',
      container: source.azureContainerName ?? '',
      pattern: (source.path ?? '').replace(/^\//, ''),
    };
  }
  return resolveLocation(source.url ?? '', { localFilesDir, hasKeys: source.accessKey !== undefined });
}

/** The object URL the engine reads one file from (Azure reads by container and key instead). */
export function objectUrl(location: Location, key: string): string {
  switch (location.kind) {
    case 'azure':
      return `${location.container}/${key}`;
    case 'http':
      return location.url;
    case 'file':
      return resolve(location.root, key);
    case 's3': {
      const encoded = key.split('/').map(encodeURIComponent).join('/');
      if (location.pathStyle) return `${location.endpoint}/${location.bucket}/${encoded}`;
      const endpoint = new URL(location.endpoint);
      return `${endpoint.protocol}//${location.bucket}.${endpoint.host}/${encoded}`;
    }
  }
}

/** The host a location is fetched from over the network; undefined for local files. */
export function locationHost(location: Location): string | undefined {
  switch (location.kind) {
    case 'file':
      return undefined;
    case 'http':
      return new URL(location.url).hostname;
    case 's3':
      return new URL(location.endpoint).hostname;
    case 'azure': {
      // The emulator's shorthand: the SDK reaches 127.0.0.1:10000, or the proxy it names.
      if (/(?:^|;)\s*UseDevelopmentStorage\s*=\s*true/i.test(location.connectionString)) {
        const proxy = /(?:^|;)\s*DevelopmentStorageProxyUri=([^;]+)/i.exec(location.connectionString)?.[1];
        return proxy ? hostOf(proxy) : '127.0.0.1';
      }
      const endpoint = /(?:^|;)\s*BlobEndpoint=([^;]+)/i.exec(location.connectionString)?.[1];
      if (endpoint) return new URL(endpoint).hostname;
      const account = /(?:^|;)\s*AccountName=([^;]+)/i.exec(location.connectionString)?.[1];
      const suffix =
        /(?:^|;)\s*EndpointSuffix=([^;]+)/i.exec(location.connectionString)?.[1] ?? 'core.windows.net';
      return account ? `${account}.blob.${suffix}` : undefined;
    }
  }
}

/**
 * An Azure pipe's `url`, which the cloud CLI sends beside the connection string, names the host
 * the connection string reaches; else why not (the rules checked its container and path).
 */
export function azureUrlHostProblem(url: string | undefined, location: Location): string | undefined {
  if (location.kind !== 'azure' || url === undefined || !URL.canParse(url)) return undefined;
  const named = new URL(url).hostname;
  const reached = locationHost(location);
  if (reached === undefined || named === reached) return undefined;
  return `names the host ${named}, but connectionString reaches ${reached}: make them name the same account, or leave url out`;
}

/** The host of an address written with or without a scheme (`host:port` or `http://host:port/`). */
function hostOf(address: string): string {
  const url = /^[a-z][a-z0-9+.-]*:\/\//i.test(address) ? address : `http://${address}`;
  // Not an address at all: judged as written (a name that resolves nowhere is refused).
  return URL.canParse(url) ? new URL(url).hostname : address;
}
