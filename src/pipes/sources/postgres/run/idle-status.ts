import type { PipeConfig } from '../../../model.js';
import type { CleanupContext, Json, SourceStatus } from '../../contract.js';
import { slotState } from '../changes/index.js';
import { closeClient, connect, type PostgresSource } from '../session/index.js';
import type { Cursor } from './cursor.js';
import { replicationStatus } from './run-status.js';

/**
 * What `/status` shows of a postgres pipe that does not run (stopped, failed, between retries):
 * its slot as the server has it now. A stopped pipe's slot keeps every WAL segment since its
 * confirmed position, so its lag grows until the pipe starts again, and past
 * `max_slot_wal_keep_size` the server invalidates it (`slotWalStatus` `unreserved`, then `lost`):
 * the user sees that coming. {} when there is no slot yet; a server that cannot be asked throws
 * (the runtime logs it and asks again later).
 */
export async function idleStatus(
  config: PipeConfig,
  cursorJson: Json | null,
  context: CleanupContext,
): Promise<SourceStatus> {
  const cursor = cursorJson as unknown as Cursor | null;
  if (!cursor?.slot) return {};
  let client: Awaited<ReturnType<typeof connect>> | undefined;
  try {
    client = await connect(config.source.postgres as PostgresSource, context);
    const slot = await slotState(client, cursor.slot);
    return { replication: replicationStatus(cursor, undefined, slot, 0) };
  } finally {
    if (client) await closeClient(client, context.logger);
  }
}
