import { createSluice, type Sluice } from '../app.js';
import type { Config } from '../config.js';
import { DataDirBusyError, liveHolder } from '../data-dir.js';
import type { BootstrapResult } from '../identity/index.js';
import { checkCanListen, listenProblem } from './listen-check.js';
import { npmAncestor, whenGone } from './npm-parent.js';

/**
 * `sluice serve`: runs the API until SIGINT or SIGTERM, or until the npm process that started it
 * ends, then closes cleanly.
 */
export async function serve(config: Config): Promise<void> {
  // Found before anything is made: a start that fails after the first credentials were created
  // would never show them (README, "Quickstart").
  const holder = await liveHolder(config.dataDir);
  if (holder) throw new DataDirBusyError(config.dataDir, holder);
  await checkCanListen(config);
  const npm = npmAncestor();
  const sluice = await createSluice(config);
  const url = await sluice.listen().catch(async (error: NodeJS.ErrnoException) => {
    // Taken since the check (seconds ago): credentials made by this start are shown all the same.
    if (sluice.bootstrap) console.error(bootstrapLines(sluice.bootstrap).join('\n'));
    await sluice.close();
    throw listenProblem(error, config) ?? error;
  });
  printBanner(url, sluice.bootstrap, await describeDefaults(sluice), config);
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    sluice.logger.info({ signal }, 'shutting down');
    await sluice.close();
    process.exit(0);
  };
  process.on('SIGHUP', () => reload(sluice));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  if (!npm) return sluice.logger.debug('not started by npm: Sluice runs on when its parent process ends');
  sluice.logger.info({ npmPid: npm.pid }, `started by npm (pid ${npm.pid}): Sluice stops when it ends`);
  whenGone(npm, () => {
    sluice.logger.warn(
      { npmPid: npm.pid },
      `the npm process that started Sluice (pid ${npm.pid}) has ended (npm passes on SIGINT and SIGTERM only): shutting down`,
    );
    void shutdown('npm ended');
  });
}

/**
 * SIGHUP reads the TLS certificate and key again (a renewal), for new connections; nothing else
 * is read again, and the log says so either way.
 */
function reload(sluice: Sluice): void {
  if (!sluice.config.tls) {
    sluice.logger.warn(
      { signal: 'SIGHUP' },
      'SIGHUP: nothing reloaded: SIGHUP reads the TLS certificate and key again, and this server serves plain HTTP (no SLUICE_TLS_CERT); every other setting is read at start: restart to change it',
    );
    return;
  }
  sluice
    .reloadTls()
    .catch((error: Error) =>
      sluice.logger.error({ err: error }, 'SIGHUP: TLS reload failed; serving the previous certificate'),
    );
}

async function describeDefaults(sluice: Sluice) {
  const organization = (await sluice.store.repos.identity.listOrganizations()).find((o) => o.operator);
  const service = organization && (await sluice.identity.listServices(organization.id))[0];
  return { organizationId: organization?.id, serviceId: service?.id };
}

function printBanner(
  url: string,
  bootstrap: BootstrapResult | undefined,
  defaults: { organizationId?: string | undefined; serviceId?: string | undefined },
  config: Config,
): void {
  const lines = [`Sluice is listening on ${url}`];
  if (config.tls)
    lines.push(
      `  (HTTPS with ${config.tls.certFile}. A self-signed or private one: curl --cacert <its file>, and`,
      `   the sluice command --cacert <its file> or SLUICE_CACERT=<its file>)`,
    );
  if (bootstrap) {
    lines.push(
      '',
      ...bootstrapLines(bootstrap),
      '',
      'Try:',
      `  curl -s -u '${bootstrap.key.key.id}:${bootstrap.key.secret}' ${url}/v1/organizations`,
    );
  } else {
    lines.push('', 'Try:', `  curl -s -u "$SLUICE_KEY_ID:$SLUICE_KEY_SECRET" ${url}/v1/organizations`);
  }
  if (defaults.organizationId && defaults.serviceId) {
    lines.push(
      '',
      `Organization "default": ${defaults.organizationId}`,
      `Service "default":      ${defaults.serviceId}`,
      `Pipes live at ${url}/v1/organizations/${defaults.organizationId}/services/${defaults.serviceId}/pipes`,
      `API description: ${url}/v1/openapi.json`,
      `Local files for file:// pipes: ${config.localFilesDir}`,
    );
  }
  // Last, where a reader's eye lands (README, "The console").
  lines.push('', `Console: ${url}/ (sign in with an API key)`);
  console.log(lines.join('\n'));
}

/** The credentials made on the first start of an empty store, shown this once. */
export function bootstrapLines(bootstrap: BootstrapResult): string[] {
  return [
    'First start: created organization "default", its embedded service "default", an admin API key',
    'and an access token for team "default". They are shown this once: store them now.',
    `  API key id:      ${bootstrap.key.key.id}`,
    `  API key secret:  ${bootstrap.key.secret}`,
    `  access token:    ${bootstrap.token.value}`,
  ];
}
