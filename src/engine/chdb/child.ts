import { Session } from 'chdb';
import type { EngineReply, EngineRequest } from './protocol.js';

/**
 * The engine process of one embedded service: chDB binds one data directory per process, so each
 * embedded service runs in a process of its own, which also keeps its databases its own and an
 * engine crash away from the API. Statements run off this process's event loop (queryAsync).
 */
const path = process.argv[2];
if (!path || !process.send) {
  console.error('usage: child.js <data path> (started by the embedded engine over IPC)');
  process.exit(2);
}
const session = new Session(path);
const reply = (message: EngineReply) => process.send?.(message);

process.on('message', async (request: EngineRequest) => {
  try {
    const result = await session.queryAsync(request.sql, { format: request.format ?? 'TabSeparated' });
    reply({ id: request.id, ok: true, text: request.format ? result.text() : '' });
  } catch (error) {
    reply({ id: request.id, ok: false, error: error instanceof Error ? error.message : String(error) });
  }
});
process.on('disconnect', () => {
  session.close?.();
  process.exit(0);
});
process.send({ ready: true });
