import { open } from 'node:fs/promises';
import { Session } from 'chdb';
import { produceInto } from './produce.js';
import {
  type EngineClose,
  type EngineHello,
  type EngineReply,
  type EngineRequest,
  RESULT_FILE_FORMAT,
} from './protocol.js';

/**
 * The engine process of one embedded service: chDB binds one data directory per process, so each
 * embedded service runs in a process of its own, which also keeps its databases its own and an
 * engine crash away from the API. Statements run off this process's event loop (queryAsync).
 *
 * argv: the data path, then the engine's configuration file (confinement.ts) when it has one.
 * Sluice's runtime shares a few connections; each statement of a user opens a connection of its own
 * with its settings given at connect (`--readonly=1` cannot be lifted by the statement).
 */
const [path, configFile] = process.argv.slice(2);
if (!path || !process.send) {
  console.error('usage: child.js <data path> [config file] (started by the embedded engine over IPC)');
  process.exit(2);
}
const RUNTIME_MAX_QUERY_BYTES = 16 * 1024 * 1024;
/**
 * Sluice's runtime statements run on up to this many connections at once: one connection runs
 * one statement at a time, and a pipe's batches (and several pipes) parse and load side by side.
 * Runtime statements carry their settings in their text, so any connection serves any of them.
 */
const RUNTIME_CONNECTIONS = 4;
const hello = (message: EngineHello) => process.send?.(message);
// Sluice's own statements name every column of a table up to LIMITS.columnsPerTable, each with a
// type of up to LIMITS.expression characters: more than the engine's default query size.
const runtimeArgs = [
  ...(configFile ? [`--config-file=${configFile}`] : []),
  `--max_query_size=${RUNTIME_MAX_QUERY_BYTES}`,
];
const openRuntime = () => new Session(path as string, { connectionArgs: runtimeArgs });
const runtimes: Session[] = [];
try {
  runtimes.push(openRuntime());
} catch (error) {
  hello({ ready: false, error: error instanceof Error ? error.message : String(error) });
  process.exit(1);
}
const idleRuntimes = [...runtimes];
const waitingForRuntime: ((session: Session) => void)[] = [];

async function withRuntime<T>(use: (session: Session) => Promise<T>): Promise<T> {
  let session = idleRuntimes.pop();
  if (!session && runtimes.length < RUNTIME_CONNECTIONS) {
    session = openRuntime();
    runtimes.push(session);
  }
  session ??= await new Promise<Session>((resolve) => waitingForRuntime.push(resolve));
  try {
    return await use(session);
  } finally {
    const next = waitingForRuntime.shift();
    if (next) next(session);
    else idleRuntimes.push(session);
  }
}
const reply = (message: EngineReply) => process.send?.(message);

async function run(request: EngineRequest): Promise<string> {
  const format = request.format ?? 'TabSeparated';
  const fifo = request.produceInto;
  if (!request.caller && fifo) {
    // A connection of its own, closed after, never one of the runtime's: chDB (3.4) puts what a
    // failed statement left in a connection before the next result, which in a Native stream is
    // data the engine misreads. It waits for the FIFOs' readers without holding any shared one.
    const session = new Session(path as string, { connectionArgs: runtimeArgs });
    try {
      return String(await produceInto(session, request.sql, fifo.paths));
    } finally {
      session.close();
    }
  }
  if (!request.caller) {
    return withRuntime(async (session) => {
      const result = await session.queryAsync(request.sql, { format });
      return request.format ? result.text() : '';
    });
  }
  const settings = {
    ...request.settings,
    ...(request.caller === 'reader' ? { readonly: '1' } : {}),
    // Rows written as JSON carry valid UTF-8 only (a String may hold any bytes).
    ...(request.resultFile ? { output_format_json_validate_utf8: '1' } : {}),
  };
  const session = new Session(path as string, {
    connectionArgs: Object.entries(settings).map(([name, value]) => `--${name}=${value}`),
  });
  process.send?.({ id: request.id, started: true } satisfies EngineReply);
  try {
    if (request.resultFile) {
      await streamToFile(session, request.sql, request.resultFile);
      return '';
    }
    const result = await session.queryAsync(request.sql, { format });
    return request.format ? result.text() : '';
  } finally {
    session.close();
  }
}

/** A result over the most a statement may return, said as the engine says its own limits. */
const tooLarge = (maxBytes: number) =>
  new Error(
    `Code: 396. DB::Exception: the result is larger than ${Math.round(maxBytes / 1024 / 1024)} MB, the most a statement may return (SLUICE_QUERY_RESULT_MB): add a LIMIT, or aggregate. (TOO_MANY_ROWS_OR_BYTES)`,
  );

/** A chunk's first two lines (the column names and types), newlines included. */
function headerOf(chunk: Buffer): Buffer {
  const names = chunk.indexOf(0x0a);
  const types = names < 0 ? -1 : chunk.indexOf(0x0a, names + 1);
  return chunk.subarray(0, types < 0 ? chunk.length : types + 1);
}

/** The engine's answer to a statement that has no rows to stream (DDL, INSERT, SET ...). */
const NOT_STREAMED = /Streaming query is not supported/;

/**
 * Writes a caller's rows to `file.path` chunk by chunk, each written before the next is asked
 * for; past `file.maxBytes` the stream is cancelled and the statement fails. A statement the
 * engine cannot stream runs whole.
 */
async function streamToFile(session: Session, sql: string, file: { path: string; maxBytes: number }) {
  const out = await open(file.path, 'w', 0o600);
  try {
    let written = 0;
    let header: Buffer | undefined;
    try {
      const stream = session.queryStream(sql, { format: RESULT_FILE_FORMAT });
      for await (const chunk of stream) {
        const raw = chunk.raw();
        let bytes = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
        // Every chunk starts with the names and types again: the file keeps the first chunk's.
        if (header === undefined) header = Buffer.from(headerOf(bytes));
        else if (bytes.subarray(0, header.length).equals(header)) bytes = bytes.subarray(header.length);
        written += bytes.length;
        if (written > file.maxBytes) {
          stream.cancel();
          throw tooLarge(file.maxBytes);
        }
        await out.write(bytes);
      }
    } catch (error) {
      if (!NOT_STREAMED.test(String((error as Error)?.message ?? error))) throw error;
      // DDL, INSERT, and statements that answer without a query pipeline (EXISTS, SHOW, DESCRIBE):
      // run whole, their few rows written as a stream's would be.
      const result = await session.queryAsync(sql, { format: RESULT_FILE_FORMAT });
      const bytes = result.bytes();
      if (bytes.length > file.maxBytes) throw tooLarge(file.maxBytes);
      await out.write(bytes);
    }
  } finally {
    await out.close();
  }
}

process.on('message', async (request: EngineRequest | EngineClose) => {
  if ('close' in request) {
    closing = true;
    return;
  }
  try {
    reply({ id: request.id, ok: true, text: await run(request) });
  } catch (error) {
    reply({ id: request.id, ok: false, error: error instanceof Error ? error.message : String(error) });
  }
});
/**
 * The owner closes the engine with a message (EngineClose): the sessions close, then the process
 * ends. A disconnect without it means the owner died (killed, as a crash or an OOM kill would end
 * it): the process ends at once, without closing its sessions, which would wait for the statements
 * in flight, so that a server started again finds the data free. Parts are written whole; nothing
 * is left half-done.
 */
let closing = false;
process.on('disconnect', () => {
  if (!closing) process.kill(process.pid, 'SIGKILL');
  for (const session of runtimes) session.close?.();
  process.exit(0);
});
hello({ ready: true });
