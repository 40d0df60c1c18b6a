import type { Logger } from 'pino';
import {
  type EngineRegistry,
  OLD_DEDUPLICATION_SETTING,
  resetOldDeduplicationSql,
  tablesWithOldDeduplication,
} from '../../engine/index.js';
import type { Store } from '../../store/index.js';

/** Stored once every service's tables were put right, so later starts skip the look. */
const DONE = 'upgrade:old-deduplication-removed';

/**
 * Sluice until 2026-11-26 made every table with `non_replicated_deduplication_window = 1000`, by which
 * the engine silently drops an inserted block equal to one of the last thousand (two equal files,
 * a batch of messages equal to an earlier one, a user's own INSERT of equal rows). On the first
 * start of this version each embedded service's tables with exactly that setting get it reset,
 * each named in the log (README, "Upgrading"). A service that cannot be looked at now is logged
 * and looked at again on the next start.
 */
export async function removeOldDeduplication(deps: {
  store: Store;
  engines: EngineRegistry;
  logger: Logger;
}): Promise<void> {
  const { store, engines, logger } = deps;
  if (await store.repos.identity.getMeta(DONE)) return;
  let complete = true;
  for (const organization of await store.repos.identity.listOrganizations()) {
    for (const service of await store.repos.identity.listServices(organization.id)) {
      if (!engines.hasData(service)) continue;
      try {
        const engine = engines.ownEngineFor(service);
        const tables = await tablesWithOldDeduplication(engine);
        for (const { database, table } of tables)
          await engine.execute(resetOldDeduplicationSql(database, table));
        if (tables.length > 0) {
          logger.warn(
            { serviceId: service.id, tables: tables.map((t) => `${t.database}.${t.table}`) },
            `an earlier Sluice made these tables with ${OLD_DEDUPLICATION_SETTING} = 1000, which silently drops an insert equal to a recent one; the setting is reset, so every insert lands from now on. Earlier equal files, batches or inserts may be missing: README, "Upgrading"`,
          );
        }
      } catch (error) {
        complete = false;
        logger.error(
          { serviceId: service.id, err: error },
          `could not look for tables with the old ${OLD_DEDUPLICATION_SETTING}; tried again at the next start`,
        );
      }
    }
  }
  if (complete) await store.repos.identity.putMetaOnce(DONE, new Date().toISOString());
}
