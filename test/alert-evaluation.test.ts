import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestsSource, tileAlert } from './support/dashboards.js';
import { sql as runSql } from './support/runtime.js';
import { BOOTSTRAP_TOKEN, startSluice, type TestSluice } from './support/sluice.js';

describe('alert evaluation against a real embedded service', () => {
  let s: TestSluice;
  let now = new Date('2026-11-22T10:02:00Z');
  let sourceId: string;
  let webhookId: string;
  const auth = `Bearer ${BOOTSTRAP_TOKEN}`;
  const v2 = async (method: 'GET' | 'POST', url: string, body?: unknown) => {
    const response = await s.request({ method, url: `/api/v2${url}`, auth, ...(body ? { body } : {}) });
    if (response.statusCode !== 200) throw new Error(`${method} ${url}: ${response.body}`);
    return response.json;
  };
  const sql = (text: string) => runSql(s, text);
  /** Rows of requests in a window: `count` rows per host with the given status. */
  const requests = (at: string, rows: [host: string, status: number, count: number][]) =>
    sql(
      `INSERT INTO app.requests VALUES ${rows
        .flatMap(([host, status, count]) =>
          Array.from({ length: count }, (_, i) => `('${at}' + INTERVAL ${i} SECOND, ${status}, '${host}')`),
        )
        .join(', ')}`,
    );
  /** An alert on a new dashboard's tile; `beforeAlert` runs between the two (the timer is on). */
  const alertOn = async (
    tile: Record<string, unknown>,
    alert: Record<string, unknown>,
    beforeAlert?: () => Promise<unknown>,
  ) => {
    const dashboard = (
      await v2('POST', '/dashboards', {
        name: 'd',
        tiles: [{ name: 't', x: 0, y: 0, w: 4, h: 4, config: { displayType: 'number', sourceId, ...tile } }],
      })
    ).data;
    await beforeAlert?.();
    return (await v2('POST', '/alerts', tileAlert(dashboard, webhookId, alert))).data.id as string;
  };
  /** A source over the table `app.<table>`, named after it. */
  const sourceOver = async (table: string): Promise<string> =>
    (
      await v2(
        'POST',
        '/sources',
        requestsSource(s.serviceId, { name: table, from: { databaseName: 'app', tableName: table } }),
      )
    ).data.id;
  const stateOf = async (id: string) => (await v2('GET', `/alerts/${id}`)).data.state;
  const tickAt = async (time: string) => {
    now = new Date(time);
    await s.sluice.evaluator.tick();
  };

  beforeAll(async () => {
    s = await startSluice({
      clock: () => now,
      alertTimer: true,
      env: { SLUICE_ALLOW_PRIVATE_WEBHOOKS: 'true' },
    });
    await sql('CREATE DATABASE IF NOT EXISTS app');
    await sql(
      "CREATE TABLE app.requests (ts DateTime('UTC'), status UInt16, host String) ENGINE = MergeTree ORDER BY ts",
    );
    sourceId = (await v2('POST', '/sources', requestsSource(s.serviceId))).data.id;
    webhookId = (await v2('POST', '/webhooks', { name: 'hook', url: 'http://127.0.0.1:9/hook' })).data.id;
  });
  afterAll(() => s.close());

  const errors = { select: [{ aggFn: 'count', where: 'status >= 500', whereLanguage: 'sql' }] };

  it('follows the data: OK -> ALERT when a window breaks the threshold, back to OK when it does not', async () => {
    const id = await alertOn(errors, { threshold: 5, thresholdType: 'above' });
    expect(await stateOf(id)).toBe('OK');
    await requests('2026-11-22 10:05:00', [
      ['a', 500, 7],
      ['a', 200, 30],
    ]);
    await tickAt('2026-11-22T10:10:30Z');
    expect(await stateOf(id)).toBe('ALERT');
    await requests('2026-11-22 10:10:00', [['a', 503, 2]]);
    await tickAt('2026-11-22T10:15:30Z');
    expect(await stateOf(id)).toBe('OK');
    const history = await v2('GET', `/alerts/${id}/history`);
    // Newest first. The alert timer runs as a user's does: a tick of it between the alert's
    // creation (10:02) and the first tick here evaluates earlier empty windows too (OK, 0).
    expect(history.data.slice(0, 2).map((h: any) => [h.windowStart, h.state, h.value])).toEqual([
      ['2026-11-22T10:10:00.000Z', 'OK', 2],
      ['2026-11-22T10:05:00.000Z', 'ALERT', 7],
    ]);
    expect(history.data.slice(2).every((h: any) => h.state === 'OK' && h.value === 0)).toBe(true);
    await tickAt('2026-11-22T10:16:00Z'); // no window has closed since: nothing is evaluated twice
    expect((await v2('GET', `/alerts/${id}/history`)).meta.total).toBe(history.meta.total);
  });

  it('an empty window counts as 0, so a below alert fires on silence', async () => {
    const teapots = { select: [{ aggFn: 'count', where: 'status = 418', whereLanguage: 'sql' }] };
    const id = await alertOn(teapots, { threshold: 1, thresholdType: 'below', interval: '1h' });
    await tickAt('2026-11-22T11:00:10Z');
    expect(await stateOf(id)).toBe('ALERT');
    const [row] = (await v2('GET', `/alerts/${id}/history`)).data;
    expect(row).toMatchObject({ windowStart: '2026-11-22T10:00:00.000Z', state: 'ALERT', value: 0 });
  });

  it('evaluates each group of a grouped tile; the alert is ALERT if any group is; Lucene filters work', async () => {
    const grouped = {
      select: [{ aggFn: 'count', where: 'status:[500 TO 599]', whereLanguage: 'lucene' }],
      groupBy: 'host',
    };
    // Data first and the clock set before the alert exists: the alert timer ticks every second,
    // and any tick, its or the test's, must evaluate this window with these rows in it.
    await requests('2026-11-22 11:00:00', [
      ['b', 500, 5],
      ['c', 502, 1],
      ['c', 200, 9],
    ]);
    now = new Date('2026-11-22T11:05:01Z');
    const id = await alertOn(grouped, { threshold: 4, thresholdType: 'above' });
    await tickAt('2026-11-22T11:05:01Z');
    expect(await stateOf(id)).toBe('ALERT');
    const rows = (await v2('GET', `/alerts/${id}/history`)).data;
    expect(rows.map((r: any) => [r.group, r.state, r.value]).sort()).toEqual([
      ['b', 'ALERT', 5],
      ['c', 'OK', 1],
    ]);
  });

  it('a tile query that fails changes no state, records the error, and is retried on the next tick', async () => {
    await sql("CREATE TABLE app.doomed (ts DateTime('UTC'), status UInt16) ENGINE = MergeTree ORDER BY ts");
    const doomedSource = await sourceOver('doomed');
    const saved = sourceId;
    sourceId = doomedSource;
    // The alert timer ticks every second with the test's clock: the table is dropped before the
    // alert exists and the clock is set first, so every tick, the timer's or the test's, sees the
    // same failing window (one tick between the alert and the drop would evaluate it successfully).
    now = new Date('2026-11-22T11:10:05Z');
    const id = await alertOn({ select: [{ aggFn: 'count' }] }, { threshold: 0, thresholdType: 'above' }, () =>
      sql('DROP TABLE app.doomed'),
    );
    sourceId = saved;
    await tickAt('2026-11-22T11:10:05Z');
    expect(await stateOf(id)).toBe('OK');
    const [failure, ...others] = (await v2('GET', `/alerts/${id}/history`)).data;
    expect(others).toEqual([]);
    expect(failure).toMatchObject({ windowStart: '2026-11-22T11:05:00.000Z', state: null, value: null });
    expect(failure.error).toContain('doomed');
    expect(failure.errorCode).toBe('SLUICE_ERR_ENGINE');
    // Failing again on later ticks: still one row for the window, its attempts counted.
    await tickAt('2026-11-22T11:10:07Z');
    await tickAt('2026-11-22T11:10:09Z');
    const again = (await v2('GET', `/alerts/${id}/history`)).data;
    expect(again).toHaveLength(1);
    expect(again[0]).toMatchObject({ windowStart: '2026-11-22T11:05:00.000Z', state: null });
    expect(again[0].attempts).toBeGreaterThanOrEqual(failure.attempts + 2);
    await sql("CREATE TABLE app.doomed (ts DateTime('UTC'), status UInt16) ENGINE = MergeTree ORDER BY ts");
    await tickAt('2026-11-22T11:10:10Z');
    expect(await stateOf(id)).toBe('ALERT'); // count 0 >= 0: the same window, evaluated this time
    const after = (await v2('GET', `/alerts/${id}/history`)).data;
    expect(
      after.map((row: { state: string | null; errorCode: string | null }) => [row.state, row.errorCode]),
    ).toEqual([
      ['ALERT', null],
      [null, 'SLUICE_ERR_ENGINE'],
    ]);
  });
  it("tiles of one source are read in one query, each alert deciding as its tile's own query would", async () => {
    await sql(
      "CREATE TABLE app.shared (ts DateTime('UTC'), status UInt16, host String, extra UInt8) ENGINE = MergeTree ORDER BY ts",
    );
    const sharedSource = await sourceOver('shared');
    await sql(`INSERT INTO app.shared VALUES
      ('2026-11-22 12:00:01', 500, 'b', 1), ('2026-11-22 12:00:02', 500, 'b', 1), ('2026-11-22 12:00:03', 200, 'c', 1),
      ('2026-11-22 12:00:04', 200, 'c', 1)`);
    const tile = (name: string, select: Record<string, unknown>, groupBy?: string) => ({
      name,
      x: 0,
      y: 0,
      w: 4,
      h: 4,
      config: {
        displayType: 'number',
        sourceId: sharedSource,
        select: [select],
        ...(groupBy ? { groupBy } : {}),
      },
    });
    // The alerts are made before their window closes, so a tick of the alert timer between two of
    // them cannot evaluate it: the window 12:00-12:05 is due for all of them at once, at 12:05.
    now = new Date('2026-11-22T12:04:00Z');
    const dashboard = (
      await v2('POST', '/dashboards', {
        name: 'many tiles',
        tiles: [
          tile('errors by host', { aggFn: 'count', where: 'status >= 500', whereLanguage: 'sql' }, 'host'),
          tile('teapots by host', { aggFn: 'count', where: 'status = 418', whereLanguage: 'sql' }, 'host'),
          // No row meets the filter: the average of nothing is an empty window (0), not nan.
          tile('teapot average', {
            aggFn: 'avg',
            valueExpression: 'status',
            where: 'status = 418',
            whereLanguage: 'sql',
          }),
          tile('average', { aggFn: 'avg', valueExpression: 'status' }),
          tile('hosts', { aggFn: 'count_distinct', valueExpression: 'host' }),
          tile('extra', { aggFn: 'sum', valueExpression: 'extra' }),
        ],
      })
    ).data;
    const alertOnTile = async (index: number, threshold: number, thresholdType: string) =>
      (
        await v2(
          'POST',
          '/alerts',
          tileAlert({ id: dashboard.id, tiles: [dashboard.tiles[index]] }, webhookId, {
            threshold,
            thresholdType,
          }),
        )
      ).data.id as string;
    const metric = async (kind: string) => {
      const text = (await s.request({ method: 'GET', url: '/metrics' })).body;
      return Number(new RegExp(`sluice_alert_queries_total\\{kind="${kind}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
    };
    const history = async (id: string, windowStart: string) =>
      (await v2('GET', `/alerts/${id}/history`)).data
        .filter((row: any) => row.windowStart === windowStart)
        .map((row: any) => [row.group ?? null, row.state, row.value, row.errorCode])
        .sort();
    const [first, second] = ['2026-11-22T12:00:00.000Z', '2026-11-22T12:05:00.000Z'];
    const errors = await alertOnTile(0, 2, 'above');
    const teapots = await alertOnTile(1, 1, 'above');
    const teapotAverage = await alertOnTile(2, 1, 'below');
    const average = await alertOnTile(3, 351, 'above');
    const hosts = await alertOnTile(4, 2, 'above');
    const extra = await alertOnTile(5, 1, 'above');
    await s.sluice.evaluator.idle();
    const scansBefore = await metric('scan');
    await tickAt('2026-11-22T12:05:01Z');
    const scans = await metric('scan');
    expect(scans).toBeGreaterThan(scansBefore);
    expect(await history(errors, first)).toEqual([['b', 'ALERT', 2, null]]);
    expect(await history(teapots, first)).toEqual([[null, 'OK', 0, null]]);
    expect(await history(teapotAverage, first)).toEqual([[null, 'ALERT', 0, null]]);
    expect(await history(average, first)).toEqual([[null, 'OK', 350, null]]);
    expect(await history(hosts, first)).toEqual([[null, 'ALERT', 2, null]]);
    expect(await history(extra, first)).toEqual([[null, 'ALERT', 4, null]]);

    // One tile's expression no longer fits its table: its scan fails, each tile is then read
    // alone, and only that tile's alert records the failure.
    await sql('ALTER TABLE app.shared DROP COLUMN extra');
    await sql("INSERT INTO app.shared VALUES ('2026-11-22 12:05:01', 503, 'c')");
    await tickAt('2026-11-22T12:10:01Z');
    expect(await metric('scan')).toBeGreaterThan(scans);
    expect(await history(extra, second)).toEqual([[null, null, null, 'SLUICE_ERR_ENGINE_DEFINITION']]);
    expect(await history(errors, second)).toEqual([['c', 'OK', 1, null]]);
    expect(await stateOf(average)).toBe('ALERT');
  });
});
