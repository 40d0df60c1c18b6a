import { type ChildProcess, spawn } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { BlobServiceClient } from '@azure/storage-blob';
import { freePort } from './postgres.js';

const AZURITE = fileURLToPath(new URL('../../node_modules/.bin/azurite-blob', import.meta.url));
/** Azurite's well-known development account key (public, in Azure's documentation). */
export const AZURITE_KEY =
  'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

export interface RunningAzurite {
  connectionString: string;
  put(container: string, name: string, body: Buffer | string): Promise<void>;
  stop(): Promise<void>;
}

/** Azurite's blob service in a child process on a free loopback port. */
export async function startAzurite(containers: string[]): Promise<RunningAzurite> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    AZURITE,
    [
      '--blobHost',
      '127.0.0.1',
      '--blobPort',
      String(port),
      '--inMemoryPersistence',
      '--skipApiVersionCheck',
      '--disableTelemetry',
      '--silent',
    ],
    { stdio: 'ignore' },
  );
  await waitForPort(port);
  const connectionString = `DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=${AZURITE_KEY};BlobEndpoint=http://127.0.0.1:${port}/devstoreaccount1;`;
  const service = BlobServiceClient.fromConnectionString(connectionString);
  for (const container of containers) await service.getContainerClient(container).createIfNotExists();
  return {
    connectionString,
    async put(container, name, body) {
      const data = typeof body === 'string' ? Buffer.from(body) : body;
      await service.getContainerClient(container).getBlockBlobClient(name).upload(data, data.length);
    },
    async stop() {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

async function waitForPort(port: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`azurite did not listen on ${port}`);
}
