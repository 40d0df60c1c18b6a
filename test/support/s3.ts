import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { freePort } from './postgres.js';

export const S3_KEY = { accessKeyId: 'S3RVER', secretKey: 'S3RVER' };

export interface RunningS3 {
  /** http://127.0.0.1:port */
  endpoint: string;
  put(bucket: string, key: string, body: Buffer | string): Promise<void>;
  stop(): Promise<void>;
}

/** s3rver on a free loopback port with the given buckets (path-style requests). */
export async function startS3(buckets: string[]): Promise<RunningS3> {
  const directory = await mkdtemp(join(tmpdir(), 'sluice-s3-'));
  const port = await freePort();
  const server = new S3rver({
    address: '127.0.0.1',
    port,
    directory,
    silent: true,
    configureBuckets: buckets.map((name) => ({ name, configs: [] })),
  });
  await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: S3_KEY.accessKeyId, secretAccessKey: S3_KEY.secretKey },
  });
  return {
    endpoint,
    async put(bucket, key, body) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    },
    async stop() {
      client.destroy();
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
