import { type Static, Type as T } from '@sinclair/typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { literal } from '../src/engine/index.js';
import { PermanentError, SOURCE_KINDS, type SourceKind } from '../src/pipes/index.js';
import { insertPlan } from '../src/pipes/records/index.js';
import type { SourceConnector } from '../src/pipes/sources/index.js';
import { Integer, NonEmpty, Secret, StrictObject } from '../src/schema/index.js';
import { sql, waitForState } from './support/runtime.js';
import { startSluice, type TestSluice } from './support/sluice.js';

// A fifth source kind that exists only in this file (docs/adding-a-source-kind.md): `counter`
// counts from 0 to `rows - 1`, `batchRows` at a time. It is given to Sluice the way the registry's
// kinds are (createSluice's `sourceKinds`), and nothing else in src/ knows of it.

const TOKEN = 'COUNTER-TOKEN-only-the-connector-sees-it';

const CounterConfig = StrictObject({
  rows: Integer(1, 100_000),
  batchRows: T.Optional(Integer(1)),
  secretToken: Secret(NonEmpty({ description: 'Secret: stored encrypted, never returned' })),
});
type CounterConfig = Static<typeof CounterConfig>;

/** How a counter's records map to the destination's columns, as a kind's plan says. */
const COUNTER_PLAN = insertPlan(
  [
    { sourceField: 'n', destinationField: 'n' },
    { sourceField: 'label', destinationField: 'label' },
  ],
  [
    { name: 'n', type: 'UInt64' },
    { name: 'label', type: 'String' },
  ],
  { positional: false, virtualColumns: [] },
);

/** A batch's range: the numbers it reads, from `from` up to `to` excluded. */
interface CountRange {
  from: number;
  to: number;
}

const counterConnector: SourceConnector = {
  kind: 'counter',
  virtualColumns: [],
  // The create check sees the secret (sealed secrets are put back for checks and runs only); its
  // message quotes it, as engine and SDK messages may, and the API must redact it.
  async createProblems(config) {
    const { secretToken } = (config.source as { counter: CounterConfig }).counter;
    if (secretToken === TOKEN) return [];
    return [{ path: 'source.counter.secretToken', message: `the token ${secretToken} is refused` }];
  },
  async open(context) {
    const counter = (context.config.source as { counter: CounterConfig }).counter;
    if (counter.secretToken !== TOKEN)
      throw new PermanentError('SLUICE_ERR_SOURCE_CONFIG', 'the run did not get the secret token back');
    const batchRows = counter.batchRows ?? 10;
    return {
      firstCursor: 0,
      pollMs: 50,
      completion: 'counted every row',
      async next(cursor) {
        const from = typeof cursor === 'number' ? cursor : 0;
        if (from >= counter.rows) return 'complete';
        const to = Math.min(from + batchRows, counter.rows);
        return { range: { from, to }, files: 0, bytes: (to - from) * 8, skipped: [], cursor: to };
      },
      // The kind produces its records in a format the engine reads; the runtime's sink loads them.
      async read(batch, sink) {
        const { from, to } = batch.range as unknown as CountRange;
        const lines = Array.from({ length: to - from }, (_, i) =>
          JSON.stringify({ n: from + i, label: `row ${from + i}` }),
        );
        const loaded = await sink.load({
          name: `counter-${batch.seq}`,
          from: `format(JSONEachRow, ${literal(COUNTER_PLAN.structure)}, ${literal(lines.join('\n'))})`,
          plan: COUNTER_PLAN,
          settings: {},
        });
        return { rows: loaded.rows, badRecords: [] };
      },
      close: async () => {},
    };
  },
};

const counterKind: SourceKind<typeof CounterConfig, 'counter'> = {
  name: 'counter',
  label: 'counter',
  config: CounterConfig,
  patch: T.Partial(T.Pick(CounterConfig, ['secretToken']), { additionalProperties: false, minProperties: 1 }),
  immutableFields: { rows: {} },
  applyDefaults(counter) {
    counter.batchRows ??= 10;
  },
  rules(counter, path, problems) {
    if (counter.batchRows !== undefined && counter.batchRows > counter.rows) {
      problems.push({ path: `${path}.batchRows`, message: 'Must not be more than rows' });
    }
  },
  connector: counterConnector,
};

function counterPipe(counter: Record<string, unknown>) {
  return {
    name: 'counted',
    source: { counter },
    destination: {
      table: 'counted',
      tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['n'] },
      columns: [
        { name: 'n', type: 'UInt64' },
        { name: 'label', type: 'String' },
      ],
    },
  };
}

describe('a fifth source kind, defined in this test alone, registered through the kinds given to Sluice', () => {
  let s: TestSluice;
  beforeAll(async () => {
    s = await startSluice({ sourceKinds: [...SOURCE_KINDS, counterKind] });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('its schema and rules check a create body, and its secret is redacted from its checks', async () => {
    const unknownField = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: counterPipe({ rows: 5, secretToken: TOKEN, speed: 3 }),
    });
    expect(unknownField.statusCode).toBe(400);
    expect(unknownField.json.error).toContain('source.counter.speed');
    expect(unknownField.json.code).toBe('SLUICE_ERR_VALIDATION');
    const ruled = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: counterPipe({ rows: 5, batchRows: 6, secretToken: TOKEN }),
    });
    expect(ruled.statusCode).toBe(400);
    expect(ruled.json.error).toContain('source.counter.batchRows: Must not be more than rows');
    expect(ruled.json.code).toBe('SLUICE_ERR_VALIDATION');
    const refused = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: counterPipe({ rows: 5, secretToken: 'WRONG-TOKEN-never-shown' }),
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain('source.counter.secretToken');
    expect(refused.json.code).toBe('SLUICE_ERR_VALIDATION');
    expect(refused.body).not.toContain('WRONG-TOKEN-never-shown');
  });

  it('creates, reads and runs a pipe of it: its secret sealed, its rows in the destination', async () => {
    const created = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: counterPipe({ rows: 25, secretToken: TOKEN }),
    });
    expect(created.statusCode, created.body).toBe(200);
    const id = created.json.result.id as string;
    // The kind's default is filled in; its Secret-marked field is neither returned nor stored in the clear.
    expect(created.json.result.source).toEqual({ counter: { rows: 25, batchRows: 10 } });
    const read = await s.request({ method: 'GET', url: `${s.pipesUrl}/${id}` });
    expect(read.statusCode).toBe(200);
    expect(read.json.result.source).toEqual({ counter: { rows: 25, batchRows: 10 } });
    expect(read.body).not.toContain(TOKEN);
    const [row] = await s.sluice.store.db.query<{ config: unknown; secrets: string; source_kind: string }>(
      'select config, secrets, source_kind from pipes where id = $1',
      [id],
    );
    expect(row?.source_kind).toBe('counter');
    expect(JSON.stringify(row?.config)).not.toContain(TOKEN);
    expect(row?.secrets).toMatch(/^v1:/);

    const status = await waitForState(s, id, 'Completed');
    expect(status.reason).toBe('counted every row');
    expect(status.rowsWritten).toBe(25);
    const [counted] = await sql(s, 'SELECT count() AS c, sum(n) AS total FROM default.counted');
    expect(Number(counted?.c)).toBe(25);
    expect(Number(counted?.total)).toBe((24 * 25) / 2);
  });

  it('its PATCH schema and immutable fields are the ones it gave', async () => {
    const id = (
      await s.request({ method: 'GET', url: s.pipesUrl }).then((r) => r.json.result as { id: string }[])
    )[0]?.id;
    const changed = await s.request({
      method: 'PATCH',
      url: `${s.pipesUrl}/${id}`,
      body: { source: { counter: { rows: 26 } } },
    });
    expect(changed.statusCode).toBe(400);
    expect(changed.json.error).toContain('source.counter.rows');
    expect(changed.json.code).toBe('SLUICE_ERR_VALIDATION');
    const openapi = await s.request({ method: 'GET', url: '/v1/openapi.json', auth: null });
    expect(openapi.body).toContain('"counter"');
  });
});
