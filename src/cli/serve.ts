import { createSluice } from '../app.js';
import type { Config } from '../config.js';
import type { BootstrapResult } from '../identity/index.js';

/** `sluice serve`: runs the API until SIGINT or SIGTERM, then closes cleanly. */
export async function serve(config: Config): Promise<void> {
  const sluice = await createSluice(config);
  const url = await sluice.listen();
  printBanner(url, sluice.bootstrap, await describeDefaults(sluice), config);
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    sluice.logger.info({ signal }, 'shutting down');
    await sluice.close();
    process.exit(0);
  };
  // SIGHUP: new certificate files (a renewal) without dropping a connection.
  process.on('SIGHUP', () => {
    sluice
      .reloadTls()
      .catch((error: Error) =>
        sluice.logger.error({ err: error }, 'TLS reload failed; serving the previous certificate'),
      );
  });
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

async function describeDefaults(sluice: Awaited<ReturnType<typeof createSluice>>) {
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
    lines.push(`  (HTTPS with ${config.tls.certFile}; for a self-signed one, add --cacert to curl)`);
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
