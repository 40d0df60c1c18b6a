import { createServer } from 'node:net';
import type { Config } from '../config.js';
import { CliError } from './http-client.js';

/**
 * Whether the server can listen where it is told to, found before anything is created: a first
 * start that then fails would have made (and never shown) the first admin key and token. Binds
 * the address for a moment and lets it go; the server binds it again once it is ready.
 */
export async function checkCanListen(config: Pick<Config, 'host' | 'port'>): Promise<void> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ host: config.host, port: config.port, exclusive: true }, () => resolve());
  }).catch((error: NodeJS.ErrnoException) => {
    throw listenProblem(error, config) ?? error;
  });
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

/** A failure to listen that the user can put right, as one line that says how; else undefined. */
export function listenProblem(
  error: NodeJS.ErrnoException,
  { host, port }: Pick<Config, 'host' | 'port'>,
): CliError | undefined {
  switch (error.code) {
    case 'EADDRINUSE':
      return new CliError(`port ${port} is in use: pass --port or set SLUICE_PORT`);
    case 'EACCES':
      return new CliError(
        `port ${port} needs privileges this user does not have: pass --port (1024 or above) or set SLUICE_PORT`,
      );
    case 'EADDRNOTAVAIL':
      return new CliError(`${host} is not an address of this machine: pass --host or set SLUICE_HOST`);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new CliError(`the host name ${host} does not resolve: pass --host or set SLUICE_HOST`);
    default:
      return undefined;
  }
}
