import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import selfsigned from 'selfsigned';
import { afterAll, describe, expect, it } from 'vitest';
import { sluiceServe } from './support/cli.js';
import { waitFor } from './support/wait.js';

/** A certificate for localhost and 127.0.0.1, made by the test. */
async function certificate(): Promise<{ cert: string; key: string }> {
  const pems = await selfsigned.generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    algorithm: 'sha256',
  });
  return { cert: pems.cert, key: pems.private };
}

/** GET over HTTPS trusting `ca`; the status and the fingerprint of the certificate served. */
function get(url: string, ca: string, agent?: Agent): Promise<{ status: number; fingerprint: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { ca, agent: agent ?? false }, (response) => {
      const fingerprint = (response.socket as import('node:tls').TLSSocket).getPeerCertificate()
        .fingerprint256;
      response.resume();
      response.on('end', () => resolve({ status: response.statusCode ?? 0, fingerprint }));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * SLUICE_TLS_CERT and SLUICE_TLS_KEY make a real `sluice serve` speak HTTPS, its banner says
 * https, and SIGHUP serves new connections with new files while an open connection keeps working.
 */
describe('HTTPS', () => {
  const dirs: string[] = [];
  afterAll(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

  it('serves HTTPS with the PEM files given, and SIGHUP reloads them without dropping a connection', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-https-'));
    dirs.push(dir);
    const first = await certificate();
    await writeFile(join(dir, 'cert.pem'), first.cert);
    await writeFile(join(dir, 'key.pem'), first.key);
    const server = await sluiceServe({
      SLUICE_DATA_DIR: join(dir, 'data'),
      SLUICE_PORT: '0',
      SLUICE_LOG_LEVEL: 'warn',
      SLUICE_TLS_CERT: join(dir, 'cert.pem'),
      SLUICE_TLS_KEY: join(dir, 'key.pem'),
    });
    try {
      expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      expect(server.output()).toContain(`curl -s -u '`);
      expect(server.output()).toMatch(/curl -s -u '[^']+' https:\/\/127\.0\.0\.1/);
      const kept = new Agent({ keepAlive: true, maxSockets: 1, ca: first.cert });
      const before = await get(`${server.url}/health`, first.cert, kept);
      expect(before.status).toBe(200);

      const second = await certificate();
      await writeFile(join(dir, 'cert.pem'), second.cert);
      await writeFile(join(dir, 'key.pem'), second.key);
      server.child.kill('SIGHUP');
      const renewed = await waitFor('the new certificate on new connections', async () => {
        const answer = await get(`${server.url}/health`, second.cert).catch(() => undefined);
        return answer?.status === 200 ? answer : undefined;
      });
      expect(renewed.fingerprint).not.toBe(before.fingerprint);
      // The connection opened before the reload still answers, with the certificate it began with.
      const again = await get(`${server.url}/health`, first.cert, kept);
      expect(again).toEqual(before);
      kept.destroy();
    } finally {
      server.child.kill('SIGTERM');
      await new Promise((resolve) => server.child.once('exit', resolve));
    }
  });

  it('needs both files, and names each it cannot read', async () => {
    const { loadConfig } = await import('../src/config.js');
    expect(() => loadConfig({ SLUICE_TLS_CERT: '/x/cert.pem' })).toThrow(
      'SLUICE_TLS_CERT (--tls-cert) and SLUICE_TLS_KEY (--tls-key) go together',
    );
    const { sluiceCli } = await import('./support/cli.js');
    const dir = await mkdtemp(join(tmpdir(), 'sluice-https-missing-'));
    dirs.push(dir);
    const result = await sluiceCli(['serve'], {
      SLUICE_DATA_DIR: join(dir, 'data'),
      SLUICE_PORT: '0',
      SLUICE_TLS_CERT: join(dir, 'missing-cert.pem'),
      SLUICE_TLS_KEY: join(dir, 'missing-key.pem'),
    });
    expect(result.code).toBe(1);
    // Both are named, whichever the file system answers first.
    expect(result.stderr).toContain(
      `cannot read the TLS certificate ${join(dir, 'missing-cert.pem')}: ENOENT`,
    );
    expect(result.stderr).toContain(`cannot read the TLS key ${join(dir, 'missing-key.pem')}: ENOENT`);
  });
});
