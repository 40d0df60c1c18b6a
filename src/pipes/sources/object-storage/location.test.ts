import { describe, expect, it } from 'vitest';
import { globMatcher, globPrefix } from './listing.js';
import { LocationError, locationHost, objectUrl, resolveLocation } from './location.js';

const resolve = (url: string, hasKeys = true) =>
  resolveLocation(url, { localFilesDir: '/srv/files', hasKeys });

describe('resolveLocation', () => {
  it.each([
    [
      'https://logs.s3.eu-west-1.amazonaws.com/app/*.json',
      'https://s3.eu-west-1.amazonaws.com',
      'eu-west-1',
      'logs',
      'app/*.json',
      false,
    ],
    [
      'https://logs.s3.amazonaws.com/app/**/x?.csv',
      'https://s3.amazonaws.com',
      'us-east-1',
      'logs',
      'app/**/x?.csv',
      false,
    ],
    [
      'https://s3.us-west-2.amazonaws.com/logs/app/*.json',
      'https://s3.us-west-2.amazonaws.com',
      'us-west-2',
      'logs',
      'app/*.json',
      true,
    ],
    [
      'https://storage.googleapis.com/bucket/data/*.parquet',
      'https://storage.googleapis.com',
      'auto',
      'bucket',
      'data/*.parquet',
      true,
    ],
    [
      'https://bucket.storage.googleapis.com/data/*.parquet',
      'https://storage.googleapis.com',
      'auto',
      'bucket',
      'data/*.parquet',
      false,
    ],
    [
      'https://space.fra1.digitaloceanspaces.com/d/*.csv',
      'https://fra1.digitaloceanspaces.com',
      'fra1',
      'space',
      'd/*.csv',
      false,
    ],
    [
      'https://acct.r2.cloudflarestorage.com/bucket/d/*.csv',
      'https://acct.r2.cloudflarestorage.com',
      'auto',
      'bucket',
      'd/*.csv',
      true,
    ],
    [
      'http://127.0.0.1:9000/minio-bucket/a/b/*.ndjson',
      'http://127.0.0.1:9000',
      'auto',
      'minio-bucket',
      'a/b/*.ndjson',
      true,
    ],
  ])('%s', (url, endpoint, region, bucket, pattern, pathStyle) => {
    expect(resolve(url)).toEqual({ kind: 's3', endpoint, region, bucket, pattern, pathStyle });
  });

  it('reads a URL without wildcards or keys as one public file, query string included', () => {
    expect(resolve('https://example.com/exports/data.csv', false)).toEqual({
      kind: 'http',
      url: 'https://example.com/exports/data.csv',
    });
    expect(resolve('https://example.com/data.csv?sig=abc', false)).toMatchObject({ kind: 'http' });
  });

  it('confines file:// URLs to the local files directory', () => {
    expect(resolve('file:///in/*.ndjson')).toEqual({
      kind: 'file',
      root: '/srv/files',
      pattern: 'in/*.ndjson',
    });
    expect(resolve('file:///srv/files/in/a.csv')).toEqual({
      kind: 'file',
      root: '/srv/files',
      pattern: 'in/a.csv',
    });
    expect(resolve('file:///../../etc/passwd')).toEqual({
      kind: 'file',
      root: '/srv/files',
      pattern: 'etc/passwd',
    });
    expect(() => resolve('file:///..%2Fetc/passwd')).toThrow(LocationError);
    expect(() => resolve('http://host/*.json')).toThrow(
      expect.objectContaining({
        code: 'SLUICE_ERR_SOURCE_CONFIG',
        message: expect.stringContaining('the URL names no bucket'),
      }),
    );
  });

  it('gives the engine virtual-hosted or path-style object URLs', () => {
    expect(objectUrl(resolve('https://logs.s3.eu-west-1.amazonaws.com/app/*.json'), 'app/a b.json')).toBe(
      'https://logs.s3.eu-west-1.amazonaws.com/app/a%20b.json',
    );
    expect(objectUrl(resolve('http://127.0.0.1:9000/b/*.json'), 'x/1.json')).toBe(
      'http://127.0.0.1:9000/b/x/1.json',
    );
  });
});

describe('globs', () => {
  it('match *, ? and ** but not {a,b}', () => {
    expect(globMatcher('a/*.json')('a/x.json')).toBe(true);
    expect(globMatcher('a/*.json')('a/b/x.json')).toBe(false);
    expect(globMatcher('a/**/*.json')('a/b/c/x.json')).toBe(true);
    expect(globMatcher('a/?.json')('a/xy.json')).toBe(false);
    expect(globMatcher('a/{x,y}.json')('a/x.json')).toBe(false);
    expect(globMatcher('a/{x,y}.json')('a/{x,y}.json')).toBe(true);
    expect(globPrefix('logs/2026/*/x.json')).toBe('logs/2026/');
  });
});

describe('locationHost', () => {
  const azure = (connectionString: string) =>
    locationHost({ kind: 'azure', connectionString, container: 'c', pattern: '*' });

  it("names the emulator's address for UseDevelopmentStorage, so the private-address rule judges it", () => {
    expect(azure('UseDevelopmentStorage=true')).toBe('127.0.0.1');
    expect(azure('UseDevelopmentStorage=true;DevelopmentStorageProxyUri=http://10.1.2.3:8080')).toBe(
      '10.1.2.3',
    );
    expect(azure('usedevelopmentstorage = true;DevelopmentStorageProxyUri=169.254.169.254:80')).toBe(
      '169.254.169.254',
    );
    expect(azure('DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=YQ==')).toBe(
      'acme.blob.core.windows.net',
    );
  });
});
