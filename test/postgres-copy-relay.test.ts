import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyOut, copyToFile, sharedReadSocket } from '../src/pipes/sources/postgres/index.js';
import { postgresPipeBody, type RunningPostgres, startPostgres } from './support/postgres.js';
import { createPipe, sql, statusOf, waitForState } from './support/runtime.js';
import { startSluice, type TestSluice } from './support/sluice.js';

// The relay the snapshot reads COPY with (sources/postgres/snapshot/copy-out.ts) takes pg's socket for the
// length of the COPY: what it writes must be PostgreSQL's text byte for byte, and whatever ends
// the COPY (its end, an error, a failing sink, the server ending the session) must leave the
// session in step or fail it loudly.

let server: RunningPostgres;
let url: string;

beforeAll(async () => {
  server = await startPostgres();
  url = await server.createDatabase('relay');
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

/** A session as Sluice opens a plain one: its reads land in the shared buffer (session/shared-read-socket.ts). */
async function session(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, stream: sharedReadSocket });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** A Writable that keeps what it is given. */
function collector(): { sink: Writable; text: () => string } {
  const chunks: Buffer[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(Buffer.from(chunk));
      callback();
    },
  });
  return { sink, text: () => Buffer.concat(chunks).toString() };
}

const md5 = (text: string) => createHash('md5').update(text).digest('hex');

describe('the COPY relay against PostgreSQL', () => {
  it('writes exactly the text of 200,000 rows, escapes and NULLs included', async () => {
    const client = await session();
    try {
      const out = collector();
      const rows = await copyOut(
        client,
        `COPY (SELECT i, md5(i::text), CASE WHEN i % 7 = 0 THEN NULL ELSE E'a\\tb\\\\c' END
                 FROM generate_series(1, 200000) i) TO STDOUT`,
        out.sink,
      );
      // The server's own count of what it sent (CommandComplete), which a pipe's stage is held to.
      expect(rows).toBe(200_000);
      let expected = '';
      for (let i = 1; i <= 200_000; i++)
        expected += `${i}\t${md5(String(i))}\t${i % 7 === 0 ? '\\N' : 'a\\tb\\\\c'}\n`;
      expect(out.text().length).toBe(expected.length);
      expect(md5(out.text())).toBe(md5(expected));
      // The session is pg's again: the next query runs as usual.
      expect((await client.query('SELECT 41 + 1 AS n')).rows).toEqual([{ n: 42 }]);
    } finally {
      await client.end();
    }
  });

  it("writes a range's text over a reused file's longer text and cuts it after: the file holds the range alone", async () => {
    const client = await session();
    const dir = await mkdtemp(join(tmpdir(), 'sluice-copy-'));
    try {
      // A spare of an earlier, larger range (src/pipes/records/scratch-text.ts).
      const path = join(dir, 'range.tsv');
      await writeFile(path, 'left over from an earlier range\n'.repeat(20_000));
      const { ino } = await stat(path);
      const rows = await copyToFile(
        client,
        'COPY (SELECT i FROM generate_series(1, 1000) i) TO STDOUT',
        path,
        true,
      );
      expect(rows).toBe(1000);
      let expected = '';
      for (let i = 1; i <= 1000; i++) expected += `${i}\n`;
      expect(await readFile(path, 'utf8')).toBe(expected);
      expect((await stat(path)).ino).toBe(ino);
    } finally {
      await client.end();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('keeps sessions that share the read buffer apart: a COPY beside large query results, byte for byte', async () => {
    const [copying, querying] = [await session(), await session()];
    try {
      const out = collector();
      const copy = copyOut(
        copying,
        'COPY (SELECT i, md5(i::text) FROM generate_series(1, 300000) i) TO STDOUT',
        out.sink,
      );
      // Rows of 100 kB: each message spans reads, so pg holds a message's start while the other
      // session's reads land in the same buffer.
      const queries = (async () => {
        for (let round = 0; round < 5; round++) {
          const result = await querying.query<{ i: number; text: string }>(
            'SELECT i, repeat(md5(i::text), 3200) AS text FROM generate_series(1, 40) i',
          );
          expect(result.rows.map((row) => row.text)).toEqual(
            result.rows.map((row) => md5(String(row.i)).repeat(3200)),
          );
        }
      })();
      await Promise.all([copy, queries]);
      let expected = '';
      for (let i = 1; i <= 300_000; i++) expected += `${i}\t${md5(String(i))}\n`;
      expect(md5(out.text())).toBe(md5(expected));
    } finally {
      await Promise.all([copying.end(), querying.end()]);
    }
  });

  it("fails with PostgreSQL's error when the COPY fails midway, and the session answers the next query", async () => {
    const client = await session();
    try {
      const out = collector();
      const copy = copyOut(
        client,
        'COPY (SELECT CASE WHEN i = 150000 THEN 1 / 0 ELSE i END FROM generate_series(1, 200000) i) TO STDOUT',
        out.sink,
      );
      await expect(copy).rejects.toThrow(/division by zero/);
      expect(out.sink.destroyed).toBe(true);
      expect((await client.query('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
    } finally {
      await client.end();
    }
  });

  it('fails with the sink’s error when the sink cannot be written, and the session stays in step', async () => {
    const client = await session();
    try {
      const failing = new Writable({
        write(_chunk, _encoding, callback) {
          callback(new Error('no space left on the scratch disk'));
        },
      });
      const copy = copyOut(client, 'COPY (SELECT i FROM generate_series(1, 300000) i) TO STDOUT', failing);
      await expect(copy).rejects.toThrow(/no space left/);
      expect((await client.query('SELECT 2 AS n')).rows).toEqual([{ n: 2 }]);
    } finally {
      await client.end();
    }
  });

  it('fails when the server ends the session mid-COPY', async () => {
    const client = await session();
    const admin = await session();
    try {
      const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
      const out = collector();
      // pg_sleep holds the COPY open after its first rows so the session is ended inside it.
      const copy = copyOut(
        client,
        "COPY (SELECT i, CASE WHEN i = 5000 THEN (SELECT 'slept' FROM pg_sleep(30)) END FROM generate_series(1, 10000) i) TO STDOUT",
        out.sink,
      );
      // Expected from now: the rejection may come before the terminate's own answer.
      const ended = expect(copy).rejects.toThrow(/terminat/);
      await new Promise((resolve) => setTimeout(resolve, 500));
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      await ended;
    } finally {
      await client.end().catch(() => {});
      await admin.end();
    }
  });
});

// --- The byte stream cut at every place -------------------------------------------------------

/** One backend message: code, length (counting itself), body. */
function message(code: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(code, 0, 'latin1');
  head.writeUInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

/**
 * Feeds the relay a scripted byte stream through a stand-in for pg's connection (the socket and
 * its one data listener), cut into chunks of `size` bytes, and returns what the relay wrote and
 * what it handed back to pg's listener.
 */
async function relayScript(
  stream: Buffer,
  size: number,
): Promise<{ written: string; handedBack: Buffer; rows: number }> {
  const socket = Object.assign(new EventEmitter(), { pause() {}, resume() {} });
  const handed: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => handed.push(Buffer.from(chunk)));
  let relay:
    | {
        submit(c: unknown): Error | undefined;
        handleCommandComplete(m: { text: string }): void;
        handleReadyForQuery(): void;
      }
    | undefined;
  const client = {
    query(submittable: typeof relay) {
      relay = submittable;
      expect(relay?.submit({ stream: socket, query() {} })).toBeUndefined();
    },
  } as unknown as pg.Client;
  const out = collector();
  const done = copyOut(client, 'COPY scripted TO STDOUT', out.sink);
  for (let at = 0; at < stream.length; at += size) {
    // Each chunk is a copy: the relay may move bytes inside the chunk it is given.
    socket.emit('data', Buffer.from(stream.subarray(at, at + size)));
  }
  // What pg does with the CommandComplete and ReadyForQuery handed back to it.
  relay?.handleCommandComplete({ text: 'COPY 40' });
  relay?.handleReadyForQuery();
  const rows = await done;
  return { written: out.text(), handedBack: Buffer.concat(handed), rows };
}

describe('the COPY relay through a scripted socket (a stand-in for pg’s connection)', () => {
  // Short rows, rows longer than 256 bytes and one longer than 65,536: every byte of the length counts.
  const rows = Array.from(
    { length: 40 },
    (_, i) => `${i}\t${'x'.repeat(i === 30 ? 70_000 : (i % 9) * (i % 2 ? 1 : 40))}\n`,
  );
  const after = Buffer.concat([
    message('c', Buffer.alloc(0)),
    message('C', Buffer.from('COPY 40\0')),
    message('Z', Buffer.from('I')),
  ]);
  const stream = Buffer.concat([
    message('H', Buffer.from([0, 0, 2, 0, 0, 0, 0])),
    ...rows.slice(0, 20).map((row) => message('d', Buffer.from(row))),
    // A notice and an empty CopyData in the middle of the data carry no row text.
    message('N', Buffer.from('SNOTICE\0\0')),
    message('d', Buffer.alloc(0)),
    ...rows.slice(20).map((row) => message('d', Buffer.from(row))),
    after,
  ]);

  it('keeps the row text and hands the rest back to pg, however the bytes are cut', async () => {
    for (const size of [1, 2, 3, 4, 5, 6, 7, 11, 64, stream.length]) {
      const { written, handedBack, rows: counted } = await relayScript(stream, size);
      expect(written, `chunks of ${size} bytes`).toBe(rows.join(''));
      expect(counted).toBe(40);
      expect(handedBack.equals(after), `chunks of ${size} bytes`).toBe(true);
    }
  });
});

// --- A pipe whose COPY sessions are ended by the server ---------------------------------------

describe('a snapshot whose COPY sessions the server ends', () => {
  let s: TestSluice;

  beforeAll(async () => {
    s = await startSluice({ runtime: true });
  }, 120_000);

  afterAll(async () => {
    await s?.close();
  });

  it('reads the cut ranges again: every row once', async () => {
    const database = 'cut';
    const dbUrl = await server.createDatabase(database);
    const source = new pg.Client({ connectionString: dbUrl });
    source.on('error', () => {});
    await source.connect();
    try {
      await source.query('CREATE TABLE items (id int8 PRIMARY KEY, body text NOT NULL)');
      await source.query(
        `INSERT INTO items SELECT i, repeat(md5(i::text), 4) FROM generate_series(1, 300000) i`,
      );
      await source.query('VACUUM ANALYZE items');
      const port = Number(new URL(dbUrl).port);
      const pipeId = await createPipe(
        s,
        postgresPipeBody(database, port, ['items'], {
          replicationMode: 'snapshot',
          snapshotNumRowsPerPartition: 20_000,
          initialLoadParallelism: 2,
        }),
      );
      // End every COPY the pipe runs until three were caught in flight.
      let ended = 0;
      while (ended < 3) {
        const cut = await source.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = $1 AND application_name = 'sluice snapshot' AND query LIKE 'COPY%' AND state = 'active'`,
          [database],
        );
        ended += cut.rowCount ?? 0;
        const { state } = await statusOf(s, pipeId);
        if (state === 'Completed' || state === 'Failed') break;
      }
      expect(ended).toBeGreaterThanOrEqual(3);
      await waitForState(s, pipeId, 'Completed', 120_000);
      // Without FINAL: a range loaded twice would show its rows twice.
      const [landed] = await sql(
        s,
        `SELECT count() AS n, uniqExact(id) AS ids, sum(id) AS total FROM mirror_${database}.items`,
      );
      expect(landed).toEqual({ n: 300000, ids: 300000, total: (300000 * 300001) / 2 });
    } finally {
      await source.end();
    }
  }, 180_000);
});
