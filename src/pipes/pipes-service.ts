import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { SecretBox } from '../crypto/index.js';
import { ConflictError, NotFoundError, type Problem, ValidationError } from '../errors.js';
import { type IdentityService, isUuid } from '../identity/index.js';
import { checker } from '../schema/index.js';
import { type Json, type PipeRow, type Repos, type Store, WriteThroughCache } from '../store/index.js';
import { concurrencyProblems, settingsKindProblems } from './destination-rules.js';
import { statusSeries } from './history/index.js';
import { configFromCreate, type PipeConfig, sameSource, sourceKindOf, toRecord } from './model.js';
import { PipeRules } from './rules.js';
import type { ClaimedCleanup, PipeRuntime, PipeStatus, RuntimeView } from './runtime-port.js';
import {
  type PipeRecord,
  type PipeSchemas,
  pipeSchemas,
  ScalingBody,
  SettingsBody,
  StateCommandBody,
  type UpdatePipeBody,
  withoutUnset,
} from './schema/index.js';
import { SealedConfigs } from './sealed-configs.js';
import { secretPathsOf } from './secrets.js';
import type { SourceKinds, SourceStatus } from './sources/index.js';
import { IDLE_STATES, type PipeState, type Transition, transitionsFor } from './state.js';
import { planUpdate } from './update.js';

/** The service a pipe request addresses, already checked to belong to the caller's organization. */
export interface ServiceScope {
  organizationId: string;
  serviceId: string;
}

/**
 * A deleted pipe's source cleanup waits this long for the runtime's sweeps: the delete makes the
 * first attempt itself. It is the wait after a crash between the two.
 */
const CLEANUP_FIRST_ATTEMPT_MS = 60_000;

const checkCommand = checker(StateCommandBody);
const checkScaling = checker(ScalingBody);
const checkSettings = checker(SettingsBody);

/**
 * The pipes control plane: validates requests, keeps secrets sealed, and writes every change and
 * state transition to the store in one transaction, so a rejected request leaves nothing behind.
 */
export class PipesService {
  private runtime: PipeRuntime | undefined;
  /** Pipe rows by id, when this process is the store's only writer. */
  private readonly cache: WriteThroughCache<PipeRow> | undefined;
  private readonly sealed: SealedConfigs;
  /** The request and record schemas of the kinds this Sluice runs (the HTTP routes use them). */
  readonly schemas: PipeSchemas;
  private readonly rules: PipeRules;

  constructor(
    private readonly store: Store,
    private readonly identity: IdentityService,
    secretBox: SecretBox,
    /** The source kinds this Sluice runs (createSluice's `sourceKinds`). */
    readonly kinds: SourceKinds,
    /** One line for every state change, with its reason. */
    private readonly logger?: Logger,
  ) {
    this.cache = store.singleWriter ? new WriteThroughCache() : undefined;
    this.schemas = pipeSchemas(kinds.list);
    this.sealed = new SealedConfigs(secretBox, secretPathsOf(kinds.list));
    this.rules = new PipeRules(kinds, this.schemas);
  }

  async create(scope: ServiceScope, sent: unknown): Promise<PipeRecord> {
    const body = withoutUnset(sent);
    const service = await this.identity.getService(scope.organizationId, scope.serviceId);
    const valid = this.rules.validCreateBody(body);
    const now = new Date();
    const id = randomUUID();
    const config = configFromCreate(valid, id, this.kinds.require(sourceKindOf(valid.source)));
    if (this.runtime) {
      const validateSamples = valid.source.validateSamples === true;
      const problems = await this.runtime.createProblems(config, service, { validateSamples });
      throwIfAny(this.sealed.redacted(problems, config));
    }
    const row: PipeRow = {
      id,
      organizationId: scope.organizationId,
      serviceId: scope.serviceId,
      name: valid.name,
      sourceKind: sourceKindOf(config.source),
      state: 'Provisioning',
      stateReason: 'waiting for the pipe runtime',
      ...this.sealed.seal(id, config),
      createdAt: now,
      updatedAt: now,
    };
    await this.store.pipeCreates.run({
      pipe: row,
      first: { fromState: null, toState: row.state, reason: 'created', at: now },
    });
    this.cache?.written(id, row);
    this.runtime?.changed(id);
    return toRecord(row);
  }

  async list(scope: ServiceScope): Promise<PipeRecord[]> {
    await this.requireService(scope);
    return (await this.store.repos.pipes.list(scope.serviceId)).map(toRecord);
  }

  async get(scope: ServiceScope, pipeId: string): Promise<PipeRecord> {
    await this.requireService(scope);
    return toRecord(await this.requirePipe(this.store.repos, scope, pipeId));
  }

  async update(scope: ServiceScope, pipeId: string, sent: unknown): Promise<PipeRecord> {
    const body = withoutUnset(sent);
    // Every field sent was null (unset): nothing to change, as the hosted service answers.
    const sentFields = typeof sent === 'object' && sent !== null ? Object.keys(sent).length : 0;
    if (sentFields > 0 && Object.keys(body as object).length === 0) return this.get(scope, pipeId);
    await this.requireService(scope);
    throwIfAny(this.rules.updateShapeProblems(body));
    const patch = body as UpdatePipeBody;
    const checked = this.runtime && (await this.checkUpdate(this.runtime, scope, pipeId, patch));
    return this.mutate(scope, pipeId, (row, config) => {
      const planned = planUpdate(row, config, patch, this.kinds, this.rules);
      if (checked && !sameSource(checked, planned.config)) {
        throw new ConflictError(
          'SLUICE_ERR_CHANGED_MEANWHILE',
          'the pipe changed while this update was checked: send it again',
        );
      }
      return planned;
    });
  }

  /** An update's problems against the real engine and source (update-checks.ts); its configuration. */
  private async checkUpdate(
    runtime: PipeRuntime,
    scope: ServiceScope,
    pipeId: string,
    patch: UpdatePipeBody,
  ): Promise<PipeConfig> {
    const service = await this.identity.getService(scope.organizationId, scope.serviceId);
    const columns = patch.destination?.columns;
    if (columns) throwIfAny(await runtime.definitionProblems({ columns }, service));
    const row = await this.requirePipe(this.store.repos, scope, pipeId);
    const { config } = this.sealed.open(row);
    const planned = planUpdate(row, config, patch, this.kinds, this.rules).config;
    const cursor = (await this.store.repos.progress.get(row.id))?.cursor ?? null;
    const problems = await runtime.updateProblems(config, planned, service, { pipeId: row.id, cursor });
    throwIfAny(this.sealed.redacted(problems, planned));
    return planned;
  }

  /**
   * Deletes a pipe. Its cleanup (its staging tables, and what it holds at its source: a
   * replication slot) is kept in the store with the pipe's row, in the same transaction, and done
   * by the runtime: at once when the source answers, else retried until it does
   * (runtime/source-cleanups.ts).
   */
  async delete(scope: ServiceScope, pipeId: string): Promise<void> {
    await this.requireService(scope);
    const existing = await this.requirePipe(this.store.repos, scope, pipeId);
    // The worker stops first, so nothing writes for a pipe that is gone.
    await this.runtime?.stop(existing.id);
    const id = await this.store.transaction(async (repos) => {
      const row = await this.requirePipe(repos, scope, pipeId, true);
      this.cache?.invalidate(row.id);
      const now = new Date();
      await repos.cleanups.record(row, now, new Date(now.getTime() + CLEANUP_FIRST_ATTEMPT_MS));
      await repos.pipes.delete(row.id);
      return row.id;
    });
    this.cache?.written(id, undefined);
    this.logger?.info({ pipeId: id }, `pipe ${existing.name} is deleted`);
    // A PATCH racing this delete may have started a worker meanwhile: it goes too, then the
    // pipe's stages and what its source holds.
    await this.runtime?.stop(id, { deleting: true });
  }

  async command(scope: ServiceScope, pipeId: string, body: unknown): Promise<PipeRecord> {
    await this.requireService(scope);
    throwIfAny(checkCommand(body));
    const { command } = body as StateCommandBody;
    const record = await this.mutate(scope, pipeId, (row) => ({
      transitions: transitionsFor(command, row.state as PipeState, this.kinds.get(row.sourceKind)?.resyncs),
    }));
    if (record.state === 'Stopping') {
      await this.runtime?.stop(record.id, { byRequest: true });
      return this.mutate(scope, pipeId, (row) => ({
        transitions: row.state === 'Stopping' ? [{ to: 'Stopped', reason: 'stopped by request' }] : [],
      }));
    }
    // A resync starts the running worker over: its run reads the state it starts in.
    if (record.state === 'Resync') await this.runtime?.reload(record.id);
    this.runtime?.changed(record.id);
    return record;
  }

  /** Connects the runtime that runs pipes; the service tells it of every change. */
  attachRuntime(runtime: PipeRuntime): void {
    this.runtime = runtime;
  }

  /** Ids of the pipes in one of `states` (of one of `kinds` when given), across services. */
  async pipesInStates(states: readonly string[], kinds?: readonly string[]): Promise<string[]> {
    return this.store.repos.pipes.idsInStates(states, kinds);
  }

  /**
   * What the runtime needs of a pipe: its row, its full configuration with secrets, its service,
   * and a function that takes those secrets out of any text (engine errors quote their input).
   */
  async runtimeView(pipeId: string): Promise<RuntimeView | undefined> {
    const row = await this.store.repos.pipes.getById(pipeId);
    return row && this.viewOf(row);
  }

  /**
   * Takes a deleted pipe's source cleanup for one attempt (see `delete`); no other attempt takes
   * it before `leaseUntil`. `open` gives the pipe as it was stored, secrets opened. Undefined when
   * it is not due (unless `evenIfNotDue`) or done.
   */
  async claimCleanup(
    pipeId: string,
    options: { leaseMs: number; evenIfNotDue?: boolean },
  ): Promise<ClaimedCleanup | undefined> {
    const now = new Date();
    const leaseUntil = new Date(now.getTime() + options.leaseMs);
    const claimed = await this.store.repos.cleanups.claim(pipeId, now, leaseUntil, options.evenIfNotDue);
    if (!claimed) return undefined;
    return {
      attempts: claimed.attempts,
      since: claimed.createdAt,
      leaseUntil: claimed.leaseUntil,
      open: () => this.viewOf(claimed.pipe),
    };
  }

  private async viewOf(row: PipeRow): Promise<RuntimeView> {
    const service = await this.identity.getService(row.organizationId, row.serviceId);
    return { row, service, ...this.sealed.open(row) };
  }

  /** A state change the runtime makes, only from the given states (a user's stop wins). */
  async runtimeTransition(pipeId: string, to: PipeState, reason: string, from: string[]): Promise<boolean> {
    const next = await this.store.transaction(async (repos) => {
      const row = await repos.pipes.getById(pipeId, { forUpdate: true });
      if (!row || !from.includes(row.state) || (row.state === to && row.stateReason === reason))
        return undefined;
      this.cache?.invalidate(row.id);
      const now = new Date();
      await repos.pipes.recordTransition(row.id, { fromState: row.state, toState: to, reason, at: now });
      const updated: PipeRow = { ...row, state: to, stateReason: reason, updatedAt: now };
      await repos.pipes.update(updated);
      return updated;
    });
    if (next) {
      this.cache?.written(next.id, next);
      this.logger?.info({ pipeId, to, reason }, `pipe ${next.name} is ${to}: ${reason}`);
    }
    return next !== undefined;
  }

  /** Progress of a pipe: state and reason, files, rows and bytes written, the last error. */
  async status(scope: ServiceScope, pipeId: string): Promise<PipeStatus> {
    await this.requireService(scope);
    const row = await this.requirePipe(this.store.repos, scope, pipeId);
    const progress = await this.store.repos.progress.withClaimedFiles(row.id);
    return {
      id: row.id,
      state: row.state,
      reason: row.stateReason,
      filesDone: progress?.filesDone ?? 0,
      filesPending: (progress?.filesPending ?? 0) + (progress?.filesClaimed ?? 0),
      rowsWritten: progress?.rowsWritten ?? 0,
      bytesWritten: progress?.bytesWritten ?? 0,
      badRecords: progress?.badRecords ?? 0,
      lastInsertAt: progress?.lastInsertAt?.toISOString() ?? null,
      lastError: progress?.lastError ?? null,
      lastErrorCode: progress?.lastErrorCode ?? null,
      lastErrorAt: progress?.lastErrorAt?.toISOString() ?? null,
      lastHour: statusSeries((await this.runtime?.lastHour(row.id)) ?? []),
      ...(await this.sourceStatus(row, progress?.cursor ?? null)),
    };
  }

  /**
   * What the source says of the pipe: the running worker's view, else, for a pipe that is not
   * running or is between retries, what the source says now (a stopped pipe's slot lag grows).
   */
  private async sourceStatus(row: PipeRow, cursor: Json | null): Promise<SourceStatus> {
    const live = this.runtime?.sourceStatus(row.id) ?? {};
    if (Object.keys(live).length > 0 || !IDLE_STATES.includes(row.state as PipeState)) return live;
    return (await this.runtime?.idleSourceStatus(row.id, cursor)) ?? {};
  }

  async scale(scope: ServiceScope, pipeId: string, sent: unknown): Promise<PipeRecord> {
    const body = withoutUnset(sent);
    await this.requireService(scope);
    throwIfAny(checkScaling(body));
    return this.mutate(scope, pipeId, (row, config) => {
      const scaling = { ...config.scaling, ...(body as ScalingBody) };
      throwIfAny(concurrencyProblems(scaling, this.kinds.require(row.sourceKind), this.kinds, 'concurrency'));
      return { config: { ...config, scaling } };
    });
  }

  async getSettings(scope: ServiceScope, pipeId: string): Promise<PipeConfig['settings']> {
    return (await this.get(scope, pipeId)).settings;
  }

  async putSettings(scope: ServiceScope, pipeId: string, sent: unknown): Promise<PipeConfig['settings']> {
    const body = withoutUnset(sent);
    await this.requireService(scope);
    throwIfAny(checkSettings(body));
    const record = await this.mutate(scope, pipeId, (row, config) => {
      throwIfAny(
        settingsKindProblems(body as SettingsBody, this.kinds.require(row.sourceKind), this.kinds, ''),
      );
      return { config: { ...config, settings: body as SettingsBody } };
    });
    return record.settings;
  }

  /** The state history of a pipe, oldest first. */
  async transitions(scope: ServiceScope, pipeId: string) {
    await this.requireService(scope);
    const row = await this.requirePipe(this.store.repos, scope, pipeId);
    return this.store.repos.pipes.transitions(row.id);
  }

  /** Loads a pipe under a row lock, applies a change, and writes it with its transitions. */
  private async mutate(
    scope: ServiceScope,
    pipeId: string,
    change: (
      row: PipeRow,
      config: PipeConfig,
    ) => { name?: string; config?: PipeConfig; transitions?: Transition[] },
  ): Promise<PipeRecord> {
    const { next, configChanged } = await this.store.transaction(async (repos) => {
      const row = await this.requirePipe(repos, scope, pipeId, true);
      const result = change(row, this.sealed.open(row).config);
      this.cache?.invalidate(row.id);
      const now = new Date();
      const next: PipeRow = { ...row, name: result.name ?? row.name, updatedAt: now };
      if (result.config) Object.assign(next, this.sealed.seal(row.id, result.config));
      for (const transition of result.transitions ?? []) {
        await repos.pipes.recordTransition(row.id, {
          fromState: next.state,
          toState: transition.to,
          reason: transition.reason,
          at: now,
        });
        this.logger?.info(
          { pipeId: row.id, from: next.state, to: transition.to, reason: transition.reason },
          `pipe ${next.name} is ${transition.to}: ${transition.reason}`,
        );
        next.state = transition.to;
        next.stateReason = transition.reason;
      }
      await repos.pipes.update(next);
      return { next, configChanged: result.config !== undefined };
    });
    this.cache?.written(next.id, next);
    if (configChanged) await this.runtime?.reload(next.id);
    return toRecord(next);
  }

  private async requireService(scope: ServiceScope): Promise<void> {
    await this.identity.getService(scope.organizationId, scope.serviceId);
  }

  /** A pipe of the service; reads may come from the cache, reads for an update never do. */
  private async requirePipe(
    repos: Repos,
    scope: ServiceScope,
    pipeId: string,
    forUpdate = false,
  ): Promise<PipeRow> {
    let row: PipeRow | undefined;
    if (!isUuid(pipeId)) row = undefined;
    else if (forUpdate || !this.cache) row = await repos.pipes.get(scope.serviceId, pipeId, { forUpdate });
    else row = await this.cache.read(pipeId, () => repos.pipes.get(scope.serviceId, pipeId));
    if (!row || row.serviceId !== scope.serviceId)
      throw new NotFoundError('SLUICE_ERR_PIPE_NOT_FOUND', 'pipe');
    return row;
  }
}

function throwIfAny(problems: Problem[]): void {
  if (problems.length > 0) throw new ValidationError(problems);
}
