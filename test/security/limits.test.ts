import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedEngine } from '../../src/engine/index.js';
import { callApi, type ServedSluice, serveEnv, sluiceServe } from '../support/cli.js';
import {
  BOOTSTRAP_KEY_ID,
  BOOTSTRAP_KEY_SECRET,
  basic,
  startSluice,
  type TestSluice,
} from '../support/sluice.js';
import { waitFor } from '../support/wait.js';

/** Limits a tenant cannot lift: services per organization (each service runs engine processes). */
describe('security: limits per organization', () => {
  let s: TestSluice;
  beforeAll(async () => {
    s = await startSluice({ runtime: false, env: { SLUICE_SERVICES_PER_ORGANIZATION: '2' } });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('one service more than SLUICE_SERVICES_PER_ORGANIZATION is a 400 that says so, and nothing is stored', async () => {
    const services = `/v1/organizations/${s.organizationId}/services`;
    const second = await s.request({ method: 'POST', url: services, body: { name: 'second' } });
    expect(second.statusCode, second.body).toBe(200);
    const third = await s.request({ method: 'POST', url: services, body: { name: 'third' } });
    expect(third.statusCode, third.body).toBe(400);
    expect(third.json.error).toContain('the most this server allows (SLUICE_SERVICES_PER_ORGANIZATION = 2)');
    expect(third.json.code).toBe('SLUICE_ERR_VALIDATION');
    const listed = await s.request({ method: 'GET', url: services });
    expect(listed.json.result.map((x: { name: string }) => x.name).sort()).toEqual(['default', 'second']);
  });
});

describe('security: memory and time that no statement lifts', () => {
  let s: TestSluice;
  let query: string;
  beforeAll(async () => {
    s = await startSluice({
      runtime: false,
      env: { SLUICE_ENGINE_MEMORY_MB: '300', SLUICE_QUERY_TIMEOUT: '2' },
    });
    query = `/v1/organizations/${s.organizationId}/services/${s.serviceId}/query`;
  });
  afterAll(async () => {
    await s?.close();
  });
  const run = (sql: string) => s.request({ method: 'POST', url: query, body: { sql } });
  const GREEDY = "SELECT length(groupArray(repeat('x', 1000))) AS n FROM numbers(1000000)";

  it('a statement over half of SLUICE_ENGINE_MEMORY_MB fails, and the engine answers on', async () => {
    const greedy = await run(GREEDY);
    expect(greedy.statusCode, greedy.body).toBe(400);
    expect(greedy.json.code).toBe('SLUICE_ERR_ENGINE');
    expect(greedy.json.error).toContain('Query memory limit exceeded');
    expect(greedy.json.error).toContain('maximum: 150.00 MiB');
    expect((await run('SELECT 1 AS one')).json.result.rows).toEqual([{ one: 1 }]);
  });

  it('an admin cannot lift the memory of a statement: max_memory_usage = 0 or above the limit is refused', async () => {
    for (const value of ['0', '1000000000']) {
      const lifted = await run(`${GREEDY} SETTINGS max_memory_usage = ${value}`);
      expect(lifted.statusCode, lifted.body).toBe(400);
      expect(lifted.json.error).toContain('max_memory_usage shouldn');
      expect(lifted.json.code).toBe('SLUICE_ERR_ENGINE_DEFINITION');
    }
  });

  it('an admin who lifts max_execution_time is stopped at SLUICE_QUERY_TIMEOUT all the same (its engine ends), and the engine answers on', async () => {
    const started = Date.now();
    const endless = await run(
      'SELECT sum(sipHash64(number)) AS s FROM numbers(100000000000) SETTINGS max_execution_time = 0',
    );
    expect(endless.statusCode, endless.body).toBe(400);
    expect(endless.json.error).toContain('ran past its time limit of 2 s, which no setting lifts');
    expect(endless.json.code).toBe('SLUICE_ERR_STATEMENT_TIME_LIMIT');
    expect(Date.now() - started).toBeLessThan(15_000);
    const next = await run('SELECT 1 AS one');
    expect(next.statusCode, next.body).toBe(200);
    expect(next.json.result.rows).toEqual([{ one: 1 }]);
  });

  it('without lifting it, the engine stops the statement itself at the limit', async () => {
    const slow = await run('SELECT sum(sipHash64(number)) AS s FROM numbers(100000000000)');
    expect(slow.statusCode, slow.body).toBe(400);
    expect(slow.json.error).toContain('TIMEOUT_EXCEEDED');
    expect(slow.json.code).toBe('SLUICE_ERR_STATEMENT_TIME_LIMIT');
  });
});

describe('security: a large result passes through the server without being held (a real server process)', () => {
  let server: ServedSluice | undefined;
  let dataDir: string;
  let query: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'sluice-large-result-'));
    server = await sluiceServe(serveEnv(dataDir, { SLUICE_QUERY_RESULT_MB: '500' }));
    const org = (await callApi(`${server.url}/v1/organizations`)).result[0].id;
    const service = (await callApi(`${server.url}/v1/organizations/${org}/services`)).result[0].id;
    query = `${server.url}/v1/organizations/${org}/services/${service}/query`;
    expect((await callApi(query, 'POST', { sql: 'SELECT 1 AS one' })).result.rows).toEqual([{ one: 1 }]);
  }, 120_000);
  afterAll(async () => {
    server?.child.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });

  /** VmRSS or VmHWM (the peak) of the server process, in MB. */
  const memoryMb = async (field: 'VmRSS' | 'VmHWM') => {
    const status = await readFile(`/proc/${server?.child.pid}/status`, 'utf8');
    return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1]) / 1024;
  };

  it('a 450 MB result reaches the client whole while the server grows by less than 200 MB', async () => {
    const before = await memoryMb('VmRSS');
    // The peak so far is forgotten: VmHWM now measures from here (proc(5), clear_refs).
    await writeFile(`/proc/${server?.child.pid}/clear_refs`, '5');
    const response = await fetch(query, {
      method: 'POST',
      headers: {
        authorization: basic(BOOTSTRAP_KEY_ID, BOOTSTRAP_KEY_SECRET),
        'content-type': 'application/json',
      },
      body: JSON.stringify({ sql: "SELECT repeat('x', 1000000) AS big FROM numbers(450)" }),
    });
    expect(response.status).toBe(200);
    let bytes = 0;
    let head = '';
    let tail = '';
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      bytes += chunk.length;
      if (head.length < 200) head += Buffer.from(chunk).toString('utf8', 0, 200);
      tail = (tail + Buffer.from(chunk.subarray(-20)).toString('utf8')).slice(-20);
    }
    const peak = await memoryMb('VmHWM');
    expect(bytes).toBeGreaterThan(450_000_000);
    expect(head).toMatch(
      /^\{"status":200,"requestId":"[^"]+","result":\{"columns":\[\{"name":"big","type":"String"\}\],"rows":\[\{"big":"xxx/,
    );
    expect(tail).toMatch(/xxx"\}\]\}\}$/);
    console.log(
      `server RSS ${before.toFixed(0)} MB before, peak ${peak.toFixed(0)} MB during a ${(bytes / 1e6).toFixed(0)} MB result`,
    );
    expect(peak - before).toBeLessThan(200);
  }, 180_000);

  it('a result of many chunks is one table (each chunk repeats the header in the engine), and an empty one keeps its columns', async () => {
    const many = await callApi(query, 'POST', {
      sql: 'SELECT number AS n, toString(number) AS s FROM numbers(10) SETTINGS max_block_size = 3',
    });
    expect(many.result.columns).toEqual([
      { name: 'n', type: 'UInt64' },
      { name: 's', type: 'String' },
    ]);
    expect(many.result.rows).toEqual(Array.from({ length: 10 }, (_, n) => ({ n, s: String(n) })));
    const none = await callApi(query, 'POST', { sql: 'SELECT number AS n FROM numbers(10) WHERE n > 100' });
    expect(none.result).toEqual({ columns: [{ name: 'n', type: 'UInt64' }], rows: [] });
  });

  it('a result over SLUICE_QUERY_RESULT_MB is a 400 that says so, and the engine answers on', async () => {
    const over = await callApi(query, 'POST', {
      sql: "SELECT repeat('x', 10000) AS big FROM numbers(60000) SETTINGS max_block_size = 1000",
    });
    expect(over.status).toBe(400);
    expect(over.error).toContain(
      'the result is larger than 500 MB, the most a statement may return (SLUICE_QUERY_RESULT_MB)',
    );
    expect((await callApi(query, 'POST', { sql: 'SELECT 2 AS two' })).result.rows).toEqual([{ two: 2 }]);
  }, 180_000);
});

describe('security: an idle engine process stops, and starts again on the next statement', () => {
  let s: TestSluice;
  beforeAll(async () => {
    s = await startSluice({ runtime: false, env: { SLUICE_ENGINE_IDLE_SECONDS: '1' } });
  });
  afterAll(async () => {
    await s?.close();
  });
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  it('after SLUICE_ENGINE_IDLE_SECONDS without a statement the process is gone; the next statement answers', async () => {
    const query = `/v1/organizations/${s.organizationId}/services/${s.serviceId}/query`;
    const run = (sql: string) => s.request({ method: 'POST', url: query, body: { sql } });
    expect((await run('SELECT 1 AS one')).json.result.rows).toEqual([{ one: 1 }]);
    const engine = s.sluice.engines.ownEngineFor({
      id: s.serviceId,
      kind: 'embedded',
      organizationId: s.organizationId,
    }) as EmbeddedEngine;
    const first = engine.processId() as number;
    expect(alive(first)).toBe(true);
    await waitFor('the idle engine to stop', async () => !alive(first) || undefined, 15_000, 100);
    expect(engine.processId()).toBeUndefined();
    expect((await run('SELECT 2 AS two')).json.result.rows).toEqual([{ two: 2 }]);
    expect(engine.processId()).not.toBe(first);
  }, 60_000);
});

describe('security: a service over its disk quota only reads and frees space, and its pipes wait', () => {
  let s: TestSluice;
  beforeAll(async () => {
    s = await startSluice({ env: { SLUICE_SERVICE_DISK_MB: '40' } });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('past SLUICE_SERVICE_DISK_MB writes are 400s and a pipe is Degraded, nothing lost; once space is freed all lands', async () => {
    const query = `/v1/organizations/${s.organizationId}/services/${s.serviceId}/query`;
    const run = (sql: string) => s.request({ method: 'POST', url: query, body: { sql } });
    expect(
      (await run('CREATE TABLE default.big (s String) ENGINE = MergeTree ORDER BY tuple()')).statusCode,
    ).toBe(200);
    // 60 MB that does not compress.
    const filled = await run('INSERT INTO default.big SELECT randomString(1000) FROM numbers(60000)');
    expect(filled.statusCode, filled.body).toBe(200);
    // The service's directory is measured at most every 5 s: inserts until then still land.
    let landed = 0;
    const refused = await waitFor(
      'the quota to be seen',
      async () => {
        const answer = await run("INSERT INTO default.big VALUES ('one more')");
        if (answer.statusCode === 200) landed += 1;
        return answer.statusCode === 400 ? answer : undefined;
      },
      30_000,
      500,
    );
    expect(refused.json.error).toContain('over its quota of 40 MB (SLUICE_SERVICE_DISK_MB)');
    expect(refused.json.code).toBe('SLUICE_ERR_DISK_QUOTA');
    expect((await run('SELECT count() AS n FROM default.big')).json.result.rows).toEqual([
      { n: 60000 + landed },
    ]);

    await mkdir(join(s.dataDir, 'files', 'quota'), { recursive: true });
    await writeFile(join(s.dataDir, 'files', 'quota', 'rows.ndjson'), '{"k": 1}\n{"k": 2}\n{"k": 3}\n');
    const created = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: {
        name: 'waits',
        source: { objectStorage: { format: 'JSONEachRow', url: 'file:///quota/*.ndjson' } },
        destination: {
          database: 'default',
          table: 'waited',
          managedTable: true,
          tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['k'] },
          columns: [{ name: 'k', type: 'UInt8' }],
        },
      },
    });
    expect(created.statusCode, created.body).toBe(200);
    const status = `${s.pipesUrl}/${created.json.result.id}/status`;
    const degraded = await waitFor(
      'the pipe to wait for space',
      async () => {
        const answer = (await s.request({ method: 'GET', url: status })).json.result;
        return answer.state === 'Degraded' ? answer : undefined;
      },
      60_000,
      250,
    );
    expect(degraded.lastErrorCode).toBe('SLUICE_ERR_DISK_QUOTA');
    expect(degraded.rowsWritten).toBe(0);

    // SYNC: a plain DROP frees the disk only minutes later (the engine keeps a dropped table 8 minutes).
    expect((await run('DROP TABLE default.big SYNC')).statusCode).toBe(200);
    const done = await waitFor(
      'the pipe to land its rows once space is free',
      async () => {
        const answer = (await s.request({ method: 'GET', url: status })).json.result;
        return answer.state === 'Completed' ? answer : undefined;
      },
      120_000,
      250,
    );
    expect(done.rowsWritten).toBe(3);
    expect((await run('SELECT k FROM default.waited ORDER BY k')).json.result.rows).toEqual([
      { k: 1 },
      { k: 2 },
      { k: 3 },
    ]);
  }, 240_000);
});
