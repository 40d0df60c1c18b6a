import { Session } from 'chdb';
import type { EngineHello, EngineReply, EngineRequest } from './protocol.js';

/**
 * The engine process of one embedded service: chDB binds one data directory per process, so each
 * embedded service runs in a process of its own, which also keeps its databases its own and an
 * engine crash away from the API. Statements run off this process's event loop (queryAsync).
 *
 * argv: the data path, then the engine's configuration file (confinement.ts) when it has one.
 * Sluice's runtime shares one connection; each statement of a user opens a connection of its own
 * with its settings given at connect (`--readonly=1` cannot be lifted by the statement).
 */
const [path, configFile] = process.argv.slice(2);
if (!path || !process.send) {
  console.error('usage: child.js <data path> [config file] (started by the embedded engine over IPC)');
  process.exit(2);
}
const RUNTIME_MAX_QUERY_BYTES = 16 * 1024 * 1024;
const hello = (message: EngineHello) => process.send?.(message);
let runtime: Session;
try {
  // Sluice's own statements name every column of a table up to LIMITS.columnsPerTable, each with a
  // type of up to LIMITS.expression characters: more than the engine's default query size.
  const args = [`--max_query_size=${RUNTIME_MAX_QUERY_BYTES}`];
  runtime = new Session(path, {
    connectionArgs: configFile ? [`--config-file=${configFile}`, ...args] : args,
  });
} catch (error) {
  hello({ ready: false, error: error instanceof Error ? error.message : String(error) });
  process.exit(1);
}
const reply = (message: EngineReply) => process.send?.(message);

async function run(request: EngineRequest): Promise<string> {
  const format = request.format ?? 'TabSeparated';
  if (!request.caller) {
    const result = await runtime.queryAsync(request.sql, { format });
    return request.format ? result.text() : '';
  }
  const settings = { ...request.settings, ...(request.caller === 'reader' ? { readonly: '1' } : {}) };
  const session = new Session(path as string, {
    connectionArgs: Object.entries(settings).map(([name, value]) => `--${name}=${value}`),
  });
  try {
    const result = await session.queryAsync(request.sql, { format });
    return request.format ? result.text() : '';
  } finally {
    session.close();
  }
}

process.on('message', async (request: EngineRequest) => {
  try {
    reply({ id: request.id, ok: true, text: await run(request) });
  } catch (error) {
    reply({ id: request.id, ok: false, error: error instanceof Error ? error.message : String(error) });
  }
});
process.on('disconnect', () => {
  runtime.close?.();
  process.exit(0);
});
hello({ ready: true });
