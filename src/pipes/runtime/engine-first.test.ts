import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedEngine } from '../../engine/index.js';
import { createLogger } from '../../log.js';
import { EngineFirst, insertPlan } from '../records/index.js';
import { loadMessages, type MessagePlan, type MessageSource } from '../sources/messages/index.js';
import { batchSink } from './source-ports.js';

/** A message of a stream: its value, and its number (the virtual column `_id`). */
interface Message {
  value: Buffer;
  id: number;
}

const source: MessageSource<Message> = {
  virtualTypes: { _id: 'Int64' },
  value: (m) => m.value,
  valueBytes: (m) => m.value,
  valueAt: () => 0,
  valueLength: (m) => m.value.length,
  virtualValue: (_, m) => m.id,
  position: (m) => `p:${m.id}`,
  row: (m) => m.id,
  describe: (m) => `message ${m.id}`,
  producedAt: () => undefined,
};

const COLUMNS = [
  { name: 'id', type: 'UInt64' },
  { name: 'v', type: 'UInt32' },
  { name: 'name', type: 'String' },
  { name: '_id', type: 'Int64' },
];
/** Small blocks, parsed on one thread. */
const SETTINGS = {
  input_format_skip_unknown_fields: 1,
  max_insert_block_size: 4,
  min_insert_block_size_rows: 4,
  min_insert_block_size_bytes: 1,
  input_format_parallel_parsing: 0,
};

function plan(mappings: { sourceField: string; destinationField: string }[]): MessagePlan<Message> {
  return {
    format: 'JSONEachRow',
    source,
    plan: insertPlan(mappings, COLUMNS, {
      positional: false,
      virtualColumns: ['_id'],
      virtualTypes: source.virtualTypes,
    }),
    virtual: mappings.some((m) => m.sourceField === '_id') ? ['_id'] : [],
    settings: SETTINGS,
  };
}
const same = COLUMNS.map(({ name }) => ({ sourceField: name, destinationField: name }));
const messages = (values: string[]) => values.map((value, id) => ({ value: Buffer.from(value), id }));
const clean = (n: number) =>
  messages(Array.from({ length: n }, (_, i) => `{"id":${i},"name":"n${i}","extra":[1]}`));

/**
 * A stream's batch of JSON messages whose fields are the table's columns is loaded by the
 * service's engine itself; one it refuses goes through the source reader, which sets the bad
 * messages aside: on two real chDB processes, the source reader's loads counted by a wrapper.
 */
describe("a batch's JSON messages in the service's engine first (chDB)", () => {
  let dir: string;
  let engine: EmbeddedEngine;
  let reader: EmbeddedEngine;
  let readerLoads = 0;
  // The source reader parses a batch of messages into a Native file (execute) or a FIFO (produceInto).
  const sourceReader = {
    query: (...args: Parameters<EmbeddedEngine['query']>) => reader.query(...args),
    execute: (...args: Parameters<EmbeddedEngine['execute']>) => {
      readerLoads += 1;
      return reader.execute(...args);
    },
    warm: () => reader.warm(),
    produceInto: (...args: Parameters<EmbeddedEngine['produceInto']>) => {
      readerLoads += 1;
      return reader.produceInto(...args);
    },
  };
  let stage = 0;
  /** Loads a batch into a new stage, a copy of the table; the stage's rows and what was set aside. */
  const load = async (how: MessagePlan<Message>, batch: Message[], first?: EngineFirst) => {
    const into = `db.stage_${stage++}`;
    await engine.execute(`CREATE TABLE ${into} AS db.t`);
    const sink = batchSink({ engine, sourceReader }, { into: () => into });
    const before = readerLoads;
    const read = await loadMessages(sink, sourceReader, how, batch, `batch-${stage}`, first);
    const rows = await engine.query(`SELECT id, v, name, _id FROM ${into} ORDER BY _id, id`);
    return { read, rows: rows.rows, throughReader: readerLoads > before };
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-engine-first-'));
    engine = new EmbeddedEngine(join(dir, 'engine'), { confined: false });
    reader = new EmbeddedEngine(join(dir, 'reader'), { confined: false });
    await engine.execute('CREATE DATABASE db');
    await engine.execute(
      'CREATE TABLE db.t (id UInt64, v UInt32 DEFAULT 42, name String, _id Int64) ENGINE = MergeTree ORDER BY id',
    );
  }, 60_000);
  afterAll(async () => {
    await Promise.all([engine.close(), reader.close()]);
    await rm(dir, { recursive: true, force: true });
  });

  it('loads a clean batch in the engine, the rows as the source reader makes them (an omitted field is its type default)', async () => {
    const batch = clean(10);
    const engineFirst = await load(plan(same), batch, new EngineFirst(createLogger('silent'), 'messages'));
    const readerOnly = await load(plan(same), batch);
    expect(engineFirst.throughReader).toBe(false);
    expect(readerOnly.throughReader).toBe(true);
    expect(engineFirst.read).toEqual({ rows: 10, badRecords: [] });
    expect(engineFirst.rows).toEqual(readerOnly.rows);
    expect(engineFirst.rows[3]).toEqual({ id: 3, v: 0, name: 'n3', _id: 3 });
  });

  it('sends a batch the engine refuses through the source reader: the bad message set aside, every other loaded once, the next 16 batches read by the reader', async () => {
    const first = new EngineFirst(createLogger('silent'), 'messages');
    const batch = messages([...clean(9).map((m) => m.value.toString()), '{"id":"not a number","name":"x"}']);
    const refused = await load(plan(same), batch, first);
    expect(refused.throughReader).toBe(true);
    expect(refused.read.rows).toBe(9);
    expect(refused.read.badRecords).toEqual([expect.objectContaining({ source: 'p:9', row: 9 })]);
    expect(refused.rows.map((row) => row._id)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    // Sixteen batches through the reader, then the engine again.
    const after = [];
    for (let i = 0; i < 17; i += 1) after.push((await load(plan(same), clean(2), first)).throughReader);
    expect(after).toEqual([...Array(16).fill(true), false]);
  });

  it("never takes a virtual column's value from a message's field of the same name, through the engine or the source reader", async () => {
    // The engine's JSON reader keeps the first of two equal keys, or refuses the record.
    const spoofing = messages(['{"id":1,"_id":999,"name":"a"}', '{"_id":-5,"id":2,"name":"b"}', '{"id":3}']);
    const narrow = plan([
      { sourceField: 'id', destinationField: 'id' },
      { sourceField: '_id', destinationField: '_id' },
    ]);
    for (const [how, first] of [plan(same), narrow].flatMap((p) => [
      [p, new EngineFirst(createLogger('silent'), 'messages')] as const,
      [p, undefined] as const,
    ])) {
      const loaded = await load(how, spoofing, first);
      const kept = loaded.rows.map((row) => [row.id, row._id]);
      const setAside = loaded.read.badRecords.map((record) => record.row);
      expect(kept).toContainEqual([3, 2]);
      for (const [id, virtual] of kept) expect(virtual).toBe(Number(id) - 1);
      expect(kept.length + setAside.length).toBe(3);
    }
  });

  it('sets aside every message of a batch none of which fits, through the source reader', async () => {
    for (const first of [new EngineFirst(createLogger('silent'), 'messages'), undefined]) {
      const loaded = await load(plan(same), messages(['{"id":"x"}', '{"id":"y"}']), first);
      expect(loaded.read.rows).toBe(0);
      expect(loaded.read.badRecords.map((record) => record.source)).toEqual(['p:0', 'p:1']);
      expect(loaded.rows).toEqual([]);
    }
  });

  it("reads a message holding two objects as the source reader does: two rows, loaded once (the engine's load, refused for its count, emptied again)", async () => {
    const batch = messages(['{"id":1,"name":"a"}', '{"id":2,"name":"b"} {"id":3,"name":"c"}']);
    const loaded = await load(plan(same), batch, new EngineFirst(createLogger('silent'), 'messages'));
    expect(loaded.read.rows).toBe(3);
    expect(loaded.rows.map((row) => row.id).sort()).toEqual([1, 2, 3]);
  });

  it('leaves a renamed or cast field to the source reader', async () => {
    const renamed = plan([
      { sourceField: 'other', destinationField: 'id' },
      { sourceField: 'name', destinationField: 'name' },
    ]);
    expect(renamed.plan.textIsTarget).toBe(false);
    const loaded = await load(
      renamed,
      messages(['{"other":7,"name":"a"}']),
      new EngineFirst(createLogger('silent'), 'messages'),
    );
    expect(loaded.throughReader).toBe(true);
    expect(loaded.rows).toEqual([{ id: 7, v: 42, name: 'a', _id: 0 }]);
    const cast = insertPlan([{ sourceField: 'id', destinationField: 'name' }], COLUMNS, {
      positional: false,
      virtualColumns: [],
    });
    expect(cast.textIsTarget).toBe(false);
    expect(plan(same).plan.textIsTarget).toBe(true);
  });
});
