import { join } from 'node:path';
import { AlertsRepo } from './alerts-repo.js';
import { CdcScalingRepo } from './cdc-scaling-repo.js';
import { CleanupsRepo } from './cleanups-repo.js';
import { type Db, openPglite, openPostgres, type Queryable } from './db.js';
import { EvaluationRepo, OutboxRepo } from './evaluation-repo.js';
import { GroupCommit } from './group-commit.js';
import { IdentityRepo } from './identity-repo.js';
import { migrate } from './migrations.js';
import { type NewPipe, PipesRepo } from './pipes-repo.js';
import { ProgressRepo } from './progress-repo.js';
import { SealedRepo } from './sealed-repo.js';
import { ConsoleSessionsRepo } from './sessions-repo.js';

export type { AlertRow, DashboardRow, SourceRow, WebhookRow } from './alerts-repo.js';
export { AlertsRepo } from './alerts-repo.js';
export { CdcScalingRepo, type CdcScalingRow } from './cdc-scaling-repo.js';
export type { SourceCleanup } from './cleanups-repo.js';
export { CleanupsRepo } from './cleanups-repo.js';
export type { Db, Queryable } from './db.js';
export type { HistoryRow, OutboxRow } from './evaluation-repo.js';
export { EvaluationRepo, OutboxRepo } from './evaluation-repo.js';
export type {
  AccessToken,
  ApiKey,
  Organization,
  Role,
  Service,
  Team,
  User,
} from './identity-repo.js';
export { IdentityRepo, ROLES } from './identity-repo.js';
export { MIGRATIONS, migrate } from './migrations.js';
export type { NewPipe, PipeRow, StateTransition } from './pipes-repo.js';
export { PipesRepo } from './pipes-repo.js';
export type { Batch, Claim, Json, PipeProgress } from './progress-repo.js';
export { ProgressRepo } from './progress-repo.js';
export type { SealedPlace, SealedValue } from './sealed-repo.js';
export { SealedRepo } from './sealed-repo.js';
export type { ConsoleSessionRow, LiveConsoleSession } from './sessions-repo.js';
export { ConsoleSessionsRepo } from './sessions-repo.js';

/** The repositories bound to one connection or one transaction. */
export interface Repos {
  alerts: AlertsRepo;
  cdcScaling: CdcScalingRepo;
  cleanups: CleanupsRepo;
  consoleSessions: ConsoleSessionsRepo;
  evaluation: EvaluationRepo;
  outbox: OutboxRepo;
  identity: IdentityRepo;
  pipes: PipesRepo;
  progress: ProgressRepo;
  sealed: SealedRepo;
}

export function reposOn(db: Queryable): Repos {
  return {
    alerts: new AlertsRepo(db),
    cdcScaling: new CdcScalingRepo(db),
    cleanups: new CleanupsRepo(db),
    consoleSessions: new ConsoleSessionsRepo(db),
    evaluation: new EvaluationRepo(db),
    outbox: new OutboxRepo(db),
    identity: new IdentityRepo(db),
    pipes: new PipesRepo(db),
    progress: new ProgressRepo(db),
    sealed: new SealedRepo(db),
  };
}

/** The metadata store: repositories, transactions and the connection's lifetime. */
export class Store {
  readonly repos: Repos;

  /** Only this process writes the store (embedded PGlite under the data directory lock). */
  readonly singleWriter: boolean;

  /**
   * Creates pipes (PipesRepo.insertMany), sharing a transaction and its statements with the
   * creates asked for at about the same time (group-commit.ts).
   */
  readonly pipeCreates: GroupCommit<NewPipe>;

  constructor(readonly db: Db) {
    this.repos = reposOn(db);
    this.singleWriter = db.kind === 'pglite';
    this.pipeCreates = new GroupCommit(
      (work) => this.transaction(work),
      (repos, creates) => repos.pipes.insertMany(creates),
    );
  }

  transaction<T>(work: (repos: Repos) => Promise<T>): Promise<T> {
    return this.db.transaction((tx) => work(reposOn(tx)));
  }

  async ping(): Promise<void> {
    await this.db.query('select 1');
  }

  close(): Promise<void> {
    return this.db.close();
  }
}

/** Opens PostgreSQL when a URL is given, else PGlite under `<dataDir>/metadata`, and migrates it. */
export async function openStore(options: {
  dataDir: string;
  databaseUrl?: string | undefined;
  /** An idle PostgreSQL connection that failed (the next query opens another). */
  onConnectionError?: (error: Error) => void;
}): Promise<Store> {
  const onIdleError =
    options.onConnectionError ??
    ((error: Error) => console.error(`sluice: a metadata database connection failed: ${error.message}`));
  const open = () =>
    options.databaseUrl
      ? openPostgres(options.databaseUrl, onIdleError)
      : openPglite(join(options.dataDir, 'metadata'));
  let db = await open();
  try {
    const applied = await migrate(db);
    if (applied.length > 0 && db.kind === 'pglite') {
      // Migrating touches far more of PGlite's memory than serving does, and that memory is never
      // given back: a fresh instance keeps the idle footprint of the first start like a restart's.
      await db.close();
      db = await open();
    }
  } catch (error) {
    await db.close();
    throw error;
  }
  return new Store(db);
}
export { perRow, WriteThroughCache } from './cache.js';
