import { SEALED_CONTEXT } from '../crypto/index.js';
import type { Queryable } from './db.js';

/** Where a sealed value lives: a pipe's secrets, a webhook's, a deleted pipe's kept for its cleanup. */
export type SealedPlace = 'pipe' | 'webhook' | 'cleanup';

/** One value the store holds sealed with the master key, and what it is bound to. */
export interface SealedValue {
  place: SealedPlace;
  id: string;
  /** The associated data it was sealed with (crypto/contexts.ts). */
  context: string;
  sealed: string;
}

/**
 * Every value of the store sealed with the master key, for a key rotation: pipes' secrets,
 * webhooks' secrets and the secrets of deleted pipes kept until their source is cleaned up. (The
 * master-key check is in sluice_meta, IdentityRepo; access tokens are digests, not sealed.)
 */
export class SealedRepo {
  constructor(private readonly db: Queryable) {}

  async all(): Promise<SealedValue[]> {
    const rows = await this.db.query<{ place: SealedPlace; id: string; sealed: string }>(
      `select 'pipe' as place, id::text as id, secrets as sealed from pipes where secrets is not null
       union all
       select 'webhook', id, secrets from webhooks where secrets is not null
       union all
       select 'cleanup', pipe_id::text, pipe->>'secrets' from source_cleanups where pipe->>'secrets' is not null
       order by 1, 2`,
    );
    return rows.map((row) => ({
      ...row,
      context: row.place === 'webhook' ? SEALED_CONTEXT.webhook(row.id) : SEALED_CONTEXT.pipe(row.id),
    }));
  }

  async replace(value: SealedValue, sealed: string): Promise<void> {
    const statements: Record<SealedPlace, string> = {
      pipe: 'update pipes set secrets = $2 where id = $1::uuid',
      webhook: 'update webhooks set secrets = $2 where id = $1',
      cleanup: `update source_cleanups set pipe = jsonb_set(pipe, '{secrets}', to_jsonb($2::text)) where pipe_id = $1::uuid`,
    };
    await this.db.query(statements[value.place], [value.id, sealed]);
  }
}
