import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import selfsigned from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFIG_FLAGS } from '../src/config.js';
import {
  api,
  buildOnce,
  isRunning,
  KEY_ID,
  REPO,
  type Running,
  runBin,
  serveBin,
  serverPid,
  startServer,
  stop,
  TOKEN,
  userEnv,
  withKey,
} from './support/built-cli.js';
import { untilContains, waitFor } from './support/wait.js';

/** A port something else listens on. */
async function busyPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, server };
}

/**
 * A new user's first hour with the `sluice` command (issue 35), run as a user runs it: the built
 * bin/sluice.js, `npm start` and `npx sluice serve`. Each server runs on a copy of one data
 * directory made once (the first start's PGlite is the slow part).
 */
describe('the sluice command in the first hour', () => {
  let dir = '';
  let template = '';
  const running: Running[] = [];
  /** A fresh copy of the prepared data directory. */
  const copy = async (name: string) => {
    const dataDir = join(dir, name);
    await cp(template, dataDir, { recursive: true });
    return dataDir;
  };
  const serve = async (args: string[], env: Record<string, string>) => {
    const server = await serveBin(args, env);
    running.push(server);
    return server;
  };

  beforeAll(async () => {
    buildOnce();
    dir = await mkdtemp(join(tmpdir(), 'sluice-first-hour-cli-'));
    template = join(dir, 'template');
    const made = await runBin(['orgs', 'list'], userEnv(template));
    expect(made.code, made.stderr).toBe(0);
  }, 180_000);
  /** Servers whose parent is not this test (npm's, a shell's): ended by pid if a case failed. */
  const orphans: number[] = [];
  afterAll(async () => {
    await Promise.all(running.map((server) => stop(server.child)));
    for (const pid of orphans) if (await isRunning(pid)) process.kill(pid, 'SIGTERM');
    await Promise.all(
      orphans.map((pid) => waitFor('the server to end', async () => !(await isRunning(pid)))),
    );
    await rm(dir, { recursive: true, force: true });
  });

  it('a busy port stops the first start in one line, before anything is made; the next start shows the credentials', async () => {
    const dataDir = join(dir, 'busy');
    const busy = await busyPort();
    const refused = await runBin(['serve', '--port', String(busy.port)], userEnv(dataDir));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(`sluice: port ${busy.port} is in use: pass --port or set SLUICE_PORT\n`);
    expect(existsSync(dataDir)).toBe(false);
    await new Promise((resolve) => busy.server.close(resolve));
    const server = await serve(['--port', String(busy.port)], userEnv(dataDir));
    expect(server.output()).toContain('First start: created organization "default"');
    expect(server.output()).toMatch(new RegExp(`API key id:\\s+${KEY_ID}`));
    await stop(server.child);
  });

  it('mistakes a user can make are one line and a non-zero exit, never a stack trace', async () => {
    const broken = await copy('broken-key');
    await writeFile(join(broken, 'master.key'), 'not a key\n');
    await writeFile(join(dir, 'a-file'), '');
    const nothing = await busyPort();
    await new Promise((resolve) => nothing.server.close(resolve));
    const fresh = userEnv(join(dir, 'never-made'), { SLUICE_PORT: '0' });
    const cases: [string[], Record<string, string>, string][] = [
      [['serve', '--port'], fresh, '--port needs a value'],
      [['serve', '--frob'], fresh, 'unknown flag --frob'],
      [['serve', '--host', '192.0.2.1'], fresh, '192.0.2.1 is not an address of this machine'],
      [['serve', '--tls-cert', 'x.pem', '--tls-key', 'y.pem'], fresh, 'cannot read the TLS certificate'],
      [['orgs', 'list', '--data-dir', join(dir, 'a-file')], fresh, 'cannot be used as the data directory'],
      [['orgs', 'list'], userEnv(broken), 'master.key does not hold a 32-byte hex key'],
      [
        ['orgs', 'list', '--database-url', `postgres://127.0.0.1:${nothing.port}/x`],
        userEnv(join(dir, 'metadata-elsewhere')),
        'cannot connect to the metadata database',
      ],
      [
        ['orgs', 'list', '--url', `http://127.0.0.1:${nothing.port}`],
        { ...fresh, ...withKey },
        `cannot reach the Sluice server at http://127.0.0.1:${nothing.port}: connection refused`,
      ],
      [['orgs', 'list', '--url', 'localhost:8080'], { ...fresh, ...withKey }, 'is not an http(s) URL'],
      [
        ['orgs', 'list', '--url', 'https://127.0.0.1:1', '--cacert', 'missing.pem'],
        { ...fresh, ...withKey },
        '--cacert: cannot read missing.pem (ENOENT)',
      ],
    ];
    for (const [args, env, message] of cases) {
      const result = await runBin(args, env);
      expect(result.code, args.join(' ')).toBe(1);
      expect(result.stderr, args.join(' ')).toContain(message);
      expect(result.stderr, args.join(' ')).toMatch(/^sluice: /);
      expect(result.stderr, args.join(' ')).not.toMatch(/\n\s+at /);
    }
    expect(existsSync(join(dir, 'never-made'))).toBe(false);
  }, 180_000);

  it('on/off flags are switches: alone they mean true, =false turns one off, and --help shows them so', async () => {
    const help = await runBin(['serve', '--help'], {});
    expect(help.stdout).toContain('--allow-private-webhooks[=false]');
    expect(help.stdout).not.toContain('--allow-private-webhooks <');
    const dataDir = await copy('switches');
    const webhook = { name: 'local', url: 'http://127.0.0.1:9/hook' };
    const on = await serve(['--port', '0', '--allow-private-webhooks'], userEnv(dataDir));
    const allowed = await api(`${on.url}/api/v2/webhooks`, 'POST', webhook, TOKEN);
    expect(allowed.status, JSON.stringify(allowed.json)).toBe(200);
    await stop(on.child);
    const off = await serve(['--port', '0', '--allow-private-webhooks=false'], userEnv(dataDir));
    const refused = await api(`${off.url}/api/v2/webhooks`, 'POST', webhook, TOKEN);
    expect(refused.status).toBe(400);
    await stop(off.child);
  }, 180_000);

  it('sluice serve --help lists every flag with its variable', async () => {
    const help = await runBin(['serve', '--help'], {});
    expect(help.code).toBe(0);
    for (const [flag, variable] of Object.entries(CONFIG_FLAGS)) {
      expect(help.stdout).toMatch(new RegExp(`--${flag}\\b.*\\[${variable}\\]`));
    }
  });

  it('the CLI trusts a private certificate with --cacert or SLUICE_CACERT, and says what to do without', async () => {
    const pems = await selfsigned.generate([{ name: 'commonName', value: 'localhost' }], {
      keyType: 'ec',
      algorithm: 'sha256',
    });
    const [cert, key] = [join(dir, 'cert.pem'), join(dir, 'key.pem')];
    await writeFile(cert, pems.cert);
    await writeFile(key, pems.private);
    const dataDir = await copy('https');
    const env = userEnv(dataDir, withKey);
    const server = await serve(['--port', '0', '--tls-cert', cert, '--tls-key', key], env);
    expect(server.url).toMatch(/^https:/);
    expect(server.output()).toContain('SLUICE_CACERT=<its file>');
    const untrusted = await runBin(['orgs', 'list'], env);
    expect(untrusted.code).toBe(1);
    expect(untrusted.stderr).toBe(
      `sluice: the Sluice server at ${server.url} presented a certificate this machine does not trust (DEPTH_ZERO_SELF_SIGNED_CERT): give that certificate, or the authority that signed it, with --cacert <file> or SLUICE_CACERT=<file>\n`,
    );
    const flag = await runBin(['orgs', 'list', '--cacert', cert], env);
    expect(flag.code, flag.stderr).toBe(0);
    expect(flag.stdout).toMatch(/\sdefault\s/);
    const variable = await runBin(['orgs', 'list'], { ...env, SLUICE_CACERT: cert });
    expect(variable.code, variable.stderr).toBe(0);
    expect(variable.stdout).toMatch(/\sdefault\s/);
    await stop(server.child);
  }, 180_000);

  it('SIGHUP to the server says what it reloaded; the server ends with the npm process that started it', async () => {
    const dataDir = await copy('npm');
    const env = userEnv(dataDir, { SLUICE_PORT: '0', SLUICE_LOG_LEVEL: 'info' });
    const npmStart = await startServer('npm', ['start'], env);
    running.push(npmStart);
    const pid = await serverPid(dataDir);
    orphans.push(pid);
    await untilContains(npmStart.output, `started by npm (pid ${npmStart.child.pid})`);
    process.kill(pid, 'SIGHUP');
    await waitFor('the SIGHUP line', async () => npmStart.output().includes('SIGHUP: nothing reloaded'));
    expect(await isRunning(pid)).toBe(true);
    // npm does not pass SIGHUP on: it ends, and its server follows.
    const npmExited = new Promise((resolve) => npmStart.child.once('exit', resolve));
    npmStart.child.kill('SIGHUP');
    await npmExited;
    await waitFor('the server to end with npm', async () => !(await isRunning(pid)), 60_000);
    await untilContains(
      npmStart.output,
      `the npm process that started Sluice (pid ${npmStart.child.pid}) has ended`,
    );
    await waitFor('the lock released', async () => !existsSync(join(dataDir, 'sluice.lock')), 60_000);

    // npx runs the server under `sh -c`: npm killed outright, the server still follows.
    const npx = await startServer('npx', ['--no', 'sluice', 'serve'], env);
    running.push(npx);
    const npxServer = await serverPid(dataDir);
    orphans.push(npxServer);
    expect(npxServer).not.toBe(npx.child.pid);
    npx.child.kill('SIGKILL');
    await waitFor('the server to end with npx', async () => !(await isRunning(npxServer)), 60_000);
  }, 300_000);

  it('a server a shell started keeps running when the shell exits: only an npm parent ties it', async () => {
    const dataDir = await copy('shell');
    // npm's environment (as under npm test), but a parent that is not npm: not tied to it.
    const env = userEnv(dataDir, { SLUICE_PORT: '0', SLUICE_LOG_LEVEL: 'debug', npm_execpath: 'npm-cli.js' });
    const log = join(dir, 'shell.log');
    // The shell is the server's parent until the server listens, then exits normally.
    const script = `bin/sluice.js serve > ${log} 2>&1 & until grep -q 'Sluice is listening' ${log}; do sleep 0.2; done`;
    const shell = spawn('sh', ['-c', script], { cwd: REPO, env: { ...process.env, ...env } });
    await new Promise((resolve) => shell.once('exit', resolve));
    const pid = await serverPid(dataDir);
    orphans.push(pid);
    const text = () => readFile(log, 'utf8');
    await untilContains(text, 'not started by npm: Sluice runs on when its parent process ends');
    expect(await text()).not.toContain('started by npm (pid');
    expect(await isRunning(pid)).toBe(true);
    expect(
      (await api(`${JSON.parse(await readFile(join(dataDir, 'sluice.lock'), 'utf8')).url}/health`)).status,
    ).toBe(200);
    process.kill(pid, 'SIGTERM');
    await waitFor('the server to stop', async () => !(await isRunning(pid)), 60_000);
  });

  describe('with a server and an organization of its own', () => {
    let server: Running;
    let env: Record<string, string>;
    let dataDir: string;
    beforeAll(async () => {
      dataDir = await copy('acme');
      env = userEnv(dataDir, withKey);
      // With no server running, the CLI acts on the data directory as its operator.
      expect((await runBin(['orgs', 'create', 'acme'], env)).code).toBe(0);
      expect((await runBin(['services', 'create', 'warehouse', '--org', 'acme'], env)).code).toBe(0);
      await mkdir(join(dataDir, 'files'), { recursive: true });
      await writeFile(
        join(dataDir, 'files', 'weather.ndjson'),
        '{"id": 1, "city": "Lyon", "temp": 11.5}\n{"id": 2, "city": "Lyon", "temp": 12.5}\n',
      );
      // A 1 MB disk quota, so the --wait case can hold its pipe Degraded (README, "Security").
      server = await serve(['--port', '0', '--service-disk-mb', '1'], env);
    }, 180_000);

    it('an operator key inside another organization: a 403 that says what the operator may and may not do, from the CLI and the API', async () => {
      const rule =
        /FORBIDDEN: .*in organization "acme" an operator key may only read the organization itself \(GET \/v1\/organizations\/[0-9a-f-]+\); its services, keys, teams, tokens, pipes and SQL are refused/;
      const query = await runBin(['query', '--org', 'acme', '--service', 'warehouse', 'SELECT 1'], env);
      expect(query.code).toBe(1);
      expect(query.stderr).toMatch(rule);
      const services = await runBin(['services', 'list', '--org', 'acme'], env);
      expect(services.code).toBe(1);
      expect(services.stderr).toMatch(rule);
      const acme = (await api(`${server.url}/v1/organizations`)).json.result.find(
        (org: { name: string }) => org.name === 'acme',
      );
      expect((await api(`${server.url}/v1/organizations/${acme.id}`)).status).toBe(200);
      const listed = await api(`${server.url}/v1/organizations/${acme.id}/services`);
      expect(listed.status).toBe(403);
      expect(listed.json.error).toMatch(rule);
    });

    it('sluice pipes status --wait waits until the pipe has settled, and says so when it has not', async () => {
      const [org] = (await api(`${server.url}/v1/organizations`)).json.result;
      const [service] = (await api(`${server.url}/v1/organizations/${org.id}/services`)).json.result;
      const query = (sql: string) =>
        api(`${server.url}/v1/organizations/${org.id}/services/${service.id}/query`, 'POST', { sql });
      // Over the quota the pipe waits Degraded, not settled; measured at most every 5 s.
      await query('CREATE TABLE default.filler (s String) ENGINE = MergeTree ORDER BY tuple()');
      await query('INSERT INTO default.filler SELECT randomString(1000) FROM numbers(3000)');
      await waitFor(
        'the quota to be seen',
        async () => (await query("INSERT INTO default.filler VALUES ('x')")).status === 400,
        30_000,
        500,
      );
      const pipe = {
        name: 'weather',
        source: { objectStorage: { format: 'JSONEachRow', url: 'file:///weather.ndjson' } },
        destination: {
          table: 'weather',
          tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['id'] },
          columns: [
            { name: 'id', type: 'UInt64' },
            { name: 'city', type: 'String' },
            { name: 'temp', type: 'Float64' },
          ],
        },
      };
      const created = await runBin(['pipes', 'create', '-'], env, JSON.stringify(pipe));
      expect(created.code, created.stderr).toBe(0);
      const unsettled = await runBin(['pipes', 'status', 'weather', '--wait', '--timeout', '3'], env);
      expect(unsettled.code).toBe(1);
      expect(unsettled.stderr).toMatch(/^sluice: pipe weather is still (Provisioning|Degraded) after 3 s/);
      expect((await query('DROP TABLE default.filler SYNC')).status).toBe(200);
      const status = await runBin(['pipes', 'status', 'weather', '--wait'], env);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toMatch(/^state:\s+Completed$/m);
      expect(status.stdout).toMatch(/^rowsWritten:\s+2$/m);
    }, 240_000);

    it('sluice pipes status --wait on a pipe that failed exits 1 with the condition’s code beside the reason', async () => {
      const [org] = (await api(`${server.url}/v1/organizations`)).json.result;
      const [service] = (await api(`${server.url}/v1/organizations/${org.id}/services`)).json.result;
      const files = join(dataDir, 'files', 'shrinking');
      await mkdir(files, { recursive: true });
      await writeFile(join(files, '1.ndjson'), '{"id": 1, "name": "a"}\n');
      const pipe = {
        name: 'shrinking',
        source: {
          objectStorage: { format: 'JSONEachRow', url: 'file:///shrinking/*.ndjson', isContinuous: true },
        },
        settings: { object_storage_polling_interval_ms: 200 },
        destination: {
          table: 'shrinking',
          tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['id'] },
          columns: [
            { name: 'id', type: 'UInt64' },
            { name: 'name', type: 'String' },
          ],
        },
      };
      const created = await runBin(['pipes', 'create', '-'], env, JSON.stringify(pipe));
      expect(created.code, created.stderr).toBe(0);
      await waitFor('the first file', async () => {
        const status = await runBin(['pipes', 'status', 'shrinking', '--json'], env);
        return JSON.parse(status.stdout).filesDone === 1;
      });
      // The table no longer fits the pipe: waiting cannot fix that, the pipe fails.
      const dropped = await api(
        `${server.url}/v1/organizations/${org.id}/services/${service.id}/query`,
        'POST',
        {
          sql: 'ALTER TABLE default.shrinking DROP COLUMN name',
        },
      );
      expect(dropped.status).toBe(200);
      await writeFile(join(files, '2.ndjson'), '{"id": 2, "name": "b"}\n');
      const failed = await runBin(['pipes', 'status', 'shrinking', '--wait', '--timeout', '120'], env);
      expect(failed.code).toBe(1);
      expect(failed.stderr).toMatch(
        /^sluice: pipe shrinking is Failed \(SLUICE_ERR_DESTINATION_MISMATCH\): .*name/m,
      );
    }, 240_000);
  });
});
