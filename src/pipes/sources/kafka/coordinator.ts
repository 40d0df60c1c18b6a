import { Consumer } from '@platformatic/kafka';
import type { Logger } from 'pino';
import { sleep } from '../../../concurrency.js';
import type { ConnectionOptions } from './connection.js';
import { brokerSaid } from './errors.js';

/** How often, and how long, a run asks for its group's coordinator before its members join. */
const PROBE = { everyMs: 100, forMs: 5_000 };

/**
 * Asks for the group's coordinator until the brokers name one. A broker that has never held a
 * consumer group answers COORDINATOR_NOT_AVAILABLE while it makes its offsets topic, and the
 * client waits its retryDelay (1 s) before asking again: on a fresh cluster a new pipe's first rows
 * came that much later. Here the question is asked every PROBE.everyMs instead, with a client of
 * its own (no retries), so the members' join finds the coordinator ready. Only a speed-up: any
 * other answer ends the probe, and the members' join meets it and reports it.
 */
export async function coordinatorReady(
  connection: ConnectionOptions,
  groupId: string,
  logger: Logger,
  signal: AbortSignal,
): Promise<void> {
  const probe = new Consumer({ ...connection, clientId: `sluice-${groupId}-probe`, groupId, retries: 0 });
  const deadline = Date.now() + PROBE.forMs;
  try {
    while (!signal.aborted) {
      try {
        await probe.findGroupCoordinator();
        return;
      } catch (error) {
        const loading =
          brokerSaid(error, 'COORDINATOR_NOT_AVAILABLE') || brokerSaid(error, 'COORDINATOR_LOAD_IN_PROGRESS');
        if (!loading || Date.now() >= deadline) {
          logger.debug({ err: error }, 'no group coordinator yet; the members join and report it');
          return;
        }
      }
      await sleep(PROBE.everyMs, signal);
    }
  } finally {
    await probe.close().catch((error: unknown) => {
      logger.warn({ err: error }, 'the Kafka coordinator probe did not close cleanly');
    });
  }
}
